"""`atvoss profile` across model families: how long a profile takes (the whole
process, best of --repeat runs), what bounds the nodes, and whether the advice
holds: for the nodes that lose the most cycles, the first advice with an
estimate is followed (the model compiled again with its option) and the
node's measured saving is set against the cost model's estimate.

    python bench/profile_advice.py [--models resnet50,...] [--nodes 3] [--repeat 2]
"""

from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import time

import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import zoo  # noqa: E402
from atvoss_mlir.analysis.advice import with_option  # noqa: E402
from atvoss_mlir.analysis.collect import profile_file  # noqa: E402
from atvoss_mlir.target import DEFAULT_TARGET  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")


def models(names):
    for name in names:
        if name in ("small_cnn", "transformer_block"):
            yield name, os.path.join(EXAMPLES, f"{name}.onnx")
            continue
        path = os.path.join(tempfile.gettempdir(), f"atvoss_bench_{name}.onnx")
        if not os.path.exists(path):
            onnx.save(zoo.MODELS[name](), path)
        yield name, path


def whole_process_seconds(path: str, repeat: int) -> float:
    atvoss = os.path.join(os.path.dirname(sys.executable), "atvoss")
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run([atvoss, "profile", path, "-q", "--json"], check=True,
                       stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="small_cnn,transformer_block," + ",".join(zoo.MODELS))
    parser.add_argument("--nodes", type=int, default=3, help="advice followed per model")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    print(f"{'model':<18} {'nodes':>5} {'profile s':>9}  bounds")
    followed = []
    for name, path in models(args.models.split(",")):
        seconds = whole_process_seconds(path, args.repeat)
        profile = profile_file(path, DEFAULT_TARGET).profile
        bounds = collections.Counter(node["bound"] for node in profile["nodes"])
        print(f"{name:<18} {len(profile['nodes']):>5} {seconds:>9.1f}  "
              + ", ".join(f"{bound} {count}" for bound, count in bounds.most_common()))
        nodes = sorted(profile["nodes"], key=lambda n: -n["lost_cycles"])
        taken = 0
        for node in nodes:
            advice = next((a for a in node["advice"] if a["estimated_cycles"] is not None), None)
            if advice is None:
                continue
            after = profile_file(path, with_option(DEFAULT_TARGET, advice["knob"]),
                                 with_advice=False).profile
            measured = next((n["cycles"] for n in after["nodes"] if n["node"] == node["node"]), 0)
            followed.append((name, node["node"], node["bound"], advice["knob"], node["cycles"],
                             advice["estimated_cycles"], measured, profile["total_cycles"],
                             after["total_cycles"]))
            taken += 1
            if taken == args.nodes:
                break
    print()
    print(f"{'model':<18} {'node':<20} {'bound':<13} {'knob':<34} {'cycles':>9} "
          f"{'estimated':>9} {'measured':>9} {'est saving':>10} {'meas saving':>11} "
          f"{'model delta':>11}")
    errors = []
    for name, node, bound, knob, cycles, estimated, measured, total, total_after in followed:
        estimated_saving, measured_saving = cycles - estimated, cycles - measured
        errors.append(abs(measured_saving - estimated_saving) / max(estimated_saving, 1))
        print(f"{name:<18} {node[:20]:<20} {bound:<13} {knob:<34} {cycles:>9,} {estimated:>9,} "
              f"{measured:>9,} {estimated_saving:>10,} {measured_saving:>11,} "
              f"{(total_after - total) / total:>+11.1%}")
    if errors:
        errors.sort()
        print(f"\nsaving error (|measured - estimated| / estimated) over {len(errors)} pieces "
              f"of advice: median {errors[len(errors) // 2]:.0%}, worst {errors[-1]:.0%}, "
              f"within 20%: {sum(e <= 0.2 for e in errors)} of {len(errors)}")


if __name__ == "__main__":
    main()
