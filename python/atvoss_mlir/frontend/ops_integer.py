"""The integer matrix ops: QLinearConv, QLinearMatMul, ConvInteger,
MatMulInteger and com.microsoft QGemm (`qdq_fusion` rewrites QDQ patterns
into them).

An integer conv or matmul runs on the matrix unit on int8 operands with an
int32 accumulator. Constant weights have their zero point subtracted at import
time. The input's zero point folds into the int32 bias: the input is padded
with its own zero point, so every output sees the whole kernel and
`sum((x - zx) * w) = sum(x * w) - zx * sum(w)`. The result is requantised as
onnxruntime's kernels do, in f32: `clamp(round_half_even(acc * sx * sw / sy)
+ zy)`.
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import linalg

from . import builders as b
from .handler_api import ImportFailure, handles
from .ops_conv import conv_nchw
from .ops_nn import matmul_of
from .ops_quantized import (I8_MAX, I8_MIN, Quantization, along, dequantize, held, i32,
                            quantization, quantized_value, requantize, scalar_zero_point)


def centred_weight(weight: np.ndarray, zero_point: np.ndarray, axis: int) -> np.ndarray:
    """`w - zw` as int8, the zero point per `axis` or per tensor."""
    centred = held(weight).astype(np.int32) - along(zero_point, axis, weight.ndim)
    if centred.min(initial=0) < I8_MIN or centred.max(initial=0) > I8_MAX:
        raise ImportFailure("the weights minus their zero point leave int8: this form "
                            "cannot run exactly on the int8 matrix unit")
    return centred.astype(np.int8)


def multiplier(x: Quantization, w: Quantization, y: Quantization) -> np.ndarray:
    """The requantisation scale sx * sw / sy in f32, as onnxruntime computes it."""
    return (x.scale * w.scale / y.scale).astype(np.float32)


def constant_bias(node, index: int) -> np.ndarray | None:
    if not node.has_input(index):
        return None
    bias = node.required_constant(index, "the bias")
    if bias.dtype != np.int32:
        raise ImportFailure(f"the bias is {bias.dtype.name}, not int32")
    return bias


def integer_bias(bias: np.ndarray | None, channels: int, weight_sums: np.ndarray,
                 x_zero_point: int) -> np.ndarray:
    """The int32 bias with the input's zero point folded: b - zx * sum(w)."""
    bias = np.zeros(channels, np.int64) if bias is None else bias.astype(np.int64)
    folded = bias - np.int64(x_zero_point) * weight_sums.astype(np.int64)
    if folded.min(initial=0) < -2**31 or folded.max(initial=0) >= 2**31:
        raise ImportFailure("the folded bias overflows int32")
    return folded.astype(np.int32)


@handles("QLinearConv")
def qlinear_conv(node):
    x_q, w_q, y_q = quantization(node, 1, 2), quantization(node, 4, 5), quantization(node, 6, 7)
    weight = node.required_constant(3, "the weight")
    x = quantized_value(node, 0)
    x_zp = scalar_zero_point(x_q, "the input")
    centred = centred_weight(weight, w_q.zero_point, 0)
    f = centred.shape[0]
    sums = centred.reshape(f, -1).astype(np.int64).sum(axis=1)
    bias = integer_bias(constant_bias(node, 8), f, sums, x_zp)
    scale = multiplier(x_q, w_q, y_q)
    y_zp = scalar_zero_point(y_q, "the output")
    group = node.attr("group", 1)
    taps = int(np.prod(centred.shape[1:]))
    if group > 1 and centred.shape[1] == 1 \
            and taps * 128 * 128 + int(np.abs(bias).max(initial=0)) < 2**24:
        # Depthwise (one input channel per filter, any number of filters per
        # channel) runs on the vector unit, whose depthwise takes one element
        # type: in f32, exact while every sum stays below 2^24.
        f32 = ir.F32Type.get()
        x_float = dequantize(x, np.ones((), np.float32), np.zeros((), np.float32))
        return [conv_nchw(node, x_float, centred.astype(np.float32),
                          node.weight(bias.astype(np.float32), "bias"), pad_value=float(x_zp),
                          accumulator_type=f32,
                          epilogue=lambda acc: requantize(acc, scale, y_zp))]
    return [conv_nchw(node, x, centred, node.weight(bias, "bias"), pad_value=x_zp,
                      accumulator_type=i32(),
                      epilogue=lambda acc: requantize(acc, scale, y_zp))]


def integer_matmul(node, a: ir.Value, weight: np.ndarray, bias: np.ndarray | None,
                   scale: np.ndarray | None, y_zp: int) -> ir.Value:
    """`a [.., K] x weight [K, N]` (int8, centred) + bias (int32), requantised
    with `scale` per N or per tensor; without `scale`, the int32 product."""
    shape = b.shape_of(a)
    k, n = weight.shape
    if shape[-1] != k:
        raise ImportFailure(f"cannot multiply {shape} by {list(weight.shape)}")
    rows = int(np.prod(shape[:-1]))
    if bias is None:
        init = b.fill(0, [rows, n], i32())
    else:
        init = b.result_of(linalg.broadcast(node.weight(bias, "bias"),
                                            outs=[b.empty([rows, n], i32())], dimensions=[0]))
    product = b.result_of(linalg.matmul(b.reshape(a, [rows, k]), node.weight(weight, "weight"),
                                        outs=[init]))
    if scale is not None:
        product = requantize(product, scale, y_zp)
    return b.reshape(product, shape[:-1] + [n])


def matrix_weight(node, index: int, q: Quantization) -> np.ndarray:
    weight = node.constant(index)
    if weight is None or weight.ndim != 2:
        raise ImportFailure("the B operand must be a constant matrix (an int8 product of two "
                            "activations is computed in float)")
    return centred_weight(weight, q.zero_point, 1)


