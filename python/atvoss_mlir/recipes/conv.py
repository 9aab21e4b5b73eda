"""Convolution on the matrix unit: linalg.conv_2d_nhwc_hwcf as npu.conv2d
(direct), as npu.matmul on the input tile (implicit GEMM, 1x1 kernels) or as
npu.im2col + npu.matmul, the strategy `npu-select-conv-strategy` chose."""

from __future__ import annotations

import math

import numpy as np
from mlir import ir
from mlir.dialects import linalg

from ..dialects import npu
from .absorbed import output_init_or_bias, window_input
from .requantize import with_requantize
from .problem import (RESIDENT_ATTR, LoopDim, OperandTile, Recipe, Strided, Tiled, TilingProblem,
                      Whole, Window, built_op, copy_npu_attributes, element_bytes,
                      with_fp32_accumulator, conv_strategy, has_identity_layout, matrix_cycles,
                      ints, ins_outs, optional_attr, root_buffer, static_shape, type_name,
                      vector_cycles)
from .matmul import check_matrix_types
from .prologue import fold_prologue, input_prologue
from .sram_ops import (accumulation_start, dataflow_of, epilogue, in_sram, scratch, sram_buffer,
                       strip_casts, view_sizes)
from .tile_ir import collapse_to_matrix, collapse_view_to_matrix, mul, subview

def is_resident_slice(view: ir.Value) -> bool:
    """A strided view (a channel slice) of a tensor kept in SRAM, which the op
    reads in place (problem.pixels_collapse_to_rows); the tensor may be a
    reshape of the buffer kept (a channel shuffle's collapse_shape)."""
    root = root_buffer(view)
    return isinstance(root, ir.OpResult) and RESIDENT_ATTR in root.owner.attributes \
        and not has_identity_layout(strip_casts(view))


def conv_problem(op, target) -> TilingProblem:
    (image, weights), (out,) = ins_outs(op)
    strides = ints(optional_attr(op, "strides"), (1, 1))
    dilations = ints(optional_attr(op, "dilations"), (1, 1))
    source, low, high, pad, absorbed = window_input(op, image, "input")
    # An elementwise op writing the (unpadded) input: applied to its tiles in SRAM.
    prologue = input_prologue(op, image, target) if source == image else None
    if prologue is not None:
        source = prologue.source
    batch, height, width, channels = static_shape(source, "input")
    kh, kw, _, filters = static_shape(weights, "filter")
    _, oh, ow, _ = static_shape(out, "output")
    check_matrix_types(image, weights, out)
    int8 = type_name(image) == "i8"
    strategy = conv_strategy(op)
    if strategy == "implicit-gemm" and (kh, kw) == (1, 1) and not any(low + high):
        image_region = (Tiled(0), Strided(1, strides[0]), Strided(2, strides[1]), Tiled(4))
    else:
        strategy = "im2col" if strategy == "im2col" else "direct"
        image_region = (Tiled(0),
                        Window(1, strides[0], dilations[0], kh, low[1], height),
                        Window(2, strides[1], dilations[1], kw, low[2], width), Tiled(4))
    dims = [LoopDim("n", batch, candidates="one"), LoopDim("oh", oh, candidates="rows"),
            LoopDim("ow", ow, candidates="full"), LoopDim("f", filters),
            LoopDim("c", channels, True, candidates="full" if strategy == "im2col" else "array")]
    operands = [OperandTile("input", source, image_region, pad_value=pad),
                OperandTile("filter", weights, (Whole(kh), Whole(kw), Tiled(4), Tiled(3))),
                OperandTile("output", out, (Tiled(0), Tiled(1), Tiled(2), Tiled(3)),
                            is_output=True)]

    def gemm(t):   # output pixels x filters = (pixels x K) * (K x filters)
        return t[0] * t[1] * t[2], t[3], kh * kw * t[4], int8

    matrix = matrix_cycles(gemm, target)

    def with_prologue(t, cycles):
        """A folded prologue runs on the vector unit beside the matmul of the
        tile before (npu_promote_pipeline): the longer of the two."""
        if prologue is None:
            return cycles
        return np.maximum(cycles, prologue.cycles(math.prod(operands[0].extents(t)), target))

    def cycles(t):
        if strategy != "im2col":
            return with_prologue(t, matrix(t))
        pixels, _, k, _ = gemm(t)   # and the columns built on the vector unit
        return with_prologue(t, matrix(t) + vector_cycles(pixels * k, target))

    def temporaries(t):
        constants = len(prologue.constants()) * target.sram_alignment if prologue else 0
        if strategy != "im2col":
            return constants
        return t[0] * t[1] * t[2] * kh * kw * t[4] * element_bytes(operands[0].element_type) \
            + constants

    problem = TilingProblem(op, CONV2D, dims, operands, cycles, temporaries,
                            {"strides": strides, "dilations": dilations, "kernel": (kh, kw),
                             "strategy": strategy, "gemm": gemm})
    problem.absorbed_ops += absorbed
    if prologue is not None:
        fold_prologue(problem, prologue)
    return with_requantize(
        output_init_or_bias(with_fp32_accumulator(problem, target.pipeline_stages), 3,
                            fold_bias=target.fusion >= 1), 3, target)


