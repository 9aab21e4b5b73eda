"""Data rearrangement built from reshapes, transposes and constant masks:
DepthToSpace, SpaceToDepth, Tile, Trilu; and Einsum as one linalg.generic
(its subscripts are the indexing maps: free letters parallel, summed letters
reduction, the body a product)."""

from __future__ import annotations

import re

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, scf, tensor

from . import builders as b
from .handler_api import ImportFailure, folds, handles


# -- DepthToSpace, SpaceToDepth ----------------------------------------------------------------

def _blocksize(node, shape):
    if len(shape) != 4:
        raise node.unsupported(f"{node.op_type} of a rank-{len(shape)} tensor (NCHW only)")
    size = node.attr("blocksize")
    if not size or size <= 0:
        raise ImportFailure(f"blocksize {size} must be positive")
    mode = node.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise node.unsupported(f"mode '{mode}'")
    return size, mode


@handles("DepthToSpace")
def depth_to_space(node):
    x = node.value(0)
    n, c, h, w = b.shape_of(x)
    size, mode = _blocksize(node, [n, c, h, w])
    if c % (size * size):
        raise ImportFailure(f"{c} channels are not a multiple of blocksize^2 = {size * size}")
    depth = c // (size * size)
    if mode == "DCR":
        split, permutation = [n, size, size, depth, h, w], [0, 3, 4, 1, 5, 2]
    else:
        split, permutation = [n, depth, size, size, h, w], [0, 1, 4, 2, 5, 3]
    moved = b.transpose(b.reshape(x, split), permutation)
    return [b.reshape(moved, [n, depth, h * size, w * size])]


