"""npu-sink-channel-shuffles: a channel shuffle before a strided depthwise
convolution moves below it, onto the smaller result.

ShuffleNet's channel shuffle (reshape, transpose, reshape) is, in NHWC, an
expand_shape splitting the channels into groups, a transpose of the two
channel dims and a collapse_shape: a permutation s of the channels,
shuffled[..., c] = x[..., s(c)]. A depthwise convolution works channel by
channel, so it commutes with the permutation once its weights and bias are
permuted the other way (constants, permuted at compile time):

    dw(shuffle(x), W, b) = shuffle(dw(x, W', b')),   W'[..., s(c)] = W[..., c]

(a constant padding of the rows and columns between them moves with it). At a
stride the convolution's result is smaller than its input: the shuffle then
transposes a quarter of the bytes (stride 2), and the large tensor is read
where its producer wrote it instead of being transposed into a second one.
At stride 1 nothing shrinks and the shuffle stays, as it does when the
weights or bias are no float constants per channel or the padding's value
depends on the element; each decision is a remark.

Runs on tensors, after npu-fold-transposes, at every fusion level.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import tensor

from ..frontend.builders import constant_tensor
from ..recipes.ir_queries import made_by
from ..recipes.problem import ints
from . import ModulePass, PassContext, erase_if_unused, ops_where, tensor_bytes
from .cascade_chains import constant_padding, read_only_by
from .npu_convert_layout import transposed
from .npu_pool_before_conv import channel_bias, constant_array
from ..frontend.builders import reassociation_attr
from .layout_moves import reassociation, static_shaped

SPLIT_CHANNELS = [[0], [1], [2], [3, 4]]


@dataclass
class Shuffle:
    """A channel shuffle read only by a depthwise conv (through a pad)."""
    expand: ir.Operation
    transpose: ir.Operation
    collapse: ir.Operation
    pad: ir.Operation | None

    @property
    def source(self) -> ir.Value:
        return self.expand.operands[0]

    @property
    def groups(self) -> list[int]:
        """The channel dims the expand splits the channels into."""
        return ir.RankedTensorType(self.expand.results[0].type).shape[3:]

    def source_channel(self) -> np.ndarray:
        """s: channel c of the shuffled tensor is channel s[c] of its source."""
        return np.arange(math.prod(self.groups)).reshape(self.groups).transpose().reshape(-1)


def shuffle_read_by(conv) -> Shuffle | None:
    """The channel shuffle `conv` reads (through a padding of rows and
    columns), read by nothing else; else None."""
    value, pad = conv.operands[0], None
    padded = made_by(value, "tensor.pad")
    if padded is not None:
        low, high = ints(padded.attributes["static_low"], []), \
            ints(padded.attributes["static_high"], [])
        if len(padded.operands) != 1 or low[3] or high[3] or not read_only_by(value, conv):
            return None
        pad, value = padded, padded.operands[0]
    collapse = made_by(value, "tensor.collapse_shape")
    if collapse is None or not read_only_by(value, pad or conv) \
            or reassociation(collapse) != SPLIT_CHANNELS:
        return None
    shuffle = made_by(collapse.operands[0], "linalg.transpose")
    if shuffle is None or not read_only_by(shuffle.results[0], collapse) \
            or ints(shuffle.attributes["permutation"], []) != [0, 1, 2, 4, 3]:
        return None
    expand = made_by(shuffle.operands[0], "tensor.expand_shape")
    if expand is None or not read_only_by(expand.results[0], shuffle) \
            or reassociation(expand) != SPLIT_CHANNELS \
            or not static_shaped(expand.operands[0], conv.results[0]):
        return None
    return Shuffle(expand, shuffle, collapse, pad)


def permuted_constants(conv, source_channel: np.ndarray):
    """(weights, bias broadcast or None) of `conv` with channel s[c] taking
    channel c's, or the reason they cannot be."""
    weights = constant_array(conv.operands[1])
    if weights is None:
        return "its weights are no float constant it can permute"
    inverse = np.argsort(source_channel)
    init = conv.operands[2]
    broadcast = made_by(init, "linalg.broadcast")
    if broadcast is not None:
        bias = channel_bias(broadcast)
        if bias is None or not read_only_by(init, conv):
            return "its bias is no float constant per channel it can permute"
        return weights[..., inverse], (broadcast, bias[inverse])
    if made_by(init, "linalg.fill") is None and made_by(init, "tensor.empty") is None:
        return "it starts from a tensor other than a bias"
    return weights[..., inverse], None


def sink(conv, shuffle: Shuffle, weights: np.ndarray, bias) -> None:
    """Rewrite dw(shuffle(x)) as shuffle(dw'(x))."""
    reader = shuffle.pad or conv
    reader.operands[0] = shuffle.source
    with conv.location, ir.InsertionPoint(conv):
        conv.operands[1] = constant_tensor(weights)
    if bias is not None:
        broadcast, values = bias
        with broadcast.location, ir.InsertionPoint(broadcast):
            broadcast.operands[0] = constant_tensor(values)
    result = conv.results[0]
    result_type = ir.RankedTensorType(result.type)
    split = result_type.shape[:3] + shuffle.groups
    with conv.location, ir.InsertionPoint.after(conv):
        expanded = tensor.ExpandShapeOp(
            ir.RankedTensorType.get(split, result_type.element_type), result,
            reassociation_attr(SPLIT_CHANNELS), [], split).result
        swapped = transposed(expanded, [0, 1, 2, 4, 3])
        back = tensor.CollapseShapeOp(result_type, swapped,
                                      reassociation_attr(SPLIT_CHANNELS)).result
    result.replace_all_uses_except(back, expanded.owner.operation)
    init = shuffle.transpose.operands[1]
    for op in (shuffle.collapse, shuffle.transpose, shuffle.expand):
        op.erase()
    erase_if_unused(init)


@dataclass(frozen=True)
class NpuSinkChannelShuffles(ModulePass):
    argument = "npu-sink-channel-shuffles"
    summary = "Move a channel shuffle below the strided depthwise conv reading it " \
              "(its weights permuted at compile time)"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            for conv in ops_where(module,
                                  lambda op: op.name == "linalg.depthwise_conv_2d_nhwc_hwc"):
                shuffle = shuffle_read_by(conv)
                if shuffle is None:
                    continue
                before = tensor_bytes(shuffle.source)
                after = tensor_bytes(conv.results[0])
                what = f"channel shuffle of the {before} B tensor"
                if after >= before:
                    context.diagnostics.remark(
                        conv.location, f"{what} stays above the depthwise conv: its "
                                       f"{after} B result is no smaller")
                    continue
                if shuffle.pad is not None and not constant_padding(shuffle.pad):
                    context.diagnostics.remark(
                        conv.location, f"{what} stays above the depthwise conv: the padding "
                                       f"between them is computed per element")
                    continue
                found = permuted_constants(conv, shuffle.source_channel())
                if isinstance(found, str):
                    context.diagnostics.remark(
                        conv.location, f"{what} stays above the depthwise conv: {found}")
                    continue
                sink(conv, shuffle, *found)
                context.diagnostics.remark(
                    conv.location, f"{what} moves below the depthwise conv, its weights and "
                                   f"bias permuted at compile time: it shuffles the {after} B "
                                   f"result instead")
