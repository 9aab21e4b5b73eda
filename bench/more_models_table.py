"""Cycles, roofline ratio and DRAM bytes of the models beyond the zoo
(bench/more_models.py: an EfficientNet-like network, a U-Net, ResNet-18,
MobileNetV1), simulated timing-only on the default target at -fusion=0 and
-fusion=2; `--check` also runs each at a small size against onnxruntime.

    python bench/more_models_table.py [--models unet_like,resnet18] [--check]

`ratio` divides by the roofline of the MACs the program executes, `model` by
that of the model's own MACs (bench/model_macs.py).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import atvoss_mlir
from atvoss_mlir.reference import reference_session

from graph_level_table import measure
from more_models import MODELS

# The image size of the numerics check: small enough to simulate in seconds.
CHECK_IMAGE = 64


def check(build) -> float:
    """The largest error against onnxruntime, relative to the largest output."""
    model = build(image=CHECK_IMAGE)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    session = reference_session(model)
    want = session.run(None, {"input": x})[0]
    got = next(iter(atvoss_mlir.compile(model).run({"input": x}).values()))
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    print(f"{'model':<18} {'fusion':>6} {'cycles':>12} {'DRAM bytes':>13} {'ratio':>7} "
          f"{'model':>7} {'transposes':>10} {'seconds':>8}", flush=True)
    for name in args.models.split(","):
        model = MODELS[name]()
        for fusion in (0, 2):
            start = time.perf_counter()
            row = measure(model, f"npu -fusion={fusion}")
            print(f"{name:<18} {fusion:>6} {row['cycles']:>12,} {row['dram']:>13,} "
                  f"{row['ratio']:>7.3f} {row['model']:>7.3f} {row['transposes']:>10} "
                  f"{time.perf_counter() - start:>8.1f}", flush=True)
        if args.check:
            print(f"{name:<18} numerics against onnxruntime at {CHECK_IMAGE}x{CHECK_IMAGE}: "
                  f"{check(MODELS[name]):.1e} of the largest output", flush=True)


if __name__ == "__main__":
    main()
