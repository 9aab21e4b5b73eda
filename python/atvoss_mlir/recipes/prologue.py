"""An elementwise op folded into the convolution or pool that reads its
result, as a prologue on that op's input tiles (-fusion=2).

A pre-activation (DenseNet's batch-norm scale and shift and relu before each
1x1 conv) is an elementwise `linalg.generic` whose result only the conv reads.
Left alone it writes a tensor as large as its input to DRAM, which the conv
reads back. Folded, the conv loads the generic's input instead and the vector
unit applies the generic's body to each input tile in SRAM, in place, once per
load, while the matrix unit computes on the tile before: the tensor never
exists.

The generic qualifies when its input #0 and output have the conv input's
shape, both by the identity, its other inputs are broadcast over some of the
input's dims (a per-channel scale, an average pool's count per pixel; such an
operand's tile is cut as the input's along the dims it spans, through a view
with unit dims for the others; one the buffer plan keeps in SRAM, a
squeeze-excitation's gate, is read there), its body is a chain of vector steps each
reading only the step before (so each may write the tile in place), its input
#0 is not kept in SRAM (the op would compute on it in place), it writes
a DRAM buffer right before the conv and nothing between them touches what it
reads or writes. The conv reads that buffer unpadded: a pad would be of the
generic's values, not of its input's.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from ..dialects import npu
from .absorbed import VIEWS, ops_before, touches
from ..frontend.builders import reassociation_attr
from .problem import (VECTOR_TYPES, OperandTile, Unsupported, Whole, has_identity_layout,
                      indexing_maps, input_count, ins_outs, is_resident, npu_attribute_names,
                      root_buffer, tile_nest_root, type_name)
from .sram_ops import full_rank_view, scratch
from .vector_body import body_program
from .vector_steps import ActivationStep, BinaryStep, Ref, step_constants, with_epilogues
from .elementwise import binary_op, check_broadcasts, step_cycles

PROLOGUE = "prologue"
# The vector unit's float types: the steps run there, on the op's input type.
FLOAT_TYPES = tuple(name for name in VECTOR_TYPES if name.startswith("f"))


@dataclass
class Prologue:
    generic: ir.Operation    # the elementwise op folded in (erased once the conv is lowered)
    source: ir.Value         # its input #0, which the conv loads instead
    roles: list              # the roles of its other operands, in input order (1..)
    steps: list              # its body as vector steps, each writing the input tile
    operands: list           # per other operand: (the value loaded, per dim of it the
                             # input dim it spans, None for a unit dim)

    def __repr__(self) -> str:
        # What a schedule depends on (the operands are the problem's own): the
        # search's memo key holds it, and printing the ops would cost more.
        return f"Prologue({self.steps!r})"

    def cycles(self, elements: int, target) -> int:
        return step_cycles(self.steps, elements, target)

    def constants(self) -> list:
        return step_constants(self.steps)


def _indexed_dims(affine_map: ir.AffineMap) -> tuple | None:
    """The loops, in order, by which the map indexes its operand (a per-channel
    scale by the channel loop, a per-pixel count by the rows and columns), or
    None for another map."""
    dims = []
    for expr in affine_map.results:
        if not isinstance(expr, ir.AffineDimExpr) or (dims and expr.position <= dims[-1]):
            return None
        dims.append(expr.position)
    return tuple(dims) if dims else None


def _full_rank(value: ir.Value, dims: tuple, rank: int) -> ir.Value | None:
    """`value` (a contiguous buffer indexed by the loops `dims`) as a view of
    rank `rank` with unit dims for the other loops: made once, after the
    value's definition, and found again by the next call."""
    kind = ir.MemRefType(value.type)
    if not has_identity_layout(value):
        return None
    shape = [1] * rank
    for size, d in zip(kind.shape, dims):
        shape[d] = size
    expanded = ir.MemRefType.get(shape, kind.element_type, memory_space=kind.memory_space,
                                 loc=ir.Location.unknown(value.context))
    for use in value.uses:
        user = use.owner
        if user.name == "memref.expand_shape" and user.results[0].type == expanded:
            return user.results[0]
    # Each source dim takes the unit dims before it; the last also those after.
    groups = [[] for _ in dims]
    position = 0
    for number, d in enumerate(dims):
        groups[number] = list(range(position, d + 1))
        position = d + 1
    groups[-1] += list(range(position, rank))
    point = ir.InsertionPoint.after(value.owner) if isinstance(value, ir.OpResult) \
        else ir.InsertionPoint.at_block_begin(value.owner)
    location = value.owner.location if isinstance(value, ir.OpResult) \
        else ir.Location.unknown(value.context)
    with point:
        return memref.ExpandShapeOp(expanded, value, reassociation_attr(groups), [], shape,
                                    loc=location).result


def _in_place_steps(generic) -> list | None:
    """The generic's body as steps that may each write the input tile in place:
    step 0 reads input #0 and the other (broadcast) inputs or constants, every
    later step the step before and those."""
    inputs = input_count(generic)
    try:
        steps = check_broadcasts(body_program(generic.regions[0].blocks[0], inputs),
                                 set(range(1, inputs)))
    except Unsupported:
        return None
    for number, step in enumerate(steps):
        if not isinstance(step, (BinaryStep, ActivationStep)):
            return None
        reads = [step.source] if isinstance(step, ActivationStep) else [step.lhs, step.rhs]
        for ref in reads:
            if ref.source == "tmp" and ref.value != number - 1:
                return None
            if ref == Ref("in", 0) and number > 0:
                return None
        first_read = reads[0]
        if first_read != (Ref("in", 0) if number == 0 else Ref("tmp", number - 1)):
            return None   # the full-size operand comes first (the rhs may broadcast)
    return steps


