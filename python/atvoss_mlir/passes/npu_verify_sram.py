"""npu-verify's check of static SRAM offsets: inside the SRAM, and no two
buffers with overlapping lifetimes share bytes."""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir

from ..block_order import block_ops
from ..machine_model import element_bytes
from ..target import NpuTarget
from .npu_verify_common import Reporter
from .npu_verify_tokens import root_buffer


@dataclass
class PlacedBuffer:
    alloc: object
    offset: int
    size: int
    first_op: int   # pre-order number of the alloc
    last_op: int = 0  # of its dealloc, or of the last op in the alloc's block

    @property
    def byte_range(self) -> str:
        return f"[{self.offset}, {self.offset + self.size})"


def placed_buffer(alloc, number: int) -> PlacedBuffer | None:
    """The alloc's placement, if it has a usable offset and a static size."""
    offset = alloc.attributes["offset"] if "offset" in alloc.attributes else None
    buffer_type = ir.MemRefType(alloc.results[0].type)
    byte_size = element_bytes(buffer_type.element_type)
    if not isinstance(offset, ir.IntegerAttr) or offset.value < 0 or byte_size is None \
            or not buffer_type.has_static_shape:
        return None
    return PlacedBuffer(alloc, offset.value, math.prod(buffer_type.shape) * byte_size, number)


class LifetimeNumbering:
    """Numbers the ops of a function in pre-order, so that ops in nested loop
    bodies compare correctly, and collects the placed buffers' lifetimes."""

    def __init__(self):
        self.buffers: list[PlacedBuffer] = []
        self.dealloc_numbers: dict[ir.Value, int] = {}
        self.last_number = -1

    def visit(self, block: ir.Block) -> None:
        in_block = []
        for op in block_ops(block):
            self.last_number += 1
            if op.name == "npu.alloc":
                buffer = placed_buffer(op, self.last_number)
                if buffer is not None:
                    in_block.append(buffer)
            elif op.name == "npu.dealloc":
                self.dealloc_numbers.setdefault(root_buffer(op.operands[0]), self.last_number)
            for region in op.regions:
                for nested in region.blocks:
                    self.visit(nested)
        # Without a dealloc, a buffer lives to the end of its block.
        for buffer in in_block:
            buffer.last_op = self.dealloc_numbers.get(buffer.alloc.results[0], self.last_number)
        self.buffers += in_block


def check_sram_offsets(function, report: Reporter, target: NpuTarget) -> None:
    numbering = LifetimeNumbering()
    for region in function.regions:
        for block in region.blocks:
            numbering.visit(block)
    buffers = sorted(numbering.buffers, key=lambda buffer: buffer.first_op)
    for buffer in buffers:
        end = buffer.offset + buffer.size
        if end > target.max_sram_bytes:
            report.error(buffer.alloc, f"buffer at bytes {buffer.byte_range} ends at byte {end}, "
                                       f"beyond the SRAM capacity of {target.max_sram_bytes} bytes")
    # Buffers come in order of their first op, so one that has died before a
    # buffer starts is dead for every later one: only the live ones are compared.
    live: list = []
    for later in buffers:
        live = [earlier for earlier in live if earlier.last_op >= later.first_op]
        for earlier in live:
            bytes_overlap = (earlier.offset < later.offset + later.size
                             and later.offset < earlier.offset + earlier.size)
            if bytes_overlap:
                report.error(later.alloc, f"SRAM bytes {later.byte_range} overlap bytes "
                                          f"{earlier.byte_range} of a buffer that is still live",
                             [(earlier.alloc, f"the live buffer at bytes {earlier.byte_range} "
                                              f"is allocated here")])
        live.append(later)
