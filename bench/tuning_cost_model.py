"""The cost model against the simulator, and the search strategies against
an exhaustive search.

Part 1 (--part model): on every conv/matmul layer of ResNet-50 and of a
transformer encoder layer (distinct signatures), up to --samples valid
candidates spread over the cost model's range are measured on the
simulator (each on the op's own program); per layer: Spearman's rank
correlation between estimated and measured cycles, and the median and worst
|estimated - measured| / measured.

Part 2 (--part search): on layers small enough to simulate every candidate,
the exhaustive optimum against what `coordinate` and `tpe` find with at most
10% of the space simulated.

Part 3 (--part gain): whole-model cycles with the heuristic and after
`atvoss tune --strategy coordinate`, per model.

    python bench/tuning_cost_model.py [--part model|search|gain|all] [--samples 40]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import zoo  # noqa: E402
from atvoss_mlir.target import DEFAULT_TARGET  # noqa: E402
from atvoss_mlir.tuning.executors import make_executor  # noqa: E402
from atvoss_mlir.tuning.op_program import op_program, pre_tile_module  # noqa: E402
from atvoss_mlir.tuning.space import build_space  # noqa: E402
from atvoss_mlir.tuning.strategies import run_strategy  # noqa: E402
from atvoss_mlir.tuning.tuner import spearman, tileable_ops  # noqa: E402
from atvoss_mlir.diagnostics import location_label  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")


def model_path(name: str) -> str:
    if name in ("small_cnn", "transformer_block"):
        return os.path.join(EXAMPLES, f"{name}.onnx")
    path = os.path.join(tempfile.gettempdir(), f"atvoss_bench_{name}.onnx")
    if not os.path.exists(path):
        if name in zoo.MODELS:
            model = zoo.MODELS[name]()
        else:  # a BERT-style encoder layer, sequence 128, width 256 (transformer_table's)
            from atvoss_mlir.testing.transformer_models import encoder_layer
            model, _ = encoder_layer(128, 256, heads=4, ffn=1024)
        onnx.save(model, path)
    return path


def spaces(path, kinds=("conv", "matmul")):
    module, _ = pre_tile_module(path, DEFAULT_TARGET)
    found = {}
    with module.context:
        for op, problem, budget in tileable_ops(module, DEFAULT_TARGET):
            if not any(kind in op.name for kind in kinds):
                continue
            label = f"{op.name.removeprefix('linalg.')} '{location_label(op.location)}'"
            space = build_space(op, problem, budget, label)
            if space.valid and space.key not in found:
                found[space.key] = (space, op_program(op, problem))
    return list(found.values()), module


def measure_all(executor, program, candidates):
    jobs = [(program, str(DEFAULT_TARGET), c.key()) for c in candidates]
    results = {}
    for key, measured, error in executor.map(jobs):
        results[key] = measured
    return results


def spread(space, count):
    """Up to `count` valid candidates spread evenly over the sorted estimates."""
    ranked = sorted(space.valid, key=lambda c: (space.valid[c], c.key()))
    if len(ranked) <= count:
        return ranked
    picks = np.linspace(0, len(ranked) - 1, count).round().astype(int)
    chosen = [ranked[i] for i in sorted(set(picks))]
    if space.heuristic in space.valid and space.heuristic not in chosen:
        chosen.append(space.heuristic)
    return chosen


def part_model(executor, samples):
    print("Part 1: the cost model against the simulator, per layer")
    print(f"{'model':<12} {'layer':<40} {'space':>6} {'measured':>8} {'spearman':>8} "
          f"{'median err':>10} {'worst err':>9}")
    rows = []
    for name in ("resnet50", "encoder"):
        found, _ = spaces(model_path(name))
        for space, program in found:
            chosen = spread(space, samples)
            measured = measure_all(executor, program, chosen)
            pairs = [(space.valid[c], measured[c.key()].cycles) for c in chosen
                     if measured.get(c.key()) is not None]
            if len(pairs) < 3:
                continue
            estimated, actual = zip(*pairs)
            rho = spearman(estimated, actual)
            errors = sorted(abs(e - a) / a for e, a in pairs)
            rows.append((rho, errors[len(errors) // 2], errors[-1]))
            print(f"{name:<12} {space.label[:40]:<40} {len(space.valid):>6} {len(pairs):>8} "
                  f"{rho:>8.3f} {errors[len(errors) // 2]:>10.1%} {errors[-1]:>9.1%}")
    if rows:
        print(f"layers: {len(rows)}; spearman >= 0.9: {sum(r[0] >= 0.9 for r in rows)}; "
              f"median error <= 10%: {sum(r[1] <= 0.1 for r in rows)}; "
              f"lowest spearman {min(r[0] for r in rows):.3f}; "
              f"highest median error {max(r[1] for r in rows):.1%}")


def part_search(executor, limit):
    print("\nPart 2: coordinate and tpe against the exhaustive optimum (<= 10% simulated)")
    print(f"{'layer':<44} {'space':>6} {'optimum':>9} {'heuristic':>9} {'coordinate':>10} "
          f"{'sims':>5} {'tpe':>9} {'sims':>5}")
    found = []
    for name in ("small_cnn", "transformer_block", "encoder", "squeezenet", "mobilenetv2"):
        layers, _ = spaces(model_path(name))
        found += [(name, s, p) for s, p in layers if 60 <= len(s.valid) <= limit]
    for name, space, program in found:
        every = measure_all(executor, program, list(space.valid))
        cycles = {c: every[c.key()].cycles for c in space.valid if every.get(c.key())}
        optimum = min(cycles.values())
        budget = max(1, len(space.valid) // 10)
        results = []
        for strategy in ("coordinate", "tpe"):
            seen = {}

            def evaluate(candidates):
                for c in candidates:
                    seen[c] = cycles.get(c)
                return {c: cycles.get(c) for c in candidates}
            run_strategy(strategy, space, evaluate, budget - 1)
            best = min(v for v in seen.values() if v is not None)
            results.append((best, len(seen)))
        heuristic = cycles.get(space.heuristic, 0)
        print(f"{(name + ' ' + space.label)[:44]:<44} {len(space.valid):>6} {optimum:>9,} "
              f"{heuristic:>9,} {results[0][0]:>10,} {results[0][1]:>5} {results[1][0]:>9,} "
              f"{results[1][1]:>5}   within 3%: "
              f"{'yes' if results[0][0] <= 1.03 * optimum else 'NO'}/"
              f"{'yes' if results[1][0] <= 1.03 * optimum else 'NO'}")


def part_gain(trials):
    print("\nPart 3: whole-model cycles, heuristic against tuned (coordinate)")
    atvoss = os.path.join(os.path.dirname(sys.executable), "atvoss")
    for name in ("resnet50", "mobilenetv2", "transformer_block", "encoder"):
        path = model_path(name)
        db = os.path.join(tempfile.gettempdir(), f"atvoss_bench_tune_{name}.db")
        for stale in (db, db + "-wal", db + "-shm"):  # tune from scratch: the time is real
            if os.path.exists(stale):
                os.remove(stale)
        start = time.perf_counter()
        subprocess.run([atvoss, "tune", path, "--db", db, "--trials", str(trials), "-q"],
                       check=True, stdout=subprocess.DEVNULL)
        seconds = time.perf_counter() - start

        def total(*extra):
            # No default database behind the heuristic's figure.
            environment = dict(os.environ, ATVOSS_TUNING_DB=db + ".absent")
            out = subprocess.run([atvoss, "run", path, "--timing-only", "-q", "--report",
                                  "json", *extra], check=True, capture_output=True, text=True,
                                 env=environment)
            return json.loads(out.stdout)["total_cycles"]
        before, after = total(), total("--db", db)
        print(f"{name:<18} heuristic {before:>11,}  tuned {after:>11,}  ratio {after / before:.3f}"
              f"  (tuning {seconds:.0f} s)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="all", choices=("model", "search", "gain", "all"))
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--limit", type=int, default=1200, help="largest exhaustive space")
    parser.add_argument("--trials", type=int, default=32)
    args = parser.parse_args()
    executor = make_executor("local")
    try:
        if args.part in ("model", "all"):
            part_model(executor, args.samples)
        if args.part in ("search", "all"):
            part_search(executor, args.limit)
    finally:
        executor.close()
    if args.part in ("gain", "all"):
        part_gain(args.trials)


if __name__ == "__main__":
    main()
