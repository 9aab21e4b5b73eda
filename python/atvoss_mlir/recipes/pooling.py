"""Pooling on the vector unit: linalg max and sum pooling (NHWC) as npu.pool2d."""

from __future__ import annotations

import math

from mlir import ir

from ..dialects import npu
from .absorbed import output_init, overwriting_output, window_input
from .prologue import fold_prologue, input_prologue
from .sram_ops import in_sram, initial_value
from .problem import (VECTOR_TYPES, LoopDim, OperandTile, Recipe, Tiled, TilingProblem,
                      Unsupported, Window, ins_outs, ints, optional_attr, static_shape, type_name,
                      vector_cycles)

def pool_problem(op, target) -> TilingProblem:
    (image, window), (out,) = ins_outs(op)
    kind = "max" if "max" in op.name else "sum"
    if op.name.endswith("_unsigned") or "min" in op.name:
        raise Unsupported("only max and sum pooling run on the vector unit")
    strides = ints(optional_attr(op, "strides"), (1, 1))
    dilations = ints(optional_attr(op, "dilations"), (1, 1))
    if dilations != [1, 1]:
        raise Unsupported("npu.pool2d has no dilation")
    source, low, high, pad, absorbed = window_input(op, image, "input")
    # An elementwise op writing the (unpadded) input: applied to its tiles in SRAM.
    prologue = input_prologue(op, image, 3, target) if source == image else None
    if prologue is not None:
        source = prologue.source
    if pad is not None and kind == "sum" and pad != 0.0:
        raise Unsupported("sum pooling over a non-zero padding")
    batch, height, width, channels = static_shape(source, "input")
    kh, kw = static_shape(window, "window")
    _, oh, ow, _ = static_shape(out, "output")
    if type_name(image) != type_name(out) or type_name(out) not in VECTOR_TYPES:
        raise Unsupported("pooling input and output element types differ")
    dims = [LoopDim("n", batch, candidates="one"), LoopDim("oh", oh, candidates="rows"),
            LoopDim("ow", ow, candidates="full"), LoopDim("c", channels)]
    operands = [OperandTile("input", source,
                            (Tiled(0), Window(1, strides[0], 1, kh, low[1], height),
                             Window(2, strides[1], 1, kw, low[2], width), Tiled(3)),
                            pad_value=pad),
                OperandTile("output", out, (Tiled(0), Tiled(1), Tiled(2), Tiled(3)),
                            is_output=True)]
    def cycles(t):
        pooled = vector_cycles(t[0] * t[1] * t[2] * t[3], target, kh * kw)
        if prologue is None:
            return pooled
        return pooled + prologue.cycles(math.prod(operands[0].extents(t)), target)

    def temporaries(t):
        return len(prologue.constants()) * target.sram_alignment if prologue else 0
    problem = TilingProblem(op, POOLING, dims, operands, cycles, temporaries,
                            {"strides": strides, "window": (kh, kw), "pool": kind})
    problem.absorbed_ops += absorbed
    if prologue is not None:
        fold_prologue(problem, prologue, 3)
    return overwriting_output(output_init(problem), float("-inf") if kind == "max" else 0.0)


class PoolingRecipe(Recipe):
    name = "pool2d"
    ops = ("linalg.pooling_nhwc_max", "linalg.pooling_nhwc_sum")

    def problem(self, op, target) -> TilingProblem:
        return pool_problem(op, target)

    def loop_positions(self, problem) -> tuple[int, list[int]]:
        return 6, [0, 1, 2, 3]  # (n, oh, ow, c, kh, kw)

    def rewrite(self, op, rewriter):
        image, window, out = op.operation.operands
        if not in_sram(out):
            return True
        pool = "max" if "max" in op.operation.name else "sum"
        kernel = list(ir.MemRefType(window.type).shape)
        with rewriter.ip, op.location:
            init = initial_value(op, out)
            if init is not None:   # the identity of the pool: npu.pool2d overwrites
                rewriter.erase_op(init.operation)
            npu.Pool2dOp(image, out, pool, kernel, ints(optional_attr(op, "strides"), (1, 1)))
        rewriter.erase_op(op.operation)


POOLING = PoolingRecipe()
