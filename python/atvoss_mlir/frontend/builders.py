"""IR building blocks for the ONNX importer: tensors, constants and the
linalg/tensor ops every handler composes (static shapes throughout).

Every function builds at the current insertion point and location, so the
importer only has to enter a node's location once.
"""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, math, tensor

# -- types ---------------------------------------------------------------------------------

_NUMPY_TO_MLIR = {
    np.dtype(np.float32): lambda: ir.F32Type.get(),
    np.dtype(np.float16): lambda: ir.F16Type.get(),
    np.dtype(np.float64): lambda: ir.F64Type.get(),
    np.dtype(np.int64): lambda: ir.IntegerType.get_signless(64),
    np.dtype(np.int32): lambda: ir.IntegerType.get_signless(32),
    np.dtype(np.int16): lambda: ir.IntegerType.get_signless(16),
    np.dtype(np.int8): lambda: ir.IntegerType.get_signless(8),
    np.dtype(np.uint8): lambda: ir.IntegerType.get_signless(8),
    np.dtype(np.bool_): lambda: ir.IntegerType.get_signless(1),
}


def element_type_of(dtype: np.dtype) -> ir.Type | None:
    make = _NUMPY_TO_MLIR.get(np.dtype(dtype))
    return make() if make else None


def placeholder(value: ir.Value) -> np.ndarray:
    """A read-only array of the value's shape and numpy element type, without
    data: what a folder that reads only a type sees of a runtime tensor."""
    element_type = element_of(value)
    dtype = next((d for d in _NUMPY_TO_MLIR if d != np.dtype(np.uint8)
                  and element_type_of(d) == element_type), np.dtype(np.float32))
    return np.broadcast_to(np.zeros((), dtype), shape_of(value))


def tensor_type(shape, element_type: ir.Type) -> ir.RankedTensorType:
    return ir.RankedTensorType.get([int(d) for d in shape], element_type)


def shape_of(value: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(value.type).shape)


def element_of(value: ir.Value) -> ir.Type:
    return ir.RankedTensorType(value.type).element_type


def is_float(type_: ir.Type) -> bool:
    return isinstance(type_, ir.FloatType)


# -- constants -----------------------------------------------------------------------------

def dense_attr(array: np.ndarray, resource_name: str | None = None) -> ir.Attribute:
    """A whole tensor as one attribute, copied from the numpy buffer (no per-element
    Python work). With `resource_name`, a `dense_resource` blob instead."""
    element_type = element_type_of(array.dtype)
    if element_type is None:
        raise ValueError(f"element type {array.dtype} has no MLIR equivalent here")
    type_ = tensor_type(array.shape, element_type)
    if array.dtype == np.uint8:
        array = array.view(np.int8)
    array = np.ascontiguousarray(array)
    flat = array.reshape(-1)
    if flat.size > 1 and flat[0] == flat[-1] and np.all(flat == flat[0]):
        return ir.DenseElementsAttr.get_splat(type_, _scalar_attr(flat[0], element_type))
    if resource_name is not None and array.dtype != np.bool_:
        return ir.DenseResourceElementsAttr.get_from_buffer(memoryview(array), resource_name, type_)
    if array.dtype == np.bool_:  # i1 elements are read bit-packed
        return ir.DenseElementsAttr.get(np.packbits(flat, bitorder="little"), type=type_)
    return ir.DenseElementsAttr.get(array, type=type_)


def _scalar_attr(value, element_type: ir.Type) -> ir.Attribute:
    if is_float(element_type):
        return ir.FloatAttr.get(element_type, float(value))
    return ir.IntegerAttr.get(element_type, int(value))


def constant_tensor(array: np.ndarray, resource_name: str | None = None) -> ir.Value:
    attr = dense_attr(array, resource_name)
    return arith.ConstantOp(attr.type, attr).result


def scalar(value, element_type: ir.Type) -> ir.Value:
    return arith.ConstantOp(element_type, _scalar_attr(value, element_type)).result


