"""Compile two reference workloads with the npu pipeline and time them on the
simulator at the default target, with 1 and 2 pipeline stages:

  GEMM 1024x1024x1024, fp16 inputs, fp32 results
  ResNet-50 conv2: 3x3 conv, 56x56x64 -> 64, padding 1, fp16 -> fp32

Prints cycles, the roofline bound and the ratio (goal: <= 1.3 with 2 stages).

    python bench/lowering_roofline.py
"""

from __future__ import annotations

import sys
import time

from mlir import ir

from atvoss_mlir.context import make_context
from atvoss_mlir.passes import PassContext
from atvoss_mlir.pipeline import build_pass_manager, named_pipeline
from atvoss_mlir.sim import simulate
from atvoss_mlir.target import parse_target

GEMM = """
func.func @main(%a: tensor<1024x1024xf16>, %b: tensor<1024x1024xf16>) -> tensor<1024x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1024x1024xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  %r = linalg.matmul ins(%a, %b : tensor<1024x1024xf16>, tensor<1024x1024xf16>)
      outs(%c : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %r : tensor<1024x1024xf32>
}"""

RESNET_CONV2 = """
func.func @main(%x: tensor<1x56x56x64xf16>, %w: tensor<3x3x64x64xf16>) -> tensor<1x56x56x64xf32> {
  %pad = arith.constant 0.0 : f16
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %pad : f16
  } : tensor<1x56x56x64xf16> to tensor<1x58x58x64xf16>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x56x56x64xf32>
  %y = linalg.fill ins(%zero : f32) outs(%e : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %w : tensor<1x58x58x64xf16>, tensor<3x3x64x64xf16>)
      outs(%y : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  return %r : tensor<1x56x56x64xf32>
}"""


def compile_program(text: str, target: str) -> tuple[str, list[str]]:
    context = make_context()
    pass_context = PassContext(target=parse_target(target))
    with context:
        module = ir.Module.parse(text)
        build_pass_manager(named_pipeline("npu-pipeline"), context, pass_context).run(
            module.operation)
        remarks = [d.message for d in pass_context.diagnostics.diagnostics
                   if "tiles" in d.message]
        return str(module), remarks


def main() -> int:
    print(f"{'workload':<28} {'stages':>6} {'cycles':>12} {'roofline':>12} {'ratio':>7} "
          f"{'compile s':>9} {'sim s':>6}  tiles")
    ratios = {}
    for name, text in (("GEMM 1024^3 fp16", GEMM), ("ResNet-50 conv2 3x3 56x56x64", RESNET_CONV2)):
        for stages in (1, 2):
            target = f"npu -pipeline-stages={stages}"
            start = time.perf_counter()
            compiled, remarks = compile_program(text, target)
            compiled_at = time.perf_counter()
            report = simulate(compiled, None, target=target, timing_only=True).report
            done = time.perf_counter()
            ratios[name, stages] = report["roofline_ratio"]
            tiles = remarks[0].split(": ", 1)[1].split(", working")[0] if remarks else ""
            print(f"{name:<28} {stages:>6} {report['total_cycles']:>12,} "
                  f"{report['roofline_cycles']:>12,} {report['roofline_ratio']:>7.3f} "
                  f"{compiled_at - start:>9.2f} {done - compiled_at:>6.2f}  {tiles}")
    within = all(ratios[name, 2] <= 1.3 for name, _ in ratios)
    slower = all(ratios[name, 1] > ratios[name, 2] for name, _ in ratios)
    print(f"2 stages within 1.3x of the roofline: {'yes' if within else 'NO'}; "
          f"1 stage slower: {'yes' if slower else 'NO'}")
    return 0 if within and slower else 1


if __name__ == "__main__":
    sys.exit(main())
