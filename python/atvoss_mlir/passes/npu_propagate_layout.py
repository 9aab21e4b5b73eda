"""npu-propagate-layout: move layout transposes below elementwise ops, so that
a transpose back to NCHW meets the transpose to NHWC of the next op and both
cancel.

Runs on tensors, after npu-convert-layout. That pass leaves every NHWC conv or
pooling between transposes (NCHW -> NHWC before it, NHWC -> NCHW after it), so
a bias, a batch-norm scale and shift, a relu or a residual add between two convs
runs in NCHW behind two transposes of its tensor. An elementwise
`linalg.generic` whose full-size inputs are all transposes by the same
permutation is rewritten to run in the layout before the transpose:

    %x = linalg.transpose ins(%y : NHWC) permutation = [0, 3, 1, 2]
    %r = linalg.generic ins(%x, %bias ...)           // NCHW
  becomes
    %r' = linalg.generic ins(%y, %bias ...)          // NHWC; broadcast maps remapped
    %r = linalg.transpose ins(%r' : NHWC) permutation = [0, 3, 1, 2]

A concatenation (insert_slices into an empty tensor) of tensors transposed by
one permutation is built in their layout and transposed once, the same way;
a piece computed from no full-size input (DeepLab's pooled image-level
feature broadcast over the image) is computed in that layout.
A static pad or slice of a transposed tensor pads or slices its source (the
amounts and offsets permuted) and is transposed after: LRN's window over
channels (shifted slices of the zero-padded squares) then runs between two
NHWC convs without leaving NHWC.

A reshape does not stop a transpose: an expand_shape of a transposed tensor
expands the source and transposes the result (the split dims move together),
a collapse_shape of one whose merged dims are runs in the source too
collapses the source, and a transpose of a collapse_shape transposes the
groups before collapsing them. A nearest upsampling (a broadcast into a unit
dim after each repeated dim, merged by a collapse_shape) of a transposed
tensor broadcasts the source, each added dim after the dim it follows, when
the collapse then moves too: a U-Net's decoder stays in NHWC up to its
concatenation with the skip tensor. A channel shuffle's collapse (the swapped
groups merged: no run in NHWC) read by a Split's slices is collapsed in NHWC,
the channel group last, so that the shuffle is one transpose of the groups
there and the transpose back to NCHW moves on below the slices
(ShuffleNetV2). A channel shuffle written for NCHW (reshape, transpose, reshape) between
two NHWC convs thus becomes one transpose of the channel groups in NHWC, as
the consecutive transposes compose.

`-layout-pref` says which layout the tensors between layers take: NHWC, the
convs', with every move above; NCHW, the model's, with none (each conv and
pool transforms its input and output); auto, each move that the cost model
says moves no more bytes than it saves (on this machine that is every move:
each one transposes a tensor no larger than the one it replaces).

A reduction whose one full-size input is transposed (a global average pool
of a conv's result) reads the transpose's source instead: its loops follow
that layout and its output map is remapped, so its result is unchanged and
the transpose goes.

Ops are visited in program order, so the transpose moves down a chain of
elementwise ops until it reaches an op that wants NCHW (a reshape, the
function's result) or the transpose to NHWC of the next conv, with which
canonicalization folds it away. A transpose that undoes the one it reads is
bypassed at once (its readers read that one's source): a grouped conv's
input, padded in NHWC and sliced per group, then stays in NHWC rather than
taking the pad above it, into NCHW. Broadcast operands (per-channel parameters) are
not moved: only their indexing maps change.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg, tensor

from ..frontend.builders import reassociation_attr
from ..recipes.problem import indexing_maps, input_count
from ..recipes.tile_ir import static
from . import ModulePass, PassContext, ops_where
from .npu_convert_layout import result_of, transposed

INPUTS_SEGMENT = "operandSegmentSizes"
# Besides concatenations: the ops a transpose moves through (or, for a
# transpose of a collapse_shape, above).
MOVED_THROUGH = ("linalg.generic", "tensor.expand_shape", "linalg.transpose", "tensor.pad",
                 "tensor.extract_slice", "linalg.broadcast", "tensor.collapse_shape")
# The static position attributes of the pads and slices a transpose moves below.
POSITIONS = {"tensor.pad": ("static_low", "static_high"),
             "tensor.extract_slice": ("static_offsets", "static_sizes", "static_strides")}


def transpose_source(value: ir.Value):
    """(source, permutation) when `value` is a linalg.transpose result."""
    if not isinstance(value, ir.OpResult) or value.owner.name != "linalg.transpose":
        return None
    permutation = list(ir.DenseI64ArrayAttr(value.owner.attributes["permutation"]))
    return value.owner.operands[0], permutation


def dims_of(affine_map: ir.AffineMap) -> list | None:
    """The results of a map as dim positions (None for a constant), or None when
    a result is neither."""
    results = []
    for expr in affine_map.results:
        expr = expr.maybe_downcast()
        if isinstance(expr, ir.AffineDimExpr):
            results.append(expr.position)
        elif isinstance(expr, ir.AffineConstantExpr):
            results.append(None)
        else:
            return None
    return results


def remapped(affine_map: ir.AffineMap, new_position: list[int]) -> ir.AffineMap:
    exprs = [ir.AffineDimExpr.get(new_position[e.position]) if isinstance(e, ir.AffineDimExpr)
             else e for e in (r.maybe_downcast() for r in affine_map.results)]
    return ir.AffineMap.get(affine_map.n_dims, 0, exprs)


def remap_index_ops(op, permutation: list[int]) -> None:
    """Loop m of `op` is now loop permutation[m]: so is every `linalg.index` of
    its body (an ArgMax's position, a mask's coordinate)."""
    def visit(inner):
        if inner.name == "linalg.index":
            dim = ir.IntegerAttr(inner.attributes["dim"]).value
            inner.attributes["dim"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                         permutation[dim])
        return ir.WalkResult.ADVANCE
    for block in op.regions[0].blocks:
        for inner in block.operations:
            inner.operation.walk(visit)


def inverse_transpose(value: ir.Value, permutation: list[int], before) -> ir.Value | None:
    """The result of a transpose of `value` by the inverse of `permutation`
    placed before the op `before` in its block, if there is one."""
    inverse = [permutation.index(d) for d in range(len(permutation))]
    candidates = [use.owner for use in value.uses if use.owner.name == "linalg.transpose"
                  and list(ir.DenseI64ArrayAttr(use.owner.attributes["permutation"])) == inverse]
    for op in before.block.operations:
        if op == before:
            return None
        if op in candidates:
            return op.results[0]
    return None


class Candidate:
    """An elementwise generic and the transpose its full-size inputs share."""

    def __init__(self, op):
        self.op = op
        self.maps = indexing_maps(op)
        segments = list(ir.DenseI32ArrayAttr(op.attributes[INPUTS_SEGMENT]))
        self.input_count, output_count = segments
        self.permutation = None
        self.sources = {}
        self.refusal = None     # why a transposed input stays
        if output_count != 1 or not self.simple():
            return
        rank = self.maps[-1].n_dims
        full_size = [index for index in range(self.input_count)
                     if self.maps[index] == ir.AffineMap.get_identity(rank)]
        found = {index: transpose_source(op.operands[index]) for index in full_size}
        transposed = {index: f for index, f in found.items() if f is not None}
        if not transposed:
            return
        permutations = {tuple(f[1]) for f in transposed.values()}
        if len(permutations) > 1:
            self.refusal = "its inputs are transposed by different permutations"
            return
        permutation = list(permutations.pop())
        for index in full_size:
            if index not in transposed:
                # An input already transposed the other way for another op
                # (the model's input, read by the first conv and a residual
                # add): that transpose is its source in the moved layout.
                existing = inverse_transpose(op.operands[index], permutation, op)
                if existing is not None:
                    transposed[index] = (existing, permutation)
        if len(transposed) < len(full_size):
            others = [index for index in full_size if index not in transposed]
            self.refusal = (f"input #{others[0]} is not transposed: moving the transpose "
                            f"would transpose that input instead")
        else:
            self.permutation = permutation
            self.sources = {index: f[0] for index, f in transposed.items()}

    def simple(self) -> bool:
        """All loops parallel, an identity output map whose block argument the
        body does not read, and inputs indexed by loop dims or constants."""
        op = self.op
        if any(str(t) != "#linalg.iterator_type<parallel>"
               for t in op.attributes["iterator_types"]):
            return False
        output_map = self.maps[-1]
        if output_map != ir.AffineMap.get_identity(output_map.n_dims):
            return False
        body = op.regions[0].blocks[0]
        if list(body.arguments[-1].uses):
            return False
        return all(dims_of(m) is not None for m in self.maps[:-1])

    def rewrite(self) -> None:
        result = in_layout(self.op, self.permutation, self.sources)
        with self.op.location, ir.InsertionPoint.after(self.op):
            back = transposed(result, self.permutation)
        result.replace_all_uses_except(back, back.owner.operation)


def in_layout(op, permutation: list[int], sources: dict) -> ir.Value:
    """Rewrite the elementwise generic `op` to compute the transpose of its
    result by `permutation` (its loops in that layout): the inputs in
    `sources` (index -> the source of its transposed input) are read with
    the identity map, the others' maps remapped. Returns its result."""
    maps = indexing_maps(op)
    input_total = len(maps) - 1
    maps = [ir.AffineMap.get_identity(m.n_dims) if index in sources
            else remapped(m, permutation)
            for index, m in enumerate(maps[:-1])] + [maps[-1]]
    result = op.results[0]
    old_type = ir.RankedTensorType(result.type)
    shape = [old_type.shape[permutation.index(d)] for d in range(old_type.rank)]
    with op.location, ir.InsertionPoint(op):
        new_type = ir.RankedTensorType.get(shape, old_type.element_type)
        init = tensor.EmptyOp(shape, old_type.element_type).result
    for index, source in sources.items():
        op.operands[index] = source
    op.operands[input_total] = init
    op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
    remap_index_ops(op, permutation)
    result.set_type(new_type)
    return result


