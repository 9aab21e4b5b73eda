"""Neural-network ops: matrix products (Gemm, MatMul), softmax and reductions.

Convolution and pooling are in `ops_conv`, normalization in `ops_norm`."""

from __future__ import annotations

import numpy as np
from mlir.dialects import arith, linalg, math

from . import builders as b
from .onnx_importer import ImportFailure, handles


# -- Gemm, MatMul --------------------------------------------------------------------------

@handles("Gemm")
def gemm(node):
    alpha, beta = node.attr("alpha", 1.0), node.attr("beta", 1.0)
    a = node.value(0)
    if node.attr("transA", 0):
        a = b.transpose(a, [1, 0])
    weight = node.constant(1)
    if weight is not None:  # fold transB and alpha into the constant
        if node.attr("transB", 0):
            weight = weight.T
        if alpha != 1.0:
            weight = weight * np.asarray(alpha, weight.dtype)
        weight = node.weight(np.ascontiguousarray(weight), "weight")
    else:
        weight = node.value(1)
        if node.attr("transB", 0):
            weight = b.transpose(weight, [1, 0])
        if alpha != 1.0:
            a = b.elementwise([a], lambda v: arith.mulf(v[0], b.const_like(alpha, v[0])))
    m, n = b.shape_of(a)[0], b.shape_of(weight)[1]
    element_type = b.element_of(a)
    bias = node.constant(2)
    if not node.has_input(2) or beta == 0.0:
        init = b.fill(0.0, [m, n], element_type)
    elif bias is not None:  # beta * C folded, broadcast into the accumulator
        bias = (bias * np.asarray(beta, bias.dtype)).astype(bias.dtype)
        init = _broadcast_init(node.weight(bias, "bias"), [m, n])
    else:
        c = node.value(2)
        if beta != 1.0:
            c = b.elementwise([c], lambda v: arith.mulf(v[0], b.const_like(beta, v[0])))
        init = _broadcast_init(c, [m, n])
    return [linalg.matmul(a, weight, outs=[init])]


def _broadcast_init(value, shape):
    """An accumulator initialised with `value` broadcast to `shape`."""
    source = b.shape_of(value)
    element_type = b.element_of(value)
    if source == list(shape):
        return value
    if source == list(shape[len(shape) - len(source):]):
        return b.result_of(linalg.broadcast(value, outs=[b.empty(shape, element_type)],
                                            dimensions=list(range(len(shape) - len(source)))))
    return b.broadcast_to(value, shape)


@handles("MatMul")
def matmul(node):
    a, w = node.value(0), node.value(1)
    a_shape, w_shape = b.shape_of(a), b.shape_of(w)
    if len(a_shape) == 1:
        a = b.reshape(a, [1, a_shape[0]])
    if len(w_shape) == 1:
        w = b.reshape(w, [w_shape[0], 1])
    a_shape, w_shape = b.shape_of(a), b.shape_of(w)
    if a_shape[-1] != w_shape[-2]:
        raise ImportFailure(f"cannot multiply {a_shape} by {w_shape}")
    m, k, n = a_shape[-2], a_shape[-1], w_shape[-1]
    element_type = b.element_of(a)
    if len(w_shape) == 2:  # batch dims of A fold into M: one matmul
        batch = a_shape[:-2]
        rows = int(np.prod(batch)) * m
        product = linalg.matmul(b.reshape(a, [rows, k]), w,
                                outs=[b.fill(0.0, [rows, n], element_type)])
        result = b.reshape(product, batch + [m, n])
    else:
        batch = b.broadcast_shape(a_shape[:-2], w_shape[:-2])
        a = b.broadcast_to(a, batch + [m, k])
        w = b.broadcast_to(w, batch + [k, n])
        count = int(np.prod(batch))
        product = linalg.batch_matmul(b.reshape(a, [count, m, k]), b.reshape(w, [count, k, n]),
                                      outs=[b.fill(0.0, [count, m, n], element_type)])
        result = b.reshape(product, batch + [m, n])
    shape = b.shape_of(result)
    if len(node.shape(0)) == 1:
        shape.pop(-2)
    if len(node.shape(1)) == 1:
        shape.pop(-1)
    return [b.reshape(result, shape)]


# -- Softmax -------------------------------------------------------------------------------

@handles("Softmax", "LogSoftmax")
def softmax(node):
    """Before opset 13 the input is seen as 2-D at `axis` (all later dimensions
    normalise together); from 13 on only `axis` does."""
    x = node.value(0)
    rank = len(b.shape_of(x))
    if node.opset < 13:
        axes = list(range(node.attr("axis", 1) % rank, rank))
    else:
        axes = [node.attr("axis", -1) % rank]
    element_type = b.element_of(x)
    peak = b.reduce_keepdims(x, axes, b.lowest(element_type), b.maximum)
    shifted = b.elementwise([x, peak], lambda a: arith.subf(a[0], a[1]))
    exponentials = b.elementwise([shifted], lambda a: math.exp(a[0]))
    total = b.reduce_keepdims(exponentials, axes, 0.0, arith.addf)
    if node.op_type == "LogSoftmax":
        return [b.elementwise([shifted, total], lambda a: arith.subf(a[0], math.log(a[1])))]
    return [b.elementwise([exponentials, total], lambda a: arith.divf(a[0], a[1]))]


# -- reductions ----------------------------------------------------------------------------

def reduction_axes(node, rank) -> list[int]:
    """Axes are an attribute before opset 18 (13 for ReduceSum), an input after;
    none means all axes unless noop_with_empty_axes."""
    from_input = node.opset >= (13 if node.op_type == "ReduceSum" else 18)
    if from_input:
        axes = node.constant(1)
        if node.has_input(1) and axes is None:
            raise ImportFailure("the axes (input 1) must be a constant")
        axes = None if axes is None else [int(a) for a in axes.reshape(-1)]
    else:
        axes = node.attr("axes")
    if not axes:
        return [] if node.attr("noop_with_empty_axes", 0) else list(range(rank))
    return sorted(a % rank for a in axes)


@handles("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin")
def reduction(node):
    x = node.value(0)
    shape = b.shape_of(x)
    axes = reduction_axes(node, len(shape))
    if not axes:
        return [x]
    element_type = b.element_of(x)
    if node.op_type in ("ReduceMean", "ReduceSum"):
        result = b.reduce(x, axes, 0.0 if b.is_float(element_type) else 0, b.add)
    elif node.op_type == "ReduceMax":
        result = b.reduce(x, axes, b.lowest(element_type), b.maximum)
    else:
        result = b.reduce(x, axes, b.highest(element_type), b.minimum)
    if node.op_type == "ReduceMean":
        count = float(np.prod([shape[a] for a in axes]))
        result = b.elementwise([result], lambda a: arith.divf(a[0], b.const_like(count, a[0])))
    if node.attr("keepdims", 1):
        result = b.reshape(result, [1 if d in axes else n for d, n in enumerate(shape)])
    return [result]
