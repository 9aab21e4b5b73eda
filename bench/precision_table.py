"""Cycles, DRAM bytes, roofline ratio and output error against fp32 per
precision (-precision=fp32|fp16|int8|mixed) of the bundled CNN
(examples/small_cnn.onnx, 32x32) and ResNet-50 (bench/zoo.py, 224x224,
random weights), on the default target; cycles and DRAM bytes simulated
timing-only.

Neither model has a data set: both are calibrated on random normal inputs
(`--samples`, seed 1) and their errors are measured on other random normal
inputs (`--evaluate`, seed 2), against onnxruntime running the fp32 model.
The NPU program's outputs are simulated with numerics (`--numerics` names
the models for which they are; for the others the error columns are
onnxruntime's). `ort error` is onnxruntime running the model the precision
compiles (the fp16, QDQ int8 or mixed ONNX model): what the precision costs
before the compiler.

Each precision's ONNX model is made once (quantization.precision.apply_precision,
as compile() does for the target's -precision) and compiled as it stands.
`error` is 1 - cosine of all outputs; `max|e|` the largest absolute error,
`rel` that as a fraction of fp32's largest output; `int8` counts the
Conv/MatMul/Gemm layers in int8. `mixed:B` is -precision=mixed with
-accuracy-budget=B (the default budget is 0.999). The ratio columns divide
by fp16's cycles and DRAM bytes (read + write). A precision is on the
cycles/error frontier when no other one has fewer cycles and no more error,
or less error and no more cycles (error: the NPU program's).

    python bench/precision_table.py [--models small_cnn,resnet50,densenet121,...]
        [--precisions fp32,fp16,int8,mixed,mixed:0.9999] [--samples 8] [--evaluate 4]
        [--numerics small_cnn,resnet50]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import onnx

import atvoss_mlir
from atvoss_mlir.quantization.precision import apply_precision
from atvoss_mlir.target import parse_target
from atvoss_mlir.reference import reference_session

import zoo

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "examples")
MODELS = {
    "small_cnn": lambda: onnx.load(os.path.join(EXAMPLES, "small_cnn.onnx")),
    **zoo.MODELS,
}
DEFAULT_MODELS = "small_cnn,resnet50"
# int8 ResNet-50 against fp16 (the goals).
CYCLES_GOAL, DRAM_GOAL = 0.5, 0.55


def random_inputs(model: onnx.ModelProto, count: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    initializers = {i.name for i in model.graph.initializer}
    return [{i.name: rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim],
                                         dtype=np.float32)
             for i in model.graph.input if i.name not in initializers}
            for _ in range(count)]


def stacked(samples: list[dict]) -> dict:
    """The calibration rule: samples stacked on the batch axis."""
    return {name: np.concatenate([s[name] for s in samples]) for name in samples[0]}


def onnxruntime_outputs(model: onnx.ModelProto, samples: list[dict]) -> np.ndarray:
    if any(n.op_type in ("QuantizeLinear", "DequantizeLinear") and
           any(a.name == "axis" for a in n.attribute) for n in model.graph.node):
        # The quantiser writes per-channel Q/DQ (`axis`, opset 13) into an
        # opset-9 model raised only to opset 11, which onnxruntime refuses;
        # none of ResNet-50's ops changes meaning from 11 to 13.
        model = onnx.ModelProto.FromString(model.SerializeToString())
        for opset in model.opset_import:
            if opset.domain in ("", "ai.onnx"):
                opset.version = max(opset.version, 13)
    session = reference_session(model)
    return np.concatenate([np.concatenate([np.ravel(v) for v in session.run(None, s)])
                           for s in samples]).astype(np.float64)


def npu_outputs(compiled, samples: list[dict]) -> np.ndarray:
    return np.concatenate([np.concatenate([np.ravel(v) for v in compiled.run(s).values()])
                           for s in samples]).astype(np.float64)


def errors(reference: np.ndarray, ours: np.ndarray) -> dict:
    norms = np.linalg.norm(reference) * np.linalg.norm(ours)
    cosine = float(np.dot(reference, ours) / norms) if norms else 0.0
    worst = float(np.abs(ours - reference).max())
    return {"error": max(0.0, 1.0 - cosine), "max": worst,
            "relative": worst / np.abs(reference).max()}


def int8_layers(model: onnx.ModelProto) -> str:
    """Conv/MatMul/Gemm nodes reading a dequantised weight, of all of them."""
    dequantized = {n.output[0] for n in model.graph.node if n.op_type == "DequantizeLinear"}
    layers = [n for n in model.graph.node if n.op_type in ("Conv", "MatMul", "Gemm")]
    quantized = [n for n in layers if len(n.input) > 1 and n.input[1] in dequantized]
    return f"{len(quantized)}/{len(layers)}"


def target_of(precision: str) -> str:
    """`mixed:0.9999` is -precision=mixed with that -accuracy-budget."""
    precision, _, budget = precision.partition(":")
    return f"npu -precision={precision}" + (f" -accuracy-budget={budget}" if budget else "")


def measure(name: str, model: onnx.ModelProto, precision: str, calibration: dict,
            evaluation: list[dict], reference: np.ndarray, numerics: bool) -> dict:
    start = time.perf_counter()
    target = parse_target(target_of(precision))
    rewritten = apply_precision(model, target, calibration
                                if target.precision in ("int8", "mixed") else None)
    compiled = atvoss_mlir.compile(rewritten)
    compiled.run(timing_only=True)
    report = compiled.report
    theirs = onnxruntime_outputs(rewritten, evaluation)
    ours = npu_outputs(compiled, evaluation) if numerics else theirs
    return {"cycles": report["total_cycles"],
            "dram": report["dram_read_bytes"] + report["dram_write_bytes"],
            "ratio": report["roofline_ratio"], "source": "npu" if numerics else "ort",
            "ort": errors(reference, theirs)["error"],
            "int8": int8_layers(rewritten) if target.precision != "fp32" else "-",
            "seconds": time.perf_counter() - start, **errors(reference, ours)}


def frontier(rows: dict) -> dict:
    """precision -> the precisions that dominate it on (cycles, error)."""
    def dominates(a, b):
        return a["cycles"] <= b["cycles"] and a["error"] <= b["error"] and \
            (a["cycles"] < b["cycles"] or a["error"] < b["error"])
    return {p: [q for q in rows if q != p and dominates(rows[q], rows[p])] for p in rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=DEFAULT_MODELS,
                        help=f"of {', '.join(MODELS)}")
    parser.add_argument("--precisions", default="fp32,fp16,int8,mixed")
    parser.add_argument("--samples", type=int, default=8, help="calibration samples")
    parser.add_argument("--evaluate", type=int, default=4, help="samples the error is over")
    parser.add_argument("--numerics", default="small_cnn,resnet50",
                        help="models whose error comes from the simulator, not onnxruntime")
    args = parser.parse_args()
    precisions = args.precisions.split(",")
    print(f"{'model':<10} {'precision':<12} {'cycles':>12} {'DRAM bytes':>13} {'roofline':>8} "
          f"{'error':>9} {'max|e|':>9} {'rel':>8} {'from':>4} {'ort error':>9} {'int8':>6} "
          f"{'cyc/fp16':>8} "
          f"{'DRAM/fp16':>9} {'seconds':>8}", flush=True)
    for name in args.models.split(","):
        model = MODELS[name]()
        calibration = stacked(random_inputs(model, args.samples, seed=1))
        evaluation = random_inputs(model, args.evaluate, seed=2)
        reference = onnxruntime_outputs(model, evaluation)
        numerics = name in args.numerics.split(",")
        rows = {}
        for precision in precisions:
            row = rows[precision] = measure(name, model, precision, calibration, evaluation,
                                            reference, numerics)
            fp16 = rows.get("fp16")
            cycles = f"{row['cycles'] / fp16['cycles']:.3f}" if fp16 else "-"
            dram = f"{row['dram'] / fp16['dram']:.3f}" if fp16 else "-"
            print(f"{name:<10} {precision:<12} {row['cycles']:>12,} {row['dram']:>13,} "
                  f"{row['ratio']:>8.3f} {row['error']:>9.2e} {row['max']:>9.2e} "
                  f"{row['relative']:>8.2e} {row['source']:>4} {row['ort']:>9.2e} "
                  f"{row['int8']:>6} {cycles:>8} "
                  f"{dram:>9} {row['seconds']:>8.1f}", flush=True)
        for precision, dominated_by in frontier(rows).items():
            where = "on the cycles/error frontier" if not dominated_by else \
                f"dominated by {', '.join(dominated_by)}"
            print(f"  {name} {precision}: {where}")
        if name == "resnet50" and "int8" in rows and "fp16" in rows:
            cycles = rows["int8"]["cycles"] / rows["fp16"]["cycles"]
            dram = rows["int8"]["dram"] / rows["fp16"]["dram"]
            print(f"  int8 / fp16: cycles {cycles:.3f} (goal <= {CYCLES_GOAL}: "
                  f"{'met' if cycles <= CYCLES_GOAL else 'MISSED'}), DRAM bytes {dram:.3f} "
                  f"(goal <= {DRAM_GOAL}: {'met' if dram <= DRAM_GOAL else 'MISSED'})")


if __name__ == "__main__":
    main()
