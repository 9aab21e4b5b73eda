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
from .passes import PassContext
from .pipeline import named_pipeline, run_pipeline
from .target import NpuTarget, parse_target

PIPELINE = "npu-pipeline"


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

    @cached_property
    def program(self) -> str:
        """The npu program as MLIR text (printed on first use: it holds the weights)."""
        return self.module.operation.get_asm(enable_debug_info=True)

    def save(self, path: str, emit: str | None = None) -> None:
        """Write the program with its target and input/output names to one file:
        bytecode for a `.mlirbc` path (weights as dense_resource blobs), else
        text; `emit="text"|"bytecode"` overrides the suffix."""
        artifact.write_program(self.module, path, emit)

    def run(self, inputs: dict[str, np.ndarray] | list | None = None, *, seed: int = 0,
            timing_only: bool = False, trace: bool = False):
        """Simulate the program; returns outputs by name (and keeps the report)."""
        from .sim import simulate
        if isinstance(inputs, dict):
            missing = [name for name in self.input_names if name not in inputs]
            unknown = [name for name in inputs if name not in self.input_names]
            if unknown:
                raise DiagnosticError([Diagnostic(
                    "error", f"unknown input(s) {', '.join(unknown)}; the model takes "
                    f"{', '.join(self.input_names)}")])
            if missing and len(missing) < len(self.input_names):
                raise DiagnosticError([Diagnostic(
                    "error", f"missing input(s) {', '.join(missing)}")])
            inputs = [inputs[name] for name in self.input_names] if not missing else None
        result = simulate(self.module, inputs, target=self.target, seed=seed,
                          timing_only=timing_only, trace=trace, filename=self.source_name)
        self.report = result.report
        self.last_result = result
        return dict(zip(self.output_names, result.outputs))


def _is_onnx(model) -> bool:
    if isinstance(model, (str, os.PathLike)) and str(model).endswith(".onnx"):
        return True
    try:
        import onnx
    except ImportError:
        return False
    return isinstance(model, onnx.ModelProto)


def load_module(model, context: ir.Context, diagnostics=None, fusion: int = 0
                ) -> tuple[ir.Module, str, list[str], list[str]]:
    """(module, source name, input names, output names) of an ONNX model or of
    MLIR (text or bytecode, a path or the contents). With `fusion` >= 1 an ONNX
    model's batch normalizations are folded into their convolutions first;
    the remarks go to `diagnostics`."""
    if _is_onnx(model):
        from .frontend.graph_folds import fold_batchnorm_into_conv
        from .frontend.onnx_importer import import_onnx_model
        imported = import_onnx_model(
            model, context, graph_rewrite=fold_batchnorm_into_conv if fusion >= 1 else None)
        if diagnostics is not None:
            diagnostics.diagnostics.extend(imported.remarks)
        source = "<onnx>" if not isinstance(model, (str, os.PathLike)) else str(model)
        return imported.module, source, imported.input_names, imported.output_names
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
    return (module, source, [f"arg{i}" for i in range(count_in)],
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


def compile(model, target: str | NpuTarget | None = None) -> CompiledModel:  # noqa: A001
    """Compile `model` (ONNX ModelProto or path, MLIR text or path, or an
    ir.Module) for `target`; raises DiagnosticError with located diagnostics."""
    target = target if isinstance(target, NpuTarget) else parse_target(target)
    context = make_context()
    pass_context = PassContext(target=target)
    module, source, inputs, outputs = load_module(model, context, pass_context.diagnostics,
                                                  target.fusion)
    run_pipeline(module, named_pipeline(PIPELINE), pass_context)
    remarks = [d for d in pass_context.diagnostics.diagnostics if d.severity == "remark"]
    fallback = [d.format(source) for d in remarks if "fallback" in d.message]
    artifact.record_metadata(module, target, inputs, outputs)
    return CompiledModel(module, target, inputs, outputs, remarks, fallback, source)


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
