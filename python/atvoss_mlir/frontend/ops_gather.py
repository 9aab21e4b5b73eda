"""Ops that read or write by indices: Gather, GatherElements, GatherND and
ScatterND. Constant indices become slices (one strided slice when they step
up evenly); runtime ones a loop copying a slice per index, or a select over
the axis when the slices are too small to pay for their DMAs. Of constants
each folds in numpy."""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, scf, tensor

from . import builders as b
from .handler_api import ImportFailure, folds, handles, normalized_axis


# -- GatherElements, Gather by a tensor of indices ---------------------------------------------

def gather_by_select(data, indices, axis, index_dims, out_shape, elements=False):
    """out[p] = data[p with the `axis` coordinate taken from indices[...]]:
    a generic over the output and a reduction loop k along `axis` that keeps
    the element whose k equals the (wrapped) index. `index_dims` are the
    output dimensions that index `indices`; the data's other coordinates are
    the output's, in order, with k at `axis` (with `elements`, GatherElements:
    every output coordinate but `axis`). Indices may be runtime values."""
    rank = len(out_shape)
    length = b.shape_of(data)[axis]
    dims = [ir.AffineDimExpr.get(d) for d in range(rank + 1)]
    k = dims[rank]
    if elements:  # same rank, axis replaced by k
        data_exprs = [k if d == axis else dims[d] for d in range(rank)]
    else:  # the index dimensions collapse into k
        others = [d for d in range(rank) if d not in index_dims]
        before, after = others[:axis], others[axis:]
        data_exprs = [dims[d] for d in before] + [k] + [dims[d] for d in after]
    i64 = ir.IntegerType.get_signless(64)
    element_type = b.element_of(data)
    if b.element_of(indices) != i64:
        indices = b.elementwise([indices], lambda a: arith.extsi(i64, a[0]), i64)

    def body(args):
        value, index, chosen = args
        wrapped = arith.select(arith.cmpi(arith.CmpIPredicate.slt, index, b.const_like(0, index)),
                               arith.addi(index, b.const_like(length, index)), index)
        position = arith.index_cast(i64, linalg.IndexOp(ir.IntegerAttr.get(i64, rank)).result)
        return arith.select(arith.cmpi(arith.CmpIPredicate.eq, wrapped, position), value, chosen)
    zero = 0.0 if b.is_float(element_type) else 0
    return b.generic([data, indices], [ir.AffineMap.get(rank + 1, 0, data_exprs),
                                       ir.AffineMap.get(rank + 1, 0, [dims[d] for d in index_dims])],
                     b.fill(zero, out_shape, element_type),
                     ir.AffineMap.get(rank + 1, 0, dims[:rank]),
                     ["parallel"] * rank + ["reduction"], body)


def _check_indices(indices: np.ndarray | None, length: int) -> None:
    """Constant indices (None: runtime ones, not checked here) in [-length, length)."""
    if indices is not None and indices.size and \
            (indices.min() < -length or indices.max() >= length):
        raise ImportFailure(f"indices out of range for an axis of {length} elements")


def gather_elements_axis(node, shape, index_shape) -> int:
    """GatherElements' axis in [0, rank), once the indices' shape fits the data's."""
    rank = len(shape)
    axis = node.attr("axis", 0)
    if not -rank <= axis < rank or len(index_shape) != rank:
        raise ImportFailure(f"axis {axis} and indices of shape {index_shape} do not fit data "
                            f"of shape {shape}")
    axis %= rank
    if any(i > d for a, (i, d) in enumerate(zip(index_shape, shape)) if a != axis):
        raise ImportFailure(f"indices of shape {index_shape} exceed data of shape {shape}")
    return axis


@folds("GatherElements")
def fold_gather_elements(node, inputs):
    """Of constants (a position-id buffer an exporter gathers from): numpy."""
    data, indices = inputs
    axis = gather_elements_axis(node, list(data.shape), list(indices.shape))
    length = data.shape[axis]
    _check_indices(indices, length)
    window = tuple(slice(None) if a == axis else slice(0, n) for a, n in enumerate(indices.shape))
    wrapped = np.where(indices < 0, indices + length, indices).astype(np.int64)
    return [np.take_along_axis(data[window], wrapped, axis)]


# A gather from a constant whose elements all have one value (an exporter's
# buffer of zeros, expanded) gives that value whatever the indices: a
# constant, up to this many elements.
MAX_UNIFORM_GATHER = 1 << 20


