"""onnxruntime's QOperator forms beyond the integer products (ops_integer):
QLinearAdd, QLinearAveragePool, QLinearGlobalAveragePool, QLinearConcat,
QLinearMul, QLinearSigmoid, QLinearLeakyRelu and QLinearSoftmax (com.microsoft),
as `quantize_static(..., QuantFormat.QOperator)` writes them. Each computes what
onnxruntime's kernel computes, in the same f32 steps, so that rounding ties
fall the same way: dequantised to f32 (or centred, exactly), the float op,
quantised.
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, math

from . import builders as b
from .handler_api import ImportFailure, handles, normalized_axis
from .ops_conv import average_pooled
from .ops_nn import softmax_axes, softmax_over
from .ops_quantized import (I8_MAX, I8_MIN, UINT8_SHIFT, Quantization, dequantize, i8,
                            quantization, quantize, quantize_zero_point_first,
                            quantized_value, requantize, requantize_zero_point_first,
                            scalar_zero_point)


def per_tensor(node, *indices: int) -> list[Quantization]:
    """The quantisation of the (scale, zero point) input pairs at `indices`,
    each one scalar."""
    found = [quantization(node, i, i + 1) for i in indices]
    if any(q.scale.size != 1 or q.zero_point.size != 1 for q in found):
        raise ImportFailure("per-axis scales are not supported")
    return found


@handles("QLinearAveragePool")
def qlinear_average_pool(node):
    """com.microsoft QLinearAveragePool, as onnxruntime computes it: each
    input dequantised to f32, summed in f32 (the vector unit's pool), divided
    by the count, and quantised with the zero point added before rounding.
    `fuse_qdq` sets `round_as_uint8` on the ones it makes of int8 QDQ graphs,
    which onnxruntime runs as uint8."""
    if node.attr("channels_last", 0):
        raise ImportFailure("channels_last=1 is not supported")
    x_q, y_q = per_tensor(node, 1, 3)
    real = dequantize(quantized_value(node, 0), x_q.scale, x_q.zero_point)
    mean = average_pooled(node, real, exact_division=True)
    return [quantize_zero_point_first(mean, y_q, bool(node.attr("round_as_uint8", 0)))]


@handles("QLinearGlobalAveragePool")
def qlinear_global_average_pool(node):
    """onnxruntime's kernel: the int32 sum of `x - zx` over the image,
    requantised by `sx / (sy * size)` (f32): here the centred sum in f32,
    exact while it stays below 2^24."""
    x_q, y_q = per_tensor(node, 1, 3)
    x = quantized_value(node, 0)
    shape = b.shape_of(x)
    axes = list(range(1, len(shape) - 1)) if node.attr("channels_last", 0) else \
        list(range(2, len(shape)))
    size = int(np.prod([shape[a] for a in axes]))
    if size * 255 >= 2**24:
        raise ImportFailure(f"an image of {size} elements: the sum would leave f32's exact "
                            f"integers")
    centred = dequantize(x, np.float32(1.0), x_q.zero_point)
    total = b.reduce_keepdims(centred, axes, 0.0, arith.addf)
    multiplier = np.float32(x_q.scale) / (np.float32(y_q.scale) * np.float32(size))
    return [requantize(total, np.asarray(multiplier, np.float32),
                       scalar_zero_point(y_q, "the output"))]


@handles("QLinearConcat")
def qlinear_concat(node):
    """Inputs of the output's scale and zero point are concatenated as they
    are; the others are requantised to it (dequantised, quantised)."""
    if node.attr("axis") is None:
        raise ImportFailure("a QLinearConcat needs an 'axis' attribute")
    (y_q,) = per_tensor(node, 0)
    parts = []
    for index in range(2, node.input_count, 3):
        (x_q,) = per_tensor(node, index + 1)
        x = quantized_value(node, index)
        if not (np.array_equal(x_q.scale, y_q.scale) and
                np.array_equal(x_q.zero_point, y_q.zero_point)):
            x = quantize(dequantize(x, x_q.scale, x_q.zero_point), y_q.scale, y_q.zero_point)
        parts.append(x)
    rank = len(b.shape_of(parts[0]))
    return [b.concat(parts, normalized_axis(node.attr("axis"), rank))]


@handles("QLinearMul")
def qlinear_mul(node):
    """onnxruntime's x86 kernel: the exact product of the centred inputs,
    times `sa * sb / sy` (f32), plus zy, then rounded: each input centred
    (exact in f32), multiplied (exact: below 2^16), and requantised with the
    zero point added before rounding (npu.requantize's `offset`)."""
    a_q, b_q, y_q = per_tensor(node, 1, 4, 6)
    centred = [dequantize(quantized_value(node, index), np.float32(1.0), q.zero_point)
               for index, q in ((0, a_q), (3, b_q))]
    product = b.elementwise(centred, lambda v: arith.mulf(v[0], v[1]))
    ratio = np.float32(a_q.scale.reshape(())) * np.float32(b_q.scale.reshape(())) \
        / np.float32(y_q.scale.reshape(()))
    return [requantize_zero_point_first(product, ratio, y_q)]


def _unary(node, fn):
    x_q, y_q = per_tensor(node, 1, 3)
    real = dequantize(quantized_value(node, 0), x_q.scale, x_q.zero_point)
    return [quantize(b.elementwise([real], lambda v: fn(v[0])), y_q.scale, y_q.zero_point)]


@handles("QLinearSigmoid")
def qlinear_sigmoid(node):
    return _unary(node, b.sigmoid)


@handles("QLinearLeakyRelu")
def qlinear_leaky_relu(node):
    """`max(x, 0) + alpha * min(x, 0)`: LeakyRelu's values exactly (one term
    is 0), in steps the vector unit runs after the dequantisation."""
    alpha = node.attr("alpha", 0.01)

    def body(v):
        zero = b.const_like(0.0, v)
        return arith.addf(arith.maximumf(v, zero),
                          arith.mulf(arith.minimumf(v, zero), b.const_like(alpha, v)))
    return _unary(node, body)


@handles("QLinearSoftmax")
def qlinear_softmax(node):
    """onnxruntime's kernel (its fusion of DequantizeLinear -> Softmax ->
    QuantizeLinear too) scales the softmax by `floor(1 / y_scale)` (f32), not
    by `1 / y_scale`: with a scale of 1/255, by 254. Its exponentials come
    from a table and its sum runs in element order, in f32; here the float
    softmax of the dequantised input, which differs from those only in the
    last bits of f32, times that multiplier, rounded and offset by the zero
    point. (Its int8 kernel wraps a result above 127 where this saturates:
    only a scale of at most 1/(128 - zero point) reaches one.)"""
    x_q, y_q = per_tensor(node, 1, 3)
    opset = node.attr("opset", 13)
    real = dequantize(quantized_value(node, 0), x_q.scale, x_q.zero_point)
    axes = softmax_axes(opset, node.attr("axis", None), len(b.shape_of(real)))
    multiplier = np.floor(np.float32(1.0) / np.float32(y_q.scale.reshape(())))
    return [requantize(softmax_over(node, real, axes), np.asarray(multiplier, np.float32),
                       scalar_zero_point(y_q, "the output"))]


@handles("QLinearAdd")
def qlinear_add(node):
    """com.microsoft QLinearAdd as onnxruntime's x86 kernel computes it: with
    the scale ratios ra = sa / sy, rb = sb / sy and the fixed part
    F = zy - (ra * za + rb * zb), `round(fma(a, ra, fma(b, rb, F)))` on the
    8-bit values in their own range (uint8 unshifted; `round_as_uint8`, set by
    `fuse_qdq`: int8 moved to uint8, as onnxruntime runs an int8 QDQ graph on
    x86). One generic, which the vector unit runs as one npu.quantized_add,
    when a and b have one shape; with broadcasting, dequantise, add and
    quantise (three generics)."""
    a_q, b_q, y_q = quantization(node, 1, 2), quantization(node, 4, 5), quantization(node, 6, 7)
    as_uint8 = bool(node.attr("round_as_uint8", 0))
    if any(q.scale.size != 1 or q.zero_point.size != 1 for q in (a_q, b_q, y_q)):
        raise ImportFailure("per-axis scales are not supported")
    left, right = quantized_value(node, 0), quantized_value(node, 3)
    if b.shape_of(left) != b.shape_of(right):
        total = b.elementwise([dequantize(left, a_q.scale, a_q.zero_point),
                               dequantize(right, b_q.scale, b_q.zero_point)],
                              lambda v: arith.addf(v[0], v[1]))
        return [quantize_zero_point_first(total, y_q, as_uint8)]
    f32 = ir.F32Type.get()
    # one 8-bit type for a, b and y: the shift from held int8 to its own range
    shift = float(UINT8_SHIFT if y_q.unsigned or as_uint8 else 0)
    za, zb, zy = (np.float32(q.zero_point.reshape(()) + shift) for q in (a_q, b_q, y_q))
    ra, rb = (np.float32(q.scale.reshape(())) / np.float32(y_q.scale.reshape(()))
              for q in (a_q, b_q))
    fixed = zy - (ra * za + rb * zb)   # in f32, as onnxruntime computes it

    def shifted(value, by):
        return arith.addf(value, b.scalar(by, f32)) if by else value

    def body(args):
        own_range = [shifted(arith.sitofp(f32, arg), shift) for arg in args[:2]]
        total = math.fma(own_range[1], b.scalar(float(rb), f32), b.scalar(float(fixed), f32))
        total = math.fma(own_range[0], b.scalar(float(ra), f32), total)
        value = shifted(math.roundeven(total), -shift)
        value = arith.minimumf(arith.maximumf(value, b.scalar(float(I8_MIN), f32)),
                               b.scalar(float(I8_MAX), f32))
        return arith.fptosi(i8(), value)
    return [b.elementwise([left, right], body, i8())]
