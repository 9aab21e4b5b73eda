"""atvoss-mlir: a compiler backend for a systolic-array NPU on upstream MLIR."""

__version__ = "0.1.0"


def compile(model, target=None):  # noqa: A001
    """Compile a model for the NPU: see `atvoss_mlir.compiler.compile`."""
    from .compiler import compile as compile_model
    return compile_model(model, target)
