"""Reductions (ReduceSum/Mean/Max/Min/Prod/SumSquare/L1/L2/LogSum/LogSumExp),
ArgMax/ArgMin and TopK: linalg.generic ops with reduction iterators, the
element transform (square, abs, exp) and the final one (sqrt, log) in the
bodies of neighbouring generics."""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, math

from . import builders as b
from .handler_api import ImportFailure, folds, handles, normalized_axis


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
    if any(not -rank <= a < rank for a in axes):
        raise ImportFailure(f"axes {axes} out of range for rank {rank}")
    return sorted({a % rank for a in axes})


def _highest(element_type):
    if b.is_float(element_type):
        return float("inf")
    return (1 << (ir.IntegerType(element_type).width - 1)) - 1


def _is_bool(element_type) -> bool:
    return not b.is_float(element_type) and ir.IntegerType(element_type).width == 1


def _sum(x, axes):
    return b.reduce(x, axes, 0.0 if b.is_float(b.element_of(x)) else 0, b.add)


def _map(x, fn):
    return b.elementwise([x], lambda a: fn(a[0]))


def _log_sum_exp(x, axes):
    """max + log(sum(exp(x - max))): no overflow for large inputs."""
    peak = b.reduce_keepdims(x, axes, b.lowest(b.element_of(x)), b.maximum)
    # An all -inf (or empty) slice keeps its peak out of the subtraction.
    finite_peak = _map(peak, lambda p: arith.select(
        arith.cmpf(arith.CmpFPredicate.OEQ, p, b.const_like(float("-inf"), p)),
        b.const_like(0.0, p), p))
    shifted = b.elementwise([x, finite_peak], lambda a: math.exp(arith.subf(a[0], a[1])))
    total = _sum(shifted, axes)
    kept = b.reshape(finite_peak, b.shape_of(total))
    return b.elementwise([total, kept], lambda a: arith.addf(math.log(a[0]), a[1]))


_FLOAT_ONLY = {"ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMean"}


@handles("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
         "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp")
def reduction(node):
    x = node.value(0)
    shape = b.shape_of(x)
    axes = reduction_axes(node, len(shape))
    element_type = b.element_of(x)
    op_type = node.op_type
    if op_type in _FLOAT_ONLY and not b.is_float(element_type):
        raise node.unsupported(f"{op_type} of integer tensors")
    if not axes:
        return [x]
    if _is_bool(element_type) and op_type not in ("ReduceMax", "ReduceMin"):
        raise node.unsupported(f"{op_type} of bool tensors")
    if op_type == "ReduceMax":
        result = b.reduce(x, axes, 0, arith.ori) if _is_bool(element_type) else \
            b.reduce(x, axes, b.lowest(element_type), b.maximum)
    elif op_type == "ReduceMin":
        result = b.reduce(x, axes, 1, arith.andi) if _is_bool(element_type) else \
            b.reduce(x, axes, _highest(element_type), b.minimum)
    elif op_type == "ReduceProd":
        result = b.reduce(x, axes, 1.0 if b.is_float(element_type) else 1, b.mul)
    elif op_type in ("ReduceSumSquare", "ReduceL2"):
        result = _sum(_map(x, lambda v: b.mul(v, v)), axes)
        if op_type == "ReduceL2":
            result = _map(result, math.sqrt)
    elif op_type == "ReduceL1":
        result = _sum(_map(x, math.absf if b.is_float(element_type) else math.absi), axes)
    elif op_type == "ReduceLogSumExp":
        result = _log_sum_exp(x, axes)
    else:
        result = _sum(x, axes)
        if op_type == "ReduceMean":
            count = float(np.prod([shape[a] for a in axes]))
            result = _map(result, lambda v: arith.divf(v, b.const_like(count, v)))
        elif op_type == "ReduceLogSum":
            result = _map(result, math.log)
    if node.attr("keepdims", 1):
        result = b.reshape(result, [1 if d in axes else n for d, n in enumerate(shape)])
    return [result]


# -- ArgMax, ArgMin ------------------------------------------------------------------------

