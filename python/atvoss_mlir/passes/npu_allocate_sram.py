"""npu-allocate-sram: give every `npu.alloc` a static byte offset in SRAM.

Buffers live from their `npu.alloc` to their `npu.dealloc` (or the end of the
block holding the alloc). Offsets are assigned in program order, first fit,
aligned to target.sram-alignment: a buffer takes the lowest aligned offset that
no live buffer occupies, so the space of dead buffers is reused. A buffer that
does not fit is an error at its alloc naming the live set and the budget.

A dealloc does not wait for the compute engines: the ops issued before it may
still read or write the buffer. The compute engines run their ops in order,
so an op of theirs may take the space at once; a DMA does not wait for them.
So a buffer a DMA writes (a load's destination) does not take space a buffer
freed since the last barrier on the compute engines had (a weight load moved
ahead of that barrier by npu-prefetch-weights would overwrite a constant
still being filled; after a barrier on one unit, space only that unit's ops
used is free): it goes to the lowest offset clear of both, when that is
below the tensors npu-keep-in-sram keeps in SRAM while it lives (their plan
sized the tiles); else a barrier goes before its alloc, on the unit whose
ops used the freed buffers it overlaps (through views and the selects that
pick a tile's buffer), on both when ops of both did.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..machine_model import first_fit, type_bytes
from ..recipes.problem import RESIDENT_ATTR
from ..dialects import npu
from . import ModulePass, PassContext, top_level
from .npu_verify_common import COMPUTE_OPS, MATRIX_OPS, VIEW_OPS
from .npu_verify_tokens import barrier_engines


def buffer_bytes(alloc) -> int | None:
    return type_bytes(ir.MemRefType(alloc.results[0].type))


def resident_offset(alloc) -> int | None:
    """The offset npu-keep-in-sram gave a resident tensor's npu.alloc, else None."""
    if RESIDENT_ATTR in alloc.attributes and "offset" in alloc.attributes:
        return ir.IntegerAttr(alloc.attributes["offset"]).value
    return None


@dataclass
class Placement:
    alloc: object
    offset: int
    size: int
    units: set | None = None   # _units_using(alloc), found when first asked

    def used_by(self, unit: str) -> bool:
        if self.units is None:
            self.units = _units_using(self.alloc)
        return unit in self.units


class FirstFit:
    def __init__(self, capacity: int, alignment: int):
        self.capacity = capacity
        self.alignment = alignment
        self.live: dict = {}  # alloc result -> Placement
        # Freed since the last barrier on the compute engines, which may still use them.
        self.busy: list[Placement] = []

    def place(self, size: int, avoid_busy: bool = False) -> int | None:
        taken = list(self.live.values()) + (self.busy if avoid_busy else [])
        offset = first_fit([(p.offset, p.size) for p in taken], size, self.alignment)
        return offset if offset + size <= self.capacity else None

    @classmethod
    def of(cls, target) -> "FirstFit":
        return cls(target.max_sram_bytes, target.sram_alignment)

    def still_used(self, offset: int, size: int) -> bool:
        """Whether [offset, offset + size) overlaps a buffer freed since the last
        barrier on the compute engines."""
        return any(_overlap(offset, size, p) for p in self.busy)

    def users_of(self, offset: int, size: int) -> str:
        """The engines a barrier waits for so that [offset, offset + size) is
        clear of the ops that used the buffers freed there: one unit when
        only its ops did."""
        overlapping = [p for p in self.busy if _overlap(offset, size, p)]
        for unit, other in (("matrix", "vector"), ("vector", "matrix")):
            if not any(p.used_by(other) for p in overlapping):
                return unit
        return "compute"

    def finished(self, engines: str) -> None:
        """After a barrier on `engines`: space only their ops used may take a DMA."""
        if engines in ("all", "compute"):
            self.busy.clear()
        elif engines in ("matrix", "vector"):
            other = "vector" if engines == "matrix" else "matrix"
            self.busy = [p for p in self.busy if p.used_by(other)]

    def release(self, buffer) -> None:
        placement = self.live.pop(buffer, None)
        if placement is not None:
            self.busy.append(placement)

    def free(self, offset: int, size: int) -> bool:
        return offset % self.alignment == 0 and offset + size <= self.capacity and not any(
            _overlap(offset, size, p) for p in self.live.values())

    @property
    def live_bytes(self) -> int:
        return sum(p.size for p in self.live.values())

    def largest_free(self) -> int:
        """The largest run of bytes no live buffer takes."""
        largest, end = 0, 0
        for p in sorted(self.live.values(), key=lambda p: p.offset):
            largest, end = max(largest, p.offset - end), max(end, p.offset + p.size)
        return max(largest, self.capacity - end)