@handles("SpaceToDepth")
def space_to_depth(node):
    x = node.value(0)
    n, c, h, w = b.shape_of(x)
    size, mode = _blocksize(node, [n, c, h, w])
    if h % size or w % size:
        raise ImportFailure(f"spatial size {h}x{w} is not a multiple of blocksize {size}")
    split = b.reshape(x, [n, c, h // size, size, w // size, size])
    permutation = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
    return [b.reshape(b.transpose(split, permutation), [n, c * size * size, h // size,
                                                        w // size])]


# -- Tile, Trilu -----------------------------------------------------------------------------

def tile_repeats(shape, repeats) -> list[int]:
    repeats = [int(r) for r in repeats.reshape(-1)]
    if len(repeats) != len(shape) or min(repeats, default=1) < 0:
        raise ImportFailure(f"repeats {repeats} do not fit a rank-{len(shape)} tensor")
    return repeats


@folds("Tile")
def fold_tile(node, inputs):
    """Of constants (a position embedding's grid of coordinates): numpy."""
    return [np.tile(inputs[0], tile_repeats(inputs[0].shape, inputs[1]))]


@handles("Tile")
def tile(node):
    x = node.value(0)
    shape = b.shape_of(x)
    repeats = tile_repeats(shape, node.required_constant(1, "the repeats"))
    if 0 in repeats or 0 in shape:
        raise node.unsupported("Tile to an empty tensor")
    # (a, b) -> (1, a, 1, b) -> broadcast (ra, a, rb, b) -> (ra*a, rb*b)
    interleaved = [d for size in shape for d in (1, size)]
    broadcast = [d for r, size in zip(repeats, shape) for d in (r, size)]
    expanded = b.broadcast_to(b.reshape(x, interleaved), broadcast)
    return [b.reshape(expanded, [r * size for r, size in zip(repeats, shape)])]


@handles("Trilu")
def trilu(node):
    x = node.value(0)
    shape = b.shape_of(x)
    if len(shape) < 2:
        raise ImportFailure("Trilu needs a tensor of rank 2 or more")
    k = int(node.required_constant(1, "k").reshape(-1)[0]) if node.has_input(1) else 0
    rows, cols = shape[-2:]
    band = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    keep = band >= k if node.attr("upper", 1) else band <= k
    mask = node.weight(keep, "mask")
    zero = 0.0 if b.is_float(b.element_of(x)) else 0
    return [b.elementwise([mask, x], lambda a: arith.select(a[0], a[1],
                                                             b.const_like(zero, a[1])),
                          b.element_of(x))]


# -- Einsum ----------------------------------------------------------------------------------

def _subscripts(equation: str, shapes):
    """(input subscripts, output subscript) with '...' spelled out as letters."""
    equation = equation.replace(" ", "")
    if "->" in equation:
        left, output = equation.split("->")
    else:
        left, output = equation, None
    terms = left.split(",")
    if len(terms) != len(shapes):
        raise ImportFailure(f"equation '{equation}' has {len(terms)} operands, the node "
                            f"{len(shapes)}")
    used = set(re.sub(r"[^A-Za-z]", "", equation))
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    ellipsis_rank = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes)
                         if "..." in t), default=0)
    batch = "".join(spare[:ellipsis_rank])
    spelled = []
    for term, shape in zip(terms, shapes):
        if "..." in term:
            count = len(shape) - len(term.replace("...", ""))
            term = term.replace("...", batch[ellipsis_rank - count:])
        if not re.fullmatch(r"[A-Za-z]*", term) or len(term) != len(shape):
            raise ImportFailure(f"subscripts '{term}' do not fit an operand of rank {len(shape)}")
        spelled.append(term)
    if output is None:
        letters = "".join(spelled)
        output = batch + "".join(sorted(c for c in set(letters) - set(batch)
                                        if letters.count(c) == 1))
    else:
        output = output.replace("...", batch)
    return spelled, output


@handles("Einsum")
def einsum(node):
    values = [node.value(i) for i in range(node.input_count)]
    shapes = [b.shape_of(v) for v in values]
    terms, output = _subscripts(node.attr("equation", ""), shapes)
    if any(len(set(term)) != len(term) for term in terms + [output]):
        raise node.unsupported("Einsum with a repeated subscript in one operand (a diagonal)")
    element_type = b.element_of(values[0])
    if any(b.element_of(v) != element_type for v in values):
        raise ImportFailure("Einsum operands of different element types")
    sizes = {}
    for term, shape in zip(terms, shapes):
        for letter, size in zip(term, shape):
            if sizes.setdefault(letter, size) != size:
                if sizes[letter] == 1:
                    sizes[letter] = size
                elif size != 1:
                    raise ImportFailure(f"subscript '{letter}' has sizes {sizes[letter]} "
                                        f"and {size}")
    if any(c not in sizes for c in output):
        raise ImportFailure(f"output subscript '{output}' names a letter no operand has")
    loops = list(output) + sorted(set(sizes) - set(output))
    dims = {letter: ir.AffineDimExpr.get(i) for i, letter in enumerate(loops)}
    operands, maps = [], []
    for value, term, shape in zip(values, terms, shapes):
        kept = [i for i, letter in enumerate(term) if shape[i] == sizes[letter]]
        if len(kept) < len(term):  # broadcast unit dimensions are dropped
            value = b.reshape(value, [shape[i] for i in kept])
        operands.append(value)
        maps.append(ir.AffineMap.get(len(loops), 0, [dims[term[i]] for i in kept]))
    init = b.fill(0.0 if b.is_float(element_type) else 0, [sizes[c] for c in output],
                  element_type)

    def body(args):
        product = args[0]
        for arg in args[1:-1]:
            product = b.mul(product, arg)
        return b.add(args[-1], product)
    return [b.generic(operands, maps, init,
                      ir.AffineMap.get(len(loops), 0, [dims[c] for c in output]),
                      ["parallel" if c in output else "reduction" for c in loops], body)]


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


def _check_indices(node, indices, length):
    constant = node.constant(1)
    if constant is not None and constant.size and \
            (constant.min() < -length or constant.max() >= length):
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
    if indices.size and (indices.min() < -length or indices.max() >= length):
        raise ImportFailure(f"indices out of range for an axis of {length} elements")
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
    _check_indices(node, indices, shape[axis])
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
    _check_indices(node, indices, b.shape_of(data)[axis])
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
