"""npu-prefetch-inputs: start an op's first input loads during the previous
op's last tile, not after its final store.

An op's tile program ends with `npu.barrier {engines = "compute"}` (its last
tile's epilogue), a wait on the DMAs its loop left pending, the store of its
last tile and a wait on that store; the next op's first loads come after, so
they wait for all of it. A top-level `npu.dma_load` of a DRAM buffer (a
constant's is npu-prefetch-weights' work) moves up, with its SRAM buffer's
`npu.alloc` and the views it reads and writes, to just before that barrier;
the waits there on DMAs started before the barrier move up before it, so the
load still reads what the previous op's loop stored. It moves only past
allocations, views, deallocations, waits, other loads, stores and the fills of
other buffers (a padded buffer's halo); never past a store whose DRAM range
may overlap what it reads (static ranges, else the same buffer counts as
overlapping; a remark says so then, since the load waits for that store), nor
past a store on its own channel (a channel runs its DMAs in order: the load
would wait for it), unless it reads the program's input, which nothing
writes: it then goes on a channel no store it passes is on. When the op
before is a padded buffer's halo fill (no loop, no DMA: a strip of a cascade
fills the halo of the buffer its first op writes), the load may go before the
op before that, at the earliest barrier where nothing above stops it.

The buffer then lives during the previous op's epilogue. Every buffer is
placed first fit after the moves, as npu-allocate-sram places them; when one
no longer fits, the last move above it is undone, with a remark, and the
others are tried again.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from . import ModulePass, PassContext, function_bodies, top_level
from .npu_allocate_sram import first_unplaced
from .npu_prefetch_weights import defining_views, has_computed_offsets
from .npu_verify_common import COMPUTE_OPS, VIEW_OPS
from .npu_verify_tokens import root_buffer

# Ops a load may move above: they touch no buffer it reads or writes (stores
# and waits are checked one by one).
PASSABLE = ("npu.alloc", "npu.dealloc", "npu.wait", "npu.dma_load", "npu.dma_store",
            "memref.alloc", "memref.get_global", "arith.constant", "index.constant") + \
    tuple(VIEW_OPS)
# What may stand between a tile loop and its epilogue barrier: the loads of
# constants npu-prefetch-weights issued there, with their buffers and views.
PREFETCHED = ("npu.alloc", "npu.dma_load", "memref.get_global") + tuple(VIEW_OPS)


def element_range(value: ir.Value) -> tuple[int, int] | None:
    """The [first, last] elements of its root buffer a memref view spans (its
    bounding range), from its type's static layout; None when dynamic."""
    memref = ir.MemRefType(value.type)
    if not memref.has_static_shape:
        return None
    strides, offset = memref.get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    if offset == dynamic or dynamic in strides:
        return None
    if any(size == 0 for size in memref.shape):
        return None
    last = offset + sum((size - 1) * stride for size, stride in zip(memref.shape, strides))
    return offset, last


def may_overlap(a: ir.Value, b: ir.Value) -> bool:
    """Whether two DRAM views may share an element."""
    if root_buffer(a) != root_buffer(b):
        return False
    first, second = element_range(a), element_range(b)
    if first is None or second is None or \
            ir.MemRefType(a.type).element_type != ir.MemRefType(b.type).element_type:
        return True
    return not (first[1] < second[0] or second[1] < first[0])


def is_sram_alloc(value: ir.Value) -> bool:
    return isinstance(value, ir.OpResult) and value.owner.operation.name == "npu.alloc"


def is_constant(value: ir.Value) -> bool:
    return isinstance(value, ir.OpResult) and value.owner.operation.name == "memref.get_global"


def reads_input(load) -> bool:
    """Whether `load` reads the program's input (a function argument: the
    program never writes its inputs)."""
    source = root_buffer(load.operands[0])
    return isinstance(source, ir.BlockArgument) and source.owner.owner is not None and \
        source.owner.owner.operation.name == "func.func"


def epilogue_barriers(ops: list, start: int) -> list:
    """The indices of the barriers a load at ops[start] may go before, latest
    first: the one ending the previous op's last tile, when only passable ops
    stand between it and ops[start]; when that op fills a padded buffer's halo
    (whole: no loop, no DMA), also those of the op before it."""
    for index in range(start - 1, 0, -1):
        op = ops[index]
        if op.name == "npu.barrier":
            engines = op.attributes["engines"] if "engines" in op.attributes else None
            if engines is None or ir.StringAttr(engines).value != "compute":
                return []
            position = next((i for i in range(index - 1, -1, -1)
                             if not ops[i].name.startswith(PREFETCHED)), None)
            before = ops[position] if position is not None else None
            if before is not None and before.name == "npu.fill":
                return [index] + epilogue_barriers(ops, position)
            if before is not None and (before.name == "scf.for" or before.name in COMPUTE_OPS):
                return [index]
            return []
        if not op.name.startswith(PASSABLE) and op.name != "npu.fill":
            return []   # (a fill's buffer is checked against the load's when it moves)
    return []