def _overlap(offset: int, size: int, placement: Placement) -> bool:
    return offset < placement.offset + placement.size and placement.offset < offset + size


@dataclass(frozen=True)
class NpuAllocateSram(ModulePass):
    argument = "npu-allocate-sram"
    summary = "Assign aligned static SRAM offsets to npu.alloc, reusing dead buffers' space"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            for function in module.regions[0].blocks[0].operations:
                for region in function.regions:
                    for block in region.blocks:
                        place_block(block, context.target, context.diagnostics.error)


# How many moves place_block undoes one at a time before it undoes them all.
MOVES_UNDONE = 3


def _silent(location, message) -> None:
    pass


def place_block(block: ir.Block, target, error) -> ir.Operation | None:
    """Place the block's buffers (place_buffers). A DMA's buffer moved clear of
    space the compute engines may still use can leave a later buffer no room:
    then the last move before it whose buffer is live there waits for the
    compute engines instead, after MOVES_UNDONE such tries all those moves
    (the last move before it when none is live there), until all fit (with
    no move left, the offsets are those of first fit alone, which
    first_unplaced found to fit)."""
    barriers = set()   # allocs that wait for the compute engines rather than move
    tries = 0
    listed = {}        # block -> its ops, listed once for all tries
    while True:
        moved = []
        allocator = FirstFit.of(target)
        failed = place_buffers(block, allocator, _silent, False, barriers, moved, listed)
        if failed is None or not moved:
            break
        tries += 1
        # The moves whose buffers are still live there are what took its room.
        live = [m for m in moved if _live_at(m, failed)]
        if not live:
            barriers.update(moved[-1:])
        else:
            barriers.update(live[-1:] if tries <= MOVES_UNDONE else live)
    return place_buffers(block, FirstFit.of(target), error, True, barriers, None, listed)


def _live_at(alloc, op) -> bool:
    """Whether the buffer `alloc` makes is live at `op` (by the order of the
    ops in the block holding the alloc)."""
    at = top_level(op, alloc.block)
    if at is None or at.is_before_in_block(alloc):
        return False
    return not any(use.owner.name == "npu.dealloc" and use.owner.operation.block == alloc.block
                   and use.owner.operation.is_before_in_block(at)
                   for use in alloc.results[0].uses)


def first_unplaced(block: ir.Block, target) -> ir.Operation | None:
    """The first npu.alloc of the block that would not fit, placed by first fit
    alone (None: all fit; then this pass places them all, moving buffers or
    not); nothing is assigned, nothing reported."""
    return place_buffers(block, FirstFit.of(target), _silent, False, None)


