"""An elementwise op folded into the convolution that reads its result, as a
prologue on the conv's input tiles (-fusion=2).

A pre-activation (DenseNet's batch-norm scale and shift and relu before each
1x1 conv) is an elementwise `linalg.generic` whose result only the conv reads.
Left alone it writes a tensor as large as its input to DRAM, which the conv
reads back. Folded, the conv loads the generic's input instead and the vector
unit applies the generic's body to each input tile in SRAM, in place, once per
load, while the matrix unit computes on the tile before: the tensor never
exists.

The generic qualifies when its input #0 and output have the conv input's
shape, both by the identity, its other inputs are per-channel vectors (indexed
by the channel alone), its body is a chain of vector steps each reading only
the step before (so each may write the tile in place), it writes a DRAM buffer
right before the conv and nothing between them touches what it reads or
writes. The conv reads that buffer unpadded: a pad would be of the generic's
values, not of its input's.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..dialects import npu
from .absorbed import VIEWS, ops_before, touches
from .problem import (RESIDENT_ATTR, OperandTile, Tiled, Unsupported, indexing_maps, input_count,
                      ins_outs, root_buffer, tile_nest_root, type_name)
from .sram_ops import full_rank_view, scratch
from .vector_body import body_program
from .vector_steps import ActivationStep, BinaryStep, Ref, step_constants
from .elementwise import check_broadcasts, step_cycles

PROLOGUE = "prologue"
FLOAT_TYPES = ("f32", "f16", "bf16")


@dataclass
class Prologue:
    generic: ir.Operation    # the elementwise op folded in (erased once the conv is lowered)
    source: ir.Value         # its input #0, which the conv loads instead
    roles: list              # the roles of its per-channel operands, in input order (1..)
    steps: list              # its body as vector steps, each writing the input tile

    def cycles(self, elements: int, target) -> int:
        return step_cycles(self.steps, elements, target)

    def constants(self) -> list:
        return step_constants(self.steps)


def _per_channel(affine_map: ir.AffineMap, channel: int) -> bool:
    """Whether the map indexes its operand by the channel loop alone."""
    results = list(affine_map.results)
    return len(results) == 1 and isinstance(results[0], ir.AffineDimExpr) \
        and results[0].position == channel


def _in_place_steps(generic) -> list | None:
    """The generic's body as steps that may each write the input tile in place:
    step 0 reads input #0 and per-channel inputs or constants, every later step
    the step before and per-channel inputs or constants."""
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


def input_prologue(op, value: ir.Value, channel_dim: int, target) -> Prologue | None:
    """The elementwise generic to fold into `op` as a prologue on the tiles of
    its input `value` (read unpadded; the loop dim of its channels is
    `channel_dim`), else None."""
    if target.fusion < 2 or not isinstance(value, ir.OpResult) \
            or value.owner.name != "memref.alloc":
        return None
    generic = None
    for previous in ops_before(op):
        if previous.name == "linalg.generic" and ins_outs(previous)[1] == [value]:
            generic = previous
            break
        if touches(previous, value):
            return None
    if generic is None or len(generic.results) or any(
            (a if isinstance(a, str) else a.name).startswith("npu.") for a in generic.attributes):
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
    channels = ir.MemRefType(value.type).shape[-1]
    for other, affine_map in zip(inputs[1:], maps[1:]):
        if not isinstance(other.type, ir.MemRefType) or ir.MemRefType(other.type).shape != [channels] \
                or not _per_channel(affine_map, rank - 1) or type_name(other) != type_name(value):
            return None
    if list(generic.regions[0].blocks[0].arguments[len(inputs)].uses):
        return None   # the body reads the output's initial value
    # What the generic reads must not change before the conv reads it (in its place).
    between = []
    for previous in ops_before(op):
        if previous == generic:
            break
        between.append(previous)
    for read in inputs:
        buffer = root_buffer(read)
        if isinstance(buffer, ir.OpResult) and RESIDENT_ATTR in buffer.owner.attributes:
            return None   # kept in SRAM: the conv computes on it in place
        if any(touches(previous, buffer) for previous in between):
            return None
    if not _only_read_by(value, generic, op):
        return None
    steps = _in_place_steps(generic)
    if steps is None:
        return None
    return Prologue(generic, source, [f"prologue{i}" for i in range(1, len(inputs))], steps)


def fold_prologue(problem, prologue: Prologue, channel_dim: int) -> None:
    """The conv's problem loads the generic's input; its per-channel operands
    are tiled along the input channels; the generic is absorbed."""
    inputs, _ = ins_outs(prologue.generic)
    position = len(problem.operands) - 1
    for role, value in zip(prologue.roles, inputs[1:]):
        problem.operands.insert(position, OperandTile(role, value, (Tiled(channel_dim),)))
        position += 1
    problem.absorbed_ops.append(prologue.generic)
    problem.details[PROLOGUE] = prologue


def apply_prologue(op, prologue: Prologue, tile: ir.Value, channel_tiles: list) -> None:
    """The prologue's steps on an SRAM input tile, in place (`channel_tiles`:
    the SRAM tiles of its per-channel operands, in input order)."""
    constants = {c: scratch(op, [1], ir.MemRefType(tile.type).element_type, c)
                 for c in prologue.constants()}

    def value(ref: Ref):
        if ref.source == "const":
            return constants[ref.value]
        if ref.source == "in" and ref.value > 0:
            return full_rank_view(channel_tiles[ref.value - 1])
        return tile
    for step in prologue.steps:
        if isinstance(step, BinaryStep):
            npu.ElementwiseOp(value(step.lhs), value(step.rhs), tile, step.kind)
        else:
            npu.ActivationOp(value(step.source), tile, step.kind,
                             clip_min=step.clip_min, clip_max=step.clip_max)
