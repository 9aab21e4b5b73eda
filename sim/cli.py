"""atvoss-sim: run an npu program on the simulator.

    atvoss-sim prog.mlir --target='npu -dataflow=os' --inputs in.npz --outputs out.npz \\
               --trace trace.json --report json

Inputs in .npz files are named arg0, arg1, ... (the entry's arguments; missing
ones are random, drawn with --seed); outputs are written as result0, result1, ...
Errors print as `file:line:col: error: ...` and exit with status 1.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.target import NpuTarget, TargetError, parse_target

PROG = "atvoss-sim"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Simulate an npu program: numerics, cycles, SRAM and hazards.",
        epilog="target options:\n" + NpuTarget.options_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", help="the program (.mlir), '-' for standard input")
    parser.add_argument("--target", default=None, help="target string, e.g. 'npu -dataflow=os'")
    parser.add_argument("--entry", default="main", help="function to run (default: main, or "
                        "the only function)")
    parser.add_argument("--inputs", help=".npz with arrays arg0, arg1, ...")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    parser.add_argument("--outputs", help="write the outputs to this .npz (result0, ...)")
    parser.add_argument("--trace", help="write a Chrome trace (Perfetto) to this file")
    parser.add_argument("--report", choices=("table", "json"), default="table",
                        help="report format printed on standard output")
    parser.add_argument("--timing-only", action="store_true",
                        help="skip numerics: cycles, SRAM and hazards only")
    return parser


def _fail(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 1


def run(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from . import simulate  # after argument parsing: `--help` stays fast

    filename = "<stdin>" if args.input == "-" else args.input
    try:
        target = parse_target(args.target)
    except TargetError as failure:
        return _fail(f"invalid --target: {failure}")
    try:
        text = sys.stdin.read() if args.input == "-" else open(args.input).read()
    except OSError as failure:
        return _fail(f"cannot read '{args.input}': {failure.strerror}")
    except UnicodeDecodeError:
        print(f"{filename}:1:1: error: cannot read the program: not UTF-8 text", file=sys.stderr)
        return 1
    inputs = None
    if args.inputs:
        try:
            with np.load(args.inputs) as archive:
                inputs = {key: archive[key] for key in archive.files}
        except Exception as failure:  # noqa: BLE001 - any unreadable archive
            return _fail(f"cannot read inputs '{args.inputs}': {failure}")
        unknown = [k for k in inputs if not (k.startswith("arg") and k[3:].isdigit())]
        if unknown:
            return _fail(f"inputs '{args.inputs}' holds {', '.join(unknown)}; "
                         "expected arg0, arg1, ...")
    try:
        result = simulate(text, inputs, target=target, entry=args.entry,
                          timing_only=args.timing_only, seed=args.seed,
                          trace=bool(args.trace), filename=filename)
    except DiagnosticError as failure:
        for diagnostic in failure.diagnostics:
            print(diagnostic.format(default_file=filename), file=sys.stderr)
        return 1

    from .numeric_safety import warning_lines
    for line in warning_lines(result.report["numerics"]):
        print(line, file=sys.stderr)
    if args.outputs and not args.timing_only:
        np.savez(args.outputs, **{f"result{i}": out for i, out in enumerate(result.outputs)})
    if args.trace:
        with open(args.trace, "w") as stream:
            json.dump(result.chrome_trace(), stream)
    print(result.json() if args.report == "json" else result.table())
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return run(argv)
    except KeyboardInterrupt:
        return _fail("interrupted")
    except BrokenPipeError:  # the reader of our output went away (`| head`)
        sys.stdout = open(os.devnull, "w")
        return 1
    except Exception as failure:  # noqa: BLE001 - never a traceback for the user
        return _fail(f"internal error: {type(failure).__name__}: {failure}")


if __name__ == "__main__":
    sys.exit(main())
