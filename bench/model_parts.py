"""Where a network's cycles go, part by part: the profile's nodes (compile,
simulate timing-only with a trace) grouped by a prefix of their names, with
each part's cycles, its bound (the sum over its nodes of the larger of their
MACs at the array's peak and their DRAM bytes at the DRAM bandwidth), its
matrix and vector busy cycles and its DRAM bytes.

The last line adds up, over all nodes, each node's busiest unit or its DRAM
bytes at the bandwidth: the cycles the program would take with every node at
its own bound and the nodes one after another (no two overlapping).

    python model_parts.py shufflenet
    python model_parts.py resnet50 --depth 1 --target 'npu -max-sram-bytes=524288'
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile

import onnx

from atvoss_mlir.analysis.collect import profile_file
from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.target import parse_target

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples")


def part_of(node: str, depth: int) -> str:
    """`stage1.3.gconv1` -> `stage1 units 1-` at depth 2 (a stage's first unit,
    often strided, apart from the others), `stage1` at depth 1; a name with no
    such prefix is its own part."""
    match = re.match(r"([A-Za-z]+\d+)\.(\d+)\.", node)
    if match is None:
        return node
    if depth == 1:
        return match.group(1)
    return f"{match.group(1)} unit 0" if match.group(2) == "0" else f"{match.group(1)} units 1-"


def engine_cycles(node: dict, engine: str) -> int:
    return sum(op["cycles"] for op in node["ops"] if op["engine"] == engine)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a zoo network (zoo.MODELS), a bundled example "
                                      "(small_cnn) or an .onnx file")
    parser.add_argument("--target", default="npu")
    parser.add_argument("--depth", type=int, choices=(1, 2), default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        path = args.model
        if args.model in zoo.MODELS:
            path = os.path.join(directory, f"{args.model}.onnx")
            onnx.save(zoo.MODELS[args.model](), path)
        elif os.path.exists(os.path.join(EXAMPLES, f"{args.model}.onnx")):
            path = os.path.join(EXAMPLES, f"{args.model}.onnx")
        try:
            profile = profile_file(path, parse_target(args.target), with_advice=False).profile
        except (DiagnosticError, ValueError) as error:
            print(error, file=sys.stderr)
            return 1
    parts: dict[str, list[int]] = {}
    serial = 0
    for node in profile["nodes"]:
        matrix, vector = engine_cycles(node, "matrix"), engine_cycles(node, "vector")
        dram = node["dram_read_bytes"] + node["dram_write_bytes"]
        serial += max(matrix, vector, dram / profile["dram_bytes_per_cycle"])
        part = parts.setdefault(part_of(node["node"], args.depth), [0, 0, 0, 0, 0])
        for i, value in enumerate((node["cycles"], node["roofline_cycles"], matrix, vector,
                                   dram)):
            part[i] += value
    print(f"{'part':24} {'cycles':>10} {'bound':>10} {'matrix':>10} {'vector':>10} "
          f"{'DRAM MB':>8}")
    for name, (cycles, bound, matrix, vector, dram) in parts.items():
        print(f"{name:24} {cycles:>10,} {bound:>10,} {matrix:>10,} {vector:>10,} "
              f"{dram / 1e6:>8.2f}")
    total, roofline = profile["total_cycles"], profile["roofline_cycles"]
    print(f"{'whole network':24} {total:>10,} (roofline {roofline:,}, ratio "
          f"{total / roofline:.3f})")
    print(f"each node at its own bound, one after another: {round(serial):,} cycles "
          f"({serial / roofline:.3f}x the roofline)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
