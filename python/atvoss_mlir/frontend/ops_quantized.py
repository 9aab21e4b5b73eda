"""Quantised ops: QuantizeLinear, DequantizeLinear, the operator forms
QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger and com.microsoft
QGemm and QLinearAdd (`qdq_fusion` rewrites QDQ patterns into them; the other
QOperator forms are in `ops_qoperator`).

8-bit integers only. A uint8 tensor is held as int8 shifted by -128, its zero
point alike: `x - zero_point` is unchanged and the NPU's integers are signed
(numpy constants keep their ONNX dtype until they become IR).

An integer conv or matmul runs on the matrix unit on int8 operands with an
int32 accumulator. Constant weights have their zero point subtracted at import
time. The input's zero point folds into the int32 bias: the input is padded
with its own zero point, so every output sees the whole kernel and
`sum((x - zx) * w) = sum(x * w) - zx * sum(w)`. The result is requantised as
onnxruntime's kernels do, in f32: `clamp(round_half_even(acc * sx * sw / sy)
+ zy)`. Quantize and dequantize are f32 generics: `round_half_even(x / s) +
zp`, saturated, and `(x - zp) * s`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from mlir import ir
from mlir.dialects import arith, linalg, math

from . import builders as b
from .handler_api import ImportFailure, folds, handles, normalized_axis
from .ops_conv import conv_nchw
from .ops_nn import matmul_of

QUANT_DTYPES = (np.dtype(np.int8), np.dtype(np.uint8))
I8_MIN, I8_MAX = -128, 127
UINT8_SHIFT = 128   # uint8 is held as int8 shifted down by this


def i8():
    return ir.IntegerType.get_signless(8)


def i32():
    return ir.IntegerType.get_signless(32)


@dataclass
class Quantization:
    """Scale and zero point of one quantised tensor, the zero point as held
    (uint8 shifted into int8), both numpy: scalars or 1-D along `axis`."""
    scale: np.ndarray
    zero_point: np.ndarray
    unsigned: bool


def quantization(node, scale_index: int, zp_index: int, data_dtype=None) -> Quantization:
    scale = node.required_constant(scale_index, "the scale")
    zero_point = node.constant(zp_index) if node.has_input(zp_index) else None
    if zero_point is None and node.has_input(zp_index):
        raise ImportFailure(f"the zero point (input {zp_index}) must be a constant")
    dtype = zero_point.dtype if zero_point is not None else np.dtype(data_dtype or np.uint8)
    if dtype not in QUANT_DTYPES:
        raise ImportFailure(f"{dtype.name} quantisation is not supported: the NPU computes "
                            f"exactly in int8 and uint8 only")
    if scale.ndim > 1 or (zero_point is not None and zero_point.ndim > 1):
        raise ImportFailure("blocked quantisation (a scale of rank > 1) is not supported")
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        raise ImportFailure("scales must be finite and positive")
    unsigned = dtype == np.uint8
    scale, zero_point = per_tensor_when_single(scale, zero_point)
    zp = np.zeros(scale.shape, np.int32) if zero_point is None else zero_point.astype(np.int32)
    return Quantization(scale.astype(np.float32), zp - UINT8_SHIFT if unsigned else zp, unsigned)


def per_tensor_when_single(scale: np.ndarray, zero_point):
    """A one-element 1-D scale (and zero point) is per tensor, as onnxruntime
    takes it (its quantiser writes shape [1] scales for some constants)."""
    if scale.ndim == 1 and scale.size == 1 and (zero_point is None or zero_point.size == 1):
        return scale.reshape(()), None if zero_point is None else zero_point.reshape(())
    return scale, zero_point


def held(array: np.ndarray) -> np.ndarray:
    """A quantised numpy constant as the IR holds it: int8 (uint8 shifted)."""
    if array.dtype == np.uint8:
        return (array.astype(np.int16) - 128).astype(np.int8)
    if array.dtype != np.int8:
        raise ImportFailure(f"a quantised tensor of {array.dtype.name} is not supported "
                            f"(int8 and uint8 only)")
    return array


def quantized_value(node, index: int) -> ir.Value:
    constant = node.constant(index)
    if constant is not None:
        return b.constant_tensor(held(constant))
    value = node.value(index)
    if str(b.element_of(value)) != "i8":
        raise ImportFailure(f"input {index} is {b.element_of(value)}, not an 8-bit integer")
    return value


def along(array: np.ndarray, axis: int, rank: int) -> np.ndarray:
    """A per-axis 1-D array shaped to broadcast against a tensor of `rank`."""
    if array.ndim == 0:
        return array
    return array.reshape([array.size] + [1] * (rank - axis - 1))


def quantize_axis(node, rank: int, q: Quantization) -> int:
    axis = normalized_axis(node.attr("axis", 1), rank) if rank else 0
    if q.scale.ndim == 1 and rank == 0:
        raise ImportFailure("a per-axis scale for a scalar tensor")
    return axis


# -- QuantizeLinear, DequantizeLinear --------------------------------------------------------

def _quantization_generic(x, parameters, body, element_type):
    """A generic over `x` whose body reads each parameter as a scalar constant
    or, per axis, as an extra broadcast input."""
    f32 = ir.F32Type.get()
    inputs = [x]
    slots = [p.astype(np.float32) for p in parameters]
    positions = []
    for array in slots:
        if array.size == 1:
            positions.append(float(array.reshape(())))
        else:
            inputs.append(b.constant_tensor(array))
            positions.append(len(inputs) - 1)

    def full_body(args):
        values = [b.scalar(p, f32) if isinstance(p, float) else args[p] for p in positions]
        return body(args[0], *values)
    return b.elementwise(inputs, full_body, element_type)


def _saturate_to_i8(value, zero_point):
    f32 = ir.F32Type.get()
    value = arith.addf(math.roundeven(value), zero_point)
    value = arith.minimumf(arith.maximumf(value, b.scalar(float(I8_MIN), f32)),
                           b.scalar(float(I8_MAX), f32))
    return arith.fptosi(i8(), value)


def quantize(x: ir.Value, scale: np.ndarray, zero_point: np.ndarray) -> ir.Value:
    """int8 `clamp(round_half_even(x / scale) + zero_point)`, in f32."""
    f32 = ir.F32Type.get()
    if str(b.element_of(x)) != "f32":
        x = b.elementwise([x], lambda a: arith.extf(f32, a[0]), f32)
    return _quantization_generic(
        x, [scale, zero_point],
        lambda v, s, zp: _saturate_to_i8(arith.divf(v, s), zp), i8())


def _saturate_zero_point_first(value, q: Quantization, as_uint8: bool):
    """int8 `clamp(round_half_even(value + zero point))`, shifted into int8
    when unsigned: the zero point added in f32 before rounding, as
    onnxruntime's QLinearAdd and QLinearAveragePool do (which can land a value
    on a tie). `as_uint8`: the zero point of the uint8 form (int8's + 128),
    which onnxruntime adds when it runs an int8 QDQ graph as uint8 (on x86)."""
    f32 = ir.F32Type.get()
    held = float(q.zero_point.reshape(()))
    declared = held + UINT8_SHIFT if q.unsigned or as_uint8 else held
    value = math.roundeven(arith.addf(value, b.scalar(declared, f32)))
    value = arith.addf(value, b.scalar(held - declared, f32))
    value = arith.minimumf(arith.maximumf(value, b.scalar(float(I8_MIN), f32)),
                           b.scalar(float(I8_MAX), f32))
    return arith.fptosi(i8(), value)


def quantize_zero_point_first(x: ir.Value, q: Quantization, as_uint8: bool) -> ir.Value:
    """`x / scale` saturated as `_saturate_zero_point_first`, per tensor."""
    return _quantization_generic(
        x, [q.scale], lambda v, s: _saturate_zero_point_first(arith.divf(v, s), q, as_uint8),
        i8())


def requantize_zero_point_first(x: ir.Value, multiplier: np.float32,
                                q: Quantization) -> ir.Value:
    """`x * multiplier` saturated as `_saturate_zero_point_first` (in its own
    8-bit type), per tensor: onnxruntime's QLinearMul."""
    return _quantization_generic(
        x, [np.asarray(multiplier, np.float32)],
        lambda v, m: _saturate_zero_point_first(arith.mulf(v, m), q, False), i8())


def dequantize(x: ir.Value, scale: np.ndarray, zero_point: np.ndarray) -> ir.Value:
    """f32 `(x - zero_point) * scale`."""
    f32 = ir.F32Type.get()
    return _quantization_generic(
        x, [scale, zero_point],
        lambda v, s, zp: arith.mulf(arith.subf(arith.sitofp(f32, v), zp), s), f32)


def requantize(accumulator: ir.Value, multiplier: np.ndarray, zero_point: int) -> ir.Value:
    """int8 `clamp(round_half_even(acc * multiplier) + zero_point)` of an
    int32 (or exactly f32-held) accumulator, per channel along its last dim or
    per tensor."""
    f32 = ir.F32Type.get()

    def widened(v):
        return v if str(v.type) == "f32" else arith.sitofp(f32, v)
    return _quantization_generic(
        accumulator, [multiplier, np.asarray(zero_point)],
        lambda v, m, zp: _saturate_to_i8(arith.mulf(widened(v), m), zp), i8())


@handles("QuantizeLinear")
def quantize_linear(node):
    if node.attr("output_dtype", 0) not in (0, 2, 3):   # 0: from the zero point; uint8, int8
        raise ImportFailure("output_dtype other than int8/uint8 is not supported")
    default = np.int8 if node.attr("output_dtype", 0) == 3 else np.uint8
    q = quantization(node, 1, 2, default)
    x = node.value(0)
    rank = len(b.shape_of(x))
    axis = quantize_axis(node, rank, q)
    return [quantize(x, along(q.scale, axis, rank), along(q.zero_point, axis, rank))]


def onnx_dtype(node, index: int) -> np.dtype | None:
    """The ONNX element type of a node input: a constant's, a graph input's,
    or what the QuantizeLinear producing it writes."""
    constant = node.constant(index)
    if constant is not None:
        return constant.dtype
    name = node.proto.input[index]
    graph = node.importer.model.graph
    for info in graph.input:
        if info.name == name:
            return onnx_np_dtype(info.type.tensor_type.elem_type)
    for producer in graph.node:
        if name in producer.output and producer.op_type == "QuantizeLinear":
            if len(producer.input) > 2 and producer.input[2]:
                initializer = next((i for i in graph.initializer if i.name == producer.input[2]),
                                   None)
                if initializer is not None:
                    return onnx_np_dtype(initializer.data_type)
            attribute = next((a for a in producer.attribute if a.name == "output_dtype"), None)
            return onnx_np_dtype(attribute.i) if attribute is not None and attribute.i else \
                np.dtype(np.uint8)
    return None


def onnx_np_dtype(elem_type: int) -> np.dtype:
    return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(elem_type))