def broadcast_piece(value: ir.Value) -> bool:
    """A piece of a concatenation computed by an elementwise generic with no
    full-size input (a pooled vector broadcast over the image: DeepLab's
    image-level branch), read only by the concatenation: it may compute the
    piece in any layout."""
    if not isinstance(value, ir.OpResult) or value.owner.name != "linalg.generic" \
            or len(list(value.uses)) != 1:
        return False
    candidate = Candidate(value.owner)
    rank = candidate.maps[-1].n_dims
    return candidate.simple() and candidate.input_count == len(candidate.maps) - 1 and \
        not any(m == ir.AffineMap.get_identity(rank) for m in candidate.maps[:-1])


def reduction_source(op):
    """(index, source, permutation) when `op` is a reduction whose one full-size
    input is a transpose and whose maps are dims and constants, else None."""
    types = [str(t) for t in op.attributes["iterator_types"]]
    if "#linalg.iterator_type<reduction>" not in types:
        return None
    maps = indexing_maps(op)
    if any(dims_of(m) is None for m in maps):
        return None
    rank = maps[0].n_dims
    full_size = [i for i in range(input_count(op)) if maps[i] == ir.AffineMap.get_identity(rank)]
    if len(full_size) != 1:
        return None
    found = transpose_source(op.operands[full_size[0]])
    return None if found is None else (full_size[0], *found)


