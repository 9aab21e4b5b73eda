"""Pooling on the vector unit: linalg max and sum pooling (NHWC) as npu.pool2d.

A pool of stride 1 across the columns whose window has more taps than its
height and width together (3x3) runs separably: a kh x 1 pool down every
input column of the tile into a scratch tile (the output tile's rows, the
input tile's columns), then a 1 x kw pool across it (max and sum are
separable): kh + kw taps per output instead of kh * kw. A sum pool does so
in fp32 only (a narrower type would round the column sums); npu-tile marks a
pool whose scratch tile does not fit to pool its whole window at once."""

from __future__ import annotations

import math

from mlir import ir

from ..dialects import npu
from .absorbed import output_init, overwriting_output, window_input
from .prologue import fold_prologue, input_prologue
from .sram_ops import in_sram, initial_value, scratch, sram_buffer, view_sizes
from .tile_ir import subview
from .problem import (VECTOR_TYPES, LoopDim, OperandTile, Recipe, Tiled, TilingProblem,
                      Unsupported, Window, element_bytes, in_place, ins_outs, ints,
                      is_resident, optional_attr, static_shape, type_name, vector_cycles)

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
    prologue = input_prologue(op, image, target) if source == image else None
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
    columns = operands[0].region[2]   # the input columns a tile of output columns reads
    # Decided once the problem exists: a tensor kept in SRAM that the op does
    # not compute on in place (a padded window of it) is copied into a tile,
    # which pools separably like any other.
    separate = False

    def cycles(t):
        if separate:
            pooled = vector_cycles(t[0] * t[1] * columns.extent(t[2]) * t[3], target, kh) + \
                vector_cycles(t[0] * t[1] * t[2] * t[3], target, kw)
        else:
            pooled = vector_cycles(t[0] * t[1] * t[2] * t[3], target, kh * kw)
        if prologue is None:
            return pooled
        return pooled + prologue.cycles(math.prod(operands[0].extents(t)), target)

    def temporaries(t):
        constants = len(prologue.constants()) * target.sram_alignment if prologue else 0
        if not separate:
            return constants
        # Pooled down the columns: the output tile's rows, every input column.
        alignment = target.sram_alignment
        return constants + -(-t[0] * t[1] * columns.extent(t[2]) * t[3] * element_bytes(
            operands[-1].element_type) // alignment) * alignment

    problem = TilingProblem(op, POOLING, dims, operands, cycles, temporaries,
                            {"strides": strides, "window": (kh, kw), "pool": kind})
    separate = pools_separably(op, kind, type_name(out), (kh, kw), strides,
                               [o.value for o in operands if in_place(problem, o)])
    problem.details[SEPARABLE] = separate
    problem.absorbed_ops += absorbed
    if prologue is not None:
        fold_prologue(problem, prologue)
    return overwriting_output(output_init(problem), float("-inf") if kind == "max" else 0.0)


SEPARABLE = "separable"
WHOLE_WINDOW_ATTR = "npu.whole_window"


def pools_separably(op, kind: str, element: str, kernel, strides, buffers) -> bool:
    """Whether the pool runs as a column pool then a row pool: stride 1 across
    the columns (the column pool covers each input column once, one output
    column per input column), fewer taps that way, a max or an fp32 sum, its
    input and output `buffers` (or views of them) tiles, not tensors kept in
    SRAM (computed on in place, they are no tile to size the scratch tile by),
    and npu-tile has not marked it to pool whole windows."""
    kh, kw = kernel
    return strides[1] == 1 and kh > 1 and kw > 1 and kh + kw < kh * kw \
        and (kind == "max" or element == "f32") \
        and not any(is_resident(buffer) for buffer in buffers) \
        and WHOLE_WINDOW_ATTR not in op.operation.attributes


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
            strides = ints(optional_attr(op, "strides"), (1, 1))
            if pools_separably(op, pool, type_name(out), kernel, strides, (image, out)):
                # Down each input column into a scratch tile, then across it.
                element = ir.MemRefType(out.type).element_type
                image_shape = ir.MemRefType(sram_buffer(image).type).shape
                out_shape = ir.MemRefType(sram_buffer(out).type).shape
                image_sizes, out_sizes = view_sizes(image), view_sizes(out)
                down = subview(scratch(op, [out_shape[0], out_shape[1], image_shape[2],
                                            out_shape[3]], element),
                               [0, 0, 0, 0],
                               [out_sizes[0], out_sizes[1], image_sizes[2], out_sizes[3]])
                npu.Pool2dOp(image, down, pool, [kernel[0], 1], [strides[0], 1])
                npu.Pool2dOp(down, out, pool, [1, kernel[1]], [1, 1])
            else:
                npu.Pool2dOp(image, out, pool, kernel, strides)
        rewriter.erase_op(op.operation)


POOLING = PoolingRecipe()
