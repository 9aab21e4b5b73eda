"""The compile API: a model (ONNX, or MLIR with linalg on tensors, as text or
bytecode) -> an npu program for a target, runnable on the simulator.

    import atvoss_mlir
    compiled = atvoss_mlir.compile("model.onnx", target="npu -pipeline-stages=2")
    outputs = compiled.run({"input": x})      # name -> ndarray
    compiled.report["total_cycles"], compiled.fallback_ops
    compiled.save("model.mlirbc")             # one file: program, weights, names, target
    atvoss_mlir.load("model.mlirbc").run({"input": x})
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from mlir import ir

from . import artifact
from .context import make_context
from .diagnostics import Diagnostic, DiagnosticError
from .layout_choice import run_npu_pipeline
from .passes import PassContext
from .target import NpuTarget, parse_target


@dataclass
class CompiledModel:
    module: ir.Module                 # the npu program
    target: NpuTarget
    input_names: list[str]
    output_names: list[str]
    remarks: list[Diagnostic] = field(default_factory=list)
    fallback_ops: list[str] = field(default_factory=list)  # "op at file:line:col: reason"
    source_name: str = "-"
    report: dict | None = None        # of the last run
    input_notes: list[Diagnostic] = field(default_factory=list)  # of the last run
    # The ONNX graph's output element types (signless integers come out of the
    # simulator signed: a uint8 output is read back as uint8), None if unknown.
    output_dtypes: list | None = None
    # The ONNX model -precision rewrote the input into (what the program computes).
    rewritten_model: object = None

    @cached_property
    def program(self) -> str:
        """The npu program as MLIR text (printed on first use: it holds the weights)."""
        return self.module.operation.get_asm(enable_debug_info=True)

    def save(self, path: str, emit: str | None = None) -> None:
        """Write the program with its target and input/output names to one file:
        bytecode for a `.mlirbc` path (weights as dense_resource blobs), else
        text; `emit="text"|"bytecode"` overrides the suffix."""
        artifact.write_program(self.module, path, emit)

    @cached_property
    def input_specs(self) -> list:
        """Name, shape and element type of each input (`inputs.InputSpec`)."""
        from .inputs import function_input_specs
        return function_input_specs(_entry_function(self.module), self.input_names)

    def run(self, inputs: dict[str, np.ndarray] | list | None = None, *, seed: int = 0,
            timing_only: bool = False, trace: bool = False):
        """Simulate the program; returns outputs by name (and keeps the report).

        `inputs` maps every input name to an array of its shape and element type
        (`atvoss_mlir.inputs` says what is checked), or lists them in order.
        None runs on random inputs drawn with `seed` (numerics) or on none at
        all (`timing_only`), and `input_notes` says so."""
        from .inputs import check_inputs
        from .sim import simulate
        self.input_notes = []
        if inputs is None:
            if not timing_only and self.input_names:
                self.input_notes.append(Diagnostic(
                    "note", f"no inputs given: the model runs on random inputs (seed {seed})"))
            values = None
        else:
            if not isinstance(inputs, dict):
                inputs = list(inputs)
                if len(inputs) != len(self.input_names):
                    raise DiagnosticError([Diagnostic(
                        "error", f"the model takes {len(self.input_names)} input(s) "
                        f"({', '.join(self.input_names)}), {len(inputs)} were given")])
                inputs = dict(zip(self.input_names, inputs))
            arrays, self.input_notes = check_inputs(self.input_specs, inputs)
            values = [_as_held(arrays[name]) for name in self.input_names]
        result = simulate(self.module, values, target=self.target, seed=seed,
                          timing_only=timing_only, trace=trace, filename=self.source_name)
        self.report = result.report
        self.last_result = result
        outputs = result.outputs
        if self.output_dtypes is not None:
            outputs = [_as_declared(value, dtype) for value, dtype in
                       zip(outputs, self.output_dtypes)]
        return dict(zip(self.output_names, outputs))


def _as_held(value):
    """A uint8 input as the program holds it: int8, shifted by -128
    (frontend/ops_quantized)."""
    if isinstance(value, np.ndarray) and value.dtype == np.uint8:
        return (value.astype(np.int16) - 128).astype(np.int8)
    return value


def _as_declared(value, dtype):
    """An integer output read with the signedness the model declares (a
    uint8 one is held shifted by -128)."""
    if isinstance(value, np.ndarray) and value.dtype == np.int8 and dtype is not None \
            and np.dtype(dtype) == np.uint8:
        return (value.astype(np.int16) + 128).astype(np.uint8)
    if isinstance(value, np.ndarray) and dtype is not None and value.dtype != dtype \
            and value.dtype.kind in "iu" and np.dtype(dtype).kind in "iu" \
            and value.dtype.itemsize == np.dtype(dtype).itemsize:
        return value.view(dtype)
    return value


def _is_onnx(model) -> bool:
    if isinstance(model, (str, os.PathLike)) and str(model).endswith(".onnx"):
        return True
    try:
        import onnx
    except ImportError:
        return False
    return isinstance(model, onnx.ModelProto)


@dataclass
class LoadedModel:
    module: ir.Module
    source: str
    input_names: list[str]
    output_names: list[str]
    # ONNX models: the graph's own input specs and output element types.
    input_specs: list | None = None
    output_dtypes: list | None = None


def load_module(model, context: ir.Context, diagnostics=None, fusion: int = 0,
                origin: tuple[str, dict[str, int]] | None = None,
                input_shapes: dict | None = None) -> LoadedModel:
    """The module, source name and input/output names of an ONNX model or of
    MLIR (text or bytecode, a path or the contents). With `fusion` >= 1 an ONNX
    model's batch normalizations are folded into their convolutions first;
    the remarks go to `diagnostics`. `origin` (path, {node: line}) is the
    file a rewritten ModelProto comes from, where its nodes are located.
    `input_shapes` (input name -> dims) fixes an ONNX model's dynamic input
    dimensions."""
    if _is_onnx(model):
        from .frontend.graph_folds import fold_batchnorm_into_conv
        from .frontend.onnx_importer import import_onnx_model
        from .frontend.qdq_fusion import fuse_qdq

        def rewrite(proto, path):
            proto, remarks = fuse_qdq(proto, path)
            if fusion >= 1:
                proto, folded = fold_batchnorm_into_conv(proto, path)
                remarks = remarks + folded
            return proto, remarks
        imported = import_onnx_model(model, context, graph_rewrite=rewrite, named_softmax=True,
                                     origin=origin, input_shapes=input_shapes)
        if diagnostics is not None:
            diagnostics.diagnostics.extend(imported.remarks)
        source = str(model) if isinstance(model, (str, os.PathLike)) else \
            origin[0] if origin is not None else "<onnx>"
        return LoadedModel(imported.module, source, imported.input_names,
                           imported.output_names, imported.input_specs, imported.output_dtypes)
    if input_shapes:
        raise DiagnosticError([Diagnostic(
            "error", "input shapes fix an ONNX model's dynamic dimensions; an MLIR "
            "function's argument types are its shapes")])
    if isinstance(model, ir.Module):
        data, source = str(model), "-"
    elif isinstance(model, (bytes, bytearray)):
        data, source = model, "-"
    elif isinstance(model, (str, os.PathLike)) and os.path.exists(str(model)):
        source = str(model)
        data = artifact.read_file(source)
    else:
        data, source = str(model), "-"
    module = artifact.parse_program(data, context, source)
    entry = _entry_function(module)
    count_in = len(entry.type.inputs)
    count_out = len(entry.type.results)
    return LoadedModel(module, source, [f"arg{i}" for i in range(count_in)],
                       [f"result{i}" for i in range(count_out)])


def _entry_function(module: ir.Module):
    # (FuncOp.name is the symbol name; the op name is on .operation)
    functions = [op for op in module.body.operations if op.operation.name == "func.func"]
    for function in functions:
        if function.attributes["sym_name"].value == "main":
            return function
    if len(functions) == 1:
        return functions[0]
    raise DiagnosticError([Diagnostic("error", "the module has no entry function @main",
                                      module.operation.location)])


def _with_precision(model, target: NpuTarget, calibration, remarks: list,
                    input_shapes: dict | None = None):
    if not _is_onnx(model):
        raise DiagnosticError([Diagnostic(
            "error", f"-precision={target.precision} rewrites ONNX models; this input is MLIR, "
            "whose element types are its precision")])
    """The model rewritten for -precision, and its origin for load_module: the
    file it was read from with each rewritten node's line there (None for a
    ModelProto)."""
    from .frontend.onnx_model import check_input_shapes, load_model, node_lines, \
        with_input_shapes
    from .quantization.precision import apply_precision
    proto, path = load_model(model)
    if input_shapes:   # static before onnxruntime's quantiser sees the model
        check_input_shapes(proto, input_shapes, path)
        proto = with_input_shapes(proto, input_shapes)
    rewritten = apply_precision(proto, target, calibration, path, remarks)
    return rewritten, (path, node_lines(proto, rewritten)) if path is not None else None


def compile(model, target: str | NpuTarget | None = None,  # noqa: A001
            tuning_db: str | None = None, calibration=None,
            input_shapes: dict | None = None) -> CompiledModel:
    """Compile `model` (ONNX ModelProto or path, MLIR text or path, or an
    ir.Module) for `target`; raises DiagnosticError with located diagnostics.
    With `tuning_db` (a path written by `atvoss tune`), each op whose signature
    has a record for this target takes its best measured schedule.
    `calibration` (an .npz path or {input name: samples}) feeds
    -precision=int8|mixed. `input_shapes` ({input name: dims}) fixes an ONNX
    model's dynamic input dimensions (a batch exported as 'N'); those of inputs
    it does not name are compiled as 1, which a remark says."""
    target = target if isinstance(target, NpuTarget) else parse_target(target)
    pass_context = PassContext(target=target)
    rewritten = origin = None
    if target.precision != "fp32":
        rewritten, origin = _with_precision(model, target, calibration,
                                            pass_context.diagnostics.diagnostics, input_shapes)
        model = rewritten
    context = make_context()
    if tuning_db is not None:
        from .tuning.database import TuningDatabase, tuned_lookup
        pass_context.tuned_schedule = tuned_lookup(TuningDatabase(tuning_db, create=False),
                                                   target)
    loaded = load_module(model, context, pass_context.diagnostics, target.fusion, origin,
                         input_shapes)
    module = loaded.module
    # Verified once at the end, not after each pass: atvoss-opt verifies each.
    run_npu_pipeline(module, pass_context, verify_each=False)
    remarks = [d for d in pass_context.diagnostics.diagnostics if d.severity == "remark"]
    fallback = [d.format(loaded.source) for d in remarks if "fallback" in d.message]
    artifact.record_metadata(module, target, loaded.input_names, loaded.output_names)
    compiled = CompiledModel(module, target, loaded.input_names, loaded.output_names, remarks,
                             fallback, loaded.source, output_dtypes=loaded.output_dtypes,
                             rewritten_model=rewritten)
    if loaded.input_specs is not None:
        compiled.input_specs = loaded.input_specs  # fills the cached property
    return compiled


def load(path: str, target: str | NpuTarget | None = None) -> CompiledModel:
    """A compiled model saved with `CompiledModel.save` (or written by `atvoss
    compile`), text or bytecode. `target`, when given, must be the one the
    program was compiled for. Raises DiagnosticError, located at the file, for
    an unreadable, corrupt or truncated file and for a target mismatch."""
    path = os.fspath(path)
    if target is not None and not isinstance(target, NpuTarget):
        target = parse_target(target)
    module = artifact.parse_program(artifact.read_file(path), make_context(), path)
    metadata = artifact.read_metadata(module, path)
    target = artifact.resolve_target(metadata, target)
    entry = _entry_function(module)
    inputs = metadata.input_names or [f"arg{i}" for i in range(len(entry.type.inputs))]
    outputs = metadata.output_names or [f"result{i}" for i in range(len(entry.type.results))]
    return CompiledModel(module, target, inputs, outputs, source_name=path)