def iterate_in_source_layout(op, index: int, source: ir.Value, permutation: list[int]) -> None:
    """The reduction reads the transpose's source with an identity map: its
    loops follow the source's dims, the other maps (and the output's) are
    remapped, and its result is unchanged."""
    maps = [ir.AffineMap.get_identity(m.n_dims) if i == index else remapped(m, permutation)
            for i, m in enumerate(indexing_maps(op))]
    types = list(op.attributes["iterator_types"])
    moved = [None] * len(types)
    for dim, iterator in enumerate(types):
        moved[permutation[dim]] = iterator
    op.operands[index] = source
    op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
    op.attributes["iterator_types"] = ir.ArrayAttr.get(moved)
    remap_index_ops(op, permutation)


def concat_chain(first) -> list | None:
    """The insert_slices of a concatenation starting at `first` (its dest an
    empty tensor, each result the next one's dest only), when every source is
    a whole static slice transposed by one permutation; else None."""
    chain, op = [first], first
    while True:
        uses = list(op.results[0].uses)
        if len(uses) != 1 or uses[0].owner.name != "tensor.insert_slice" \
                or uses[0].operand_number != 1:
            break
        op = uses[0].owner
        chain.append(op)
    permutations = set()
    for op in chain:
        if len(op.operands) != 2 or any(s != 1 for s in static(op, "static_strides")):
            return None
        found = transpose_source(op.operands[0])
        if found is not None:
            permutations.add(tuple(found[1]))
        elif not broadcast_piece(op.operands[0]):
            return None
    return chain if len(permutations) == 1 and len(chain) > 1 else None


