"""Normalization: BatchNormalization, LayerNormalization and LRN."""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, math

from . import builders as b
from .onnx_importer import handles


# -- normalization -------------------------------------------------------------------------

def _per_channel(array, rank):
    """A (C,) parameter shaped to broadcast against (N, C, ...)."""
    return np.ascontiguousarray(array.reshape([-1] + [1] * (rank - 2)))


@handles("BatchNormalization")
def batch_normalization(node):
    if node.attr("training_mode", 0):
        raise node.unsupported("training_mode=1")
    if any(name for name in node.proto.output[1:]):
        raise node.unsupported("the running statistics outputs (training)")
    x = node.value(0)
    rank = len(b.shape_of(x))
    epsilon = node.attr("epsilon", 1e-5)
    params = [node.constant(i) for i in range(1, 5)]
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
    axis = node.attr("axis", -1) % len(shape)
    axes = list(range(axis, len(shape)))
    epsilon = node.attr("epsilon", 1e-5)
    count = float(np.prod(shape[axis:]))
    mean = _mean(x, axes, count)
    centered = b.elementwise([x, mean], lambda a: arith.subf(a[0], a[1]))
    squares = b.elementwise([centered], lambda a: arith.mulf(a[0], a[0]))
    variance = _mean(squares, axes, count)
    inverse = b.elementwise([variance], lambda a: math.rsqrt(
        arith.addf(a[0], b.const_like(epsilon, a[0]))))
    inputs = [centered, inverse, node.value(1)] + ([node.value(2)] if node.has_input(2) else [])

    def body(a):
        y = arith.mulf(arith.mulf(a[0], a[1]), a[2])
        return arith.addf(y, a[3]) if len(a) > 3 else y
    return [b.elementwise(inputs, body), mean, inverse]


def _mean(x, axes, count):
    total = b.reduce_keepdims(x, axes, 0.0, arith.addf)
    return b.elementwise([total], lambda a: arith.divf(a[0], b.const_like(count, a[0])))


@handles("LRN")
def lrn(node):
    size = node.attr("size")
    alpha, beta, bias = node.attr("alpha", 1e-4), node.attr("beta", 0.75), node.attr("bias", 1.0)
    x = node.value(0)
    shape = b.shape_of(x)
    rank = len(shape)
    squares = b.elementwise([x], lambda a: arith.mulf(a[0], a[0]))
    before = (size - 1) // 2
    padded = b.pad(squares, [0, before] + [0] * (rank - 2),
                   [0, size - 1 - before] + [0] * (rank - 2), 0.0)
    # Sum over the channel window: loop k (the last dimension) reads channel c + k.
    dims = [ir.AffineDimExpr.get(d) for d in range(rank + 1)]
    read = ir.AffineMap.get(rank + 1, 0, [dims[0], dims[1] + dims[rank]] + dims[2:rank])
    write = ir.AffineMap.get(rank + 1, 0, dims[:rank])
    window = b.empty([size], b.element_of(x))
    sums = b.generic([padded, window], [read, ir.AffineMap.get(rank + 1, 0, [dims[rank]])],
                     b.fill(0.0, shape, b.element_of(x)), write,
                     ["parallel"] * rank + ["reduction"],
                     lambda a: arith.addf(a[0], a[2]))

    def body(a):
        scaled = arith.addf(b.const_like(bias, a[0]),
                            arith.mulf(b.const_like(alpha / size, a[0]), a[1]))
        return arith.divf(a[0], math.powf(scaled, b.const_like(beta, a[0])))
    return [b.elementwise([x, sums], body)]