def arg_extreme(x, axis: int, largest: bool, last: bool) -> ir.Value:
    """The index (i64) of the largest (or smallest) element along `axis`, the
    first one of equal elements (the last with `last`); `axis` is dropped."""
    shape = b.shape_of(x)
    rank = len(shape)
    element_type = b.element_of(x)
    if largest:
        peak = b.reduce(x, [axis], b.lowest(element_type), b.maximum)
    else:
        peak = b.reduce(x, [axis], _highest(element_type), b.minimum)
    i64 = ir.IntegerType.get_signless(64)
    kept = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in range(rank) if d != axis])
    init = b.fill(-1 if last else shape[axis], [n for d, n in enumerate(shape) if d != axis],
                  i64)

    def body(args):
        value, target, best = args
        index = arith.index_cast(i64, linalg.IndexOp(ir.IntegerAttr.get(
            ir.IntegerType.get_signless(64), axis)).result)
        if b.is_float(element_type):
            hit = arith.cmpf(arith.CmpFPredicate.OEQ, value, target)
        else:
            hit = arith.cmpi(arith.CmpIPredicate.eq, value, target)
        better = arith.maxsi(best, index) if last else arith.minsi(best, index)
        return arith.select(hit, better, best)
    return b.generic([x, peak], [ir.AffineMap.get_identity(rank), kept], init, kept,
                     ["reduction" if d == axis else "parallel" for d in range(rank)], body)


@handles("ArgMax", "ArgMin")
def arg_max_min(node):
    x = node.value(0)
    shape = b.shape_of(x)
    axis = normalized_axis(node.attr("axis", 0), len(shape))
    if shape[axis] == 0:
        raise node.unsupported(f"{node.op_type} along an empty axis")
    if _is_bool(b.element_of(x)):
        raise node.unsupported(f"{node.op_type} of bool tensors")
    result = arg_extreme(x, axis, node.op_type == "ArgMax",
                         bool(node.attr("select_last_index", 0)))
    if node.attr("keepdims", 1):
        result = b.reshape(result, [1 if d == axis else n for d, n in enumerate(shape)])
    return [result]


# -- Hardmax, TopK ---------------------------------------------------------------------------

def _index_along(axis):
    i64 = ir.IntegerType.get_signless(64)
    return arith.index_cast(i64, linalg.IndexOp(ir.IntegerAttr.get(i64, axis)).result)


@handles("Hardmax")
def hardmax(node):
    """1 at the first largest element along `axis` (opset 13; the whole
    trailing block before), 0 elsewhere."""
    x = node.value(0)
    shape = b.shape_of(x)
    rank = len(shape)
    axis = normalized_axis(node.attr("axis", -1 if node.opset >= 13 else 1), rank)
    if node.opset < 13:  # the input is seen as 2-D at `axis`
        flat = [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))]
        return [b.reshape(_hardmax(b.reshape(x, flat), 1), shape)]
    return [_hardmax(x, axis)]


def _hardmax(x, axis):
    shape = b.shape_of(x)
    rank = len(shape)
    winner = arg_extreme(x, axis, True, False)
    kept = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in range(rank) if d != axis])
    element_type = b.element_of(x)

    def body(args):
        hit = arith.cmpi(arith.CmpIPredicate.eq, _index_along(axis), args[0])
        return arith.select(hit, b.scalar(1.0, element_type), b.scalar(0.0, element_type))
    return b.generic([winner], [kept], b.empty(shape, element_type),
                     ir.AffineMap.get_identity(rank), ["parallel"] * rank, body)


