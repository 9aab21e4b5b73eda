"""Vectorised tile numerics shared by the npu and linalg handlers."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# Abramowitz & Stegun 7.1.26: |error| <= 1.5e-7, below fp32's resolution near 1.
_AS_P = 0.3275911
_AS_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


def erf(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    t = 1.0 / (1.0 + _AS_P * a)
    poly = t * (_AS_A[0] + t * (_AS_A[1] + t * (_AS_A[2] + t * (_AS_A[3] + t * _AS_A[4]))))
    return np.sign(x) * (1.0 - poly * np.exp(-a * a))


def accumulator_dtype(dtype: np.dtype) -> np.dtype:
    """fp16 and fp32 accumulate in fp32 (fp64 in fp64), integers in int64
    (wider than the hardware's int32 so that the final cast wraps as int32 does)."""
    if dtype.kind == "f":
        return np.dtype(np.float64) if dtype.itemsize == 8 else np.dtype(np.float32)
    return np.dtype(np.int64)


def in_order(lhs: np.dtype, rhs: np.dtype, accumulator: np.dtype) -> bool:
    """Whether a reduction is modelled step by step: fp16 operands into an fp32
    accumulator, whose rounding depends on the order of the adds. (fp32 and
    fp64 keep numpy's faster order; integer sums are exact in any order.)"""
    return lhs == np.float16 and rhs == np.float16 and accumulator == np.float32


def matmul_in_order(lhs: np.ndarray, rhs: np.ndarray, acc: np.ndarray) -> np.ndarray:
    """acc += lhs @ rhs (acc fp32, M x N) as an fp32 systolic accumulator does it:
    acc = fl32(acc + a[:, k] * b[k]) for k = 0, 1, ... in order. An fp16 x fp16
    product is exact in fp32, so only the adds round; K tiles that each go on
    from the previous tile's acc give the same bits as one."""
    columns = np.ascontiguousarray(lhs.T, dtype=np.float32)   # row k: a[:, k]
    rows = np.asarray(rhs, dtype=np.float32)
    product = np.empty_like(acc)
    with np.errstate(over="ignore", invalid="ignore"):  # counted by numeric_safety.py
        for k in range(columns.shape[0]):
            np.multiply(columns[k, :, None], rows[k], out=product)
            np.add(acc, product, out=acc)
    return acc


def matmul(lhs: np.ndarray, rhs: np.ndarray, acc: np.dtype, start=None) -> np.ndarray:
    """start (zero when None) + lhs @ rhs in the accumulator type `acc`."""
    if in_order(lhs.dtype, rhs.dtype, acc):
        initial = np.zeros((lhs.shape[0], rhs.shape[1]), acc) if start is None \
            else start.astype(acc)
        return matmul_in_order(lhs, rhs, initial)
    product = lhs.astype(acc) @ rhs.astype(acc)
    return product if start is None else product + start.astype(acc)


def activation(x: np.ndarray, kind: str, clip_min=None, clip_max=None) -> np.ndarray:
    if kind == "none":
        return x
    if kind in ("neg", "abs"):
        return (-x if kind == "neg" else np.abs(x)).astype(x.dtype)
    if kind == "relu":
        return np.maximum(x, 0)
    if kind == "relu6":
        return np.clip(x, 0, 6)
    if kind == "clip":
        low = -np.inf if clip_min is None else clip_min
        high = np.inf if clip_max is None else clip_max
        if x.dtype.kind != "f":
            return np.clip(x, int(np.ceil(low)) if np.isfinite(low) else None,
                           int(np.floor(high)) if np.isfinite(high) else None)
        return np.clip(x, low, high).astype(x.dtype)
    # Transcendental functions compute in (at least) fp32, results in x's type.
    dtype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    wide = x.astype(np.float64)
    if kind == "gelu":
        result = 0.5 * wide * (1.0 + erf(wide / np.sqrt(2.0)))
    elif kind == "sigmoid":
        result = 0.5 * (1.0 + np.tanh(0.5 * wide))  # no overflow for large |x|
    elif kind == "tanh":
        result = np.tanh(wide)
    elif kind in UNARY:
        with np.errstate(all="ignore"):   # inf and nan as IEEE gives them
            result = UNARY[kind](wide)
    else:
        raise ValueError(f"unknown activation '{kind}'")
    if x.dtype.kind != "f":
        return np.rint(result).astype(x.dtype)
    with np.errstate(over="ignore"):   # to inf, counted by numeric_safety.py
        return result.astype(dtype)


def store(output: np.ndarray, value: np.ndarray) -> None:
    """Write a result into a tile with the conversion the hardware does:
    round-to-nearest for floats, wrap-around for integers."""
    if output.dtype.kind in "iu" and value.dtype.kind == "f":
        value = np.rint(value)
    with np.errstate(over="ignore", invalid="ignore"):  # counted by numeric_safety.py
        output[...] = value.astype(output.dtype, copy=False)


def windows(x: np.ndarray, out_h: int, out_w: int, kernel, strides, dilations) -> np.ndarray:
    """NHWC input -> (N, OH, OW, C, KH, KW) view of each output pixel's window."""
    kh, kw = kernel
    sh, sw = strides
    dh, dw = dilations
    view = sliding_window_view(x, ((kh - 1) * dh + 1, (kw - 1) * dw + 1), axis=(1, 2))
    return view[:, : (out_h - 1) * sh + 1 : sh, : (out_w - 1) * sw + 1 : sw, :, ::dh, ::dw]


def conv_output_size(size: int, kernel: int, stride: int, dilation: int) -> int:
    return (size - dilation * (kernel - 1) - 1) // stride + 1


def im2col(x: np.ndarray, out_h: int, out_w: int, kernel, strides, dilations) -> np.ndarray:
    """(N*OH*OW, KH*KW*C) rows, each window ordered (kh, kw, c)."""
    w = windows(x, out_h, out_w, kernel, strides, dilations)
    n, c = x.shape[0], x.shape[3]
    return w.transpose(0, 1, 2, 4, 5, 3).reshape(n * out_h * out_w, kernel[0] * kernel[1] * c)


def conv2d(x: np.ndarray, filters: np.ndarray, out_h: int, out_w: int, strides, dilations,
           acc: np.dtype, start=None) -> np.ndarray:
    """start (zero when None) + the convolution, in the accumulator type `acc`.
    Step by step (in_order), the reduction runs channel-major, then kh, then kw:
    the compiler tiles the channels and keeps the window whole, so its K tiles
    in sequence run this same order."""
    kh, kw, c, f = filters.shape
    shape = (x.shape[0], out_h, out_w, f)
    if in_order(x.dtype, filters.dtype, acc):
        view = windows(x, out_h, out_w, (kh, kw), strides, dilations)  # N,OH,OW,C,KH,KW
        weights = filters.transpose(2, 0, 1, 3).reshape(c * kh * kw, f)
        initial = None if start is None else start.reshape(-1, f)
        return matmul(view.reshape(-1, c * kh * kw), weights, acc, initial).reshape(shape)
    cols = im2col(x.astype(acc), out_h, out_w, (kh, kw), strides, dilations)
    result = (cols @ filters.astype(acc).reshape(kh * kw * c, f)).reshape(shape)
    return result if start is None else result + start.astype(acc)


def depthwise_conv2d(x: np.ndarray, filters: np.ndarray, out_h: int, out_w: int, strides,
                     dilations, acc: np.dtype) -> np.ndarray:
    kh, kw, _ = filters.shape
    w = windows(x.astype(acc), out_h, out_w, (kh, kw), strides, dilations)
    return np.einsum("nhwcij,ijc->nhwc", w, filters.astype(acc))


def pool2d(x: np.ndarray, kind: str, out_h: int, out_w: int, window, strides) -> np.ndarray:
    acc = x.dtype if kind == "max" else accumulator_dtype(x.dtype)
    w = windows(x.astype(acc, copy=False), out_h, out_w, window, strides, (1, 1))
    if kind == "max":
        return w.max(axis=(4, 5))
    total = w.sum(axis=(4, 5), dtype=acc)
    if kind == "sum":
        return total
    count = window[0] * window[1]
    if acc.kind == "f":
        return total / acc.type(count)
    return np.rint(total / count).astype(acc)


def requantize(x: np.ndarray, scale, zero_point: int, divide: bool = False,
               offset: float = 0.0) -> np.ndarray:
    """clamp(round_half_even(x * scale + offset) + zero_point) in f32
    (`divide`: x / scale), as onnxruntime's int8 kernels compute it; `scale`
    may be an array."""
    return np.clip(rounded(x, scale, divide, offset) + np.float32(zero_point),
                   -128, 127).astype(np.int8)


def rounded(x: np.ndarray, scale, divide: bool = False, offset: float = 0.0) -> np.ndarray:
    """round_half_even(x * scale + offset) (`divide`: x / scale) in f32: the
    offset is added in f32 before rounding, so it can move a value onto a tie."""
    value, scale = x.astype(np.float32), np.asarray(scale, np.float32)
    scaled = value / scale if divide else value * scale
    if offset:
        scaled = scaled + np.float32(offset)
    return np.rint(scaled)  # half to even


def fma32(a: np.ndarray, b, c) -> np.ndarray:
    """f32 fused multiply-add, rounded once: the f64 product of two f32 is
    exact, and so is its sum with an f32 of the magnitudes quantised data
    has (8-bit values times scale ratios), before the one rounding to f32."""
    return (np.asarray(a, np.float64) * np.float64(np.float32(b))
            + np.asarray(c, np.float32).astype(np.float64)).astype(np.float32)


def quantized_add(lhs: np.ndarray, rhs: np.ndarray, lhs_scale, rhs_scale, offset,
                  input_shift: int, zero_point: int) -> np.ndarray:
    """clamp(round_half_even(fma(lhs', sl, fma(rhs', sr, offset))) + zero_point),
    x' = x + input_shift, in f32 with fused multiply-adds (onnxruntime's x86
    QLinearAdd)."""
    shifted = [(x.astype(np.int32) + input_shift).astype(np.float32) for x in (lhs, rhs)]
    total = fma32(shifted[0], lhs_scale, fma32(shifted[1], rhs_scale, np.float32(offset)))
    return np.clip(np.rint(total) + np.float32(zero_point), -128, 127).astype(np.int8)


def dequantize(x: np.ndarray, scale: float, zero_point: int, dtype) -> np.ndarray:
    """(x - zero_point) * scale in f32."""
    centred = (x.astype(np.int32) - zero_point).astype(np.float32)
    return (centred * np.float32(scale)).astype(dtype)


def divide(lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """IEEE division for floats (inf and nan, no warning); integers truncate
    towards zero as arith.divsi does."""
    if lhs.dtype.kind == "f":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.divide(lhs, rhs)
    quotient = np.abs(lhs) // np.maximum(np.abs(rhs), 1)
    return np.where(np.sign(lhs) * np.sign(rhs) < 0, -quotient, quotient)


BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": divide,
          "max": np.maximum, "min": np.minimum}

# The transcendental kinds of npu.activation, computed in fp64.
UNARY = {"exp": np.exp, "log": np.log, "erf": erf, "reciprocal": lambda x: 1.0 / x,
         "rsqrt": lambda x: 1.0 / np.sqrt(x), "sqrt": np.sqrt}

REDUCE = {"sum": np.sum, "max": np.max, "min": np.min}

COMPARE = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
           "gt": np.greater, "ge": np.greater_equal}