def lowest(element_type: ir.Type) -> float | int:
    """The identity of max: -inf for floats, the smallest integer otherwise."""
    if is_float(element_type):
        return float("-inf")
    width = ir.IntegerType(element_type).width
    return 0 if width == 1 else -(1 << (width - 1))


def highest(element_type: ir.Type) -> float | int:
    """The identity of min: +inf for floats, the largest integer otherwise."""
    if is_float(element_type):
        return float("inf")
    width = ir.IntegerType(element_type).width
    return 1 if width == 1 else (1 << (width - 1)) - 1


def result_of(built) -> ir.Value:
    """The value of a builder that returns either a value or its op."""
    if isinstance(built, (ir.OpView, ir.Operation)):
        return built.results[0]
    if isinstance(built, ir.OpResultList):
        return built[0]
    return built


# -- tensors -------------------------------------------------------------------------------

def empty(shape, element_type: ir.Type) -> ir.Value:
    return tensor.EmptyOp([int(d) for d in shape], element_type).result


def fill(value, shape, element_type: ir.Type) -> ir.Value:
    return linalg.fill(scalar(value, element_type), outs=[empty(shape, element_type)])


def transpose(value: ir.Value, permutation) -> ir.Value:
    permutation = [int(p) for p in permutation]
    if permutation == list(range(len(permutation))):
        return value
    shape = shape_of(value)
    init = empty([shape[p] for p in permutation], element_of(value))
    return result_of(linalg.transpose(value, outs=[init], permutation=permutation))


def reshape(value: ir.Value, new_shape) -> ir.Value:
    """A static reshape as a collapse to the coarsest shape both sides share,
    then an expand (both bufferize to views; either may be absent)."""
    old_shape, new_shape = shape_of(value), [int(d) for d in new_shape]
    if old_shape == new_shape:
        return value
    if not old_shape or not new_shape or 0 in old_shape:  # through 1-D
        if not old_shape:
            value = _expand(value, [1], [])
        elif len(old_shape) != 1:
            value = _collapse(value, [int(np.prod(old_shape))], [list(range(len(old_shape)))])
        if not new_shape:
            return _collapse(value, [], [])
        return _expand(value, new_shape, [list(range(len(new_shape)))])
    old_groups, new_groups = _common_groups(old_shape, new_shape)
    common = [int(np.prod([old_shape[d] for d in group])) for group in old_groups]
    if common != old_shape:
        value = _collapse(value, common, old_groups)
    if common != new_shape:
        value = _expand(value, new_shape, new_groups)
    return value


def _common_groups(old, new):
    """Consecutive dimension groups of `old` and `new` with equal products,
    as fine as possible; trailing unit dimensions join the last group."""
    old_groups, new_groups, i, j = [], [], 0, 0
    while i < len(old) and j < len(new):
        old_group, new_group = [i], [j]
        old_product, new_product = old[i], new[j]
        i, j = i + 1, j + 1
        while old_product != new_product:
            if old_product < new_product:
                old_group.append(i)
                old_product *= old[i]
                i += 1
            else:
                new_group.append(j)
                new_product *= new[j]
                j += 1
        old_groups.append(old_group)
        new_groups.append(new_group)
    old_groups[-1].extend(range(i, len(old)))
    new_groups[-1].extend(range(j, len(new)))
    return old_groups, new_groups


def _collapse(value, new_shape, groups):
    type_ = tensor_type(new_shape, element_of(value))
    return tensor.CollapseShapeOp(type_, value, reassociation_attr(groups)).result


def _expand(value, new_shape, groups):
    type_ = tensor_type(new_shape, element_of(value))
    return tensor.ExpandShapeOp(type_, value, reassociation_attr(groups), [], new_shape).result