@handles("QLinearMatMul")
def qlinear_matmul(node):
    a_q, w_q, y_q = quantization(node, 1, 2), quantization(node, 4, 5), quantization(node, 6, 7)
    if node.constant(3) is None:
        return [activation_product(node, a_q, w_q, y_q)]
    weight = matrix_weight(node, 3, w_q)
    a = quantized_value(node, 0)
    if len(b.shape_of(a)) < 2:
        raise ImportFailure("a 1-D A operand is not supported")
    a_zp = scalar_zero_point(a_q, "A")
    bias = integer_bias(None, weight.shape[1], weight.astype(np.int64).sum(axis=0), a_zp)
    return [integer_matmul(node, a, weight, bias, multiplier(a_q, w_q, y_q),
                           scalar_zero_point(y_q, "the output"))]


def activation_product(node, a_q: Quantization, b_q: Quantization, y_q: Quantization):
    """A by a B computed at run time (attention's products), as onnxruntime's
    QLinearMatMul: its int32 sum of (a - za) * (b - zb), requantised. Here the
    centred values are exact integers in f32 and so is every partial sum
    below 2^24, which `exact_activation_product` guarantees: the f32 matmul
    is that int32 sum."""
    if a_q.scale.size != 1 or b_q.scale.size != 1:
        raise ImportFailure("a B computed at run time must be quantised per tensor")
    a, w = quantized_value(node, 0), quantized_value(node, 3)
    depth = b.shape_of(a)[-1]
    if not exact_activation_product(depth, scalar_zero_point(a_q, "A"),
                                    scalar_zero_point(b_q, "B")):
        raise ImportFailure(f"an int8 product over {depth} terms of two tensors computed at run "
                            f"time: its sums would leave f32's exact integers")
    centred = [dequantize(x, np.float32(1.0), q.zero_point) for x, q in ((a, a_q), (w, b_q))]
    return requantize(matmul_of(*centred), multiplier(a_q, b_q, y_q),
                      scalar_zero_point(y_q, "the output"))


def exact_activation_product(depth: int, *held_zero_points: int) -> bool:
    """Whether every partial sum of `depth` products of centred 8-bit values
    (zero points as held) stays below 2^24, within f32's exact integers."""
    bound = depth
    for zero in held_zero_points:
        bound *= max(I8_MAX - zero, zero - I8_MIN)   # the largest |x - zero|
    return bound < 2**24


def constant_matrix(node, index: int) -> np.ndarray:
    """Input `index`, the B operand: a constant matrix."""
    weight = node.required_constant(index, "B")
    if weight.ndim != 2:
        raise ImportFailure("B must be a constant matrix")
    return weight


@handles("QGemm")
def qgemm(node):
    """com.microsoft QGemm: Gemm on quantised A and B with an int32 bias C
    (scaled by sa * sb) and a quantised output."""
    if node.attr("transA", 0):
        raise ImportFailure("transA is not supported")
    if not node.has_input(7):
        raise ImportFailure("a QGemm with a float output is not supported")
    a_q, w_q, y_q = quantization(node, 1, 2), quantization(node, 4, 5), quantization(node, 7, 8)
    weight = constant_matrix(node, 3)
    if node.attr("transB", 0):
        weight = weight.T
    w_zp = w_q.zero_point
    weight = centred_weight(np.ascontiguousarray(weight), w_zp, 1)
    a = quantized_value(node, 0)
    a_zp = scalar_zero_point(a_q, "A")
    c = constant_bias(node, 6)
    if c is not None:
        # C broadcasts to [M, N]: one that is the same in every row (as [N],
        # [1, N] or a scalar) is a bias per column.
        if c.ndim == 2 and c.shape[0] != 1:
            raise ImportFailure(f"a C of shape {list(c.shape)} (varying by row) is not supported")
        c = np.broadcast_to(c, (1, weight.shape[1])).reshape(-1)
    bias = integer_bias(c, weight.shape[1], weight.astype(np.int64).sum(axis=0), a_zp)
    scale = (multiplier(a_q, w_q, y_q) * np.float32(node.attr("alpha", 1.0))).astype(np.float32)
    return [integer_matmul(node, a, weight, bias, scale, scalar_zero_point(y_q, "the output"))]


@handles("MatMulInteger")
def matmul_integer(node):
    a_q = Quantization(np.ones((), np.float32), _zero_point(node, 2), False)
    w_zp = _zero_point(node, 3)
    weight = centred_weight(constant_matrix(node, 1), w_zp, 1)
    a = quantized_value(node, 0)
    a_zp = scalar_zero_point(a_q, "A")
    bias = integer_bias(None, weight.shape[1], weight.astype(np.int64).sum(axis=0), a_zp)
    return [integer_matmul(node, a, weight, bias, None, 0)]


@handles("ConvInteger")
def conv_integer(node):
    x_zp = scalar_zero_point(Quantization(np.ones((), np.float32), _zero_point(node, 2), False),
                             "the input")
    weight = centred_weight(node.required_constant(1, "the weight"), _zero_point(node, 3), 0)
    f = weight.shape[0]
    sums = weight.reshape(f, -1).astype(np.int64).sum(axis=1)
    bias = integer_bias(None, f, sums, x_zp)
    return [conv_nchw(node, quantized_value(node, 0), weight, node.weight(bias, "bias"),
                      pad_value=x_zp, accumulator_type=i32())]


def _zero_point(node, index: int) -> np.ndarray:
    """A zero point input of ConvInteger/MatMulInteger as held (0 when absent)."""
    if not node.has_input(index):
        return np.zeros((), np.int32)
    zero_point = node.required_constant(index, "the zero point")
    return held(zero_point).astype(np.int32)