def move_below_concat(chain: list) -> None:
    """Concatenate the transposes' sources in their own layout (a broadcast
    piece computed in it), then transpose once."""
    permutation = next(found[1] for found in (transpose_source(op.operands[0]) for op in chain)
                       if found is not None)
    last = chain[-1]
    old_type = ir.RankedTensorType(last.results[0].type)
    source_order = [permutation.index(d) for d in range(old_type.rank)]
    with last.location, ir.InsertionPoint(last):
        result = tensor.EmptyOp([old_type.shape[i] for i in source_order],
                                old_type.element_type).result
        for op in chain:
            offsets, sizes = static(op, "static_offsets"), static(op, "static_sizes")
            found = transpose_source(op.operands[0])
            piece = found[0] if found is not None else \
                in_layout(op.operands[0].owner, permutation, {})
            result = tensor.InsertSliceOp(
                piece, result, [], [], [],
                [offsets[i] for i in source_order], [sizes[i] for i in source_order],
                [1] * old_type.rank).result
        back = transposed(result, permutation)
    last.results[0].replace_all_uses_with(back)
    start = chain[0].operands[1]
    for op in reversed(chain):
        op.erase()
    if isinstance(start, ir.OpResult) and not list(start.uses):
        start.owner.erase()


def reassociation(op) -> list[list[int]]:
    return [[int(ir.IntegerAttr(d).value) for d in group]
            for group in ir.ArrayAttr(op.attributes["reassociation"])]


def static_shaped(*values) -> bool:
    return all(isinstance(v.type, ir.RankedTensorType)
               and ir.RankedTensorType(v.type).has_static_shape for v in values)


def move_below_expand(expand) -> None:
    """expand(transpose(x, p)) -> transpose(expand'(x), p'): transposed dim i
    is source dim p[i]; each is split as the expand splits dim i."""
    source, permutation = transpose_source(expand.operands[0])
    groups = reassociation(expand)
    result_type = ir.RankedTensorType(expand.results[0].type)
    split = {permutation[i]: [result_type.shape[d] for d in group]
             for i, group in enumerate(groups)}
    source_groups, start, shape = [], {}, []
    for j in range(len(permutation)):
        start[j] = len(shape)
        source_groups.append(list(range(len(shape), len(shape) + len(split[j]))))
        shape.extend(split[j])
    moved = [start[permutation[i]] + k for i, group in enumerate(groups) for k in range(len(group))]
    with expand.location, ir.InsertionPoint(expand):
        expanded = tensor.ExpandShapeOp(ir.RankedTensorType.get(shape, result_type.element_type),
                                        source, reassociation_attr(source_groups), [],
                                        shape).result
        back = transposed(expanded, moved)
    expand.results[0].replace_all_uses_with(back)
    expand.erase()


def cancels(transpose) -> bool:
    """Whether `transpose` undoes the transpose it reads."""
    found = transpose_source(transpose.operands[0])
    permutation = list(ir.DenseI64ArrayAttr(transpose.attributes["permutation"]))
    return found is not None and \
        [found[1][d] for d in permutation] == list(range(len(permutation)))


def groups_reordered(groups: list, order: list[int]) -> tuple:
    """The groups of a collapse taken in `order`: (the permutation of the
    collapsed tensor's dims that puts them so, the groups over its result)."""
    moved = [d for i in order for d in groups[i]]
    new_groups, next_dim = [], 0
    for i in order:
        new_groups.append(list(range(next_dim, next_dim + len(groups[i]))))
        next_dim += len(groups[i])
    return moved, new_groups


