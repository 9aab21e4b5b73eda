"""npu-convert-copies: run the copies bufferization leaves as tiled DMA programs.

One-shot bufferization writes a `memref.copy` wherever a value must be moved
between DRAM buffers: the slices of a concatenation, a channel shuffle's
reshaped view, a result that may not alias its input. On the fallback engine a
copy costs its scalar rate per element. This pass turns each copy between
statically shaped DRAM memrefs into `linalg.copy`, which `npu-tile` tiles like
any elementwise op: each tile is loaded into SRAM and stored to its
destination, so the copy moves at the DMA bandwidth. A copy it cannot convert
stays on the fallback engine with a remark that says why.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from ..dialects import npu
from . import ModulePass, PassContext


def refusal(source: ir.Value, target: ir.Value) -> str | None:
    """Why a memref.copy stays on the fallback engine, or None."""
    for what, value in (("source", source), ("target", target)):
        memref = ir.MemRefType(value.type)
        if not memref.has_static_shape:
            return f"its {what} has a dynamic shape"
        if npu.is_sram(memref):
            return f"its {what} is in SRAM"
    return None


@dataclass(frozen=True)
class NpuConvertCopies(ModulePass):
    argument = "npu-convert-copies"
    summary = "Turn DRAM-to-DRAM memref.copy into linalg.copy, tiled through SRAM by npu-tile"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            copies = []
            module.walk(lambda op: (copies.append(op) if op.name == "memref.copy" else None)
                        or ir.WalkResult.ADVANCE)
            for op in copies:
                source, target = op.operands
                reason = refusal(source, target)
                if reason is not None:
                    context.diagnostics.remark(
                        op.location, f"'memref.copy' stays on the fallback engine: {reason}")
                    continue
                with op.location, ir.InsertionPoint(op):
                    linalg.copy(source, outs=[target])
                op.erase()
