"""npu-verify: the semantic checks of the `npu` dialect that IRDL cannot express.

IRDL only checks operand counts, that operands are memrefs or tokens, and that
required attributes are present. This pass checks, reporting every error at the
offending op (with a note at the other op involved):

1. Memory spaces: compute-op operands, `npu.alloc` results and `npu.dealloc`
   operands are in SRAM (memory space 1); `npu.dma_load` copies DRAM -> SRAM
   and `npu.dma_store` SRAM -> DRAM.
2. Shapes, element types and attributes of each op, as its description in
   `dialects/npu.td` defines them: matmul MxK * KxN -> MxN, the conv/pool
   output size `(H - d*(K-1) - 1) / s + 1`, broadcasting, permutations,
   `clip` bounds, DMA channels, static, identity-layout, aligned allocs.
3. DMA tokens: every token reaches an `npu.wait` (also through scf.for
   iter_args and scf.yield), and in program order no op touches an SRAM
   buffer while a DMA filling it is pending, writes a buffer a pending
   `npu.dma_store` reads, or deallocates a buffer with a pending DMA; and
   no DMA touches an SRAM buffer that a compute op issued since the last
   `npu.barrier` uses (DMA engines do not wait for compute).
4. Static SRAM offsets: an alloc with an `offset` fits in the target's SRAM,
   and buffers whose lifetimes overlap do not share bytes.

Buffers are tracked per root `npu.alloc` (through memref view ops), so two
slots of one alloc count as the same buffer.
"""


from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..block_order import unchanged_blocks
from . import ModulePass, PassContext
from .npu_verify_common import Reporter, forget_token_types, walk_ops
from .npu_verify_rules import check_memory_spaces, check_op_rules
from .npu_verify_sram import check_sram_offsets
from .npu_verify_tokens import check_dma_after_compute, check_dma_hazards, check_token_waited


@dataclass(frozen=True)
class NpuVerify(ModulePass):
    argument = "npu-verify"
    summary = "Check SRAM placement, shapes, DMA token use and SRAM offsets of npu ops"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        try:
            with unchanged_blocks():
                self.check(module, context)
        finally:
            forget_token_types()

    def check(self, module: ir.Operation, context: PassContext) -> None:
        report = Reporter(context.diagnostics)
        target = context.target
        for op in walk_ops(module):
            check_memory_spaces(op, report)
            check_op_rules(op, report, target)
            check_token_waited(op, report)
        for function in module.regions[0].blocks[0].operations:
            for region in function.regions:
                for block in region.blocks:
                    check_dma_hazards(block, {}, report)
                    check_dma_after_compute(block, {}, report)
            check_sram_offsets(function, report, target)


