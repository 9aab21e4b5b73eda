"""npu-convert-linalg-to-npu: the linalg ops `npu-promote-to-sram` left on SRAM
tiles become npu compute ops.

One rewrite pattern per op family -- each recipe's `rewrite` -- in one
`RewritePatternSet`, applied with the greedy driver: linalg.matmul and
linalg.batch_matmul to npu.matmul; convolutions to npu.conv2d, or
npu.im2col/npu.matmul for the GEMM strategies; depthwise convolutions,
pooling, transposes and fills to their vector-unit ops; elementwise bodies to
chains of npu.elementwise/npu.activation. The op writing an output tile's
initial value (`npu.init`) folds into its consumer: a zero fill is the first
step of an accumulation (`accumulate = false`), a broadcast bias the
depthwise op's bias. Linalg ops on DRAM are left alone: the fallback engine
runs them. An npu op reads the source of a memref.cast operand (the static
type canonicalization found), since npu ops take memrefs of any layout.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.rewrite import RewritePatternSet, apply_patterns_and_fold_greedily

from ..recipes import RECIPES, linalg_ops
from ..recipes.problem import Unsupported
from ..recipes.sram_ops import in_sram
from . import ModulePass, PassContext
from .npu_verify_common import COMPUTE_OPS, DMA_OPS


def fold_casts(op, rewriter):
    """npu ops take memrefs of any layout: read a memref.cast's more static source."""
    folded = False
    for number, operand in enumerate(op.operation.operands):
        if isinstance(operand, ir.OpResult) and operand.owner.name == "memref.cast":
            op.operation.operands[number] = operand.owner.operands[0]
            folded = True
    return not folded


# Every npu op reading or writing memrefs: the compute ops and the DMAs.
NPU_OPS_WITH_MEMREFS = sorted(COMPUTE_OPS | DMA_OPS)


def patterns(refusals: dict) -> RewritePatternSet:
    """The recipes' patterns; an op a recipe refuses keeps its reason in `refusals`."""
    def guarded(recipe):
        def rewrite(op, rewriter):
            try:
                return recipe.rewrite(op, rewriter)
            except Unsupported as reason:
                refusals[op.operation] = str(reason)
                return True
        return rewrite
    found = RewritePatternSet()
    for recipe in RECIPES:
        for name in recipe.ops + recipe.sram_only_ops:
            found.add(name, guarded(recipe))
    for name in NPU_OPS_WITH_MEMREFS:
        found.add(name, fold_casts)
    return found


@dataclass(frozen=True)
class NpuConvertLinalgToNpu(ModulePass):
    argument = "npu-convert-linalg-to-npu"
    summary = "Rewrite linalg ops on SRAM tiles into npu compute ops (one pattern per op family)"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        refusals = {}
        with module.context, ir.Location.unknown():
            apply_patterns_and_fold_greedily(module, patterns(refusals).freeze())
        for op in linalg_ops(module):
            outputs = list(op.operands)[-1:]
            if outputs and in_sram(outputs[0]):
                reason = refusals.get(op.operation)
                context.diagnostics.error(op.location, f"'{op.name}' on SRAM tiles has no npu "
                                                       f"instruction" + (f": {reason}" if reason
                                                                         else ""))
