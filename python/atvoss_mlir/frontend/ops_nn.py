"""Neural-network ops: matrix products (Gemm, MatMul) and softmax.

Convolution and pooling are in `ops_conv`, normalization in `ops_norm`,
reductions in `ops_reduce`."""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, math

from . import builders as b
from .handler_api import normalized_axis
from .onnx_importer import ImportFailure, handles


# -- Gemm, MatMul --------------------------------------------------------------------------

@handles("Gemm")
def gemm(node):
    alpha, beta = node.attr("alpha", 1.0), node.attr("beta", 1.0)
    for index, name in ((0, "A"), (1, "B")):
        if len(node.shape(index)) != 2:
            raise ImportFailure(f"{name} (input {index}) must be 2-d, not of shape "
                                f"{list(node.shape(index))}")
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
    if b.shape_of(a)[1] != b.shape_of(weight)[0]:
        raise ImportFailure(f"cannot multiply {b.shape_of(a)} by {b.shape_of(weight)}")
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
    return [matmul_of(node.value(0), node.value(1))]


def matmul_of(a, w):
    """ONNX MatMul of `a` by `w`: a 2-D B folds A's batch dims into M, a
    batched one broadcasts; a 1-D operand's dim is dropped from the result."""
    a_shape, w_shape = b.shape_of(a), b.shape_of(w)
    if not a_shape or not w_shape:
        raise ImportFailure(f"cannot multiply {a_shape} by {w_shape}: a scalar has no "
                            f"matrix product")
    a_vector, w_vector = len(a_shape) == 1, len(w_shape) == 1
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
    if a_vector:
        shape.pop(-2)
    if w_vector:
        shape.pop(-1)
    return b.reshape(result, shape)


# -- Softmax -------------------------------------------------------------------------------

@handles("Softmax", "LogSoftmax")
def softmax(node):
    """Before opset 13 the input is seen as 2-D at `axis` (all later dimensions
    normalise together); from 13 on only `axis` does."""
    x = node.value(0)
    rank = len(b.shape_of(x))
    half = str(b.element_of(x)) == "f16"
    if half:  # exponentials and their sum in f32, rounded once at the end
        x = b.elementwise([x], lambda a: arith.extf(ir.F32Type.get(), a[0]),
                          ir.F32Type.get())
    result = _softmax(node, x, rank)
    if half:
        result = b.elementwise([result], lambda a: arith.truncf(ir.F16Type.get(), a[0]),
                               ir.F16Type.get())
    return [result]


def softmax_axes(opset: int, axis: int | None, rank: int) -> list[int]:
    """The axes a Softmax of `opset` normalises over (`axis` None: its default)."""
    if opset < 13:
        return list(range(normalized_axis(1 if axis is None else axis, rank), rank))
    return [normalized_axis(-1 if axis is None else axis, rank)]


def _softmax(node, x, rank):
    return softmax_over(node, x, softmax_axes(node.opset, node.attr("axis", None), rank),
                        log=node.op_type == "LogSoftmax")


def softmax_over(node, x, axes: list[int], log: bool = False):
    element_type = b.element_of(x)
    if not log and len(axes) == 1 and node.importer.named_softmax:
        # linalg.softmax: one pass on the NPU when a row fits its SRAM, else
        # decomposed by npu-decompose-linalg into the passes below.
        shape = b.shape_of(x)
        return linalg.SoftmaxOp([ir.RankedTensorType.get(shape, element_type)], x,
                                b.empty(shape, element_type), axes[0]).results[0]
    peak = b.reduce_keepdims(x, axes, b.lowest(element_type), b.maximum)
    shifted = b.elementwise([x, peak], lambda a: arith.subf(a[0], a[1]))
    exponentials = b.elementwise([shifted], lambda a: math.exp(a[0]))
    total = b.reduce_keepdims(exponentials, axes, 0.0, arith.addf)
    if log:
        # The log once per row, on the reduced tensor: the vector unit applies a
        # function to a full tile, not to an operand it broadcasts.
        log_total = b.elementwise([total], lambda a: math.log(a[0]))
        return b.elementwise([shifted, log_total], lambda a: arith.subf(a[0], a[1]))
    return b.elementwise([exponentials, total], lambda a: arith.divf(a[0], a[1]))
