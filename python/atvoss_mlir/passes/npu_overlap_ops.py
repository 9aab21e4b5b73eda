"""npu-overlap-ops: let an op's compute run beside the previous op's, on the
other unit, where no DMA needs the barrier between them.

An op's tile program ends with `npu.barrier {engines = "compute"}` and the
deallocations of its tiles: the barrier orders the DMAs after it after the
op's compute (none may fill a buffer the compute still reads, or store one it
still writes), and the freed space is reused. The sequencer issues nothing
after the barrier until the compute ends, so the next op waits for it even
when it runs on the other unit and reads nothing the first one writes (a
branch beside another, a vector op beside a matmul).

A top-level compute barrier goes, and the deallocations between it and the
next barrier move after that one, when every DMA between them touches no
buffer a compute op issued since the last barrier kept uses (the verifier's
rule; buffers are followed through views, the selects that pick a
multi-buffered tile, and scf.if / scf.for results and iter_args), only
allocations (of SRAM tiles, or of the DRAM buffers later ops write: those
run on no engine), deallocations, views, waits, DMAs, compute ops and tile
loops of the other unit stand between them, nothing since the last barrier
kept ran on the fallback engine, and the next barrier waits for both compute
units. A tile loop orders its own tiles with its barriers, which
npu-narrow-barriers then lets wait for its unit alone. The compute units
order the ops by the buffers they read and write (a scoreboard), so the
second op starts when its inputs are made, on its own unit.

The tiles freed there then live until the next barrier kept. A barrier stays,
with a remark, when those tiles and the ones allocated before that barrier
would not fit below the resident tensors live there (npu-keep-in-sram placed
them), or when a resident tensor freed there would be placed over by one
allocated there. Every buffer is then placed as npu-allocate-sram places
them (first fit); where one still does not fit, the removals whose freed tiles
are live there are undone, with the same remark, until all fit.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from . import ModulePass, PassContext, function_bodies, top_level
from ..machine_model import type_bytes
from ..recipes.problem import RESIDENT_ATTR, TILE_LOOP_ATTR
from .npu_allocate_sram import first_unplaced, resident_offset
from .npu_verify_common import (COMPUTE_OPS, DMA_OPS, MATRIX_OPS, SCF_FOR_INIT_OPERANDS, VIEW_OPS,
                                walk_ops)
from .npu_verify_tokens import root_buffer, yielded

NOT_BESIDE = "the next op does not start beside this one: the tiles this op frees would " \
    "stay allocated during it, and its own would not fit beside them"
# Ops that run on no engine: index arithmetic, views, loops, DRAM buffers.
NOT_RUN = ("arith.", "index.", "affine.", "scf.", "func.", "memref.alloc", "memref.dealloc",
           "memref.get_global") + tuple(VIEW_OPS)
# Ops that may stand between two barriers for the first one to go.
PASSABLE = frozenset({"npu.alloc", "npu.dealloc", "npu.wait", "memref.get_global",
                      "memref.alloc", "arith.constant", "index.constant"}) \
    | DMA_OPS | COMPUTE_OPS | VIEW_OPS


def compute_barrier(op) -> bool:
    return op.name == "npu.barrier" and "engines" in op.attributes and \
        ir.StringAttr(op.attributes["engines"]).value == "compute"


def orders_compute(op) -> bool:
    """Whether a barrier waits for both compute units (it can take over one
    that goes before it)."""
    return op.name == "npu.barrier" and (
        "engines" not in op.attributes
        or ir.StringAttr(op.attributes["engines"]).value in ("compute", "all"))


def yielded_by(op, index: int) -> list:
    """Operand `index` of the terminator of each region of `op` (an scf.if's
    branches, an scf.for's body)."""
    return [value for value in (yielded(region, index) for region in op.regions
                                if len(region.blocks))
            if value is not None]


def roots(value: ir.Value, seen: set | None = None) -> set:
    """The buffers a memref value may view: through views, selects, and the
    results and iter_args of scf.if and scf.for (the tile loops choose among
    multi-buffered tiles so)."""
    seen = set() if seen is None else seen
    value = root_buffer(value)
    if value in seen:
        return set()
    seen.add(value)
    sources = []
    if isinstance(value, ir.BlockArgument):
        loop = value.owner.owner
        if loop is None or loop.name != "scf.for" or value.arg_number == 0:
            return {value}
        index = value.arg_number - 1
        sources = [loop.operands[SCF_FOR_INIT_OPERANDS + index]] + yielded_by(loop, index)
    else:
        owner = value.owner.operation
        if owner.name == "npu.alloc":
            return {value}
        if owner.name == "scf.for":
            sources = [owner.operands[SCF_FOR_INIT_OPERANDS + value.result_number]] + \
                yielded_by(owner, value.result_number)
        elif owner.name == "scf.if":
            sources = yielded_by(owner, value.result_number)
        else:
            sources = [operand for operand in owner.operands
                       if isinstance(operand.type, ir.MemRefType)]
    found = set()
    for source in sources:
        found |= roots(source, seen)
    return found or {value}


def buffers(op) -> set:
    found = set()
    for operand in op.operands:
        if isinstance(operand.type, ir.MemRefType):
            found |= roots(operand)
    return found


def on_fallback(op) -> bool:
    """Whether `op`, or an op nested in it, runs on the fallback engine (an op
    of no NPU unit: a linalg op or memref.copy left to the fallback), whose
    buffers this pass does not follow."""
    if not op.name.startswith(NOT_RUN) and not op.name.startswith("npu."):
        return True
    return any(on_fallback(nested.operation) for region in op.regions
               for block in region.blocks for nested in block.operations)


def nested_compute_buffers(op) -> set:
    """The buffers the compute ops nested in `op` (a loop) use."""
    found = set()
    for region in op.regions:
        for block in region.blocks:
            for nested in block.operations:
                nested = nested.operation
                if nested.name in COMPUTE_OPS:
                    found |= buffers(nested)
                elif nested.regions:
                    found |= nested_compute_buffers(nested)
    return found


def is_tile_loop(op) -> bool:
    """Whether `op` is a tile loop (the outermost loop of an op's tiles) whose
    ops all run on the NPU's units."""
    return op.name == "scf.for" and TILE_LOOP_ATTR in op.attributes and not on_fallback(op)


def units_of(op) -> set:
    """The compute units `op` (or the ops nested in it) runs on."""
    return {"matrix" if compute.name in MATRIX_OPS else "vector"
            for compute in [op, *walk_ops(op)] if compute.name in COMPUTE_OPS}


def passable(op, touched: set, ran: set) -> bool:
    """Whether `op` may stand between a barrier that goes and the one taking
    over, given the buffers compute ops used since the last barrier kept and
    the units they ran on: no DMA of it touches those buffers. A tile loop
    may when it runs on the other unit (its own barriers order its tiles; its
    compute waits for its inputs on the scoreboard, and beside the ops before
    it when npu-narrow-barriers lets those barriers wait for its unit alone)."""
    if op.name in DMA_OPS:
        return not buffers(op) & touched
    if op.name in PASSABLE:
        return True
    return is_tile_loop(op) and bool(ran - units_of(op)) \
        and not any(buffers(dma) & touched for dma in walk_ops(op) if dma.name in DMA_OPS)


class Sizes:
    """SRAM bytes of buffers (aligned as npu-allocate-sram places them)."""

    def __init__(self, alignment: int):
        self.alignment = alignment
        self.known = {}

    def of(self, buffer: ir.Value) -> int:
        if buffer not in self.known:
            size = type_bytes(ir.MemRefType(buffer.type)) or 0 \
                if isinstance(buffer.type, ir.MemRefType) else 0
            self.known[buffer] = -(-size // self.alignment) * self.alignment
        return self.known[buffer]

    def fits(self, ops: list, live: int, residents: dict, capacity: int) -> bool:
        """Whether the tiles live during `ops` (`live` bytes at their start,
        their deallocations left out: they move after the next barrier) fit
        below the resident tensors live beside them (`residents`: buffer ->
        offset, placed by npu-keep-in-sram)."""
        residents = dict(residents)
        placed = [op for op in ops if op.name == "npu.alloc" and RESIDENT_ATTR in op.attributes]
        if placed and any(op.name == "npu.dealloc" and root_buffer(op.operands[0]) in residents
                          for op in ops):
            return False   # a resident tensor placed where one freed here was
        for op in ops:
            if op.name == "npu.alloc":
                offset = resident_offset(op)
                if offset is not None:
                    residents[op.results[0]] = offset
                else:
                    live += self.of(op.results[0])
            nested = sum(self.nested_peak(block) for region in op.regions
                         for block in region.blocks)
            if live + nested > min(residents.values(), default=capacity):
                return False
        return True

    def nested_peak(self, block: ir.Block) -> int:
        live = peak = 0
        for op in block.operations:
            op = op.operation
            if op.name == "npu.alloc":
                live += self.of(op.results[0])
            elif op.name == "npu.dealloc":
                live -= self.of(root_buffer(op.operands[0]))
            peak = max(peak, live + sum(self.nested_peak(nested) for region in op.regions
                                        for nested in region.blocks))
        return peak


@dataclass
class Removal:
    barrier: ir.Operation   # the barrier that goes
    next: ir.Operation      # the barrier that takes over from it
    active: bool = True


def taking_over(removal: Removal, removed: dict) -> ir.Operation:
    """The first barrier kept after `removal`'s (`removed`: barrier -> its
    active removal): where the deallocations after it go."""
    kept = removal.next
    while kept in removed:
        kept = removed[kept].next
    return kept


@dataclass
class Dealloc:
    op: ir.Operation
    anchor: ir.Operation    # the op it stood before (not a dealloc)
    removal: Removal        # of the barrier before it


@dataclass(frozen=True)
class NpuOverlapOps(ModulePass):
    argument = "npu-overlap-ops"
    summary = "Drop the compute barrier between two ops where no DMA needs it, so the " \
              "second op's compute overlaps the first's"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            for block in function_bodies(module):
                removals, deallocs = self.removable(block, context)
                self.place(deallocs, removals)
                self.fit(block, removals, deallocs, context)
                for removal in removals:
                    if removal.active:
                        removal.barrier.erase()

    @staticmethod
    def removable(block: ir.Block, context: PassContext) -> tuple[list, list]:
        """The compute barriers of `block` that may go, each with the barrier
        taking over from it, and the deallocations after them. A barrier stays
        when the bytes its op frees, kept until the next barrier, would not fit
        beside what is live there (the first fit placement of `fit` decides
        the rest)."""
        target = context.target
        ops = [op.operation for op in block.operations]
        removals, deallocs = [], []
        touched = set()   # buffers compute ops use since the last barrier kept
        ran = set()       # and the units they run on
        fallback = False  # whether the fallback engine ran since then
        sizes = Sizes(target.sram_alignment)
        # Tile bytes live, those freed at the next barrier kept, and the
        # resident tensors live (buffer -> offset).
        live, pending, deferred, residents, pending_residents = 0, 0, set(), {}, []

        def release():
            for buffer in pending_residents:
                residents.pop(buffer, None)
            pending_residents.clear()
            return live - pending, 0
        for index, op in enumerate(ops):
            if op.name == "npu.alloc":
                offset = resident_offset(op)
                if offset is not None:
                    residents[op.results[0]] = offset
                else:
                    live += sizes.of(op.results[0])
            elif op.name == "npu.dealloc" and op not in deferred:
                buffer = root_buffer(op.operands[0])
                if residents.pop(buffer, None) is None:
                    live -= sizes.of(buffer)
            if op.name in COMPUTE_OPS:
                touched |= buffers(op)
            elif op.regions:
                touched |= nested_compute_buffers(op)
            ran |= units_of(op)
            fallback = fallback or on_fallback(op)
            if not compute_barrier(op):
                if op.name == "npu.barrier":
                    live, pending = release()
                if orders_compute(op):
                    touched, ran, fallback = set(), set(), False
                continue
            following = index + 1
            while following < len(ops) and passable(ops[following], touched, ran):
                following += 1
            movable = not fallback and following < len(ops) and orders_compute(ops[following])
            if movable and not sizes.fits(ops[index + 1:following], live, residents,
                                          target.max_sram_bytes):
                context.diagnostics.remark(op.location, NOT_BESIDE)
                movable = False
            if not movable:
                live, pending = release()
                touched, ran, fallback = set(), set(), False
                continue
            removal = Removal(op, ops[following])
            removals.append(removal)
            for position in range(index + 1, following):
                if ops[position].name == "npu.dealloc":
                    anchor = next(o for o in ops[position + 1:] if o.name != "npu.dealloc")
                    deallocs.append(Dealloc(ops[position], anchor, removal))
                    deferred.add(ops[position])
                    buffer = root_buffer(ops[position].operands[0])
                    if buffer in residents:
                        pending_residents.append(buffer)
                    else:
                        pending += sizes.of(buffer)
        return removals, deallocs

    @staticmethod
    def place(deallocs: list, removals: list) -> None:
        """Each deallocation after the first barrier kept after it (where it
        was, when the barrier before it stays)."""
        removed = {removal.barrier: removal for removal in removals if removal.active}
        last_after = {}   # kept barrier -> the last deallocation moved after it
        for dealloc in deallocs:
            if not dealloc.removal.active:
                dealloc.op.move_before(dealloc.anchor)
                continue
            kept = taking_over(dealloc.removal, removed)
            dealloc.op.move_after(last_after.get(kept, kept))
            last_after[kept] = dealloc.op

    def fit(self, block: ir.Block, removals: list, deallocs: list, context: PassContext
            ) -> None:
        """Keep the barriers of the removals whose freed tiles are still
        allocated at the first buffer that no longer fits (else of the latest
        removal before it), until every buffer fits."""
        while True:
            failed = first_unplaced(block, context.target)
            active = [r for r in removals if r.active]
            if failed is None or not active:
                return
            ops = [op.operation for op in block.operations]
            position = {op: i for i, op in enumerate(ops)}
            at = position.get(top_level(failed, block), len(ops))
            removed = {r.barrier: r for r in active}
            spanning = [r for r in active
                        if position[r.barrier] <= at < position[taking_over(r, removed)]]
            before = [r for r in active if position[r.barrier] <= at]
            for kept in spanning or [max(before or active, key=lambda r: position[r.barrier])]:
                kept.active = False
                context.diagnostics.remark(kept.barrier.location, NOT_BESIDE)
            for dealloc in deallocs:
                dealloc.op.move_before(dealloc.anchor)
            self.place(deallocs, removals)