@dataclass(frozen=True)
class NpuPrefetchInputs(ModulePass):
    argument = "npu-prefetch-inputs"
    summary = "Issue an op's first input loads during the previous op's last tile"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            for block in function_bodies(module):
                self.prefetch(block, context)

    def prefetch(self, block: ir.Block, context: PassContext) -> None:
        """Move every load that may move, then place the buffers once (placing
        them after each move costs a placement of the whole block per load):
        where one no longer fits, the last move above it is refused and the
        others are tried again."""
        refused = []
        while True:
            remarks = []
            applied = self.move_all(block, refused, context, remarks)
            failed = first_unplaced(block, context.target) if applied else None
            if failed is None:
                break
            at = top_level(failed, block)
            above = [load for load, _, moved in applied
                     if moved[0][0] == at or moved[0][0].is_before_in_block(at)]
            for load, channel, moved in reversed(applied):   # back where each was
                for op, successor in reversed(moved):
                    op.move_before(successor)
                load.attributes["channel"] = channel
            if not above:   # it does not fit without them either
                refused += [load for load, _, _ in applied]
                break
            refused.append(above[-1])
        for location, message in remarks:
            context.diagnostics.remark(location, message)
        for load in refused:
            context.diagnostics.remark(
                load.location, "the first load of this op is not issued during the previous "
                "op's last tile: its SRAM buffer would not fit beside that op's")

    def move_all(self, block: ir.Block, refused: list, context: PassContext,
                 remarks: list) -> list:
        """Move each load of the block but those `refused` (plan); returns
        (load, its channel before, the ops moved with the op each was before)
        for each one moved, in order."""
        ops = [op.operation for op in block.operations]
        position = {op: i for i, op in enumerate(ops)}
        applied = []
        for load in [op for op in ops if op.name == "npu.dma_load" and op not in refused]:
            channel, start = load.attributes["channel"], position[load]
            planned = self.plan(block, ops, position, load, context, remarks)
            if planned is None:
                continue
            moved, barrier = planned
            applied.append((load, channel, moved))
            # The moved ops now stand, in their order, before ops[barrier]. (An
            # op hashes by its attributes: the load's channel may have changed,
            # its entry is made again; hashing every op again costs more.)
            moving = [op for op, _ in moved]
            ops[barrier:start + 1] = moving + [op for op in ops[barrier:start + 1]
                                               if not any(op == other for other in moving)]
            position.update((ops[i], i) for i in range(barrier, start + 1))
        return applied

    @staticmethod
    def plan(block: ir.Block, ops: list, position: dict, load,
             context: PassContext, remarks: list) -> tuple | None:
        """Move `load` (with its buffer and views) before the previous op's
        epilogue barrier when it may go there; `ops`: the block's ops in order,
        `position`: each one's index. Returns the ops moved, each with the op
        it was before, and the index of the barrier in `ops`."""
        source, target = load.operands[0], load.operands[1]
        buffer = root_buffer(target)
        if is_sram_alloc(root_buffer(source)) or is_constant(root_buffer(source)):
            return None
        if not (is_sram_alloc(buffer) and buffer.owner.operation.block == block
                and "npu.resident" not in buffer.owner.attributes):
            return None
        moving = [buffer.owner.operation] + defining_views(target, block) + \
            defining_views(source, block) + [load]
        if has_computed_offsets(moving[1:-1], block):
            return None
        # The earliest barrier it may go before (past a padded buffer's fills);
        # said when it waits for a store at the latest one.
        waits_for_store = False
        for barrier in reversed(epilogue_barriers(ops, position[load])):
            moved, waits_for_store = NpuPrefetchInputs.move(
                block, ops, position, load, moving, barrier, context.target.dma_channels)
            if moved is not None:
                return moved, barrier
        if waits_for_store:
            remarks.append((load.location, "the first load of this op waits for the "
                            "previous op's last store: it reads what that store writes"))
        return None

    @staticmethod
    def move(block: ir.Block, ops: list, position: dict, load, moving: list,
             barrier: int, channels: int) -> tuple[list | None, bool]:
        """Move the load's ops (`moving`) before ops[barrier] when nothing
        between stops it: (the ops moved, each with the op it was before, or
        None; whether a store of what it reads stopped it)."""
        source, buffer = load.operands[0], root_buffer(load.operands[1])
        start = position[load]
        if position[buffer.owner.operation] < barrier:
            return None, False   # the buffer is in use before it (a padded tile's fill)
        waits, storing = [], set()   # the channels of the stores it passes
        for op in ops[barrier + 1:start]:
            if op in moving:
                continue
            if any(root_buffer(operand) == buffer for operand in op.operands):
                return None, False
            if op.name == "npu.dma_store":
                storing.add(ir.IntegerAttr(op.attributes["channel"]).value)
                if may_overlap(op.operands[1], source):
                    return None, True
            if op.name == "npu.wait" and all(
                    not isinstance(token, ir.OpResult) or token.owner.operation.block != block
                    or position[token.owner.operation] < barrier for token in op.operands):
                waits.append(op)
        moved = set(moving)
        if any(isinstance(operand, ir.OpResult) and operand.owner.operation.block == block
               and position[operand.owner.operation] > barrier
               and operand.owner.operation not in moved
               for op in moving for operand in op.operands):
            return None, False   # it reads a value defined after the barrier
        # A channel runs its DMAs in order: on a store's channel the load would
        # wait for it. A load of the program's input (never written) goes on a
        # channel no store it passes is on; any other load stays behind the
        # store, whose channel may order it after earlier stores of what it reads.
        channel = ir.IntegerAttr(load.attributes["channel"]).value
        free = [other for other in range(channels) if other not in storing]
        if channel in storing and (not free or not reads_input(load)):
            return None, False
        moved_ops = waits + [op for op in ops[barrier + 1:start + 1] if op in moved]
        originals = [(op, ops[position[op] + 1]) for op in moved_ops]
        for op in moved_ops:
            op.move_before(ops[barrier])
        if channel in storing:
            load.attributes["channel"] = ir.IntegerAttr.get(
                ir.IntegerType.get_signless(64), free[0])
        return originals, False
