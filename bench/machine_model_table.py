"""Cycles, DRAM traffic and the roofline of five workloads at the default target,
simulated timing-only:

  GEMM 1024^3 fp16 (fp32 results), ResNet-50 conv2 (3x3, 56x56x64 -> 64),
  examples/small_cnn.onnx, examples/transformer_block.onnx and full ResNet-50
  (bench/e2e_resnet50.py's model: 224x224, batch 1, random weights).

The roofline is max(MACs / peak MACs per cycle of their element type,
compulsory DRAM bytes / DRAM bandwidth); compulsory bytes are the arguments,
results and constants (weights), each moved once (sim/README.md).

    python bench/machine_model_table.py [--target='npu ...'] [--skip-resnet50]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import atvoss_mlir
from atvoss_mlir.sim import simulate

from lowering_roofline import GEMM, RESNET_CONV2, compile_program

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "examples")


def kernel_report(text: str, target: str | None) -> dict:
    compiled, _ = compile_program(text, target or "npu")
    return simulate(compiled, None, target=target, timing_only=True).report


def model_report(model, target: str | None) -> dict:
    compiled = atvoss_mlir.compile(model, target)
    compiled.run(timing_only=True)
    return compiled.report


def workloads(skip_resnet50: bool):
    yield "GEMM 1024^3 fp16", lambda target: kernel_report(GEMM, target)
    yield "ResNet-50 conv2 3x3 56x56x64", lambda target: kernel_report(RESNET_CONV2, target)
    for name in ("small_cnn.onnx", "transformer_block.onnx"):
        path = os.path.join(EXAMPLES, name)
        yield name, lambda target, path=path: model_report(path, target)
    if not skip_resnet50:
        def resnet(target):
            from e2e_resnet50 import resnet50  # builds the ONNX model (needs onnx only)
            return model_report(resnet50(), target)
        yield "ResNet-50 (224x224)", resnet


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=None)
    parser.add_argument("--skip-resnet50", action="store_true")
    args = parser.parse_args(argv)
    print(f"{'workload':<30} {'cycles':>14} {'DRAM bytes':>14} {'compulsory':>14} "
          f"{'roofline':>14} {'ratio':>8} {'seconds':>8}")
    for name, run in workloads(args.skip_resnet50):
        start = time.perf_counter()
        report = run(args.target)
        seconds = time.perf_counter() - start
        moved = report["dram_read_bytes"] + report["dram_write_bytes"]
        print(f"{name:<30} {report['total_cycles']:>14,} {moved:>14,} "
              f"{report['compulsory_dram_bytes']:>14,} {report['roofline_cycles']:>14,} "
              f"{report['roofline_ratio']:>8.3f} {seconds:>8.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
