"""Transposes on the vector unit: linalg.transpose as npu.transpose."""

from __future__ import annotations

import math

from mlir import ir

from ..dialects import npu
from .sram_ops import in_sram
from .problem import (VECTOR_TYPES, LoopDim, OperandTile, Recipe, Tiled, TilingProblem,
                      Unsupported, ins_outs, static_shape, type_name, vector_cycles)

def transpose_problem(op, target) -> TilingProblem:
    (source,), (out,) = ins_outs(op)
    permutation = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    shape = static_shape(out, "output")
    static_shape(source, "input")
    if type_name(source) not in VECTOR_TYPES:
        raise Unsupported(f"element type {type_name(source)} on the vector unit")
    # output dim i = input dim permutation[i]; input dim j is output dim inverse[j].
    inverse = [permutation.index(j) for j in range(len(permutation))]
    operands = [OperandTile("input", source, tuple(Tiled(inverse[j]) for j in range(len(shape)))),
                OperandTile("output", out, tuple(Tiled(d) for d in range(len(shape))),
                            is_output=True)]
    dims = [LoopDim(f"d{i}", n, candidates="rows") for i, n in enumerate(shape)]
    return TilingProblem(op, TRANSPOSE, dims, operands,
                         lambda t: vector_cycles(math.prod(t), target),
                         details={"permutation": permutation})


class TransposeRecipe(Recipe):
    name = "transpose"
    ops = ("linalg.transpose",)

    def problem(self, op, target) -> TilingProblem:
        return transpose_problem(op, target)

    def rewrite(self, op, rewriter):
        source, out = op.operation.operands
        if not in_sram(out):
            return True
        with rewriter.ip, op.location:
            npu.TransposeOp(source, out, list(ir.DenseI64ArrayAttr(
                op.operation.attributes["permutation"])))
        rewriter.erase_op(op.operation)


TRANSPOSE = TransposeRecipe()
