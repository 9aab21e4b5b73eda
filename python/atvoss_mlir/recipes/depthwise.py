"""Depthwise convolution on the vector unit: linalg.depthwise_conv_2d_nhwc_hwc
as npu.depthwise_conv2d, with a broadcast per-channel bias as its bias operand."""

from __future__ import annotations

from ..dialects import npu
from .absorbed import output_init_or_bias, overwriting_output, window_input
from .sram_ops import accumulation_start, epilogue, in_sram
from .problem import (VECTOR_TYPES, LoopDim, OperandTile, Recipe, Tiled, TilingProblem,
                      Unsupported, Whole, Window, ins_outs, ints, optional_attr, static_shape,
                      type_name, vector_cycles)

def depthwise_problem(op, target) -> TilingProblem:
    (image, weights), (out,) = ins_outs(op)
    strides = ints(optional_attr(op, "strides"), (1, 1))
    dilations = ints(optional_attr(op, "dilations"), (1, 1))
    source, low, high, pad, absorbed = window_input(op, image, "input")
    batch, height, width, channels = static_shape(source, "input")
    kh, kw, _ = static_shape(weights, "filter")
    _, oh, ow, _ = static_shape(out, "output")
    types = {type_name(image), type_name(weights), type_name(out)}
    if len(types) != 1 or types.pop() not in VECTOR_TYPES:
        raise Unsupported("the vector unit runs depthwise convolutions with one element type "
                          "for input, filter and output")
    dims = [LoopDim("n", batch, candidates="one"), LoopDim("oh", oh, candidates="rows"),
            LoopDim("ow", ow, candidates="full"), LoopDim("c", channels)]
    operands = [OperandTile("input", source,
                            (Tiled(0), Window(1, strides[0], dilations[0], kh, low[1], height),
                             Window(2, strides[1], dilations[1], kw, low[2], width), Tiled(3)),
                            pad_value=pad),
                OperandTile("filter", weights, (Whole(kh), Whole(kw), Tiled(3))),
                OperandTile("output", out, (Tiled(0), Tiled(1), Tiled(2), Tiled(3)),
                            is_output=True)]
    problem = TilingProblem(
        op, DEPTHWISE, dims, operands,
        lambda t: vector_cycles(t[0] * t[1] * t[2] * t[3], target, kh * kw),
        details={"strides": strides, "dilations": dilations})
    problem.absorbed_ops += absorbed
    # A broadcast bias the output starts as: npu.depthwise_conv2d adds it.
    problem = output_init_or_bias(problem, 3)
    if any(operand.role == "bias" for operand in problem.operands):
        return problem
    return overwriting_output(problem, 0.0)


class DepthwiseRecipe(Recipe):
    name = "depthwise_conv2d"
    ops = ("linalg.depthwise_conv_2d_nhwc_hwc",)

    def problem(self, op, target) -> TilingProblem:
        return depthwise_problem(op, target)

    def loop_positions(self, problem) -> tuple[int, list[int]]:
        return 6, [0, 1, 2, 3]  # (n, oh, ow, c, kh, kw)

    def rewrite(self, op, rewriter):
        image, weights, out = op.operation.operands
        if not in_sram(out):
            return True
        with rewriter.ip, op.location:
            # A broadcast bias becomes the op's bias; a zero fill (the only one
            # overwriting_output lets through) is its own start.
            _, bias = accumulation_start(op, out, rewriter)
            activation, clip_min, clip_max = epilogue(op)
            npu.DepthwiseConv2dOp(image, weights, out,
                                  ints(optional_attr(op, "strides"), (1, 1)),
                                  ints(optional_attr(op, "dilations"), (1, 1)), activation,
                                  bias=bias, clip_min=clip_min, clip_max=clip_max)
        rewriter.erase_op(op.operation)


DEPTHWISE = DepthwiseRecipe()