@handles("TopK")
def top_k(node):
    """Each element's rank along the axis is the number of elements before it
    in the order (larger first, the lower index first among equals); output
    position r then selects the element of rank r. Quadratic in the axis
    length, which TopK's axes (classes, candidates) keep small."""
    x = node.value(0)
    shape = b.shape_of(x)
    rank = len(shape)
    axis = normalized_axis(node.attr("axis", -1), rank)
    k = int(node.attr("k")) if node.opset < 10 else \
        int(node.required_constant(1, "k").reshape(-1)[0])
    length = shape[axis]
    if not 0 <= k <= length:
        raise ImportFailure(f"k={k} is outside 0..{length}")
    if k == 0 or length > 4096:
        raise node.unsupported("TopK with k=0" if k == 0 else
                               f"TopK along an axis of {length} elements (4096 at most)")
    element_type = b.element_of(x)
    largest = bool(node.attr("largest", 1))
    i64 = ir.IntegerType.get_signless(64)
    # ranks: loops (..., i at axis, ..., j last) count the j that come before i
    dims = [ir.AffineDimExpr.get(d) for d in range(rank + 1)]
    at_j = dims[:axis] + [dims[rank]] + dims[axis + 1:rank]

    def before(args):
        mine, other, count = args
        if b.is_float(element_type):
            ahead = arith.cmpf(arith.CmpFPredicate.OGT if largest else arith.CmpFPredicate.OLT,
                               other, mine)
            equal = arith.cmpf(arith.CmpFPredicate.OEQ, other, mine)
        else:
            ahead = arith.cmpi(arith.CmpIPredicate.sgt if largest else arith.CmpIPredicate.slt,
                               other, mine)
            equal = arith.cmpi(arith.CmpIPredicate.eq, other, mine)
        earlier = arith.cmpi(arith.CmpIPredicate.slt, _index_along(rank), _index_along(axis))
        counts = arith.ori(ahead, arith.andi(equal, earlier))
        return arith.addi(count, arith.extui(i64, counts))
    ranks = b.generic([x, x], [ir.AffineMap.get(rank + 1, 0, dims[:rank]),
                               ir.AffineMap.get(rank + 1, 0, at_j)],
                      b.fill(0, shape, i64), ir.AffineMap.get(rank + 1, 0, dims[:rank]),
                      ["parallel"] * rank + ["reduction"], before)
    # selection: loops (..., r at axis, ..., i last) pick the element of rank r
    out_shape = shape[:axis] + [k] + shape[axis + 1:]
    at_i = dims[:axis] + [dims[rank]] + dims[axis + 1:rank]
    out_map = ir.AffineMap.get(rank + 1, 0, dims[:rank])
    iterators = ["parallel"] * rank + ["reduction"]

    def pick(use_index):
        def body(args):
            value, order, chosen = args
            hit = arith.cmpi(arith.CmpIPredicate.eq, order, _index_along(axis))
            return arith.select(hit, _index_along(rank) if use_index else value, chosen)
        return body
    values = b.generic([x, ranks], [ir.AffineMap.get(rank + 1, 0, at_i)] * 2,
                       b.fill(0.0 if b.is_float(element_type) else 0, out_shape, element_type),
                       out_map, iterators, pick(False))
    indices = b.generic([x, ranks], [ir.AffineMap.get(rank + 1, 0, at_i)] * 2,
                        b.fill(0, out_shape, i64), out_map, iterators, pick(True))
    return [values, indices]


# -- CumSum, CumProd -------------------------------------------------------------------------

@folds("CumSum", "CumProd")
def fold_cumulative(node, inputs):
    """Of constants (a sinusoidal position embedding counts the pixels of a mask
    of ones): numpy, adding one element after another as onnxruntime does."""
    x, axis = inputs[0], inputs[1]
    axis = normalized_axis(int(np.asarray(axis).reshape(-1)[0]), x.ndim)
    exclusive, reverse = bool(node.attr("exclusive", 0)), bool(node.attr("reverse", 0))
    scan = np.cumprod if node.op_type == "CumProd" else np.cumsum
    values = np.flip(x, axis) if reverse else x
    result = scan(values, axis=axis, dtype=x.dtype)
    if exclusive and result.shape[axis]:
        identity = np.full_like(np.take(result, [0], axis), int(node.op_type == "CumProd"))
        result = np.concatenate([identity, np.delete(result, -1, axis)], axis)
    return [np.flip(result, axis) if reverse else result]


@handles("CumSum", "CumProd")
def cumulative(node):
    """out[i] = x[0] op ... op x[i] along the axis (exclusive: up to i - 1,
    reverse: from the end), as a scan in log2(n) steps: step s combines each
    element with the one 2**s before it (after it, reversed), an elementwise op
    on two slices of the axis written back into the later one. n log n work on
    the vector unit, where a reduction over (i, j) would be n**2 on the
    fallback engine. Floats then add in another order than one after another."""
    x = node.value(0)
    shape = b.shape_of(x)
    rank = len(shape)
    axis = normalized_axis(int(node.required_constant(1, "the axis").reshape(-1)[0]), rank)
    element_type = b.element_of(x)
    combine = b.mul if node.op_type == "CumProd" else b.add
    exclusive, reverse = bool(node.attr("exclusive", 0)), bool(node.attr("reverse", 0))
    length = shape[axis]

    def along(value, start, size):
        offsets, sizes = [0] * rank, list(shape)
        offsets[axis], sizes[axis] = start, size
        return b.extract_slice(value, offsets, sizes)

    def at(start):
        return [start if d == axis else 0 for d in range(rank)]

    scan, step = x, 1
    while step < length:
        updated, partner = (0, step) if reverse else (step, 0)
        combined = b.elementwise([along(scan, updated, length - step),
                                  along(scan, partner, length - step)],
                                 lambda a: combine(a[0], a[1]))
        scan = b.insert_at(combined, scan, at(updated))
        step *= 2
    if not exclusive or length == 0:
        return [scan]
    identity = (1.0 if node.op_type == "CumProd" else 0.0) if b.is_float(element_type) \
        else int(node.op_type == "CumProd")
    shifted = along(scan, 0, length - 1) if not reverse else along(scan, 1, length - 1)
    return [b.insert_at(shifted, b.fill(identity, shape, element_type), at(0 if reverse else 1))]
