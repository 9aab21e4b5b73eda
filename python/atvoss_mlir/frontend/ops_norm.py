"""Normalization: BatchNormalization, LayerNormalization and LRN."""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, math

from . import builders as b
from .handler_api import ImportFailure, folds, handles, normalized_axis


# -- normalization -------------------------------------------------------------------------

def _per_channel(array, rank):
    """A (C,) parameter shaped to broadcast against (N, C, ...)."""
    return np.ascontiguousarray(array.reshape([-1] + [1] * (rank - 2)))


def _check_per_channel(node, channels: int, shape: list, params: list) -> None:
    """Scale, bias, mean and variance: one value per channel of the input."""
    for number, (name, param) in enumerate(zip(("scale", "B", "mean", "var"), params), 1):
        found = list(param.shape) if param is not None else b.shape_of(node.value(number))
        if len(found) != 1 or (channels >= 0 and found[0] >= 0 and found[0] != channels):
            raise ImportFailure(f"{name} has shape {found}, not [{channels}] (one per channel "
                                f"of the {shape} input)")


@folds("BatchNormalization")
def fold_batch_normalization(node, inputs):
    """Of constants: numpy. NF-ResNet's weight standardisation normalises a
    conv's weights so, in training mode: by their own mean and variance."""
    x, params = inputs[0], inputs[1:5]
    if x.dtype.kind != "f" or node.attr("spatial", 1) != 1 or len(params) != 4:
        return None
    if x.ndim < 2:
        raise ImportFailure(f"expects an input of rank 2 or more (N, C, ...), not {list(x.shape)}")
    _check_per_channel(node, x.shape[1], list(x.shape), params)
    scale, shift, mean, variance = (p.astype(np.float64) for p in params)
    training = bool(node.attr("training_mode", 0))
    wide = x.astype(np.float64)
    if training:   # the statistics of the batch itself (the variance of the population)
        others = tuple(d for d in range(x.ndim) if d != 1)
        used_mean, used_variance = wide.mean(axis=others), wide.var(axis=others)
    else:
        used_mean, used_variance = mean, variance
    factor = scale / np.sqrt(used_variance + node.attr("epsilon", 1e-5))
    y = wide * _per_channel(factor, x.ndim) + _per_channel(shift - used_mean * factor, x.ndim)
    outputs = [y.astype(x.dtype)]
    if training:   # the running statistics
        momentum = node.attr("momentum", 0.9)
        outputs += [(mean * momentum + used_mean * (1 - momentum)).astype(params[2].dtype),
                    (variance * momentum + used_variance * (1 - momentum)).astype(params[3].dtype)]
    return outputs[:len(node.proto.output)]


@handles("BatchNormalization")
def batch_normalization(node):
    if node.attr("training_mode", 0):
        raise node.unsupported("training_mode=1")
    if any(name for name in node.proto.output[1:]):
        raise node.unsupported("the running statistics outputs (training)")
    x = node.value(0)
    shape = b.shape_of(x)
    rank = len(shape)
    if rank < 2:
        raise ImportFailure(f"expects an input of rank 2 or more (N, C, ...), not {shape}")
    epsilon = node.attr("epsilon", 1e-5)
    params = [node.constant(i) for i in range(1, 5)]
    _check_per_channel(node, shape[1], shape, params)
    if all(p is not None for p in params):  # inference: y = x * scale' + shift'
        scale, shift, mean, variance = (p.astype(np.float64) for p in params)
        factor = scale / np.sqrt(variance + epsilon)
        offset = shift - mean * factor
        dtype = params[0].dtype
        factor = node.weight(_per_channel(factor.astype(dtype), rank), "scale")
        offset = node.weight(_per_channel(offset.astype(dtype), rank), "shift")
        return [b.elementwise([x, factor, offset],
                              lambda a: arith.addf(arith.mulf(a[0], a[1]), a[2]))]
    values = [node.value(i) for i in range(1, 5)]
    values = [b.reshape(v, [b.shape_of(v)[0]] + [1] * (rank - 2)) for v in values]

    def body(a):
        x_, scale, shift, mean, variance = a
        normalized = arith.divf(arith.subf(x_, mean),
                                math.sqrt(arith.addf(variance, b.const_like(epsilon, x_))))
        return arith.addf(arith.mulf(normalized, scale), shift)
    return [b.elementwise([x] + values, body)]


