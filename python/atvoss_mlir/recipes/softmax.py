"""Softmax in one pass on the vector unit: linalg.softmax with its axis whole
in each SRAM tile. A tile's row max (npu.reduce), x - max (npu.elementwise),
its exponential (npu.activation), their sum (npu.reduce) and the division
(npu.elementwise) all run on the tile in SRAM, so the input is read once and
the output written once. `npu-decompose-linalg` keeps a linalg.softmax for
this recipe only when a row fits (`whole_row_working_set`); otherwise it
decomposes it into max, exp, sum and divide passes, each tiled on its own.
"""

from __future__ import annotations

import math

from mlir import ir

from ..dialects import npu
from ..machine_model import aligned, element_bytes
from .problem import (LoopDim, OperandTile, Recipe, Tiled, TilingProblem, Unsupported, ins_outs,
                      static_shape, type_name, vector_kind_cycles)
from .sram_ops import in_sram, scratch, sram_buffer, view_sizes
from .tile_ir import subview

SOFTMAX_TYPES = ("f16", "f32")
# The vector-unit kinds of one tile: max, x - max, exp, sum, division.
STEPS = ("max", "sub", "exp", "sum", "div")


def whole_row_working_set(shape: list[int], axis: int, element_type, target) -> int:
    """The smallest working set of a one-pass softmax: one row of input and of
    output per pipeline stage, and the row's max and sum."""
    row = aligned(shape[axis] * element_bytes(element_type), target.sram_alignment)
    return target.pipeline_stages * 2 * row + 2 * target.sram_alignment


def softmax_problem(op, target) -> TilingProblem:
    (source,), (out,) = ins_outs(op)
    shape = static_shape(out, "output")
    static_shape(source, "input")
    element = type_name(out)
    if element not in SOFTMAX_TYPES or type_name(source) != element:
        raise Unsupported(f"a softmax of {type_name(source)} into {element} on the vector unit")
    axis = ir.IntegerAttr(op.attributes["dimension"]).value
    # The axis stays whole; the other dims split into balanced row blocks.
    dims = [LoopDim(f"d{d}", n, candidates="full" if d == axis else "rows")
            for d, n in enumerate(shape)]
    region = tuple(Tiled(d) for d in range(len(shape)))
    operands = [OperandTile("in0", source, region),
                OperandTile("output", out, region, is_output=True)]

    def temporaries(tiles):   # the row max and sum, one element per row
        rows = math.prod(tiles) // tiles[axis]
        return 2 * aligned(rows * element_bytes(element), target.sram_alignment)
    return TilingProblem(
        op, SOFTMAX, dims, operands,
        lambda t: sum(vector_kind_cycles(kind, math.prod(t), target) for kind in STEPS),
        temporaries, {"axis": axis})


class SoftmaxRecipe(Recipe):
    name = "softmax"
    ops = ("linalg.softmax",)

    def problem(self, op, target) -> TilingProblem:
        return softmax_problem(op, target)

    def rewrite(self, op, rewriter):
        """The five steps on the tile; the output tile holds x - max, then its
        exponential, then the result. The row max and sum are tiles of the
        output's shape with the axis 1 (npu.reduce writes them without it)."""
        source, out = op.operation.operands
        if not in_sram(out):
            return True
        axis = ir.IntegerAttr(op.operation.attributes["dimension"]).value
        element_type = ir.MemRefType(out.type).element_type
        row_shape = list(ir.MemRefType(sram_buffer(out).type).shape)
        row_shape[axis] = 1
        with rewriter.ip, op.location:
            sizes = view_sizes(out)
            sizes[axis] = 1
            offsets = [0] * len(sizes)
            peak, total = (scratch(op, row_shape, element_type) for _ in range(2))
            npu.ReduceOp(source, subview(peak, offsets, sizes, dropped=(axis,)), "max", [axis],
                         False)
            npu.ElementwiseOp(source, subview(peak, offsets, sizes), out, "sub")
            npu.ActivationOp(out, out, "exp")
            npu.ReduceOp(out, subview(total, offsets, sizes, dropped=(axis,)), "sum", [axis],
                         False)
            npu.ElementwiseOp(out, subview(total, offsets, sizes), out, "div")
        rewriter.erase_op(op.operation)


SOFTMAX = SoftmaxRecipe()
