"""npu-prefetch-weights: start the DMA of a constant (weights, a bias) during
the op before, not after it.

Each op's tile program loads its once-loaded tiles at its start, after the
previous program's final `npu.barrier`, so the load waits for that program's
compute. A top-level `npu.dma_load` from a `memref.get_global` constant moves
up, with its SRAM buffer's `npu.alloc` and the views it reads and writes, to
just before a barrier that ends a compute, up to MAX_OPS_AHEAD ops back:
the sequencer then issues it right after that compute, the transfer overlaps
it and the ops after it (barriers at the end of ops wait for the compute
engines only). A barrier still ends the compute when the other loads of the
same op (a conv's weights, before its bias) moved up before it, on other
channels: the op's loads are issued together. It goes no further back
than an op touching its buffer or a DMA on its channel (a channel runs its DMAs
in order: that one would wait for it), and stays when no compute ends before it.

The buffer then lives longer. Every buffer is placed as npu-allocate-sram
places them (first fit); when one no longer fits, a move that keeps a buffer
live there is undone, with a remark, until all fit. An undone move puts the
buffer's ops back exactly where they were: elsewhere, first fit would place
the buffers in another order, which need not fit either.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from . import ModulePass, PassContext, function_bodies, top_level
from .npu_allocate_sram import first_unplaced
from .npu_verify_common import COMPUTE_OPS, VIEW_OPS
from .npu_verify_tokens import root_buffer

# How many ops before its own a constant's load may be issued during.
MAX_OPS_AHEAD = 8

# Ops a constant's load may be issued before: they neither read nor write it.
PASSABLE = ("npu.", "memref.alloc", "memref.subview", "memref.cast", "memref.collapse_shape",
            "memref.expand_shape", "memref.get_global", "arith.", "index.", "affine.apply")


def defining_views(value: ir.Value, block: ir.Block) -> list:
    """The view ops of `block` that `value` is made by, outermost source first."""
    chain = []
    while isinstance(value, ir.OpResult) and value.owner.operation.name in VIEW_OPS:
        if value.owner.operation.block == block:
            chain.append(value.owner.operation)
        value = value.owner.operands[0]
    return chain[::-1]


def has_computed_offsets(views: list, block: ir.Block) -> bool:
    """Whether one of the views has a dynamic offset or size computed in `block`
    (it could not move above that computation)."""
    return any(operand.owner.operation.block == block
               for view in views for operand in list(view.operands)[1:]
               if isinstance(operand, ir.OpResult))


def ends_compute(ops: list, index: int, load) -> bool:
    """Whether ops[index] is a barrier after a compute op or a tile loop, with
    only allocations, constants, views and the other loads of the same op (on
    other channels) in between."""
    if ops[index].name != "npu.barrier":
        return False
    for before in (ops[i] for i in range(index - 1, -1, -1)):
        if before.name in ("npu.alloc", "memref.get_global") or before.name in VIEW_OPS or (
                before.name == "npu.dma_load" and before.location == load.location
                and before.attributes["channel"] != load.attributes["channel"]):
            continue
        return (before.name in COMPUTE_OPS and before.name != "npu.fill") or \
            before.name in ("scf.for", "scf.if")
    return False


@dataclass
class Move:
    load: ir.Operation
    ops: list                # the buffer's alloc, its views, the load: moved back on undo
    moved: list              # every op it moved (the constant and its views too)
    buffer: ir.Value


class BlockOrder:
    """The block's ops in their order before any move, and those moved away
    from it: an undone move puts each of its ops back exactly where it was,
    before the first op after it that is there too."""

    def __init__(self, ops: list):
        self.original = list(ops)
        self.index = {op: i for i, op in enumerate(ops)}
        self.displaced = set()

    def undo(self, move: Move) -> None:
        self.displaced.difference_update(move.ops)
        for op in sorted(move.ops, key=self.index.get, reverse=True):
            home = next(after for after in self.original[self.index[op] + 1:]
                        if after not in self.displaced)
            op.move_before(home)


def plan_move(ops: list, position: dict, load) -> Move | None:
    """Move `load` up to before a barrier ending an earlier compute, if it may go
    there; `ops` and `position` (the block's ops in order) follow the move."""
    block = load.block
    source, target = load.operands[0], load.operands[1]
    global_ = root_buffer(source)
    buffer = root_buffer(target)
    if not (isinstance(global_, ir.OpResult) and global_.owner.operation.name == "memref.get_global"):
        return None
    if not (isinstance(buffer, ir.OpResult) and buffer.owner.operation.name == "npu.alloc"
            and buffer.owner.operation.block == block
            and "npu.resident" not in buffer.owner.attributes):
        return None
    constant = [global_.owner.operation] if global_.owner.operation.block == block else []
    moving = [buffer.owner.operation] + defining_views(target, block) + constant + \
        defining_views(source, block) + [load]
    if has_computed_offsets(moving[1:-1], block):
        return None
    start = position[load]
    channel = load.attributes["channel"]
    best, passed = None, 0
    for index in range(start - 1, -1, -1):
        op = ops[index]
        if op in moving:
            continue
        if any(root_buffer(operand) == buffer for operand in op.operands) \
                or not op.name.startswith(PASSABLE):
            break
        if op.name in ("npu.dma_load", "npu.dma_store") and op.attributes["channel"] == channel:
            break   # a channel runs its DMAs in order: this one would wait for the load
        if ends_compute(ops, index, load):
            if not all(ops[i] in moving for i in range(index + 1, start)):
                best = index
            passed += 1
            if passed == MAX_OPS_AHEAD:
                break
    if best is None:
        return None
    # A constant another load moved up already stays.
    moved = [op for op in sorted(moving, key=lambda op: position[op]) if position[op] > best]
    for op in moved:
        op.move_before(ops[best])
    # The block's op list, kept in step with the block.
    segment = ops[best:start + 1]
    ops[best:start + 1] = moved + [op for op in segment if op not in set(moved)]
    for index in range(best, start + 1):
        position[ops[index]] = index
    # Undoing moves back the buffer's ops only: the constant and its views are
    # pure and may have other users, which stay dominated where they are now.
    return Move(load, [buffer.owner.operation] + defining_views(target, block) + [load],
                moved, buffer)


@dataclass(frozen=True)
class NpuPrefetchWeights(ModulePass):
    argument = "npu-prefetch-weights"
    summary = "Issue the DMA of a constant's tile during the op before its own"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            target = context.target
            for block in function_bodies(module):
                moves = []
                ops = [op.operation for op in block.operations]
                order = BlockOrder(ops)
                position = {op: i for i, op in enumerate(ops)}
                for load in [op for op in ops if op.name == "npu.dma_load"]:
                    move = plan_move(ops, position, load)
                    if move is not None:
                        moves.append(move)
                        order.displaced.update(move.moved)
                self.fit(block, moves, order, target, context)

    @staticmethod
    def fit(block: ir.Block, moves: list, order: BlockOrder, target,
            context: PassContext) -> None:
        """Undo moves until every buffer of the block fits the SRAM."""
        while moves:
            failed = first_unplaced(block, target)
            if failed is None:
                return
            ops = [op.operation for op in block.operations]
            position = {op: i for i, op in enumerate(ops)}
            at = position.get(top_level(failed, block), len(ops))
            live = [m for m in moves if position[m.ops[0]] <= at]
            undo = max(live or moves, key=lambda m: position[m.ops[0]])
            order.undo(undo)
            moves.remove(undo)
            context.diagnostics.remark(undo.load.location, "the load of this constant is not "
                                       "issued during the previous op: its SRAM buffer would "
                                       "not fit beside that op's")

