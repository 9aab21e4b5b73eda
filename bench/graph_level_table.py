"""Cycles, DRAM bytes and roofline ratio per model, fusion level and layout
preference, simulated timing-only on the default target (shared DRAM bandwidth):

  examples/small_cnn.onnx, examples/transformer_block.onnx, and the zoo
  (bench/zoo.py: ResNet-50, DenseNet-121, SqueezeNet 1.1, MobileNetV2,
  ShuffleNet v1, Inception-v1; 224x224, batch 1, random weights).

    python bench/graph_level_table.py [--models small_cnn,resnet50] [--fusion 0,1,2]
                                      [--layout NHWC,NCHW,auto] [--batch 2]

`--batch` builds the zoo's networks with that many images (the two example
files have their own batch and are left out).

`ratio` and `matrix/roof` divide by the roofline of the MACs the program
executes (the simulator's report); `model` by the roofline of the model's own
MACs (bench/model_macs.py, counted from the graph). They differ where a
schedule changes the work: a cascade computes its halo rows twice (more
MACs), a pool moved before a 1x1 conv multiplies fewer pixels (fewer).

`transposes` counts the npu.transpose ops of the program: standalone layout
transforms and those folded into an elementwise op's tiles alike.
"""

from __future__ import annotations

import argparse
import os
import time

import atvoss_mlir

import zoo
from model_macs import model_roofline

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "examples")
EXAMPLE_MODELS = {
    "small_cnn": lambda: os.path.join(EXAMPLES, "small_cnn.onnx"),
    "transformer_block": lambda: os.path.join(EXAMPLES, "transformer_block.onnx"),
}
MODELS = {**EXAMPLE_MODELS, **zoo.MODELS}


def measure(model, target: str) -> dict:
    compiled = atvoss_mlir.compile(model, target)
    compiled.run(timing_only=True)
    report = compiled.report
    program = str(compiled.module)
    roofline = model_roofline(model, report, compiled.target)
    return {
        "cycles": report["total_cycles"],
        "dram": report["dram_read_bytes"] + report["dram_write_bytes"],
        "ratio": report["roofline_ratio"],
        "model": report["total_cycles"] / roofline,
        "matrix": report["engines"]["matrix"]["busy_cycles"] / report["roofline_cycles"],
        "fallback": report["engines"]["fallback"]["busy_cycles"],
        "transposes": program.count('"npu.transpose"'),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--fusion", default="0,1,2")
    parser.add_argument("--layout", default="NHWC,NCHW,auto")
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args()
    print(f"{'model':<18} {'layout':>6} {'fusion':>6} {'cycles':>12} {'DRAM bytes':>13} "
          f"{'ratio':>7} {'model':>7} {'matrix/roof':>11} {'fallback':>10} {'transposes':>10} "
          f"{'seconds':>8}", flush=True)
    for name in args.models.split(","):
        if args.batch != 1 and name in EXAMPLE_MODELS:
            continue
        model = zoo.MODELS[name](batch=args.batch) if args.batch != 1 else MODELS[name]()
        for layout in args.layout.split(","):
            for fusion in args.fusion.split(","):
                start = time.perf_counter()
                row = measure(model, f"npu -layout-pref={layout} -fusion={fusion}")
                print(f"{name:<18} {layout:>6} {fusion:>6} {row['cycles']:>12,} "
                      f"{row['dram']:>13,} {row['ratio']:>7.3f} {row['model']:>7.3f} "
                      f"{row['matrix']:>11.3f} "
                      f"{row['fallback']:>10,} {row['transposes']:>10} "
                      f"{time.perf_counter() - start:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
