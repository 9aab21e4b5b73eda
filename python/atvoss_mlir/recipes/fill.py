"""Constant fills on the vector unit: linalg.fill, and a linalg.map of no
inputs yielding a constant, as npu.fill."""

from __future__ import annotations

import math

from ..dialects import npu
from .elementwise import elementwise_dims
from .sram_ops import in_sram
from .problem import (INIT_ATTR, VECTOR_TYPES, OperandTile, Recipe, Tiled, TilingProblem, Unsupported,
                      constant_value, ins_outs, static_shape, type_name, untiled,
                      vector_cycles)

def fill_problem(op, target) -> TilingProblem:
    """linalg.fill, or a linalg.map of no inputs yielding a constant (how a
    tensor.pad's padding bufferizes when no window op absorbs it)."""
    if op.name == "linalg.map":
        body = list(op.regions[0].blocks[0].operations)
        if len(op.opview.inputs) or len(body) != 1:
            raise Unsupported("a linalg.map with inputs or a computed value")
        constant, out = constant_value(body[0].operands[0]), untiled(op.opview.init)
    else:
        (value,), (out,) = ins_outs(op)
        constant = constant_value(value)
    if constant is None:
        raise Unsupported("a fill with a non-constant value")
    shape = static_shape(out, "output")
    if type_name(out) not in VECTOR_TYPES:
        raise Unsupported(f"element type {type_name(out)} on the vector unit")
    operands = [OperandTile("output", out, tuple(Tiled(d) for d in range(len(shape))),
                            is_output=True)]
    return TilingProblem(op, FILL, elementwise_dims(shape), operands,
                         lambda t: vector_cycles(math.prod(t), target),
                         details={"value": float(constant)})


class FillRecipe(Recipe):
    name = "fill"
    ops = ("linalg.fill", "linalg.map")

    def problem(self, op, target) -> TilingProblem:
        return fill_problem(op, target)

    def rewrite(self, op, rewriter):
        out = list(op.operation.operands)[-1]
        if not in_sram(out) or INIT_ATTR in op.operation.attributes:
            return True   # an initial value belongs to the op it initialises
        if op.operation.name == "linalg.map":
            value = constant_value(list(op.operation.regions[0].blocks[0].operations)[0]
                                   .operands[0])
        else:
            value = constant_value(op.operation.operands[0])
        with rewriter.ip, op.location:
            npu.FillOp(out, float(value))
        rewriter.erase_op(op.operation)


FILL = FillRecipe()
