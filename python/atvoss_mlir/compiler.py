"""The compile API: a model (ONNX, or MLIR with linalg on tensors) -> an npu
program for a target, runnable on the simulator.

    import atvoss_mlir
    compiled = atvoss_mlir.compile("model.onnx", target="npu -pipeline-stages=2")
    outputs = compiled.run({"input": x})      # name -> ndarray
    compiled.report["total_cycles"], compiled.fallback_ops
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
from mlir import ir

from .context import make_context
from .diagnostics import Diagnostic, DiagnosticError, SourcePosition
from .parse_guard import parse_module
from .passes import PassContext
from .pipeline import named_pipeline, run_pipeline
from .target import NpuTarget, parse_target

PIPELINE = "npu-pipeline"


@dataclass
class CompiledModel:
    program: str                      # the npu program, MLIR text
    target: NpuTarget
    input_names: list[str]
    output_names: list[str]
    remarks: list[Diagnostic] = field(default_factory=list)
    fallback_ops: list[str] = field(default_factory=list)  # "op at file:line:col: reason"
    source_name: str = "-"
    report: dict | None = None        # of the last run

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
        result = simulate(self.program, inputs, target=self.target, seed=seed,
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


def load_module(model, context: ir.Context) -> tuple[ir.Module, str, list[str], list[str]]:
    """(module, source name, input names, output names) of an ONNX model or of
    MLIR text / an .mlir path."""
    if _is_onnx(model):
        import onnx
        from .frontend.onnx_importer import import_onnx, load_model
        proto, path = load_model(model)
        module = import_onnx(proto, context, source=path)
        initializers = {init.name for init in proto.graph.initializer}
        inputs = [i.name for i in proto.graph.input if i.name not in initializers]
        outputs = [o.name for o in proto.graph.output]
        source = str(model) if not isinstance(model, onnx.ModelProto) else "<onnx>"
        return module, source, inputs, outputs
    if isinstance(model, ir.Module):
        text, source = str(model), "-"
    elif isinstance(model, (str, os.PathLike)) and os.path.exists(str(model)):
        source = str(model)
        try:
            with open(source, encoding="utf-8") as stream:
                text = stream.read()
        except (OSError, UnicodeDecodeError) as error:
            raise DiagnosticError([Diagnostic("error", f"cannot read '{source}': {error}",
                                              position=SourcePosition(source, 1, 1))]) from None
    else:
        text, source = str(model), "-"
    module = parse_module(text, context, source)
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
    module, source, inputs, outputs = load_module(model, context)
    pass_context = PassContext(target=target)
    run_pipeline(module, named_pipeline(PIPELINE), pass_context)
    remarks = [d for d in pass_context.diagnostics.diagnostics if d.severity == "remark"]
    fallback = [d.format(source) for d in remarks if "fallback" in d.message]
    return CompiledModel(module.operation.get_asm(enable_debug_info=True), target, inputs,
                         outputs, remarks, fallback, source)