def _only_read_by(buffer: ir.Value, generic, op) -> bool:
    """Whether every use of `buffer` is the generic writing it, a dealloc, or
    inside the op (its tile nest)."""
    root = tile_nest_root(op.operation)
    pending = [buffer]
    while pending:
        value = pending.pop()
        for use in value.uses:
            user = use.owner.operation
            if user == generic or user.name == "memref.dealloc":
                continue
            ancestor = user
            while ancestor is not None and ancestor != root and ancestor != op.operation:
                ancestor = ancestor.parent
            if ancestor is not None:
                continue
            if user.name in VIEWS:
                pending.extend(user.results)
                continue
            return False
    return True


def input_prologue(op, value: ir.Value, target) -> Prologue | None:
    """The elementwise generic to fold into `op` as a prologue on the tiles of
    its input `value` (read unpadded), else None."""
    if target.fusion < 2 or not isinstance(value, ir.OpResult) \
            or value.owner.name != "memref.alloc":
        return None
    generic, between = None, []   # the ops between it and `op`
    for previous in ops_before(op):
        if previous.name == "linalg.generic" and ins_outs(previous)[1] == [value]:
            generic = previous
            break
        if touches(previous, value):
            return None
        between.append(previous)
    if generic is None or len(generic.results) or npu_attribute_names(generic):
        return None
    if any(str(t) != "#linalg.iterator_type<parallel>" for t in generic.attributes["iterator_types"]):
        return None
    inputs, _ = ins_outs(generic)
    maps = indexing_maps(generic)
    rank = ir.MemRefType(value.type).rank
    identity = ir.AffineMap.get_identity(rank)
    source = inputs[0]
    if maps[0] != identity or maps[-1] != identity or type_name(value) not in FLOAT_TYPES \
            or not isinstance(source.type, ir.MemRefType) or type_name(source) != type_name(value) \
            or ir.MemRefType(source.type).shape != ir.MemRefType(value.type).shape:
        return None
    shape = ir.MemRefType(value.type).shape
    params = []
    for other, affine_map in zip(inputs[1:], maps[1:]):
        dims = _indexed_dims(affine_map)
        # Broadcast over some dims (a tensor as large as the input would be
        # loaded again with every input tile: it stays an op).
        if dims is None or len(dims) == rank or not isinstance(other.type, ir.MemRefType) \
                or ir.MemRefType(other.type).shape != [shape[d] for d in dims] \
                or type_name(other) != type_name(value):
            return None
        params.append((other, dims))
    if list(generic.regions[0].blocks[0].arguments[len(inputs)].uses):
        return None   # the body reads the output's initial value
    # What the generic reads must not change before the op reads it (in its place).
    if is_resident(source):
        return None   # kept in SRAM: the op computes on it in place
    for read in inputs:
        if any(touches(previous, root_buffer(read)) for previous in between):
            return None
    if not _only_read_by(value, generic, op):
        return None
    steps = _in_place_steps(generic)
    if steps is None:
        return None
    operands = []
    for other, dims in params:
        if dims != tuple(range(rank - len(dims), rank)):
            # Not the trailing dims (a count per pixel): a view with unit dims
            # for the others broadcasts against the tile.
            other = _full_rank(other, dims, rank)
            if other is None:
                return None
            dims = tuple(d if d in dims else None for d in range(rank))
        operands.append((other, dims))
    return Prologue(generic, source, [f"prologue{i}" for i in range(1, len(inputs))], steps,
                    operands)


def fold_prologue(problem, prologue: Prologue) -> None:
    """The op's problem loads the generic's input; each other operand is tiled
    as the input is along the dims it spans (a per-channel vector along the
    input channels); the generic is absorbed."""
    region = problem.operand("input").region
    position = len(problem.operands) - 1
    for role, (value, dims) in zip(prologue.roles, prologue.operands):
        problem.operands.insert(position, OperandTile(
            role, value, tuple(Whole(1) if d is None else region[d] for d in dims)))
        position += 1
    problem.absorbed_ops.append(prologue.generic)
    problem.details[PROLOGUE] = prologue


def apply_prologue(op, prologue: Prologue, tile: ir.Value, operand_tiles: list) -> None:
    """The prologue's steps on an SRAM input tile, in place (`operand_tiles`:
    the SRAM tiles of its other operands, in input order)."""
    constants = {c: scratch(op, [1], ir.MemRefType(tile.type).element_type, c)
                 for c in prologue.constants()}

    def value(ref: Ref):
        if ref.source == "const":
            return constants[ref.value]
        if ref.source == "in" and ref.value > 0:
            return full_rank_view(operand_tiles[ref.value - 1])
        return tile
    # An activation of a binary step's result is that step's epilogue.
    for _, step, epilogue in with_epilogues(prologue.steps):
        if isinstance(step, BinaryStep):
            binary_op(step, value(step.lhs), value(step.rhs), tile, epilogue)
        else:
            npu.ActivationOp(value(step.source), tile, step.kind,
                             clip_min=step.clip_min, clip_max=step.clip_max)
