"""atvoss-mlir: a compiler backend for a systolic-array NPU on upstream MLIR."""

__version__ = "0.1.0"


def compile(model, target=None, tuning_db=None, calibration=None,  # noqa: A001
            input_shapes=None):
    """Compile a model for the NPU: see `atvoss_mlir.compiler.compile`."""
    from .compiler import compile as compile_model
    return compile_model(model, target, tuning_db=tuning_db, calibration=calibration,
                         input_shapes=input_shapes)


def load(path, target=None):
    """A compiled model saved with `CompiledModel.save`: see `atvoss_mlir.compiler.load`."""
    from .compiler import load as load_model
    return load_model(path, target)