@handles("DequantizeLinear")
def dequantize_linear(node):
    dtype = node.constant(2).dtype if node.constant(2) is not None else onnx_dtype(node, 0)
    if dtype is not None and dtype not in QUANT_DTYPES:
        raise ImportFailure(f"{dtype.name} quantisation is not supported: the NPU computes "
                            f"exactly in int8 and uint8 only")
    if dtype is None and not node.has_input(2):
        raise ImportFailure("the input's type is unknown and no zero point gives it")
    q = quantization(node, 1, 2, dtype)
    x = quantized_value(node, 0)
    rank = len(b.shape_of(x))
    axis = quantize_axis(node, rank, q)
    return [dequantize(x, along(q.scale, axis, rank), along(q.zero_point, axis, rank))]


@folds("DequantizeLinear")
def fold_dequantize_linear(node, inputs):
    """A constant (a quantised weight or bias) dequantised at import time."""
    x, scale = inputs[0], inputs[1]
    zero_point = inputs[2] if len(inputs) > 2 and inputs[2] is not None else \
        np.zeros((), x.dtype)
    scale, zero_point = per_tensor_when_single(scale, zero_point)
    if x.dtype not in QUANT_DTYPES + (np.dtype(np.int32),) or scale.ndim > 1 \
            or zero_point.ndim and zero_point.shape != scale.shape:
        return None   # the handler says why
    axis = node.attr("axis", 1) % max(x.ndim, 1)
    if scale.ndim and (x.ndim == 0 or scale.shape != (x.shape[axis],)):
        return None
    scale = along(scale.astype(np.float32), axis, x.ndim)
    zero_point = along(zero_point.astype(np.int64), axis, x.ndim)
    return [((x.astype(np.int64) - zero_point).astype(np.float32) * scale).astype(np.float32)]


