"""npu-convert-layout: run NCHW convolutions and pooling in the NPU's NHWC layout.

Runs on tensors. `linalg.conv_2d_nchw_fchw` becomes transposes of its input
(NCHW -> NHWC) and filter (FCHW -> HWCF), a `linalg.conv_2d_nhwc_hwcf`, and a
transpose of the result back to NCHW; `linalg.pooling_nchw_max/sum` likewise
with `pooling_nhwc_*`. A constant fill of the output is re-created in NHWC so
later passes still fold it. The transposes run on the vector unit
(npu.transpose); canonicalization removes pairs that cancel between
consecutive ops.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg, tensor

from . import ModulePass, PassContext, ops_where

TO_NHWC, TO_NCHW, FCHW_TO_HWCF = [0, 2, 3, 1], [0, 3, 1, 2], [2, 3, 1, 0]
REWRITES = {
    "linalg.conv_2d_nchw_fchw": linalg.conv_2d_nhwc_hwcf,
    "linalg.pooling_nchw_max": linalg.pooling_nhwc_max,
    "linalg.pooling_nchw_sum": linalg.pooling_nhwc_sum,
}
# Attributes carried over to the NHWC op (the op's own and npu.* hints).
KEPT_ATTRIBUTES = ("strides", "dilations")


def transposed(value: ir.Value, permutation: list[int]) -> ir.Value:
    source = ir.RankedTensorType(value.type)
    shape = [source.shape[p] for p in permutation]
    init = tensor.EmptyOp(shape, source.element_type).result
    return result_of(linalg.transpose(value, outs=[init], permutation=permutation))


def result_of(built) -> ir.Value:
    """The result of a builder that returns either a value or an op."""
    return built if isinstance(built, ir.Value) else built.results[0]


def nhwc_init(output: ir.Value) -> ir.Value:
    """The NHWC output: a fill re-created in NHWC, or the transposed tensor."""
    if isinstance(output, ir.OpResult) and output.owner.name == "linalg.fill":
        value = output.owner.operands[0]
        source = ir.RankedTensorType(output.type)
        shape = [source.shape[p] for p in TO_NHWC]
        empty = tensor.EmptyOp(shape, source.element_type).result
        return result_of(linalg.fill(value, outs=[empty]))
    return transposed(output, TO_NHWC)


@dataclass(frozen=True)
class NpuConvertLayout(ModulePass):
    argument = "npu-convert-layout"
    summary = "Rewrite NCHW convolutions and pooling into NHWC ops between transposes"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            for op in ops_where(module, lambda op: op.name in REWRITES):
                if not all(isinstance(v.type, ir.RankedTensorType) for v in op.operands):
                    context.diagnostics.remark(op.location, f"'{op.name}' not converted to "
                                               f"NHWC: the layout is changed on tensors, before "
                                               f"bufferization")
                    continue
                self.rewrite(op, context)

    def rewrite(self, op, context: PassContext) -> None:
        image, second, output = op.operands[0], op.operands[1], op.operands[2]
        with op.location, ir.InsertionPoint(op):
            image = transposed(image, TO_NHWC)
            if op.name == "linalg.conv_2d_nchw_fchw":
                second = transposed(second, FCHW_TO_HWCF)
            init = nhwc_init(output)
            nhwc = result_of(REWRITES[op.name](image, second, outs=[init])).owner
            for name in [n for n in op.attributes]:
                if name in KEPT_ATTRIBUTES or name.startswith("npu."):
                    nhwc.attributes[name] = op.attributes[name]
            back = transposed(nhwc.results[0], TO_NCHW)
        context.diagnostics.remark(nhwc.location, f"'{op.name}' runs as '{nhwc.name}' "
                                                  f"between NCHW <-> NHWC transposes")
        op.results[0].replace_all_uses_with(back)
        op.erase()
        if isinstance(output, ir.OpResult) and output.owner.name == "linalg.fill" \
                and not list(output.uses):
            output.owner.erase()  # replaced by the NHWC fill
