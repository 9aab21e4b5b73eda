"""Profile a model or a program: compile it when it is a model, simulate it
timing-only with the engine timelines recorded, and build the profile.

A model is an ONNX file or MLIR with linalg on tensors; a program is what
`atvoss compile` writes (it records its target) or any MLIR holding npu ops.
Only a model can be compiled again, so only a model's advice carries the
cost model's estimates.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from mlir import ir

from ..target import NpuTarget
from .advice import advise
from .profile import build_profile, estimated_cycles_by_node


@dataclass
class Profiled:
    profile: dict
    compiled: object          # the CompiledModel that ran
    result: object            # its SimResult (trace events included)
    is_model: bool


def is_program(path: str) -> bool:
    """Whether a file holds a compiled npu program rather than a model."""
    if str(path).endswith(".onnx"):
        return False
    from ..artifact import TARGET_ATTR, parse_program, read_file
    from ..context import make_context
    module = parse_program(read_file(path), make_context(), path)
    if TARGET_ATTR in module.operation.attributes:
        return True
    found = []

    def visit(op):
        if op.name.startswith("npu."):
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    return bool(found)


def profile_file(path: str, target: NpuTarget | None, *, with_advice: bool = True,
                 progress=None, input_shapes: dict | None = None) -> Profiled:
    """The profile of a model or program file (`input_shapes` fixes a model's
    dynamic input dimensions); raises DiagnosticError."""
    from ..compiler import compile as compile_model
    from ..compiler import load
    stage = progress or (lambda name, work: work())
    if not os.path.exists(path):
        from ..diagnostics import Diagnostic, DiagnosticError, SourcePosition
        raise DiagnosticError([Diagnostic("error", f"cannot read '{path}': no such file",
                                          position=SourcePosition(path, 1, 1))])
    model = not is_program(path)
    if model:
        compiled = stage("compile", lambda: compile_model(path, target,
                                                          input_shapes=input_shapes))
    else:
        compiled = load(path, target)
    stage("simulate", lambda: compiled.run(None, timing_only=True, trace=True))
    result = compiled.last_result
    source = compiled.source_name
    profile = build_profile(result, compiled.target, compiled.remarks, source)
    if with_advice:
        def estimate(other: NpuTarget) -> dict:
            try:
                return estimated_cycles_by_node(
                    compile_model(path, other, input_shapes=input_shapes).remarks, source)
            except Exception:  # noqa: BLE001 - an option that does not compile has no estimate
                return {}
        stage("advice", lambda: advise(profile, compiled.target, estimate if model else None,
                                       estimated_cycles_by_node(compiled.remarks, source)))
    return Profiled(profile, compiled, result, model)
