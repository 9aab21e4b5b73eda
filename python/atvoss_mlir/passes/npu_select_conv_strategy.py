"""npu-select-conv-strategy: choose how each convolution runs on the matrix unit.

Runs on tensors. For every linalg.conv_2d_nhwc_hwcf it sets `npu.conv_strategy`
and explains the choice in a remark at the op:
  direct         the hardware conv instruction (npu.conv2d) on input tiles with
                 their halo;
  implicit-gemm  a 1x1 unpadded convolution is a GEMM over the pixels: its input
                 tile is loaded with a strided DMA (only the pixels a stride
                 keeps) and multiplied with npu.matmul, no halo;
  im2col         npu.im2col unfolds each input tile into GEMM rows in SRAM, then
                 npu.matmul; needs the whole KH*KW*C reduction in SRAM.
All three cost the same on the array (a GEMM with M = output pixels, N =
filters, K = KH*KW*C); they differ in DRAM traffic and vector-unit work. The
estimate per strategy is max(matrix cycles, DMA cycles) + vector-unit cycles,
each from the machine model (DMA: the bursts of moving input, weights and
output once at the DRAM bandwidth)
(im2col runs between the loads and the matmul of a tile); the cheapest wins,
ties in the order implicit-gemm, direct, im2col, except that direct goes first
for a conv whose result only a tensor.pad reads: the buffer plan then keeps the
result in SRAM padded, written in place by a direct conv (an implicit GEMM
cannot write the padded buffer's interior, whose rows are strided).
`strategy=` forces one where it applies.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..machine_model import (dma_transfer_cycles, element_bytes, gemm_cycles,
                             identity_strides, vector_cycles)
from . import ModulePass, PassContext, ops_where
from ..recipes.problem import CONV_STRATEGIES as STRATEGIES, STRATEGY_ATTR, ints, optional_attr



def tensor_shape(value: ir.Value) -> list[int] | None:
    if not isinstance(value.type, ir.RankedTensorType):
        return None
    tensor = ir.RankedTensorType(value.type)
    return list(tensor.shape) if tensor.has_static_shape else None


def strategy_estimates(op, target) -> dict[str, int] | None:
    image, weights = op.operands[0], op.operands[1]
    out = op.operands[2]
    shapes = [tensor_shape(v) for v in (image, weights, out)]
    if None in shapes:
        return None
    (n, h, w, c), (kh, kw, _, f), (_, oh, ow, _) = shapes
    element = ir.RankedTensorType(image.type).element_type
    in_bytes = element_bytes(element)
    out_bytes = element_bytes(ir.RankedTensorType(out.type).element_type)
    if in_bytes is None or out_bytes is None:
        return None
    pixels = n * oh * ow
    matrix = gemm_cycles(pixels, f, kh * kw * c, target, str(element) == "i8")
    padded = isinstance(image, ir.OpResult) and image.owner.name == "tensor.pad"

    def transfer(shape, strides, itemsize):
        """DRAM cycles of moving a whole tensor view once (the DMA time, bandwidth-bound)."""
        return dma_transfer_cycles(shape, strides, itemsize, 0, target)
    weights_and_output = transfer((kh, kw, c, f), identity_strides((kh, kw, c, f)), in_bytes) \
        + transfer((n, oh, ow, f), identity_strides((n, oh, ow, f)), out_bytes)
    estimates = {}
    whole_input = transfer((n, h, w, c), identity_strides((n, h, w, c)), in_bytes)
    estimates["direct"] = max(matrix, whole_input + weights_and_output)
    if (kh, kw) == (1, 1) and not padded:
        # Only the pixels the strides keep: a strided view of the input.
        sn, sh, sw, sc = identity_strides((n, h, w, c))
        stride_h, stride_w = ints(optional_attr(op, "strides"), (1, 1))
        strided_input = transfer((n, oh, ow, c), (sn, sh * stride_h, sw * stride_w, sc),
                                 in_bytes)
        estimates["implicit-gemm"] = max(matrix, strided_input + weights_and_output)
    estimates["im2col"] = estimates["direct"] + vector_cycles(pixels * kh * kw * c, target)
    return estimates


def direct_first(op) -> str | None:
    """Why ties go to the direct strategy first, else None (they go in the
    order of STRATEGIES): the result is written into a padded buffer's
    interior. The buffer plan can keep it padded in SRAM only when its writer
    computes on a strided view of the interior, which an implicit GEMM,
    viewing its output as a matrix, cannot; another reader, a 1x1 conv's
    implicit GEMM say, would have to read that strided interior too."""
    uses = list(op.results[0].uses)
    if uses and all(use.owner.operation.name == "tensor.pad" for use in uses):
        return "only a pad reads the result, and a direct conv writes the padded buffer's " \
               "interior in place"
    if len(uses) == 1 and strided_insert(uses[0]):
        return "the result is written into a slice of a wider tensor, which a direct conv " \
               "writes in place"
    return None


def strided_insert(use) -> bool:
    """Whether `use` inserts the value into a slice of a tensor whose rows are
    wider (a padded strip a cascade's op writes its rows of): its pixels are
    no matrix's rows, which an implicit GEMM needs (a slice of channels is)."""
    insert = use.owner.operation
    if insert.name != "tensor.insert_slice" or use.operand_number != 0:
        return False
    inserted, into = tensor_shape(insert.operands[0]), tensor_shape(insert.operands[1])
    return inserted is not None and into is not None and len(into) == 4 \
        and inserted[2] != into[2]


@dataclass(frozen=True)
class NpuSelectConvStrategy(ModulePass):
    argument = "npu-select-conv-strategy"
    summary = "Choose direct conv, implicit GEMM or im2col+matmul per convolution"

    strategy: str = "auto"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        if self.strategy not in ("auto",) + STRATEGIES:
            context.diagnostics.error(module.location, f"unknown conv strategy "
                                      f"'{self.strategy}' (auto, {', '.join(STRATEGIES)})")
            return
        with module.context:
            for op in ops_where(module, lambda op: op.name == "linalg.conv_2d_nhwc_hwcf"):
                self.choose(op, context)

    def choose(self, op, context: PassContext) -> None:
        estimates = strategy_estimates(op, context.target)
        if estimates is None:
            return
        if self.strategy != "auto":
            if self.strategy not in estimates:
                context.diagnostics.remark(op.location, f"conv strategy '{self.strategy}' does "
                                                        f"not apply (needs a 1x1 unpadded conv)")
                return
            chosen, why = self.strategy, "forced by the strategy option"
        else:
            direct = direct_first(op)
            order = STRATEGIES if direct is None else \
                ("direct",) + tuple(s for s in STRATEGIES if s != "direct")
            chosen = min(estimates, key=lambda s: (estimates[s], order.index(s)))
            why = ", ".join(f"{name} ~{cycles} cycles" for name, cycles in
                            sorted(estimates.items(), key=lambda item: item[1]))
            if direct is not None and estimates.get("implicit-gemm") == estimates[chosen]:
                why += f"; direct at a tie: {direct}"
        op.attributes[STRATEGY_ATTR] = ir.StringAttr.get(chosen)
        context.diagnostics.remark(op.location, f"conv strategy {chosen} ({why})")
