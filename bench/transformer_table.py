"""Transformer encoder layers on the NPU, simulated timing-only: total cycles
against the roofline, the cycles spent on the scalar fallback engine (ops the
vector and matrix units do not run: softmax, normalizations, Gelu, ... when
they are not lowered) and their share of the total, DRAM traffic and compile
time.

Models: BERT-style post-LN encoder layers built from plain ONNX ops
(atvoss_mlir.testing.transformer_models.encoder_layer, fp32, random weights)
at seq in {128, 512} x d_model in {256, 768}, heads = d_model / 64,
ffn = 4 * d_model; examples/transformer_block.onnx (seq 16, d_model 64) and
examples/small_cnn.onnx for comparison.

    python bench/transformer_table.py [--models transformer_block,enc_s128_d256]
                                      [--target "-max-sram-bytes=262144"]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import atvoss_mlir
from atvoss_mlir.testing.transformer_models import encoder_layer

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "examples")


def _encoder(seq: int, d_model: int):
    return lambda: encoder_layer(seq, d_model, heads=d_model // 64, ffn=4 * d_model,
                                 dtype=np.float32)[0]


MODELS = {
    "transformer_block": lambda: os.path.join(EXAMPLES, "transformer_block.onnx"),
    "small_cnn": lambda: os.path.join(EXAMPLES, "small_cnn.onnx"),
    **{f"enc_s{seq}_d{d_model}": _encoder(seq, d_model)
       for seq in (128, 512) for d_model in (256, 768)},
}


def measure(model, target: str) -> dict:
    start = time.perf_counter()
    compiled = atvoss_mlir.compile(model, target)
    seconds = time.perf_counter() - start
    compiled.run(timing_only=True)
    report = compiled.report
    fallback = report["engines"]["fallback"]["busy_cycles"]
    return {
        "cycles": report["total_cycles"],
        "roofline": report["roofline_cycles"],
        "ratio": report["roofline_ratio"],
        "fallback": fallback,
        "share": fallback / report["total_cycles"] if report["total_cycles"] else 0.0,
        "dram": report["dram_read_bytes"] + report["dram_write_bytes"],
        "fallback_ops": len(compiled.fallback_ops),
        "seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma-separated, of: {', '.join(MODELS)}")
    parser.add_argument("--target", default="",
                        help="extra target options, e.g. '-max-sram-bytes=262144 -fusion=1'")
    args = parser.parse_args()
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown models {', '.join(unknown)} (known: {', '.join(MODELS)})")
    target = f"npu {args.target}".strip()
    print(f"target: {target}")
    print(f"{'model':<18} {'cycles':>13} {'roofline':>12} {'ratio':>8} {'fallback':>13} "
          f"{'share':>6} {'fb ops':>6} {'DRAM bytes':>14} {'compile s':>9}")
    for name in names:
        row = measure(MODELS[name](), target)
        print(f"{name:<18} {row['cycles']:>13,} {row['roofline']:>12,} {row['ratio']:>8.2f} "
              f"{row['fallback']:>13,} {row['share']:>6.1%} {row['fallback_ops']:>6} "
              f"{row['dram']:>14,} {row['seconds']:>9.1f}", flush=True)


if __name__ == "__main__":
    main()
