"""npu-defer-store-waits: wait for an op's last store where something needs it
done, not right after issuing it.

An op's tile program ends with the store of its last tile, a wait on that
store and the deallocation of the tile. The wait stops the sequencer, so the
next op issues nothing (its fills, its prefetched loads, its compute) until
the store has drained, though it reads nothing the store writes (the next
strip of a cascade, the next branch of an Inception block).

A top-level `npu.wait` on tokens of top-level stores moves down, with the
deallocations of the stored tiles after it, to just before the first op that
may need the stores done: a DMA whose DRAM range may overlap a stored one
(static ranges, else the same buffer counts as overlapping), an op using a
stored tile, a barrier that waits for the DMA engines, an op with regions (a
tile loop), or any op but allocations, deallocations, views, constants,
waits, compute-only barriers, DMAs and compute ops (which work on SRAM only).

The stored tiles then live longer. A move is tried where the SRAM below the
resident tensors, less the tiles live there, holds twice their bytes until
its new place; every buffer is then placed as npu-allocate-sram places them
(first fit), and where one no longer fits the moves across it are undone.
A remark says why a wait stays.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from . import ModulePass, PassContext, function_bodies, top_level
from .npu_allocate_sram import buffer_bytes, first_unplaced, resident_offset
from .buffer_plan import resident_budgets
from .npu_prefetch_inputs import may_overlap
from .npu_verify_common import COMPUTE_OPS, DMA_OPS, VIEW_OPS
from .npu_verify_tokens import root_buffer

STAYS = "the wait for this op's last store stays right after it: the stored tile would " \
    "not fit beside the next op's buffers"

# How many times the stored tiles' bytes the room below the resident tensors
# must hold for a move to be tried: first fit leaves gaps, and each move that
# no longer fits costs a placement of the whole block to find and undo.
ROOM_FACTOR = 2

# Ops a deferred wait may pass, besides compute ops and DMAs (checked one by
# one): they neither read DRAM nor need a store done.
PASSABLE = frozenset({"npu.alloc", "npu.dealloc", "npu.wait", "npu.barrier",
                      "memref.get_global", "arith.constant", "index.constant"}) | VIEW_OPS


def stores_waited(wait, block: ir.Block) -> list | None:
    """The top-level stores of `block` whose tokens `wait` waits on (all of
    them must be), or None."""
    stores = []
    for token in wait.operands:
        if not isinstance(token, ir.OpResult):
            return None
        store = token.owner.operation
        if store.name != "npu.dma_store" or store.block != block:
            return None
        stores.append(store)
    return stores or None


def waits_for_compute_only(barrier) -> bool:
    """Whether a barrier waits for compute units only (not the DMA engines)."""
    return "engines" in barrier.attributes and \
        ir.StringAttr(barrier.attributes["engines"]).value in ("compute", "matrix", "vector")


def needs_stores_done(op, tiles: set, destinations: list) -> bool:
    """Whether `op` may need the stores of `tiles` into `destinations` done."""
    if op.name in DMA_OPS:
        dram = op.operands[0] if op.name == "npu.dma_load" else op.operands[1]
        if any(may_overlap(dram, destination) for destination in destinations):
            return True
    elif op.name not in COMPUTE_OPS and op.name not in PASSABLE:
        return True
    return any(isinstance(operand.type, ir.MemRefType) and root_buffer(operand) in tiles
               for operand in op.operands)


def sram_room(ops: list, floor: list) -> list:
    """Per op of a block, the bytes of SRAM below the resident tensors live
    there (`floor`, npu-keep-in-sram's resident_budgets) that no tile takes:
    an estimate of first fit, fragmentation aside."""
    room, tiles = [], 0
    for op, lowest in zip(ops, floor):
        if op.name == "npu.alloc" and resident_offset(op) is None:
            tiles += buffer_bytes(op) or 0
        elif op.name == "npu.dealloc":
            buffer = root_buffer(op.operands[0])
            if isinstance(buffer, ir.OpResult) and buffer.owner.operation.name == "npu.alloc" \
                    and resident_offset(buffer.owner) is None:
                tiles -= buffer_bytes(buffer.owner) or 0
        room.append(lowest - tiles)
    return room


@dataclass
class Move:
    wait: ir.Operation
    ops: list                # the wait and the stored tiles' deallocations
    successors: list         # the op each of them stood before (for an undo)
    anchor: ir.Operation     # the op they go before


@dataclass(frozen=True)
class NpuDeferStoreWaits(ModulePass):
    argument = "npu-defer-store-waits"
    summary = "Wait for an op's last store where an op needs it done, not right after it"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            for block in function_bodies(module):
                ops = [op.operation for op in block.operations]
                position = {op: index for index, op in enumerate(ops)}
                budgets = resident_budgets(block, context.target.max_sram_bytes)
                floor = [budgets[op] for op in ops]
                room = sram_room(ops, floor)
                tiles_at = {op.results[0]: index for index, op in enumerate(ops)
                            if op.name == "npu.alloc"}
                moves = [move for move in (self.plan(ops, position, wait, block) for wait in ops
                                           if wait.name == "npu.wait") if move is not None]
                moves = [move for move in moves
                         if self.roomy(move, ops, position, room, floor, tiles_at, context)]
                # Where an undone move puts its ops back: before the op each
                # stood before, or the next one no move takes away.
                moved_ops = {op for move in moves for op in move.ops}
                for move in moves:
                    move.successors = [next(op for op in ops[position[moved] + 1:]
                                            if op not in moved_ops) for moved in move.ops]
                for move in moves:
                    for moved in move.ops:
                        moved.move_before(move.anchor)
                self.fit(block, moves, context)

    @staticmethod
    def plan(ops: list, position: dict, wait, block: ir.Block) -> Move | None:
        """Where `wait` (with the stored tiles' deallocations) may go."""
        stores = stores_waited(wait, block)
        if stores is None:
            return None
        tiles = {root_buffer(store.operands[0]) for store in stores}
        destinations = [store.operands[1] for store in stores]
        moving, passed = [wait], 0
        for op in ops[position[wait] + 1:]:
            if op.name == "npu.dealloc" and root_buffer(op.operands[0]) in tiles:
                moving.append(op)
                continue
            if op.regions or (op.name == "npu.barrier" and not waits_for_compute_only(op)) \
                    or needs_stores_done(op, tiles, destinations):
                if not passed:
                    return None
                return Move(wait, moving, [], op)
            passed += op.name not in PASSABLE   # a DMA or compute op it lets run
        return None

    @staticmethod
    def roomy(move: Move, ops: list, position: dict, room: list, floor: list, tiles_at: dict,
              context: PassContext) -> bool:
        """Whether the room left below the resident tensors until the move's
        anchor holds ROOM_FACTOR times the stored tiles' bytes, and no tensor
        kept in SRAM is placed there below where the tiles may be; says why
        not."""
        stored = [dealloc.operands[0] for dealloc in move.ops[1:]]
        tiles = sum(buffer_bytes(tile.owner) or 0 for tile in stored
                    if isinstance(tile, ir.OpResult))
        lowest = min((floor[tiles_at[tile]] for tile in stored if tile in tiles_at),
                     default=0)
        window = range(position[move.wait] + 1, position[move.anchor])
        if all(ROOM_FACTOR * tiles <= room[index] for index in window) and not any(
                ops[index].name == "npu.alloc" and resident_offset(ops[index]) is not None
                and resident_offset(ops[index]) < lowest for index in window):
            return True
        context.diagnostics.remark(move.wait.location, STAYS)
        return False

    @staticmethod
    def fit(block: ir.Block, moves: list, context: PassContext) -> None:
        """Undo moves until every buffer of the block fits the SRAM: those
        whose stored tiles are live at the first buffer that does not fit,
        else the latest ones before it (a tile kept longer shifts where first
        fit places the buffers after it), twice as many each time it still
        fails there."""
        batch, last = 1, None
        while moves:
            failed = first_unplaced(block, context.target)
            if failed is None:
                return
            ops = [op.operation for op in block.operations]
            position = {op: index for index, op in enumerate(ops)}
            at = position.get(top_level(failed, block), len(ops))
            batch = batch * 2 if at == last else 1
            last = at
            spanning = [m for m in moves
                        if position[m.successors[0]] <= at <= position[m.anchor]]
            before = sorted((m for m in moves if position[m.successors[0]] <= at),
                            key=lambda m: position[m.successors[0]])
            for undo in spanning or before[-batch:] or moves[-batch:]:
                for moved, successor in zip(undo.ops, undo.successors):
                    moved.move_before(successor)   # in order: the wait, then the deallocations
                moves.remove(undo)
                context.diagnostics.remark(undo.wait.location, STAYS)
