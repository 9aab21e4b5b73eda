"""Data-movement ops: reshapes become tensor.collapse/expand_shape, slices
tensor.extract_slice, concatenation tensor.insert_slice, transposes
linalg.transpose, padding tensor.pad. Each op's parameters are read once
(attributes in old opsets, constant inputs in new ones) and shared by the
handler and the numpy folder."""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith

from . import builders as b
from .handler_api import normalized_axis
from .ops_layout import gather_tensor, gather_values, uniform_gather
from .onnx_importer import ImportFailure, folds, handles


def _int_list(value) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


# -- Reshape, Flatten, Squeeze, Unsqueeze, Expand ------------------------------------------

def reshape_target(node, shape) -> list[int]:
    requested = _int_list(node.required_constant(1, "the target shape"))
    allow_zero = node.opset >= 14 and node.attr("allowzero", 0)
    copied = [i for i, d in enumerate(requested) if d == 0 and not allow_zero]
    if copied and copied[-1] >= len(shape):
        raise ImportFailure(f"target shape {requested} copies dim {copied[-1]} (a 0) of an input "
                            f"of rank {len(shape)}")
    target = [shape[i] if d == 0 and not allow_zero else d for i, d in enumerate(requested)]
    if target.count(-1) > 1:
        raise ImportFailure(f"target shape {requested} has more than one -1")
    if -1 in target:
        known = int(np.prod([d for d in target if d != -1]))
        target[target.index(-1)] = int(np.prod(shape)) // known if known else 0
    if int(np.prod(target)) != int(np.prod(shape)):
        raise ImportFailure(f"cannot reshape {shape} to {requested}")
    return target


def flatten_target(node, shape) -> list[int]:
    axis = node.attr("axis", 1)
    if not -len(shape) <= axis <= len(shape):
        raise ImportFailure(f"axis {axis} out of range for rank {len(shape)} (Flatten takes "
                            f"-rank to rank)")
    axis = axis + len(shape) if axis < 0 else axis
    return [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))]


def _axes(node, input_index: int, what: str):
    """Axes given as an attribute (opset < 13) or as a constant input."""
    if node.opset < 13:
        return node.attr("axes")
    if not node.has_input(input_index):
        return None
    return _int_list(node.required_constant(input_index, what))


def squeeze_target(node, shape) -> list[int]:
    axes = _axes(node, 1, "the axes")
    if axes is None:
        return [d for d in shape if d != 1]
    axes = {normalized_axis(a, len(shape)) for a in axes}
    if any(shape[a] != 1 for a in axes):
        raise ImportFailure(f"cannot squeeze axes {sorted(axes)} of shape {shape}")
    return [d for i, d in enumerate(shape) if i not in axes]


def unsqueeze_target(node, shape) -> list[int]:
    axes = _axes(node, 1, "the axes")
    if axes is None:
        raise ImportFailure("Unsqueeze needs axes")
    rank = len(shape) + len(axes)
    axes = sorted(normalized_axis(a, rank) for a in axes)
    target, rest = [], iter(shape)
    for i in range(rank):
        target.append(1 if i in axes else next(rest))
    return target


_RESHAPES = {"Reshape": reshape_target, "Flatten": flatten_target,
             "Squeeze": squeeze_target, "Unsqueeze": unsqueeze_target}


@folds(*_RESHAPES)
def fold_reshape(node, inputs):
    return [inputs[0].reshape(_RESHAPES[node.op_type](node, list(inputs[0].shape)))]


@handles(*_RESHAPES)
def reshape(node):
    return [b.reshape(node.value(0), _RESHAPES[node.op_type](node, node.shape(0)))]


@folds("Expand")
def fold_expand(node, inputs):
    shape = b.broadcast_shape(inputs[0].shape, _int_list(inputs[1]))
    return [np.broadcast_to(inputs[0], shape).copy()]


@handles("Expand")
def expand(node):
    requested = _int_list(node.required_constant(1, "the shape"))
    return [b.broadcast_to(node.value(0), b.broadcast_shape(node.shape(0), requested))]


