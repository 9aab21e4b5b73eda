"""One recipe per op family: recognition of its linalg form, its tiling
problem and cost, and the npu ops computing one tile. `RECIPES` lists them, as
the ONNX frontend's handlers are listed; the passes dispatch through it."""

from __future__ import annotations

from mlir import ir

from ..target import NpuTarget
from .conv import CONV2D
from .depthwise import DEPTHWISE
from .elementwise import ELEMENTWISE
from .fill import FILL
from .matmul import MATMUL
from .pooling import POOLING
from .problem import Recipe, TilingProblem, Unsupported
from .reduction import REDUCTION
from .softmax import SOFTMAX
from .transpose import TRANSPOSE

RECIPES: list[Recipe] = [MATMUL, CONV2D, DEPTHWISE, POOLING, REDUCTION, SOFTMAX, ELEMENTWISE,
                         FILL, TRANSPOSE]
RECIPES_FOR_OP: dict[str, list[Recipe]] = {}
for _recipe in RECIPES:
    for _name in _recipe.ops:
        RECIPES_FOR_OP.setdefault(_name, []).append(_recipe)

# linalg ops the NPU does not run, with the reason given in the remark.
UNSUPPORTED_REASONS = {
    "linalg.conv_2d_nchw_fchw": "NCHW convolutions run on the NPU only after "
                                "npu-convert-layout (on tensors)",
    "linalg.pooling_nchw_max": "NCHW pooling runs on the NPU only after "
                               "npu-convert-layout (on tensors)",
    "linalg.pooling_nchw_sum": "NCHW pooling runs on the NPU only after "
                               "npu-convert-layout (on tensors)",
}


def tiling_problem(op, target: NpuTarget) -> TilingProblem:
    """The op's tiling problem; raises Unsupported with the reason the NPU cannot run it."""
    recipe = next((r for r in RECIPES_FOR_OP.get(op.name, []) if r.recognises(op)), None)
    if recipe is None:
        raise Unsupported(UNSUPPORTED_REASONS.get(op.name, "no npu lowering for this op"))
    return recipe.problem(op, target)


def linalg_ops(module: ir.Operation) -> list:
    """The linalg ops of a module, not those nested in a linalg op's body."""
    found = []

    def visit(op):
        if op.name.startswith("linalg.") and op.name not in ("linalg.yield", "linalg.index") \
                and not (op.parent is not None and op.parent.name.startswith("linalg.")):
            found.append(op)
        return ir.WalkResult.ADVANCE
    module.walk(visit)
    return found