# -- the integer matrix ops ------------------------------------------------------------------

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


def scalar_zero_point(q: Quantization, what: str) -> int:
    if q.zero_point.ndim and np.any(q.zero_point != q.zero_point.flat[0]):
        raise ImportFailure(f"a per-axis zero point for {what} is not supported")
    return int(q.zero_point.flat[0]) if q.zero_point.size else 0


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
    if group > 1 and group == centred.shape[0] and centred.shape[1] == 1 \
            and taps * 128 * 128 + int(np.abs(bias).max(initial=0)) < 2**24:
        # Depthwise runs on the vector unit, whose depthwise takes one element
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


def centred_range(q: Quantization) -> int:
    """The largest |x - zero point| of the quantised type."""
    zero = scalar_zero_point(q, "an operand")
    return max(I8_MAX - zero, zero - I8_MIN)


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
    if not exact_activation_product(depth, centred_range(a_q), centred_range(b_q)):
        raise ImportFailure(f"an int8 product over {depth} terms of two tensors computed at run "
                            f"time: its sums would leave f32's exact integers")
    centred = [dequantize(x, np.float32(1.0), q.zero_point) for x, q in ((a, a_q), (w, b_q))]
    return requantize(matmul_of(*centred), multiplier(a_q, b_q, y_q),
                      scalar_zero_point(y_q, "the output"))


def exact_activation_product(depth: int, a_range: int, b_range: int) -> bool:
    return depth * a_range * b_range < 2**24


@handles("QGemm")
def qgemm(node):
    """com.microsoft QGemm: Gemm on quantised A and B with an int32 bias C
    (scaled by sa * sb) and a quantised output."""
    if node.attr("transA", 0):
        raise ImportFailure("transA is not supported")
    if not node.has_input(7):
        raise ImportFailure("a QGemm with a float output is not supported")
    a_q, w_q, y_q = quantization(node, 1, 2), quantization(node, 4, 5), quantization(node, 7, 8)
    weight = node.required_constant(3, "B")
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


@handles("MatMulInteger")
def matmul_integer(node):
    a_q = Quantization(np.ones((), np.float32), _zero_point(node, 2), False)
    w_zp = _zero_point(node, 3)
    weight = node.required_constant(1, "B")
    if weight.ndim != 2:
        raise ImportFailure("B must be a constant matrix")
    weight = centred_weight(weight, w_zp, 1)
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

