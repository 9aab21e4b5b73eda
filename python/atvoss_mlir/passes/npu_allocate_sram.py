"""npu-allocate-sram: give every `npu.alloc` a static byte offset in SRAM.

Buffers live from their `npu.alloc` to their `npu.dealloc` (or the end of the
block holding the alloc). Offsets are assigned in program order, first fit,
aligned to target.sram-alignment: a buffer takes the lowest aligned offset that
no live buffer occupies, so the space of dead buffers is reused. A buffer that
does not fit is an error at its alloc naming the live set and the budget.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..machine_model import first_fit, type_bytes
from ..recipes.problem import RESIDENT_ATTR
from . import ModulePass, PassContext


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


class FirstFit:
    def __init__(self, capacity: int, alignment: int):
        self.capacity = capacity
        self.alignment = alignment
        self.live: dict = {}  # alloc result -> Placement

    def place(self, size: int) -> int | None:
        offset = first_fit([(p.offset, p.size) for p in self.live.values()], size,
                           self.alignment)
        return offset if offset + size <= self.capacity else None

    def free(self, offset: int, size: int) -> bool:
        return offset % self.alignment == 0 and offset + size <= self.capacity and all(
            offset + size <= p.offset or p.offset + p.size <= offset
            for p in self.live.values())

    @property
    def live_bytes(self) -> int:
        return sum(p.size for p in self.live.values())


@dataclass(frozen=True)
class NpuAllocateSram(ModulePass):
    argument = "npu-allocate-sram"
    summary = "Assign aligned static SRAM offsets to npu.alloc, reusing dead buffers' space"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            target = context.target
            for function in module.regions[0].blocks[0].operations:
                for region in function.regions:
                    for block in region.blocks:
                        self.visit(block, FirstFit(target.max_sram_bytes, target.sram_alignment),
                                   context)

    def visit(self, block: ir.Block, allocator: FirstFit, context: PassContext) -> bool:
        return place_buffers(block, allocator, context.diagnostics.error) is None


def first_unplaced(block: ir.Block, target) -> ir.Operation | None:
    """The first npu.alloc of the block that would not fit, placed as this pass
    places them (None: all fit); nothing is assigned, nothing reported."""
    return place_buffers(block, FirstFit(target.max_sram_bytes, target.sram_alignment),
                         lambda location, message: None, assign=False)


def place_buffers(block: ir.Block, allocator: FirstFit, error,
                  assign: bool = True) -> ir.Operation | None:
    """Give every npu.alloc of the block (and of the blocks nested in it) its
    offset (only find them, when not `assign`); the alloc that does not fit,
    after `error(location, message)`, or None."""
    opened = []
    for op in block.operations:
        op = op.operation
        if op.name == "npu.alloc":
            size = buffer_bytes(op)
            if size is None:
                error(op.location, "'npu.alloc' op needs a static shape to be placed in SRAM")
                return op
            offset = resident_offset(op)
            if offset is not None:
                # Placed by npu-keep-in-sram, whose plan the ops' tiles were sized by.
                if not allocator.free(offset, size):
                    error(op.location, f"'npu.alloc' op at offset {offset} ({size} B) overlaps "
                                       f"a live buffer or exceeds SRAM budget "
                                       f"{allocator.capacity} B")
                    return op
            else:
                offset = allocator.place(size)
            if offset is None:
                error(op.location, f"'npu.alloc' op working set {allocator.live_bytes + size} B "
                                   f"exceeds SRAM budget {allocator.capacity} B "
                                   f"({len(allocator.live)} live buffers of "
                                   f"{allocator.live_bytes} B and this one of {size} B)")
                return op
            if assign:
                with op.context:
                    op.attributes["offset"] = ir.IntegerAttr.get(
                        ir.IntegerType.get_signless(64), offset)
            allocator.live[op.results[0]] = Placement(op, offset, size)
            opened.append(op.results[0])
        elif op.name == "npu.dealloc":
            allocator.live.pop(op.operands[0], None)
        for region in op.regions:
            for nested in region.blocks:
                failed = place_buffers(nested, allocator, error, assign)
                if failed is not None:
                    return failed
    for buffer in opened:  # lifetime ends with the block
        allocator.live.pop(buffer, None)
    return None
