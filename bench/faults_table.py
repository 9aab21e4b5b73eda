#!/usr/bin/env python3
"""Fault injection table: correctly compiled programs (matmul, convolutions,
depthwise, pooling, an elementwise chain, a small ResNet-50) get each kind of
fault of atvoss_mlir.sim.faults injected, and the simulator must report each
at the right op. Prints fault kind x caught / total per program and in all.

    python bench/faults_table.py [--per-kind N] [--programs matmul,resnet]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

from mlir import ir  # noqa: E402

from atvoss_mlir.compiler import compile as compile_model  # noqa: E402
from atvoss_mlir.context import make_context  # noqa: E402
from atvoss_mlir.diagnostics import DiagnosticError  # noqa: E402
from atvoss_mlir.sim import simulate  # noqa: E402
from atvoss_mlir.sim.faults import KINDS, check, inject  # noqa: E402

SOURCES = {"matmul": "matmul", "conv3x3": "conv-3x3-stride1", "conv7x7s2": "conv-7x7-stride2",
           "depthwise": "depthwise", "pooling": "pooling", "eltwise": "elementwise-chain"}


def compiled_program(name: str) -> str:
    """The npu program of one workload, printed without locations (line = op)."""
    if name == "resnet":
        from atvoss_mlir.testing import onnx_models as onnx_testing
        model = onnx_testing.resnet50(width=8, image=32, classes=10)
        program = compile_model(model).program
    else:
        source = (ROOT / "test" / "lit" / "pipeline" / f"{SOURCES[name]}.mlir").read_text()
        program = compile_model(source).program
    return str(ir.Module.parse(program, make_context()))


def run_simulator(text: str, target: str | None) -> list[tuple[int, str]]:
    try:
        simulate(text, target=target)
    except DiagnosticError as failure:
        found = []
        for d in failure.diagnostics:
            position = d.resolved_position()
            found.append((position.line if position else 0, d.message))
        return found
    return []


def sample(faults: list, per_kind: int | None) -> list:
    if per_kind is None:
        return faults
    chosen = []
    for kind in KINDS:
        of_kind = [f for f in faults if f.kind == kind]
        step = max(1, len(of_kind) / per_kind) if of_kind else 1
        chosen += [of_kind[int(i * step)] for i in range(min(per_kind, len(of_kind)))]
    return chosen


def table(programs: list[str], per_kind: int | None, verbose: bool = False) -> dict:
    """{(program, kind): [caught, total]} and the misses."""
    counts, misses = {}, []
    for name in programs:
        text = compiled_program(name)
        if run_simulator(text, None):
            raise SystemExit(f"{name}: the unfaulted program does not simulate cleanly")
        for fault in sample(inject(text), per_kind):
            ok, what = check(fault, run_simulator)
            cell = counts.setdefault((name, fault.kind), [0, 0])
            cell[0] += ok
            cell[1] += 1
            if not ok:
                misses.append((name, fault.kind, what))
            if verbose:
                print(f"{name:<10} {fault.kind:<15} {'caught' if ok else 'MISSED'}  {what[:150]}")
    return {"counts": counts, "misses": misses}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-kind", type=int, default=25,
                        help="faults per kind and program, spread over the sites (0 = all)")
    parser.add_argument("--programs", default=",".join(list(SOURCES) + ["resnet"]))
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    programs = args.programs.split(",")
    start = time.perf_counter()
    result = table(programs, args.per_kind or None, args.verbose)
    counts = result["counts"]
    print(f"{'fault kind':<16}" + "".join(f"{p:>11}" for p in programs) + f"{'all':>11}")
    for kind in KINDS:
        cells, caught, total = [], 0, 0
        for p in programs:
            c, t = counts.get((p, kind), [0, 0])
            caught, total = caught + c, total + t
            cells.append(f"{c}/{t}" if t else "-")
        print(f"{kind:<16}" + "".join(f"{c:>11}" for c in cells) + f"{caught}/{total}".rjust(11))
    caught = sum(c for c, _ in counts.values())
    total = sum(t for _, t in counts.values())
    print(f"{'all':<16}" + " " * 11 * len(programs) + f"{caught}/{total}".rjust(11))
    print(f"({time.perf_counter() - start:.0f} s)")
    for name, kind, what in result["misses"]:
        print(f"missed: {name} {kind}: {what[:300]}")
    return 0 if caught == total else 1


if __name__ == "__main__":
    sys.exit(main())
