"""The ONNX conformance table: every node case of the installed onnx
(`onnx.backend.test`) through the atvoss ONNX backend, classified as pass,
refused (with the reason), excluded by design (with the reason), wrong or
crash, written to docs/onnx-conformance.md per op type with the totals.

    python bench/onnx_conformance.py            # rewrite docs/onnx-conformance.md
    python bench/onnx_conformance.py --check    # exit 1 if the committed table is stale
    python bench/onnx_conformance.py -o -       # print the table instead

test/py/test_onnx_conformance.py runs the same cases under pytest and fails
when the committed table differs from what they give.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter

from atvoss_mlir import onnx_backend
from atvoss_mlir.testing.onnx_conformance import TABLE_PATH, NodeSuite

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", dest="output", default=os.path.join(ROOT, TABLE_PATH),
                        help="where to write the table ('-': stdout)")
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed table instead of writing it")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    suite = NodeSuite(onnx_backend)
    outcomes = {name: suite.outcome(name) for name in sorted(suite.cases)}
    table = suite.table(outcomes)
    counts = Counter(o.status for o in outcomes.values())
    print(f"{len(outcomes)} node cases in {time.perf_counter() - start:.1f} s: "
          + ", ".join(f"{status} {counts[status]}" for status in
                      ("pass", "refused", "excluded", "wrong", "crash")), file=sys.stderr)
    if args.check:
        with open(os.path.join(ROOT, TABLE_PATH)) as stream:
            if stream.read() != table:
                print(f"{TABLE_PATH} is stale: run `python bench/onnx_conformance.py`",
                      file=sys.stderr)
                return 1
        return 0
    if args.output == "-":
        sys.stdout.write(table)
    else:
        with open(args.output, "w") as stream:
            stream.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
