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
estimate per strategy is max(matrix cycles, DMA cycles) + vector-unit cycles
(im2col runs between the loads and the matmul of a tile); the cheapest wins,
ties in the order implicit-gemm, direct, im2col. `strategy=` forces one where
it applies.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from . import ModulePass, PassContext
from ..recipes.problem import STRATEGY_ATTR, gemm_cycles, vector_cycles

STRATEGIES = ("implicit-gemm", "direct", "im2col")
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i8": 1, "i32": 4}


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
    element = str(ir.RankedTensorType(image.type).element_type)
    in_bytes, out_bytes = ELEMENT_BYTES.get(element, 2), \
        ELEMENT_BYTES.get(str(ir.RankedTensorType(out.type).element_type), 4)
    pixels = n * oh * ow
    int8 = element == "i8"
    matrix = gemm_cycles(pixels, f, kh * kw * c, target, int8)
    padded = isinstance(image, ir.OpResult) and image.owner.name == "tensor.pad"
    bandwidth = target.dram_bytes_per_cycle
    weights_bytes, output_bytes = kh * kw * c * f * in_bytes, pixels * f * out_bytes
    estimates = {}
    halo_input = n * h * w * c * in_bytes
    estimates["direct"] = max(matrix, (halo_input + weights_bytes + output_bytes) // bandwidth)
    if (kh, kw) == (1, 1) and not padded:
        strided_input = pixels * c * in_bytes
        estimates["implicit-gemm"] = max(
            matrix, (strided_input + weights_bytes + output_bytes) // bandwidth)
    estimates["im2col"] = estimates["direct"] + vector_cycles(pixels * kh * kw * c, target)
    return estimates


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
            convs = []
            module.walk(lambda op: (convs.append(op) if op.name == "linalg.conv_2d_nhwc_hwcf"
                                    else None) or ir.WalkResult.ADVANCE)
            for op in convs:
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
            chosen = min(estimates, key=lambda s: (estimates[s], STRATEGIES.index(s)))
            why = ", ".join(f"{name} ~{cycles} cycles" for name, cycles in
                            sorted(estimates.items(), key=lambda item: item[1]))
        op.attributes[STRATEGY_ATTR] = ir.StringAttr.get(chosen)
        context.diagnostics.remark(op.location, f"conv strategy {chosen} ({why})")
