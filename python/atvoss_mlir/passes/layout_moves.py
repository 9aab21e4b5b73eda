"""npu-propagate-layout's moves of a transpose through the ops that move data
without computing: pads and slices (their positions permuted), reshapes (a
collapse or expand of whole groups), a nearest upsampling's broadcast, a
channel shuffle's merge, and concatenations (built in the pieces' layout)."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import linalg, tensor

from ..frontend.builders import reassociation_attr
from ..recipes.tile_ir import static
from .layout_elementwise import broadcast_piece, in_layout, transpose_source
from .npu_convert_layout import result_of, transposed

# Besides concatenations: the ops a transpose moves through (or, for a
# transpose of a collapse_shape, above).
MOVED_THROUGH = ("linalg.generic", "tensor.expand_shape", "linalg.transpose", "tensor.pad",
                 "tensor.extract_slice", "linalg.broadcast", "tensor.collapse_shape")
# The static position attributes of the pads and slices a transpose moves below.
POSITIONS = {"tensor.pad": ("static_low", "static_high"),
             "tensor.extract_slice": ("static_offsets", "static_sizes", "static_strides")}


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


def is_concat_start(op) -> bool:
    if op.name != "tensor.insert_slice":
        return False
    dest = op.operands[1]
    return isinstance(dest, ir.OpResult) and dest.owner.name == "tensor.empty"


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
