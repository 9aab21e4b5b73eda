"""Quantisation: how 8-bit tensors are held, QuantizeLinear and
DequantizeLinear, and the quantise, dequantise and requantise steps the
quantised ops are built of (`ops_integer`: the integer matrix ops;
`ops_qoperator`: onnxruntime's other QOperator forms).

8-bit integers only. A uint8 tensor is held as int8 shifted by -128, its zero
point alike: `x - zero_point` is unchanged and the NPU's integers are signed
(numpy constants keep their ONNX dtype until they become IR).

Quantize and dequantize are f32 generics: `round_half_even(x / s) + zp`,
saturated, and `(x - zp) * s`; requantisation is
`clamp(round_half_even(acc * multiplier) + zp)` in f32, as onnxruntime's
kernels compute it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from mlir import ir
from mlir.dialects import arith, math

from . import builders as b
from .handler_api import ImportFailure, folds, handles, normalized_axis

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


def scalar_zero_point(q: Quantization, what: str) -> int:
    if q.zero_point.ndim and np.any(q.zero_point != q.zero_point.flat[0]):
        raise ImportFailure(f"a per-axis zero point for {what} is not supported")
    return int(q.zero_point.flat[0]) if q.zero_point.size else 0