def reassociation_attr(groups) -> ir.ArrayAttr:
    """The `reassociation` attribute of an expand/collapse_shape from its groups of dims."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in group])
                             for group in groups])


def pad(value: ir.Value, low, high, pad_value) -> ir.Value:
    low, high = [int(p) for p in low], [int(p) for p in high]
    if not any(low) and not any(high):
        return value
    shape = shape_of(value)
    element_type = element_of(value)
    result_type = tensor_type([d + lo + hi for d, lo, hi in zip(shape, low, high)], element_type)
    padding = scalar(pad_value, element_type)
    op = tensor.PadOp(result_type, value, [], [], low, high)
    block = op.region.blocks.append(*[ir.IndexType.get()] * len(shape))
    with ir.InsertionPoint(block):
        tensor.YieldOp(padding)
    return op.result


def extract_slice(value: ir.Value, offsets, sizes, strides=None) -> ir.Value:
    sizes = [int(s) for s in sizes]
    strides = [int(s) for s in strides] if strides is not None else [1] * len(sizes)
    offsets = [int(o) for o in offsets]
    if offsets == [0] * len(sizes) and strides == [1] * len(sizes) and sizes == shape_of(value):
        return value
    if 0 in sizes:  # nothing to read (the verifier rejects an offset at the end)
        return empty(sizes, element_of(value))
    result_type = tensor_type(sizes, element_of(value))
    return tensor.ExtractSliceOp(result_type, value, [], [], [], offsets, sizes, strides).result


def insert_strided(value: ir.Value, into: ir.Value, strides) -> ir.Value:
    """`value` written into `into` every `strides` elements from the origin."""
    shape = shape_of(value)
    return tensor.InsertSliceOp(value, into, [], [], [], [0] * len(shape), shape,
                                [int(s) for s in strides]).result


def insert_at(value: ir.Value, into: ir.Value, offsets) -> ir.Value:
    """`value` written into `into` from `offsets`."""
    shape = shape_of(value)
    return tensor.InsertSliceOp(value, into, [], [], [], [int(o) for o in offsets], shape,
                                [1] * len(shape)).result


def concat(values: list[ir.Value], axis: int) -> ir.Value:
    """Concatenation as insert_slice into an empty tensor (bufferizes to copies
    into subviews)."""
    if len(values) == 1:
        return values[0]
    shape = shape_of(values[0])
    shape[axis] = sum(shape_of(v)[axis] for v in values)
    result = empty(shape, element_of(values[0]))
    offset = 0
    for value in values:
        part = shape_of(value)
        offsets = [0] * len(shape)
        offsets[axis] = offset
        result = insert_at(value, result, offsets)
        offset += part[axis]
    return result


# -- linalg.generic ------------------------------------------------------------------------

_PARALLEL = "#linalg.iterator_type<parallel>"
_REDUCTION = "#linalg.iterator_type<reduction>"


def generic(inputs, input_maps, init: ir.Value, output_map: ir.AffineMap, iterators, body):
    """One linalg.generic with a single output: on tensors its result, on buffers
    the op. `body(args)` receives the block arguments (inputs then the
    accumulator) and returns the value to yield."""
    maps = [ir.AffineMapAttr.get(m) for m in list(input_maps) + [output_map]]
    iterator_attrs = [ir.Attribute.parse(_PARALLEL if kind == "parallel" else _REDUCTION)
                      for kind in iterators]
    on_tensors = isinstance(init.type, ir.RankedTensorType)
    op = linalg.GenericOp([init.type] if on_tensors else [], list(inputs), [init],
                          ir.ArrayAttr.get(maps), ir.ArrayAttr.get(iterator_attrs))
    block = op.regions[0].blocks.append(*[_scalar_type(v) for v in list(inputs) + [init]])
    with ir.InsertionPoint(block):
        linalg.YieldOp([body(list(block.arguments))])
    return op.result if on_tensors else op


def _scalar_type(value):
    if isinstance(value.type, (ir.RankedTensorType, ir.MemRefType)):
        return ir.ShapedType(value.type).element_type
    return value.type


def broadcast_shape(*shapes) -> list[int]:
    try:
        return list(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        from .onnx_importer import ImportFailure
        raise ImportFailure("shapes " + ", ".join("x".join(map(str, s)) or "scalar" for s in shapes)
                            + " do not broadcast") from None


def _broadcast_operand(value: ir.Value, result_shape) -> tuple[ir.Value, ir.AffineMap]:
    """An operand of a broadcasting generic and its map, a projected permutation
    (what linalg's fusion and tiling expect): the dimensions it broadcasts along
    are collapsed away and left out of the map."""
    shape = shape_of(value)
    rank = len(result_shape)
    lead = rank - len(shape)
    kept = [i for i, d in enumerate(shape) if not (d == 1 and result_shape[lead + i] != 1)]
    if len(kept) < len(shape):
        value = reshape(value, [shape[i] for i in kept])
    return value, ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(lead + i) for i in kept])


def elementwise(inputs: list[ir.Value], body, element_type: ir.Type | None = None,
                result_shape=None) -> ir.Value:
    """A linalg.generic applying `body(scalars)` with numpy broadcasting."""
    shapes = [shape_of(v) for v in inputs]
    result_shape = broadcast_shape(*shapes, *([result_shape] if result_shape else []))
    element_type = element_type or element_of(inputs[0])
    rank = len(result_shape)
    operands, maps = zip(*[_broadcast_operand(v, result_shape) for v in inputs])
    return generic(list(operands), list(maps), empty(result_shape, element_type),
                   ir.AffineMap.get_identity(rank), ["parallel"] * rank,
                   lambda args: body(args[:-1]))


def broadcast_to(value: ir.Value, shape) -> ir.Value:
    if shape_of(value) == list(shape):
        return value
    return elementwise([value], lambda a: a[0], result_shape=shape)


def reduce(value: ir.Value, axes, init_value, combine) -> ir.Value:
    """Reduce `value` over `axes` (dropped from the result) starting from
    `init_value`; `combine(element, accumulator)` builds the body."""
    shape = shape_of(value)
    rank = len(shape)
    axes = sorted(a % rank for a in axes)
    kept = [d for d in range(rank) if d not in axes]
    element_type = element_of(value)
    init = linalg.fill(scalar(init_value, element_type),
                       outs=[empty([shape[d] for d in kept], element_type)])
    return generic([value], [ir.AffineMap.get_identity(rank)], init,
                   ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in kept]),
                   ["reduction" if d in axes else "parallel" for d in range(rank)],
                   lambda args: combine(args[0], args[1]))


def reduce_keepdims(value: ir.Value, axes, init_value, combine) -> ir.Value:
    shape = shape_of(value)
    axes = [a % len(shape) for a in axes]
    reduced = reduce(value, axes, init_value, combine)
    return reshape(reduced, [1 if d in axes else n for d, n in enumerate(shape)])


# -- scalar arithmetic in bodies -----------------------------------------------------------

def add(a, b):
    return arith.addf(a, b) if is_float(a.type) else arith.addi(a, b)


def sub(a, b):
    return arith.subf(a, b) if is_float(a.type) else arith.subi(a, b)


def mul(a, b):
    return arith.mulf(a, b) if is_float(a.type) else arith.muli(a, b)


def div(a, b):
    return arith.divf(a, b) if is_float(a.type) else arith.divsi(a, b)


def _is_bool(type_: ir.Type) -> bool:
    return isinstance(type_, ir.IntegerType) and ir.IntegerType(type_).width == 1


# Booleans (i1) compare unsigned: false < true, so max is "or" and min is "and"
# (as signed i1, true is -1).
def maximum(a, b):
    if is_float(a.type):
        return arith.maximumf(a, b)
    return arith.maxui(a, b) if _is_bool(a.type) else arith.maxsi(a, b)


def minimum(a, b):
    if is_float(a.type):
        return arith.minimumf(a, b)
    return arith.minui(a, b) if _is_bool(a.type) else arith.minsi(a, b)


def const_like(value, like: ir.Value) -> ir.Value:
    return scalar(value, like.type)


def sigmoid(x):
    one = const_like(1.0, x)
    return arith.divf(one, arith.addf(one, math.exp(arith.negf(x))))