def move_above_collapse(transpose) -> None:
    """transpose(collapse(y), q) -> collapse'(transpose(y, q')): the groups of
    the collapse are transposed whole, then collapsed in their new order."""
    collapse = transpose.operands[0].owner
    permutation = list(ir.DenseI64ArrayAttr(transpose.attributes["permutation"]))
    moved, new_groups = groups_reordered(reassociation(collapse), permutation)
    with transpose.location, ir.InsertionPoint(transpose):
        inner = transposed(collapse.operands[0], moved)
        result = tensor.CollapseShapeOp(transpose.results[0].type, inner,
                                        reassociation_attr(new_groups)).result
    transpose.results[0].replace_all_uses_with(result)
    transpose.erase()
    if not list(collapse.results[0].uses):
        collapse.erase()


def groups_in_source_order(groups: list, permutation: list[int]) -> tuple | None:
    """For a collapse by `groups` of a tensor transposed by `permutation`:
    (the groups over the source's dims, in its order; for each original
    group, its index among them) when each group is a run of consecutive
    source dims, else None."""
    mapped = [[permutation[d] for d in group] for group in groups]
    if any(group != list(range(group[0], group[0] + len(group))) for group in mapped):
        return None
    ordered = sorted(mapped)
    if [d for group in ordered for d in group] != list(range(len(permutation))):
        return None
    return ordered, [ordered.index(group) for group in mapped]


def collapse_moves(collapse, permutation: list[int]) -> bool:
    """Whether a static collapse_shape of a tensor transposed by `permutation`
    merges runs of the source's dims (an upsampling's repeats into the rows
    and columns) and is read only by ops the transpose moves through further."""
    return static_shaped(collapse.operands[0], collapse.results[0]) \
        and groups_in_source_order(reassociation(collapse), permutation) is not None \
        and all(use.owner.name in MOVED_THROUGH or use.owner.name == "tensor.insert_slice"
                for use in collapse.results[0].uses)


def move_below_collapse(collapse) -> None:
    """collapse(transpose(y, q)) -> transpose(collapse'(y), q'): the groups
    collapse in y's layout, then move where the transpose put them."""
    source, permutation = transpose_source(collapse.operands[0])
    groups, order = groups_in_source_order(reassociation(collapse), permutation)
    result_type = ir.RankedTensorType(collapse.results[0].type)
    shape = [result_type.shape[order.index(k)] for k in range(len(groups))]
    with collapse.location, ir.InsertionPoint(collapse):
        inner = tensor.CollapseShapeOp(ir.RankedTensorType.get(shape, result_type.element_type),
                                       source, reassociation_attr(groups)).result
        back = transposed(inner, order)
    collapse.results[0].replace_all_uses_with(back)
    collapse.erase()


# A rank-4 tensor in NCHW, as the NHWC convs read it, and back.
TO_NHWC, TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]


def shuffle_collapse(collapse) -> bool:
    """A static collapse_shape into a rank-4 (NCHW) tensor of a transposed
    tensor whose merged dims are not runs in the source (a channel shuffle's
    groups swapped), read only by ops a transpose moves through further (a
    Split's slices, the transposes of two convs), but for one transpose alone
    (the next conv's: it moves above the collapse, move_above_collapse)."""
    readers = [use.owner.name for use in collapse.results[0].uses]
    return static_shaped(collapse.operands[0], collapse.results[0]) \
        and ir.RankedTensorType(collapse.results[0].type).rank == 4 \
        and all(name in MOVED_THROUGH or name == "tensor.insert_slice" for name in readers) \
        and readers != ["linalg.transpose"]


def collapse_in_nhwc(collapse) -> None:
    """collapse(x) -> transpose(collapse'(transpose(x, r)), TO_NCHW): the
    groups are collapsed in NHWC order (r puts the channel group last), so the
    new transpose composes with x's own and the one after the collapse moves
    on below it (a Split's slices take it, the next conv's cancels it)."""
    moved, new_groups = groups_reordered(reassociation(collapse), TO_NHWC)
    result_type = ir.RankedTensorType(collapse.results[0].type)
    shape = [result_type.shape[i] for i in TO_NHWC]
    with collapse.location, ir.InsertionPoint(collapse):
        inner = transposed(collapse.operands[0], moved)
        nhwc = tensor.CollapseShapeOp(ir.RankedTensorType.get(shape, result_type.element_type),
                                      inner, reassociation_attr(new_groups)).result
        back = transposed(nhwc, TO_NCHW)
    collapse.results[0].replace_all_uses_with(back)
    collapse.erase()


