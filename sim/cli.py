"""atvoss-sim: run an npu program on the simulator.

    atvoss-sim prog.mlir --target='npu -dataflow=os' --inputs in.npz --outputs out.npz \\
               --trace trace.json --report json

The program is MLIR text or bytecode (`atvoss compile -o model.mlirbc`). A program
compiled by `atvoss compile` records its target, used when --target is not given;
a different --target is an error. Inputs in .npz files are named arg0, arg1, ...
(the entry's arguments), or by the model's input names when the program records
them; missing ones are random, drawn with --seed. Outputs are written as result0,
result1, ... Errors print as `file:line:col: error: ...` and exit with status 1.
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
    parser.add_argument("input", help="the program (.mlir text or .mlirbc bytecode), '-' for "
                        "standard input")
    parser.add_argument("--target", default=None, help="target string, e.g. 'npu -dataflow=os'")
    parser.add_argument("--entry", default="main", help="function to run (default: main, or "
                        "the only function)")
    parser.add_argument("--inputs", help=".npz with arrays arg0, arg1, ... (or the recorded "
                        "input names)")
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


def _print_diagnostics(failure: DiagnosticError, filename: str) -> int:
    for diagnostic in failure.diagnostics:
        print(diagnostic.format(default_file=filename), file=sys.stderr)
    return 1


def run(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    # After argument parsing: `--help` stays fast.
    from atvoss_mlir.artifact import parse_program, read_metadata, resolve_target
    from atvoss_mlir.context import make_context
    from . import simulate

    filename = "<stdin>" if args.input == "-" else args.input
    try:
        requested = parse_target(args.target) if args.target is not None else None
    except TargetError as failure:
        return _fail(f"invalid --target: {failure}")
    try:
        if args.input == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.input, "rb") as stream:
                data = stream.read()
    except OSError as failure:
        return _fail(f"cannot read '{args.input}': {failure.strerror}")
    try:
        module = parse_program(data, make_context(), filename)
        metadata = read_metadata(module, filename)
        target = resolve_target(metadata, requested)
    except DiagnosticError as failure:
        return _print_diagnostics(failure, filename)
    del data
    inputs = None
    if args.inputs:
        try:
            with np.load(args.inputs) as archive:
                inputs = {key: archive[key] for key in archive.files}
        except Exception as failure:  # noqa: BLE001 - any unreadable archive
            return _fail(f"cannot read inputs '{args.inputs}': {failure}")
        by_name = {name: f"arg{i}" for i, name in enumerate(metadata.input_names or [])}
        inputs = {by_name.get(key, key): value for key, value in inputs.items()}
        unknown = [k for k in inputs if not (k.startswith("arg") and k[3:].isdigit())]
        if unknown:
            names = ", ".join(metadata.input_names or [])
            return _fail(f"inputs '{args.inputs}' holds {', '.join(unknown)}; "
                         f"expected arg0, arg1, ...{f' or {names}' if names else ''}")
    try:
        result = simulate(module, inputs, target=target, entry=args.entry,
                          timing_only=args.timing_only, seed=args.seed,
                          trace=bool(args.trace), filename=filename)
    except DiagnosticError as failure:
        return _print_diagnostics(failure, filename)

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