# -- Transpose -----------------------------------------------------------------------------

def _permutation(node, rank):
    return node.attr("perm") or list(reversed(range(rank)))


@folds("Transpose")
def fold_transpose(node, inputs):
    return [np.ascontiguousarray(np.transpose(inputs[0], _permutation(node, inputs[0].ndim)))]


@handles("Transpose")
def transpose(node):
    return [b.transpose(node.value(0), _permutation(node, len(node.shape(0))))]


# -- Concat, Split -------------------------------------------------------------------------

@folds("Concat")
def fold_concat(node, inputs):
    if node.attr("axis") is None:  # numpy would flatten the inputs
        raise ImportFailure("a Concat needs an 'axis' attribute")
    arrays = [i for i in inputs if i is not None]
    if not arrays:
        raise ImportFailure("a Concat needs at least one input")
    axis = normalized_axis(node.attr("axis"), arrays[0].ndim)
    return [np.concatenate(arrays, axis=axis)]


@handles("Concat")
def concat(node):
    values = [node.value(i) for i in range(node.input_count) if node.has_input(i)]
    rank = len(b.shape_of(values[0]))
    axis = normalized_axis(node.attr("axis"), rank)
    values = [v for v in values if b.shape_of(v)[axis] > 0]
    return [b.concat(values, axis)]