def broadcast_order(permutation: list[int], added: list[int], rank: int) -> list[int]:
    """For broadcast(transpose(x, p)) adding the output dims `added`: the
    output dims in the order a broadcast of x makes them (each added dim stays
    after the dim it follows), as positions of the original output."""
    leading, units = [], []
    for d in range(rank):
        if d in added:
            (units[-1] if units else leading).append(d)
        else:
            units.append([d])
    return leading + [d for j in range(len(permutation)) for d in units[permutation.index(j)]]


def upsampling_broadcast(op) -> bool:
    """A static broadcast of a transposed tensor read only by collapses the
    transpose then moves below too (nearest upsampling), so that the transpose
    moves on rather than stays, larger, after the broadcast."""
    found = transpose_source(op.operands[0])
    if found is None or not static_shaped(op.operands[0], op.results[0]):
        return False
    rank = ir.RankedTensorType(op.results[0].type).rank
    order = broadcast_order(found[1], list(ir.DenseI64ArrayAttr(op.attributes["dimensions"])),
                            rank)
    moved = [order.index(d) for d in range(rank)]
    uses = list(op.results[0].uses)
    return bool(uses) and all(use.owner.name == "tensor.collapse_shape"
                              and collapse_moves(use.owner, moved) for use in uses)


def move_below_broadcast(op) -> None:
    """broadcast(transpose(x, p)) -> transpose(broadcast'(x), q): x is
    broadcast in its own layout, each added dim after the dim it followed."""
    source, permutation = transpose_source(op.operands[0])
    added = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
    result_type = ir.RankedTensorType(op.results[0].type)
    order = broadcast_order(permutation, added, result_type.rank)
    with op.location, ir.InsertionPoint(op):
        init = tensor.EmptyOp([result_type.shape[d] for d in order],
                              result_type.element_type).result
        spread = result_of(linalg.broadcast(source, outs=[init], dimensions=[
            k for k, d in enumerate(order) if d in added]))
        back = transposed(spread, [order.index(d) for d in range(result_type.rank)])
    op.results[0].replace_all_uses_with(back)
    op.erase()


def movable_below(op) -> bool:
    """A pad or slice of a transposed tensor with static positions and shapes,
    keeping its rank, whose readers the transpose may move through further (a
    concatenation included): a conv's or pool's padding stays next to it, in
    the layout it reads."""
    return len(op.operands) == 1 and transpose_source(op.operands[0]) is not None \
        and static_shaped(op.operands[0], op.results[0]) \
        and ir.RankedTensorType(op.operands[0].type).rank == \
        ir.RankedTensorType(op.results[0].type).rank \
        and all(use.owner.name in MOVED_THROUGH or use.owner.name == "tensor.insert_slice"
                for use in op.results[0].uses)


def move_below_positioned(op) -> None:
    """pad/slice(transpose(x, p)) -> transpose(pad/slice'(x), p): transposed dim i
    is source dim p[i], so its amount or offset goes there."""
    source, permutation = transpose_source(op.operands[0])
    order = [permutation.index(d) for d in range(len(permutation))]
    for name in POSITIONS[op.name]:
        values = static(op, name)
        op.attributes[name] = ir.DenseI64ArrayAttr.get([values[i] for i in order])
    result = op.results[0]
    old_type = ir.RankedTensorType(result.type)
    op.operands[0] = source
    with op.location:
        result.set_type(ir.RankedTensorType.get([old_type.shape[i] for i in order],
                                                old_type.element_type))
        with ir.InsertionPoint.after(op):
            back = transposed(result, permutation)
    result.replace_all_uses_except(back, back.owner.operation)


def is_concat_start(op) -> bool:
    if op.name != "tensor.insert_slice":
        return False
    dest = op.operands[1]
    return isinstance(dest, ir.OpResult) and dest.owner.name == "tensor.empty"