def uniform_gather(node, out_shape) -> np.ndarray | None:
    """The result of a Gather(Elements) from a constant of one repeated value."""
    data = node.constant(0)
    if data is None or data.size == 0 or int(np.prod(out_shape)) > MAX_UNIFORM_GATHER \
            or not (data == data.flat[0]).all():
        return None
    return np.full(out_shape, data.flat[0], data.dtype)


@handles("GatherElements")
def gather_elements(node):
    data, indices = node.value(0), node.value(1)
    shape, index_shape = b.shape_of(data), b.shape_of(indices)
    axis = gather_elements_axis(node, shape, index_shape)
    _check_indices(node.constant(1), shape[axis])
    uniform = uniform_gather(node, index_shape)
    if uniform is not None:
        return [uniform]
    return [gather_by_select(data, indices, axis, list(range(len(shape))), index_shape, True)]


# Per index, a select over the axis reads the whole data tensor (`length`
# elements per element gathered) on the fallback engine at 8 cycles each; a
# slice copied per index costs two DMA setups (about 300 cycles with the copy
# through SRAM). Slices pay from a data tensor of 300 / 8 elements.
ROW_GATHER_MIN_WORK = 37


def gather_by_slices(data, indices, axis, out_shape):
    """Gather as a loop over the indices, each iteration reading its (wrapped)
    index and copying that slice of `data` along `axis` into its place: after
    bufferization the copy is a DMA of the slice through SRAM, the index a
    scalar load (an embedding lookup reads one table row per token). An index
    out of range is the simulator's located out-of-bounds error."""
    shape = b.shape_of(data)
    count = int(np.prod(b.shape_of(indices)))
    i64, index = ir.IntegerType.get_signless(64), ir.IndexType.get()
    if b.element_of(indices) != i64:
        indices = b.elementwise([indices], lambda a: arith.extsi(i64, a[0]), i64)
    flat = b.reshape(indices, [count])
    gathered_shape = shape[:axis] + [count] + shape[axis + 1:]
    sizes = shape[:axis] + [1] + shape[axis + 1:]
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    static_offsets = [0] * axis + [dynamic] + [0] * (len(shape) - axis - 1)
    slice_type = b.tensor_type(sizes, b.element_of(data))
    lower, upper, step = (arith.ConstantOp(index, value).result for value in (0, count, 1))
    loop = scf.ForOp(lower, upper, step, [b.empty(gathered_shape, b.element_of(data))])
    with ir.InsertionPoint(loop.body):
        position = loop.induction_variable
        value = tensor.ExtractOp(flat, [position]).result
        negative = arith.cmpi(arith.CmpIPredicate.slt, value, b.const_like(0, value))
        wrapped = arith.select(negative, arith.addi(value, b.const_like(shape[axis], value)),
                               value)
        row = tensor.ExtractSliceOp(slice_type, data, [arith.index_cast(index, wrapped)], [], [],
                                    static_offsets, sizes, [1] * len(shape)).result
        placed = tensor.InsertSliceOp(row, loop.inner_iter_args[0], [position], [], [],
                                      static_offsets, sizes, [1] * len(shape)).result
        scf.YieldOp([placed])
    return b.reshape(loop.results[0], out_shape)


def gather_tensor(node, data, axis):
    """Gather by indices of any rank (runtime ones too): a slice copied per
    index, or a select over the axis when the slices are too small to pay for
    their DMAs."""
    indices = node.value(1)
    _check_indices(node.constant(1), b.shape_of(data)[axis])
    return gather_values(data, indices, axis)


def gather_values(data, indices, axis):
    """Gather by an index tensor (runtime values, or a constant tensor): a slice
    copied per index, or a select over the axis when the slices are too small
    to pay for their DMAs. An index out of range is not checked here."""
    shape, index_shape = b.shape_of(data), b.shape_of(indices)
    out_shape = shape[:axis] + index_shape + shape[axis + 1:]
    if int(np.prod(shape)) >= ROW_GATHER_MIN_WORK and int(np.prod(index_shape)) > 0:
        return gather_by_slices(data, indices, axis, out_shape)
    index_dims = list(range(axis, axis + len(index_shape)))
    if not index_shape:  # a scalar index: gather one, then drop the axis
        kept = gather_by_select(data, b.reshape(indices, [1]), axis, [axis],
                                shape[:axis] + [1] + shape[axis + 1:])
        return b.reshape(kept, out_shape)
    return gather_by_select(data, indices, axis, index_dims, out_shape)


# -- Gather ------------------------------------------------------------------------------------

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
    _check_indices(indices, shape[axis])
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
