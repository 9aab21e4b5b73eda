"""Cycles, DRAM bytes and roofline ratio per model and fusion level, simulated
timing-only on the default target (shared DRAM bandwidth):

  examples/small_cnn.onnx, examples/transformer_block.onnx, and the zoo
  (bench/zoo.py: ResNet-50, DenseNet-121, SqueezeNet 1.1, MobileNetV2,
  ShuffleNet v1, Inception-v1; 224x224, batch 1, random weights).

    python bench/graph_level_table.py [--models small_cnn,resnet50] [--fusion 0,1,2]
"""

from __future__ import annotations

import argparse
import os
import time

import atvoss_mlir

import zoo

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "examples")
MODELS = {
    "small_cnn": lambda: os.path.join(EXAMPLES, "small_cnn.onnx"),
    "transformer_block": lambda: os.path.join(EXAMPLES, "transformer_block.onnx"),
    **zoo.MODELS,
}


def measure(model, target: str) -> dict:
    compiled = atvoss_mlir.compile(model, target)
    compiled.run(timing_only=True)
    report = compiled.report
    program = str(compiled.module)
    return {
        "cycles": report["total_cycles"],
        "dram": report["dram_read_bytes"] + report["dram_write_bytes"],
        "ratio": report["roofline_ratio"],
        "matrix": report["engines"]["matrix"]["busy_cycles"] / report["roofline_cycles"],
        "fallback": report["engines"]["fallback"]["busy_cycles"],
        "transposes": program.count('"npu.transpose"'),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--fusion", default="0,1,2")
    args = parser.parse_args()
    print(f"{'model':<18} {'fusion':>6} {'cycles':>12} {'DRAM bytes':>13} {'ratio':>7} "
          f"{'matrix/roof':>11} {'fallback':>10} {'transposes':>10} {'seconds':>8}")
    for name in args.models.split(","):
        model = MODELS[name]()
        for fusion in args.fusion.split(","):
            start = time.perf_counter()
            row = measure(model, f"npu -fusion={fusion}")
            print(f"{name:<18} {fusion:>6} {row['cycles']:>12,} {row['dram']:>13,} "
                  f"{row['ratio']:>7.3f} {row['matrix']:>11.3f} {row['fallback']:>10,} "
                  f"{row['transposes']:>10} {time.perf_counter() - start:>8.1f}")


if __name__ == "__main__":
    main()
