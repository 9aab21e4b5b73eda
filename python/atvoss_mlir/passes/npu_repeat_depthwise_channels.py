"""npu-repeat-depthwise-channels: a depthwise conv with a channel multiplier
as a depthwise conv over its input's channels repeated.

Runs on tensors, first in the pipeline. A depthwise conv with a channel
multiplier M (`linalg.depthwise_conv_2d_nhwc_hwcm`: ONNX's Conv with
`group` = input channels and M times as many filters) filters each input
channel with M filters. The NPU's depthwise conv filters each channel with
one, so the op ran on the scalar fallback engine. Output channel c * M + m is
input channel c filtered by filter (c, m): with each input channel repeated M
times (c * M + m reads channel c: a copy on the vector unit), it is an
ordinary depthwise conv over C * M channels whose filters are the M filters
of each channel in that order (a reshape of the weights, folded at compile
time for a constant). Its result, reshaped to [N, H, W, C, M], replaces the
original's. A padded input is repeated before its padding, which the conv
then folds into its loads as before. Each rewrite is a remark at the conv; a
conv of dynamic shape stays, with a remark saying why.

    %r = linalg.depthwise_conv_2d_nhwc_hwcm ins(%x, %w : tensor<1x9x9x8xf32>, tensor<3x3x8x2xf32>)
becomes
    %rep = linalg.generic ins(%x : tensor<1x9x9x8xf32>) -> tensor<1x9x9x8x2xf32>  // repeat
    %d = linalg.depthwise_conv_2d_nhwc_hwc ins(%rep', %w' : tensor<1x9x9x16xf32>, tensor<3x3x16xf32>)
    %r = tensor.expand_shape %d ... -> tensor<1x7x7x8x2xf32>
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from ..frontend.builders import (element_of, empty, fill, generic, pad, reshape, result_of,
                                 shape_of)
from ..recipes.ir_queries import constant_value, ints
from . import ModulePass, PassContext, erase_if_unused, ops_where
from .cascade_chains import padding_value

MULTIPLIER_CONV = "linalg.depthwise_conv_2d_nhwc_hwcm"


def channel_padding(image: ir.Value):
    """(source, low, high, padding value) when `image` is a tensor.pad of
    constant value over N, H and W only (the channels stay): the repeat goes
    before it. None otherwise."""
    if not isinstance(image, ir.OpResult) or image.owner.name != "tensor.pad":
        return None
    op = image.owner
    if len(op.operands) != 1:  # dynamic low / high
        return None
    low, high = ints(op.attributes["static_low"], []), ints(op.attributes["static_high"], [])
    value = constant_value(padding_value(op))
    if value is None or low[3] or high[3]:
        return None
    return op.operands[0], low, high, value


def flat_init(init: ir.Value, shape) -> ir.Value:
    """The conv's start at `shape`: a fill of the same value where it is one (the
    depthwise recipe folds a fill, not a reshape of one), else a reshape."""
    if isinstance(init, ir.OpResult) and init.owner.name == "linalg.fill":
        value = constant_value(init.owner.operands[0])
        if value is not None:
            return result_of(fill(value, shape, element_of(init)))
    return reshape(init, shape)


def repeated(image: ir.Value, multiplier: int) -> ir.Value:
    """`image` [N, H, W, C] with each channel repeated `multiplier` times in a
    row: [N, H, W, C * multiplier]."""
    n, h, w, c = shape_of(image)
    each = ir.AffineMap.get(5, 0, [ir.AffineDimExpr.get(d) for d in range(4)])
    copies = generic([image], [each], empty([n, h, w, c, multiplier], element_of(image)),
                     ir.AffineMap.get_identity(5), ["parallel"] * 5, lambda args: args[0])
    return reshape(copies, [n, h, w, c * multiplier])


@dataclass(frozen=True)
class NpuRepeatDepthwiseChannels(ModulePass):
    argument = "npu-repeat-depthwise-channels"
    summary = "A depthwise conv with a channel multiplier as a depthwise conv over " \
              "repeated channels"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            for op in ops_where(module, lambda op: op.name == MULTIPLIER_CONV):
                if any(not ir.ShapedType(v.type).has_static_shape for v in op.operands):
                    context.diagnostics.remark(
                        op.location, "the depthwise conv with a channel multiplier stays on "
                                     "the fallback engine: its shapes are not static")
                    continue
                self.rewrite(op, context)

    @staticmethod
    def rewrite(op, context: PassContext) -> None:
        image, weights, init = op.operands
        n, oh, ow, channels, multiplier = shape_of(init)
        kh, kw = shape_of(weights)[:2]
        filters = channels * multiplier
        with ir.InsertionPoint(op), op.location:
            padded = channel_padding(image)
            if padded is None:
                source = repeated(image, multiplier)
            else:
                inner, low, high, value = padded
                source = pad(repeated(inner, multiplier), low, high, value)
            conv = linalg.depthwise_conv_2d_nhwc_hwc(
                source, reshape(weights, [kh, kw, filters]),
                outs=[flat_init(init, [n, oh, ow, filters])],
                strides=ir.DenseIntElementsAttr(op.attributes["strides"]),
                dilations=ir.DenseIntElementsAttr(op.attributes["dilations"]))
            result = reshape(conv, [n, oh, ow, channels, multiplier])
        context.diagnostics.remark(
            op.location, f"depthwise conv with channel multiplier {multiplier}: each of its "
                         f"{channels} input channels repeated {multiplier} times, filtered by a "
                         f"depthwise conv over {filters} channels")
        op.results[0].replace_all_uses_with(result)
        op.erase()
        if padded is not None and not list(image.uses):
            image.owner.erase()
        erase_if_unused(init)
