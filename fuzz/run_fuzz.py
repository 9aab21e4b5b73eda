#!/usr/bin/env python3
"""The long fuzz run: `python fuzz/run_fuzz.py --count 10000`.

Splits the inputs over the categories of test/fuzz/campaign.py (opt, sim,
onnx, target) and runs them in worker processes of a few hundred inputs
each, so that a crash (a signal, e.g. an MLIR assertion) kills one worker:
the input it was running is saved as a regression case and the next worker
continues with another seed. Findings are shrunk by hypothesis and written
to test/fuzz/regressions/. Prints the figures per category and in total.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

FUZZ_DIR = Path(__file__).resolve().parents[1] / "test" / "fuzz"
sys.path.insert(0, str(FUZZ_DIR))

WEIGHTS = {"opt": 0.4, "sim": 0.2, "onnx": 0.3, "target": 0.1}
MEMORY_LIMIT_BYTES = 12 << 30  # a runaway allocation is a MemoryError, not an OOM kill


def worker(args) -> int:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    import campaign
    known = set(json.loads(Path(args.known).read_text())) if args.known else set()
    report = campaign.run_campaign(args.worker, args.count, seed=args.seed, known=known,
                                   save=True, current_file=args.current)
    Path(args.result).write_text(json.dumps({"inputs": report.inputs,
                                             "outcomes": report.outcomes,
                                             "findings": report.findings}))
    return 0


def run_chunk(category: str, count: int, seed: int, known: set, workdir: str) -> dict:
    stem = os.path.join(workdir, f"{category}-{seed}")
    Path(stem + ".known").write_text(json.dumps(sorted(known)))
    command = [sys.executable, __file__, "--worker", category, "--count", str(count),
               "--seed", str(seed), "--known", stem + ".known", "--current", stem + ".current",
               "--result", stem + ".result"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode == 0 and os.path.exists(stem + ".result"):
        return json.loads(Path(stem + ".result").read_text())
    # The worker died: the input it was running is the finding.
    import campaign
    if not os.path.exists(stem + ".current"):
        raise SystemExit(f"the {category} worker failed before its first input:\n{done.stderr}")
    record = json.loads(Path(stem + ".current").read_text())
    case = campaign.Case(record["tool"], record["args"], bytes.fromhex(record["data"]),
                         record["suffix"])
    reason = (f"signal {-done.returncode}" if done.returncode < 0
              else f"exit {done.returncode}")
    last_line = (done.stderr.strip().splitlines() or [""])[-1][:200]
    key = f"crash: {reason}: {last_line}"
    name = campaign.save_regression(case, key)
    return {"inputs": 1, "outcomes": {"crash": 1}, "findings": [(key, name)], "died": True}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--chunk", type=int, default=500, help="inputs per worker process")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--categories", default=",".join(WEIGHTS))
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--known", help=argparse.SUPPRESS)
    parser.add_argument("--current", help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    categories = args.categories.split(",")
    total_weight = sum(WEIGHTS[c] for c in categories)
    budget = {c: round(args.count * WEIGHTS[c] / total_weight) for c in categories}
    workdir = tempfile.mkdtemp(prefix="fuzz-")
    start = time.perf_counter()
    totals = {c: {"inputs": 0, "outcomes": {}, "findings": []} for c in categories}
    known: set = set()

    def category_run(category: str, index: int):
        seed = args.seed * 100 + index * 7
        stats = totals[category]
        while stats["inputs"] < budget[category]:
            count = min(args.chunk, budget[category] - stats["inputs"])
            result = run_chunk(category, count, seed, known, workdir)
            seed += 1
            stats["inputs"] += result["inputs"]
            for label, n in result["outcomes"].items():
                stats["outcomes"][label] = stats["outcomes"].get(label, 0) + n
            for key, name in result["findings"]:
                known.add(key)
                stats["findings"].append((key, name))
                print(f"[{category}] finding {name}: {key}", flush=True)

    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(category_run, categories, range(len(categories))))

    seconds = time.perf_counter() - start
    print(f"\n{'category':<8} {'inputs':>7} {'ok':>6} {'error':>6} {'raw exc':>8} {'findings':>9}")
    grand = {"inputs": 0, "ok": 0, "error": 0, "raw": 0, "findings": 0}
    kinds: dict = {}
    for category in categories:
        stats = totals[category]
        ok, error = stats["outcomes"].get("ok", 0), stats["outcomes"].get("error", 0)
        raw = stats["outcomes"].get("raw exception", 0)
        print(f"{category:<8} {stats['inputs']:>7} {ok:>6} {error:>6} {raw:>8} "
              f"{len(stats['findings']):>9}")
        for key, value in (("inputs", stats["inputs"]), ("ok", ok), ("error", error),
                           ("raw", raw), ("findings", len(stats["findings"]))):
            grand[key] += value
        for label, n in stats["outcomes"].items():
            if label not in ("ok", "error", "raw exception"):
                kinds[label] = kinds.get(label, 0) + n
    print(f"{'total':<8} {grand['inputs']:>7} {grand['ok']:>6} {grand['error']:>6} "
          f"{grand['raw']:>8} {grand['findings']:>9}")
    for kind in ("traceback", "hang", "crash", "internal error", "unlocated error", "exit status"):
        print(f"{kind + ':':<17} {kinds.get(kind, 0)}")
    print(f"wall time:        {seconds:.0f} s")
    return 1 if grand["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