class Conv2dRecipe(Recipe):
    name = "conv2d"
    ops = ("linalg.conv_2d_nhwc_hwcf",)
    matrix_unit = True
    accumulates = True

    def problem(self, op, target) -> TilingProblem:
        return conv_problem(op, target)

    def reads_output(self, problem) -> bool:
        return not problem.starts_output

    def loop_positions(self, problem) -> tuple[int, list[int]]:
        return 7, [0, 1, 2, 3, 6]  # (n, oh, ow, f, kh, kw, c)

    def build_on_tiles(self, op, inputs, out):
        linalg.conv_2d_nhwc_hwcf(*inputs, outs=[out],
                                 strides=ints(optional_attr(op, "strides"), (1, 1)),
                                 dilations=ints(optional_attr(op, "dilations"), (1, 1)))
        built = built_op(out)
        copy_npu_attributes(op, built)
        return built

    def on_sram_tiles(self, compute, problem) -> None:
        if any(isinstance(part, Strided) for part in problem.operand("input").region):
            # The DMA loaded every stride-th pixel: the tile is read densely.
            compute.attributes["strides"] = ir.DenseElementsAttr.get(
                np.ones(2, dtype=np.int64))
            if "linalg.memoized_indexing_maps" in compute.attributes:
                del compute.attributes["linalg.memoized_indexing_maps"]

    def rewrite(self, op, rewriter):
        image, weights, out = op.operation.operands
        if not in_sram(out):
            return True
        check_matrix_types(image, weights, out)
        strategy = conv_strategy(op)
        strides = ints(optional_attr(op, "strides"), (1, 1))
        dilations = ints(optional_attr(op, "dilations"), (1, 1))
        activation, clip_min, clip_max = epilogue(op)
        with rewriter.ip, op.location:
            accumulate, bias = accumulation_start(op, out, rewriter)
            if strategy == "direct":
                npu.Conv2dOp(image, weights, out, strides, dilations, accumulate, activation,
                             bias=bias, clip_min=clip_min, clip_max=clip_max,
                             dataflow=dataflow_of(op))
                rewriter.erase_op(op.operation)
                return None
            # GEMM forms: output pixels x filters = (pixels x K) * (K x filters).
            out_sizes, weight_sizes = view_sizes(out), view_sizes(weights)
            pixels = mul(mul(out_sizes[0], out_sizes[1]), out_sizes[2])
            filters, channels = out_sizes[3], weight_sizes[2]
            kh, kw = weight_sizes[0], weight_sizes[1]
            if is_resident_slice(out):   # an image of a batch kept in SRAM, written in place
                out_matrix = collapse_view_to_matrix(strip_casts(out), 3)
            else:
                out_matrix = subview(collapse_to_matrix(sram_buffer(out), 3), [0, 0],
                                     [pixels, filters])
            weight_matrix = subview(collapse_to_matrix(sram_buffer(weights), 3), [0, 0],
                                    [mul(kh * kw, channels), filters])
            if strategy == "im2col":
                buffer_shape = ir.MemRefType(sram_buffer(out).type).shape
                filter_shape = ir.MemRefType(sram_buffer(weights).type).shape
                columns = scratch(op, [math.prod(buffer_shape[:3]), kh * kw * filter_shape[2]],
                                  ir.MemRefType(image.type).element_type)
                columns = subview(columns, [0, 0], [pixels, mul(kh * kw, channels)])
                npu.Im2colOp(image, columns, [kh, kw], strides, dilations)
            elif is_resident_slice(image):   # a channel slice, read with its row stride
                columns = collapse_view_to_matrix(strip_casts(image), 3)
            else:  # implicit GEMM: a 1x1 conv's input tile is already the GEMM's lhs
                columns = subview(collapse_to_matrix(sram_buffer(image), 3), [0, 0],
                                  [pixels, channels])
            npu.MatmulOp(columns, weight_matrix, out_matrix, accumulate, activation,
                         bias=bias, clip_min=clip_min, clip_max=clip_max,
                         dataflow=dataflow_of(op))
        rewriter.erase_op(op.operation)


CONV2D = Conv2dRecipe()
