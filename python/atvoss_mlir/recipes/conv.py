"""Convolution on the matrix unit: linalg.conv_2d_nhwc_hwcf as npu.conv2d
(direct), as npu.matmul on the input tile (implicit GEMM, 1x1 kernels) or as
npu.im2col + npu.matmul, the strategy `npu-select-conv-strategy` chose."""

from __future__ import annotations

from mlir import ir

from ..dialects import npu
from .absorbed import output_init, window_input
from .problem import (STRATEGY_ATTR, LoopDim, OperandTile, Recipe, Strided, Tiled, TilingProblem,
                      Whole, Window, element_bytes, gemm_cycles, ints, ins_outs, optional_attr,
                      static_shape, type_name, vector_cycles)
from .matmul import check_matrix_types
from .tile_ir import collapse_to_matrix, mul, subview

def conv_strategy(op) -> str:
    attribute = optional_attr(op, STRATEGY_ATTR)
    return ir.StringAttr(attribute).value if attribute is not None else "direct"


def conv_problem(op, target) -> TilingProblem:
    (image, weights), (out,) = ins_outs(op)
    strides = ints(optional_attr(op, "strides"), (1, 1))
    dilations = ints(optional_attr(op, "dilations"), (1, 1))
    source, low, high, pad, absorbed = window_input(op, image, "input")
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

    def cycles(t):
        pixels = t[0] * t[1] * t[2]
        matrix = gemm_cycles(pixels, t[3], kh * kw * t[4], target, int8)
        if strategy == "im2col":
            matrix += vector_cycles(pixels * kh * kw * t[4], target)
        return matrix

    def temporaries(t):
        if strategy != "im2col":
            return 0
        return t[0] * t[1] * t[2] * kh * kw * t[4] * element_bytes(operands[0].element_type)

    problem = TilingProblem(op, CONV2D, dims, operands, cycles, temporaries,
                            {"strides": strides, "dilations": dilations, "kernel": (kh, kw),
                             "strategy": strategy})
    problem.absorbed_ops += absorbed
    return output_init(problem)


class Conv2dRecipe(Recipe):
    name = "conv2d"
    ops = ("linalg.conv_2d_nhwc_hwcf",)
    matrix_unit = True

    def problem(self, op, target) -> TilingProblem:
        return conv_problem(op, target)

    def reads_output(self, problem) -> bool:
        return problem.init_value is None

    def allocate_temporaries(self, program) -> None:
        details = program.problem.details
        if details["strategy"] == "im2col":
            kh, kw = details["kernel"]
            tiles = program.tiles
            program.columns = program.alloc([tiles[0] * tiles[1] * tiles[2], kh * kw * tiles[4]],
                                            program.problem.operand("input").element_type)

    def emit(self, program, t, index, out, first, last) -> None:
        details = program.problem.details
        strategy = details["strategy"]
        accumulate = program.accumulates(first)
        activation, clip_min, clip_max = program.epilogue(last)
        image = program.compute_view("input", t, index)
        if strategy == "direct":
            npu.Conv2dOp(image, program.compute_view("filter", t, index), out,
                         details["strides"], details["dilations"], accumulate, activation,
                         clip_min=clip_min, clip_max=clip_max)
            return
        # GEMM forms: output pixels x filters = (pixels x K) * (K x filters).
        pixels = mul(mul(index.sizes[0], index.sizes[1]), index.sizes[2])
        filters, channels = index.sizes[3], index.sizes[4]
        kh, kw = details["kernel"]
        out_matrix = subview(collapse_to_matrix(program.buffer("output", t), 3), [0, 0],
                             [pixels, filters])
        weights = subview(collapse_to_matrix(program.buffer("filter", t), 3), [0, 0],
                          [mul(kh * kw, channels), filters])
        if strategy == "im2col":
            columns = subview(program.columns, [0, 0], [pixels, mul(kh * kw, channels)])
            npu.Im2colOp(image, columns, [kh, kw], details["strides"], details["dilations"])
        else:  # implicit GEMM: a 1x1 conv's input tile is already the GEMM's lhs
            columns = subview(collapse_to_matrix(program.buffer("input", t), 3), [0, 0],
                              [pixels, channels])
        npu.MatmulOp(columns, weights, out_matrix, accumulate, activation,
                     clip_min=clip_min, clip_max=clip_max)


CONV2D = Conv2dRecipe()