@handles("LayerNormalization")
def layer_normalization(node):
    x = node.value(0)
    shape = b.shape_of(x)
    axis = normalized_axis(node.attr("axis", -1), len(shape))
    axes = list(range(axis, len(shape)))
    epsilon = node.attr("epsilon", 1e-5)
    count = float(np.prod(shape[axis:]))
    element_type = b.element_of(x)
    # stash_type 1 (the default) computes in f32: f16 squares and their sums
    # overflow for activations of a few hundred.
    wide = isinstance(element_type, ir.F16Type) and node.attr("stash_type", 1) == 1
    parameters = [node.value(1)] + ([node.value(2)] if node.has_input(2) else [])
    if wide:  # conversions on their own: the vector unit has no mixed-type bodies
        f32 = ir.F32Type.get()
        x, *parameters = [b.elementwise([v], lambda a: arith.extf(f32, a[0]), f32)
                          for v in [x] + parameters]
    mean = _mean(x, axes, count)
    centered = b.elementwise([x, mean], lambda a: arith.subf(a[0], a[1]))
    squares = b.elementwise([centered], lambda a: arith.mulf(a[0], a[0]))
    variance = _mean(squares, axes, count)
    inverse = b.elementwise([variance], lambda a: math.rsqrt(
        arith.addf(a[0], b.const_like(epsilon, a[0]))))

    def body(a):
        y = arith.mulf(arith.mulf(a[0], a[1]), a[2])
        return arith.addf(y, a[3]) if len(a) > 3 else y
    result = b.elementwise([centered, inverse] + parameters, body)
    if wide:
        result = b.elementwise([result], lambda a: arith.truncf(element_type, a[0]),
                               element_type)
    return [result, mean, inverse]


def _mean(x, axes, count):
    total = b.reduce_keepdims(x, axes, 0.0, arith.addf)
    return b.elementwise([total], lambda a: arith.divf(a[0], b.const_like(count, a[0])))


@handles("LRN")
def lrn(node):
    """x / (bias + alpha / size * (sum of x^2 over `size` channels))^beta. The
    window sum squares and adds `size` channel-shifted slices of the
    zero-padded input, x being the middle slice: the squares are never a
    tensor of their own, and every input is a slice of one buffer, which
    npu-share-input-windows reads once per tile and x's producer writes
    padded (npu-pad-in-place). A graph input has no producer to write it
    padded: its squares are padded instead. x is multiplied by the base to
    the power -beta (`_times_negative_power`). Every step is elementwise: the
    vector unit runs it."""
    size = node.attr("size")
    alpha, beta, bias = node.attr("alpha", 1e-4), node.attr("beta", 0.75), node.attr("bias", 1.0)
    x = node.value(0)
    shape = b.shape_of(x)
    rank = len(shape)
    before = (size - 1) // 2
    squared = isinstance(x, ir.BlockArgument)
    source = b.elementwise([x], lambda a: arith.mulf(a[0], a[0])) if squared else x
    padded = b.pad(source, [0, before] + [0] * (rank - 2),
                   [0, size - 1 - before] + [0] * (rank - 2), 0.0)
    window = [b.extract_slice(padded, [0, k] + [0] * (rank - 2), shape) for k in range(size)]

    def square(value):
        return value if squared else arith.mulf(value, value)

    def total(a):
        result = square(a[0])
        for term in a[1:]:
            result = arith.addf(result, square(term))
        return result
    sums = b.elementwise(window, total)
    x = x if squared else window[before]

    def body(a):
        scaled = arith.addf(b.const_like(bias, a[0]),
                            arith.mulf(b.const_like(alpha / size, a[0]), a[1]))
        return _times_negative_power(a[0], scaled, beta)
    return [b.elementwise([x, sums], body)]


def _times_negative_power(x, base, beta: float):
    """x * base ** -beta for a positive base (NaN for a negative one, inf at 0,
    as x / powf(base, beta) gives), in the fewest vector passes: at the usual
    beta = 0.75 x * r * sqrt(r) with r = rsqrt(base), 10 passes against the 21
    of a division by exp(beta * log(base))."""
    if beta == 0:
        return x
    if beta == 1:
        return arith.divf(x, base)
    if beta == 0.5:
        return arith.mulf(x, math.rsqrt(base))
    if beta == 0.75:
        inverse_root = math.rsqrt(base)
        return arith.mulf(arith.mulf(x, inverse_root), math.sqrt(inverse_root))
    return arith.mulf(x, math.exp(arith.mulf(b.const_like(-beta, base), math.log(base))))


# -- instance, group, RMS, Lp and mean-variance normalization --------------------------------