def place_buffers(block: ir.Block, allocator: FirstFit, error, assign: bool = True,
                  barriers: frozenset | None = frozenset(), moved: list | None = None,
                  listed: dict | None = None) -> ir.Operation | None:
    """Give every npu.alloc of the block (and of the blocks nested in it) its
    offset (only find them, when not `assign`); the alloc that does not fit,
    after `error(location, message)`, or None. A buffer a DMA writes where
    one freed since the last barrier on the compute engines was moves clear
    of it below the tensors kept in SRAM (recorded in `moved`), unless its
    alloc is in `barriers` (None: every alloc) or it fits nowhere else: then
    a barrier on the compute engines goes before it (when `assign`)."""
    opened = []
    listed = {} if listed is None else listed
    if block not in listed:
        listed[block] = [(op.operation, op.operation.name) for op in block.operations]
    ops = listed[block]
    for index, (op, name) in enumerate(ops):
        if name == "npu.alloc":
            size = buffer_bytes(op)
            if size is None:
                error(op.location, "'npu.alloc' op needs a static shape to be placed in SRAM")
                return op
            offset = resident_offset(op)
            placed = offset if offset is not None else allocator.place(size)
            if placed is not None and allocator.still_used(placed, size) \
                    and _written_by_dma(op.results[0]):
                clear = allocator.place(size, avoid_busy=True) \
                    if offset is None and barriers is not None and op not in barriers else None
                if clear is not None and clear + size <= _resident_floor(ops, index, allocator):
                    placed = clear
                    if moved is not None:
                        moved.append(op)
                else:
                    # Space the compute engines may still use: wait for the
                    # units whose ops used it.
                    engines = allocator.users_of(placed, size)
                    if assign:
                        with op.context, op.location, ir.InsertionPoint(op):
                            npu.BarrierOp(engines=ir.StringAttr.get(engines))
                    allocator.finished(engines)
            if offset is not None:
                # Placed by npu-keep-in-sram, whose plan the ops' tiles were sized by.
                if not allocator.free(offset, size):
                    error(op.location, f"'npu.alloc' op at offset {offset} ({size} B) overlaps "
                                       f"a live buffer or exceeds SRAM budget "
                                       f"{allocator.capacity} B")
                    return op
            else:
                offset = placed
            if offset is None:
                live = f"{len(allocator.live)} live buffers of {allocator.live_bytes} B"
                if allocator.live_bytes + size > allocator.capacity:
                    error(op.location, f"'npu.alloc' op working set "
                                       f"{allocator.live_bytes + size} B exceeds SRAM budget "
                                       f"{allocator.capacity} B ({live} and this one of "
                                       f"{size} B)")
                else:
                    error(op.location, f"'npu.alloc' op of {size} B fits nowhere in the "
                                       f"{allocator.capacity} B SRAM: the {live} leave no "
                                       f"free range that large (the largest is "
                                       f"{allocator.largest_free()} B)")
                return op
            if assign:
                with op.context:
                    op.attributes["offset"] = ir.IntegerAttr.get(
                        ir.IntegerType.get_signless(64), offset)
            allocator.live[op.results[0]] = Placement(op, offset, size)
            opened.append(op.results[0])
        elif name == "npu.dealloc":
            allocator.release(op.operands[0])
        elif name == "npu.barrier":
            allocator.finished(barrier_engines(op))
        if not _has_regions(op, name):
            continue
        for region in op.regions:
            for nested in region.blocks:
                failed = place_buffers(nested, allocator, error, assign, barriers, moved, listed)
                if failed is not None:
                    return failed
    for buffer in opened:  # lifetime ends with the block
        allocator.release(buffer)
    return None


# Whether the ops of a name have regions (an op's definition fixes how many):
# asking each op costs a fifth of a placement of the whole block.
_REGION_KINDS: dict[str, bool] = {}


def _has_regions(op, name: str) -> bool:
    if name not in _REGION_KINDS:
        _REGION_KINDS[name] = len(op.regions) > 0
    return _REGION_KINDS[name]


def _resident_floor(ops: list, index: int, allocator: FirstFit) -> int:
    """The lowest offset of a tensor kept in SRAM live beside the buffer that
    ops[index] allocates (`ops`: (op, name) pairs): now, or allocated before
    its dealloc (the end of its block without one)."""
    floor = min([allocator.capacity] + [
        p.offset for p in allocator.live.values() if resident_offset(p.alloc) is not None])
    buffer = ops[index][0].results[0]
    for op, name in ops[index + 1:]:
        if name == "npu.dealloc" and op.operands[0] == buffer:
            break
        offset = resident_offset(op) if name == "npu.alloc" else None
        if offset is not None:
            floor = min(floor, offset)
    return floor


def _written_by_dma(buffer: ir.Value) -> bool:
    """Whether an npu.dma_load writes the buffer (or a view of it, or the
    select that picks it among a multi-buffered tile's buffers: a tile loop
    loads its next tile into the one it picks)."""
    pending = [buffer]
    while pending:
        for use in pending.pop().uses:
            user = use.owner
            if user.name == "npu.dma_load" and use.operand_number == 1:
                return True
            if user.name in VIEW_OPS or user.name == "arith.select":
                pending.extend(user.results)
    return False


def _units_using(alloc) -> set:
    """The compute units whose ops use the buffer `alloc` makes (through views
    and selects); both where it is used otherwise (a loop's iter_arg)."""
    pending, units = [alloc.results[0]], set()
    while pending:
        for use in pending.pop().uses:
            user = use.owner.operation
            if user.name in VIEW_OPS and use.operand_number == 0 or user.name == "arith.select":
                pending.extend(user.results)   # a view, or a pick among a tile's buffers
            elif user.name in COMPUTE_OPS:
                units.add("matrix" if user.name in MATRIX_OPS else "vector")
            elif user.name not in ("npu.dma_load", "npu.dma_store", "npu.dealloc"):
                return {"matrix", "vector"}
    return units