def split_sizes(node, shape) -> tuple[int, list[int]]:
    axis = normalized_axis(node.attr("axis", 0), len(shape))
    if node.opset < 13:
        sizes = node.attr("split")
    else:
        sizes = _int_list(node.constant(1)) if node.has_input(1) else None
        if node.has_input(1) and node.constant(1) is None:
            raise ImportFailure("the split sizes (input 1) must be a constant")
    outputs = len(node.proto.output)
    if not sizes:
        parts = node.attr("num_outputs", outputs)
        chunk = -(-shape[axis] // parts)  # the last part may be smaller (opset 18)
        sizes = [min(chunk, shape[axis] - chunk * i) for i in range(parts)]
    if sum(sizes) != shape[axis]:
        raise ImportFailure(f"split sizes {sizes} do not add up to {shape[axis]}")
    return axis, list(sizes)


@folds("Split")
def fold_split(node, inputs):
    axis, sizes = split_sizes(node, list(inputs[0].shape))
    return np.split(inputs[0], np.cumsum(sizes)[:-1], axis=axis)


@handles("Split")
def split(node):
    source = node.value(0)
    shape = b.shape_of(source)
    axis, sizes = split_sizes(node, shape)
    results, offset = [], 0
    for size in sizes:
        offsets, part = [0] * len(shape), list(shape)
        offsets[axis], part[axis] = offset, size
        results.append(b.extract_slice(source, offsets, part))
        offset += size
    return results


# -- Slice ---------------------------------------------------------------------------------

def slice_parameters(node, shape):
    """(start, size, step) per dimension after ONNX's clamping rules."""
    if node.opset < 10:
        starts, ends = node.attr("starts"), node.attr("ends")
        axes, steps = node.attr("axes"), None
    else:
        starts = _int_list(node.required_constant(1, "starts"))
        ends = _int_list(node.required_constant(2, "ends"))
        axes = _int_list(node.required_constant(3, "axes")) if node.has_input(3) else None
        steps = _int_list(node.required_constant(4, "steps")) if node.has_input(4) else None
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps or [1] * len(starts)
    parameters = [(0, d, 1) for d in shape]
    for axis, start, end, step in zip(axes, starts, ends, steps):
        axis = normalized_axis(axis, len(shape))
        dim = shape[axis]
        if step == 0:
            raise ImportFailure("a slice step of 0")
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        size = max(0, -(-(end - start) // step))
        parameters[axis] = (start, size, step)
    return parameters


@folds("Slice")
def fold_slice(node, inputs):
    parameters = slice_parameters(node, list(inputs[0].shape))
    index = tuple(slice(start, start + step * size if start + step * size >= 0 else None, step)
                  for start, size, step in parameters)
    return [np.ascontiguousarray(inputs[0][index])]


@handles("Slice")
def slice_(node):
    source = node.value(0)
    parameters = slice_parameters(node, b.shape_of(source))
    # A negative step reads the same elements as a positive one, in reverse.
    offsets = [start + step * (size - 1) if step < 0 and size else start
               for start, size, step in parameters]
    sizes = [size for _, size, _ in parameters]
    result = b.extract_slice(source, offsets, sizes, [abs(step) for _, _, step in parameters])
    reversed_axes = [d for d, (_, size, step) in enumerate(parameters) if step < 0 and size > 1]
    return [reverse(result, reversed_axes) if reversed_axes else result]


def reverse(value, axes):
    shape = b.shape_of(value)
    rank = len(shape)
    exprs = []
    for d in range(rank):
        dim = ir.AffineDimExpr.get(d)
        exprs.append(dim * -1 + (shape[d] - 1) if d in axes else dim)
    return b.generic([value], [ir.AffineMap.get(rank, 0, exprs)],
                     b.empty(shape, b.element_of(value)), ir.AffineMap.get_identity(rank),
                     ["parallel"] * rank, lambda args: args[0])


# -- Gather with constant indices on a runtime tensor ---------------------------------------

def progression(values: np.ndarray) -> tuple[int, int] | None:
    """(first, step) of values that step up evenly (step >= 1), else None."""
    if values.size == 0:
        return None
    steps = np.diff(values)
    step = int(steps[0]) if steps.size else 1
    return (int(values[0]), step) if step >= 1 and (steps == step).all() else None


@handles("Gather")
def gather(node):
    """Constant indices: gather_by_constant; runtime ones gather_tensor."""
    source = node.value(0)
    indices = node.constant(1)
    shape = b.shape_of(source)
    axis = normalized_axis(node.attr("axis", 0), len(shape))
    if indices is not None and indices.size and \
            (indices.min() < -shape[axis] or indices.max() >= shape[axis]):
        raise ImportFailure(f"indices out of range for an axis of {shape[axis]} elements")
    index_shape = b.shape_of(node.value(1)) if indices is None else list(indices.shape)
    uniform = uniform_gather(node, shape[:axis] + index_shape + shape[axis + 1:])
    if uniform is not None:
        return [uniform]
    if indices is None:
        return [gather_tensor(node, source, axis)]
    if indices.size == 0:
        raise node.unsupported("a Gather of no indices (an empty result)")
    return [gather_by_constant(source, indices % shape[axis], axis)]


# Constant indices a Gather copies one slice each for; more go through
# gather_values as a constant index tensor (a loop, not an unrolled copy each).
MAX_INDEX_SLICES = 1024


def gather_by_constant(source, indices: np.ndarray, axis: int):
    """Gather by constant indices in range: one strided slice when they step up
    evenly, else a slice each (up to MAX_INDEX_SLICES of them), else
    gather_values on the indices as a constant tensor."""
    shape = b.shape_of(source)
    out_shape = shape[:axis] + list(indices.shape) + shape[axis + 1:]
    evenly = progression(indices.reshape(-1))
    if evenly is not None:
        first, step = evenly
        offsets, sizes, strides = [0] * len(shape), list(shape), [1] * len(shape)
        offsets[axis], sizes[axis], strides[axis] = first, indices.size, step
        return b.reshape(b.extract_slice(source, offsets, sizes, strides), out_shape)
    if indices.size > MAX_INDEX_SLICES:
        return gather_values(source, b.constant_tensor(indices.astype(np.int64)), axis)
    parts = []
    for index in indices.reshape(-1):
        offsets, sizes = [0] * len(shape), list(shape)
        offsets[axis], sizes[axis] = int(index), 1
        parts.append(b.extract_slice(source, offsets, sizes))
    return b.reshape(b.concat(parts, axis), out_shape)


# -- GatherND --------------------------------------------------------------------------------

def gather_nd_shapes(node, shape: list, index_shape: list) -> tuple[int, int]:
    """GatherND's batch_dims and the length k of an index tuple, checked."""
    batch_dims = node.attr("batch_dims", 0)
    if not index_shape or not 0 <= batch_dims < min(len(shape), len(index_shape)):
        raise ImportFailure(f"batch_dims {batch_dims} does not fit data of shape {shape} "
                            f"and indices of shape {index_shape}")
    if shape[:batch_dims] != index_shape[:batch_dims]:
        raise ImportFailure(f"the batch dims of data {shape} and indices {index_shape} differ")
    k = index_shape[-1]
    if not 1 <= k <= len(shape) - batch_dims:
        raise ImportFailure(f"index tuples of {k} elements into data of rank {len(shape)} "
                            f"after {batch_dims} batch dims")
    return batch_dims, k


def batch_offsets(shape: list, index_shape: list, batch_dims: int, k: int) -> np.ndarray:
    """Each index tuple's first row of the data flattened to (batch and indexed
    dims, rest): its batch number times the rows of a batch."""
    batches = np.arange(int(np.prod(shape[:batch_dims])), dtype=np.int64)
    rows = int(np.prod(shape[batch_dims:batch_dims + k]))
    outer = index_shape[:batch_dims] + [1] * (len(index_shape) - 1 - batch_dims)
    return np.broadcast_to((batches * rows).reshape(outer), index_shape[:-1])


@folds("GatherND")
def fold_gather_nd(node, inputs):
    data, indices = inputs
    batch_dims, k = gather_nd_shapes(node, list(data.shape), list(indices.shape))
    rows = constant_rows(node, list(data.shape), indices, batch_dims, k)
    flat = data.reshape([-1] + list(data.shape[batch_dims + k:]))
    return [np.take(flat, rows, axis=0)]


def constant_rows(node, shape, indices, batch_dims, k) -> np.ndarray:
    """The rows of the flattened data constant index tuples name, in range."""
    dims = np.asarray(shape[batch_dims:batch_dims + k])
    if indices.size and ((indices < -dims).any() or (indices >= dims).any()):
        raise ImportFailure(f"an index tuple out of range for dims {dims.tolist()}")
    wrapped = np.where(indices < 0, indices + dims, indices).astype(np.int64)
    within = np.ravel_multi_index(tuple(np.moveaxis(wrapped, -1, 0)), tuple(dims)) \
        if indices.size else np.zeros(indices.shape[:-1], np.int64)
    return batch_offsets(shape, list(indices.shape), batch_dims, k) + within


@handles("GatherND")
def gather_nd(node):
    """The data flattened to (batch and indexed dims, rest), each index tuple a
    row number of it (computed in numpy for constant indices, by elementwise
    ops for runtime ones), then a Gather of those rows."""
    data = node.value(0)
    shape = b.shape_of(data)
    indices = node.constant(1)
    index_shape = b.shape_of(node.value(1)) if indices is None else list(indices.shape)
    batch_dims, k = gather_nd_shapes(node, shape, index_shape)
    flat = b.reshape(data, [int(np.prod(shape[:batch_dims + k]))] + shape[batch_dims + k:])
    if int(np.prod(index_shape[:-1])) == 0:
        raise node.unsupported("a GatherND of no index tuples (an empty result)")
    if indices is not None:
        return [gather_by_constant(flat, constant_rows(node, shape, indices, batch_dims, k), 0)]
    tuples = node.value(1)
    i64 = ir.IntegerType.get_signless(64)
    rows = b.constant_tensor(batch_offsets(shape, index_shape, batch_dims, k).copy())
    stride = 1
    for j in reversed(range(k)):
        dim = shape[batch_dims + j]
        part = b.reshape(b.extract_slice(tuples, [0] * (len(index_shape) - 1) + [j],
                                         index_shape[:-1] + [1]), index_shape[:-1])
        if b.element_of(part) != i64:
            part = b.elementwise([part], lambda a: arith.extsi(i64, a[0]), i64)

        def add_row(a, dim=dim, stride=stride):   # rows + wrap(index) * stride
            negative = arith.cmpi(arith.CmpIPredicate.slt, a[1], b.const_like(0, a[1]))
            wrapped = arith.select(negative, arith.addi(a[1], b.const_like(dim, a[1])), a[1])
            return arith.addi(a[0], arith.muli(wrapped, b.const_like(stride, a[1])))
        rows = b.elementwise([rows, part], add_row, i64)
        stride *= dim
    return [gather_values(flat, rows, 0)]


# -- Pad -----------------------------------------------------------------------------------

def pad_parameters(node, rank):
    if node.opset < 11:
        pads, value = node.attr("pads"), node.attr("value", 0.0)
    else:
        pads = _int_list(node.required_constant(1, "the pads"))
        value = node.constant(2)
        if node.has_input(2) and value is None:
            raise ImportFailure("the pad value (input 2) must be a constant")
        value = 0 if value is None else value.reshape(-1)[0].item()
    axes = list(range(rank))
    if node.opset >= 18 and node.has_input(3):
        axes = [normalized_axis(a, rank) for a in _int_list(node.required_constant(3, "the axes"))]
    if pads is None or len(pads) != 2 * len(axes):
        raise ImportFailure(f"{0 if pads is None else len(pads)} pads for {len(axes)} axes: "
                            f"Pad takes a start and an end per axis")
    low, high = [0] * rank, [0] * rank
    for i, axis in enumerate(axes):
        low[axis], high[axis] = pads[i], pads[i + len(axes)]
    return low, high, value, node.attr("mode", "constant")


@folds("Pad")
def fold_pad(node, inputs):
    low, high, value, mode = pad_parameters(node, inputs[0].ndim)
    if min(low + high) < 0:
        return None
    widths = list(zip(low, high))
    if mode == "constant":
        return [np.pad(inputs[0], widths, constant_values=value)]
    return [np.pad(inputs[0], widths, mode={"edge": "edge", "reflect": "reflect",
                                             "wrap": "wrap"}[mode])]


@handles("Pad")
def pad(node):
    source = node.value(0)
    shape = b.shape_of(source)
    low, high, value, mode = pad_parameters(node, len(shape))
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise node.unsupported(f"Pad mode '{mode}'")
    # Negative pads crop.
    offsets = [-p if p < 0 else 0 for p in low]
    sizes = [d - max(-lo, 0) - max(-hi, 0) for d, lo, hi in zip(shape, low, high)]
    source = b.extract_slice(source, offsets, sizes)
    if mode != "constant":
        return [_pad_from_source(source, [max(p, 0) for p in low], [max(p, 0) for p in high],
                                 mode)]
    return [b.pad(source, [max(p, 0) for p in low], [max(p, 0) for p in high], value)]


def _pad_from_source(value, low, high, mode):
    """edge, reflect and wrap padding: each axis's borders are slices of the
    tensor (repeated, mirrored or taken from the other end), concatenated."""
    for axis, (before, after) in enumerate(zip(low, high)):
        if not before and not after:
            continue
        shape = b.shape_of(value)
        length = shape[axis]
        limit = length - 1 if mode == "reflect" else length
        if length == 0 or (mode != "edge" and max(before, after) > limit):
            raise ImportFailure(f"{mode} padding of {max(before, after)} on an axis of "
                                f"{length} elements")

        def part(start, count, mirrored=False):
            offsets, sizes = [0] * len(shape), list(shape)
            offsets[axis], sizes[axis] = start, count
            piece = b.extract_slice(value, offsets, sizes)
            return reverse(piece, [axis]) if mirrored and count > 1 else piece
        if mode == "edge":
            parts = [part(0, 1)] * before + [value] + [part(length - 1, 1)] * after
        elif mode == "reflect":
            parts = ([part(1, before, True)] if before else []) + [value] + \
                ([part(length - 1 - after, after, True)] if after else [])
        else:
            parts = ([part(length - before, before)] if before else []) + [value] + \
                ([part(0, after)] if after else [])
        value = b.concat(parts, axis)
    return value


# -- ScatterND -----------------------------------------------------------------------------

_SCATTER_REDUCTIONS = {"add": (np.add, b.add), "mul": (np.multiply, b.mul),
                       "max": (np.maximum, b.maximum), "min": (np.minimum, b.minimum)}

# Index tuples a computed ScatterND may have: each is an insert_slice (a copy).
MAX_SCATTER_SLICES = 1024


def _scatter_positions(node, data_shape, indices: np.ndarray, updates_shape) -> np.ndarray:
    """The index tuples (one row each, negative ones counted from the end) of
    a ScatterND, checked against data and updates."""
    reduction = node.attr("reduction", "none")
    if reduction != "none" and reduction not in _SCATTER_REDUCTIONS:
        raise ImportFailure(f"reduction '{reduction}' is not one of none, add, mul, max, min")
    if len(data_shape) == 0:
        raise ImportFailure("data is a scalar: ScatterND's data has rank at least 1")
    depth = indices.shape[-1] if indices.ndim else 0
    if indices.ndim == 0 or depth > len(data_shape):
        raise ImportFailure(f"indices of shape {list(indices.shape)} do not index data of "
                            f"shape {list(data_shape)}: their last dim must be at most its rank")
    expected = list(indices.shape[:-1]) + list(data_shape[depth:])
    if list(updates_shape) != expected:
        raise ImportFailure(f"updates have shape {list(updates_shape)}, indices of shape "
                            f"{list(indices.shape)} into data of shape {list(data_shape)} "
                            f"need {expected}")
    bounds = np.asarray(data_shape[:depth], np.int64)
    positions = indices.astype(np.int64).reshape(int(np.prod(indices.shape[:-1])), depth)
    if ((positions < -bounds) | (positions >= bounds)).any():
        raise ImportFailure(f"an index is outside data of shape {list(data_shape)}")
    return np.where(positions < 0, positions + bounds, positions)


@folds("ScatterND")
def scatter_nd_constant(node, inputs):
    """A copy of data with the slices the last axis of indices names set to (or
    combined by 'reduction' with) updates. Exporters build masks this way from
    constants (Swin's shifted-window attention mask)."""
    data, indices, updates = inputs
    positions = _scatter_positions(node, data.shape, indices, updates.shape)
    reduction = node.attr("reduction", "none")
    output = np.array(data, copy=True)
    values = updates.reshape(len(positions), *data.shape[positions.shape[1]:]).astype(data.dtype)
    for position, value in zip(positions, values):
        where = tuple(int(i) for i in position)
        output[where] = value if reduction == "none" else \
            _SCATTER_REDUCTIONS[reduction][0](output[where], value)
    return [output]


@handles("ScatterND")
def scatter_nd(node):
    """With constant indices: each index tuple's slice of data is an
    insert_slice of its slice of updates (combined with the slice of data
    first under a reduction), in the order of the indices."""
    indices = node.constant(1)
    if indices is None:
        raise ImportFailure("ScatterND's indices (input 1) must be constants: the slices "
                            "it writes are fixed when the program is compiled")
    data_shape = node.shape(0)
    positions = _scatter_positions(node, data_shape, indices, node.shape(2))
    if len(positions) > MAX_SCATTER_SLICES:
        raise ImportFailure(f"{len(positions)} index tuples, each a copy of its slice: at most "
                            f"{MAX_SCATTER_SLICES} are imported")
    depth = positions.shape[1]
    inner = list(data_shape[depth:])
    combine = _SCATTER_REDUCTIONS.get(node.attr("reduction", "none"), (None, None))[1]
    updates = b.reshape(node.value(2), [len(positions), *inner])
    result = node.value(0)
    for row, position in enumerate(positions):
        piece = b.reshape(b.extract_slice(updates, [row] + [0] * len(inner), [1] + inner),
                          [1] * depth + inner)
        offsets = [int(i) for i in position] + [0] * len(inner)
        sizes = [1] * depth + inner
        if combine is not None:
            piece = b.elementwise([b.extract_slice(result, offsets, sizes), piece],
                                  lambda args: combine(*args))
        result = b.insert_at(piece, result, offsets)
    return [result]