def _standardized(x, axes, epsilon):
    """(x - mean) / sqrt(variance + epsilon) over `axes` (kept as unit dims)."""
    shape = b.shape_of(x)
    count = float(np.prod([shape[a] for a in axes]))
    centered = b.elementwise([x, _mean(x, axes, count)], lambda a: arith.subf(a[0], a[1]))
    variance = _mean(b.elementwise([centered], lambda a: arith.mulf(a[0], a[0])), axes, count)
    inverse = b.elementwise([variance], lambda a: math.rsqrt(
        arith.addf(a[0], b.const_like(epsilon, a[0]))))
    return b.elementwise([centered, inverse], lambda a: arith.mulf(a[0], a[1]))


def _scale_shift(y, scale, shift):
    inputs = [y, scale] + ([shift] if shift is not None else [])

    def body(a):
        result = arith.mulf(a[0], a[1])
        return arith.addf(result, a[2]) if len(a) > 2 else result
    return b.elementwise(inputs, body)


def _channel_parameter(node, index, rank, channels=None):
    """A per-channel (C,) input shaped (C, 1, ...) to broadcast against NC..."""
    value = node.constant(index)
    if value is not None:
        if channels is not None and value.size != channels:
            value = np.repeat(value.reshape(-1), channels // value.size)
        return node.weight(_per_channel(value, rank), f"input{index}")
    value = node.value(index)
    if channels is not None and b.shape_of(value)[0] != channels:
        raise node.unsupported("per-group scale and bias that are not constants")
    return b.reshape(value, [b.shape_of(value)[0]] + [1] * (rank - 2))


@handles("InstanceNormalization")
def instance_normalization(node):
    x = node.value(0)
    rank = len(b.shape_of(x))
    y = _standardized(x, list(range(2, rank)), node.attr("epsilon", 1e-5))
    return [_scale_shift(y, _channel_parameter(node, 1, rank),
                         _channel_parameter(node, 2, rank))]


@handles("GroupNormalization")
def group_normalization(node):
    """Opset 18 has one scale and bias per group, opset 21 one per channel."""
    x = node.value(0)
    shape = b.shape_of(x)
    groups = node.attr("num_groups")
    if groups is None or groups <= 0 or shape[1] % groups:
        raise ImportFailure(f"num_groups={groups} does not divide the {shape[1]} channels")
    grouped = b.reshape(x, [shape[0], groups, int(np.prod(shape[1:])) // groups])
    y = b.reshape(_standardized(grouped, [2], node.attr("epsilon", 1e-5)), shape)
    return [_scale_shift(y, _channel_parameter(node, 1, len(shape), shape[1]),
                         _channel_parameter(node, 2, len(shape), shape[1]))]


@handles("RMSNormalization")
def rms_normalization(node):
    x = node.value(0)
    shape = b.shape_of(x)
    axes = list(range(normalized_axis(node.attr("axis", -1), len(shape)), len(shape)))
    epsilon = node.attr("epsilon", 1e-5)
    count = float(np.prod([shape[a] for a in axes]))
    mean_square = _mean(b.elementwise([x], lambda a: arith.mulf(a[0], a[0])), axes, count)
    inverse = b.elementwise([mean_square], lambda a: math.rsqrt(
        arith.addf(a[0], b.const_like(epsilon, a[0]))))
    return [b.elementwise([x, inverse, node.value(1)],
                          lambda a: arith.mulf(arith.mulf(a[0], a[1]), a[2]))]


@handles("LpNormalization")
def lp_normalization(node):
    x = node.value(0)
    shape = b.shape_of(x)
    axis, p = normalized_axis(node.attr("axis", -1), len(shape)), node.attr("p", 2)
    if p not in (1, 2):
        raise node.unsupported(f"p={p} (1 or 2)")
    if p == 1:
        norm = b.reduce_keepdims(b.elementwise([x], lambda a: math.absf(a[0])), [axis], 0.0,
                                 arith.addf)
    else:
        squares = b.reduce_keepdims(b.elementwise([x], lambda a: arith.mulf(a[0], a[0])),
                                    [axis], 0.0, arith.addf)
        norm = b.elementwise([squares], lambda a: math.sqrt(a[0]))

    def body(a):
        zero = b.const_like(0.0, a[0])
        is_zero = arith.cmpf(arith.CmpFPredicate.OEQ, a[1], zero)
        return arith.select(is_zero, zero, arith.divf(a[0], a[1]))
    return [b.elementwise([x, norm], body)]


@handles("MeanVarianceNormalization")
def mean_variance_normalization(node):
    x = node.value(0)
    rank = len(b.shape_of(x))
    axes = [normalized_axis(a, rank) for a in node.attr("axes", [0, 2, 3])]
    return [_standardized(x, sorted(set(axes)), 1e-9)]
