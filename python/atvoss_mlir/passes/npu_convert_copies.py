"""npu-convert-copies: run the copies bufferization leaves as tiled DMA programs.

One-shot bufferization writes a `memref.copy` wherever a value must be moved
between DRAM buffers: the slices of a concatenation, a channel shuffle's
reshaped view, a result that may not alias its input. On the fallback engine a
copy costs its scalar rate per element. This pass turns each copy between
statically shaped DRAM memrefs into `linalg.copy`, which `npu-tile` tiles like
any elementwise op: each tile is loaded into SRAM and stored to its
destination, so the copy moves at the DMA bandwidth. A copy it cannot convert
stays on the fallback engine with a remark that says why. The copy into a
padded buffer that a convolution or pooling reads is left for that op's
recipe, which folds the padding into its own loads. A copy of a view onto
itself (a strip of rows written in place, then inserted where it is) moves
nothing and is erased.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from ..dialects import npu
from ..recipes.absorbed import window_input
from ..recipes.conv import CONV2D
from ..recipes.depthwise import DEPTHWISE
from ..recipes.pooling import POOLING
from . import ModulePass, PassContext, ops_where


# The ops whose recipes read a padded input from its source (absorbed.window_input).
WINDOW_OPS = CONV2D.ops + DEPTHWISE.ops + POOLING.ops


def into_padded_window_input(target: ir.Value) -> bool:
    """Whether the copy fills the interior of a padded buffer (a bufferized
    tensor.pad) that a convolution or pooling reads and folds: its recipe reads
    the source directly and writes the padding in SRAM (recipes/absorbed.py).
    A slice of a concatenation that such an op reads is not one."""
    if not isinstance(target, ir.OpResult) or target.owner.name != "memref.subview":
        return False
    padded = target.owner.operands[0]
    if not isinstance(padded, ir.OpResult) or padded.owner.name != "memref.alloc":
        return False
    readers = [use.owner for use in padded.uses if use.owner.name in WINDOW_OPS]
    return bool(readers) and all(window_input(reader, padded, "input")[0] != padded
                                 for reader in readers)


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
            for op in ops_where(module, lambda op: op.name == "memref.copy"):
                source, target = op.operands
                if source == target:
                    op.erase()   # a result written in place (an insert_slice of its own slice)
                    continue
                if into_padded_window_input(target):
                    continue
                reason = refusal(source, target)
                if reason is not None:
                    context.diagnostics.remark(
                        op.location, f"'memref.copy' stays on the fallback engine: {reason}")
                    continue
                with op.location, ir.InsertionPoint(op):
                    linalg.copy(source, outs=[target])
                op.erase()