@dataclass(frozen=True)
class NpuPropagateLayout(ModulePass):
    argument = "npu-propagate-layout"
    summary = "Move layout transposes below elementwise ops so inverse pairs cancel"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        if context.target.layout_pref == "NCHW":
            return
        with module.context:
            # In program order: a moved transpose reaches the ops after it.
            for op in ops_where(module, lambda op: op.name in MOVED_THROUGH
                                or is_concat_start(op)):
                if op.name == "tensor.expand_shape":
                    if transpose_source(op.operands[0]) is not None \
                            and static_shaped(op.operands[0], op.results[0]):
                        context.diagnostics.remark(
                            op.location, "'tensor.expand_shape' expands the source of its "
                                         "transposed input: the transpose moves below it")
                        move_below_expand(op)
                    continue
                if op.name == "linalg.broadcast":
                    if upsampling_broadcast(op):
                        context.diagnostics.remark(
                            op.location, "'linalg.broadcast' repeats the source of its "
                                         "transposed input: the transpose moves below it")
                        move_below_broadcast(op)
                    continue
                if op.name == "tensor.collapse_shape":
                    found = transpose_source(op.operands[0])
                    if found is not None and collapse_moves(op, found[1]):
                        context.diagnostics.remark(
                            op.location, "'tensor.collapse_shape' merges dims of the source of "
                                         "its transposed input: the transpose moves below it")
                        move_below_collapse(op)
                    elif found is not None and shuffle_collapse(op):
                        context.diagnostics.remark(
                            op.location, "'tensor.collapse_shape' merges a channel shuffle's "
                                         "groups in NHWC: the shuffle is one transpose there, "
                                         "and the transpose back to NCHW moves below it")
                        collapse_in_nhwc(op)
                    continue
                if op.name == "linalg.transpose":
                    source = op.operands[0]
                    if isinstance(source, ir.OpResult) \
                            and source.owner.name == "tensor.collapse_shape" \
                            and len(list(source.uses)) == 1 and static_shaped(source) \
                            and transpose_source(source.owner.operands[0]) is not None:
                        context.diagnostics.remark(
                            op.location, "transpose of a collapsed transposed tensor moves "
                                         "above 'tensor.collapse_shape', where the two compose")
                        move_above_collapse(op)
                    elif cancels(op):
                        # Its readers read the source of the transpose it
                        # undoes (a moved one meeting the next op's), so that
                        # a pad or slice after it stays in that layout.
                        op.results[0].replace_all_uses_with(transpose_source(source)[0])
                    continue
                if op.name in POSITIONS:
                    if movable_below(op):
                        context.diagnostics.remark(
                            op.location, f"'{op.name}' applies to the source of its transposed "
                                         f"input: the transpose moves below it")
                        move_below_positioned(op)
                    continue
                if op.name == "tensor.insert_slice":
                    chain = concat_chain(op)
                    if chain is not None:
                        computed = sum(transpose_source(c.operands[0]) is None for c in chain)
                        pieces = f"{len(chain) - computed} transposed tensors" + (
                            f" and {computed} computed in their layout" if computed else "")
                        context.diagnostics.remark(
                            op.location, f"concatenation of {pieces} runs in their layout: "
                                         f"the transpose moves below it")
                        move_below_concat(chain)
                    continue
                if not all(isinstance(v.type, ir.RankedTensorType) for v in op.operands):
                    continue
                reduction = reduction_source(op)
                if reduction is not None:
                    context.diagnostics.remark(
                        op.location, f"reduction reads the source of its transposed input "
                                     f"#{reduction[0]}: its loops follow that layout, and the "
                                     f"transpose goes")
                    iterate_in_source_layout(op, *reduction)
                    continue
                candidate = Candidate(op)
                if candidate.permutation is not None:
                    inputs = ", ".join(f"#{index}" for index in sorted(candidate.sources))
                    context.diagnostics.remark(
                        op.location, f"'linalg.generic' runs in the layout of its transposed "
                                     f"input {inputs}: the transpose moves below it")
                    candidate.rewrite()
                elif candidate.refusal is not None:
                    context.diagnostics.remark(
                        op.location, f"'linalg.generic' keeps its transposed inputs: "
                                     f"{candidate.refusal}")
