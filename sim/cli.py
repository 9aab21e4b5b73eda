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
            inputs = _read_inputs(args.inputs, module, args.entry, metadata.input_names)
        except DiagnosticError as failure:
            return _print_diagnostics(failure, filename)
        except Exception as failure:  # noqa: BLE001 - any unreadable archive
            return _fail(f"cannot read inputs '{args.inputs}': {failure}")
    try:
        result = simulate(module, inputs, target=target, entry=args.entry,
                          timing_only=args.timing_only, seed=args.seed,
                          trace=bool(args.trace), filename=filename)
    except DiagnosticError as failure:
        return _print_diagnostics(failure, filename)

    if inputs is None and not args.timing_only and _takes_arguments(module, args.entry):
        print(f"{filename}: note: no --inputs: ran on random inputs (seed {args.seed})",
              file=sys.stderr)
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


def _takes_arguments(module, entry: str | None) -> bool:
    from mlir import ir
    from . import _entry_function
    with module.context:
        function = _entry_function(module, entry)
        return bool(ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
                    .inputs)


def _read_inputs(path: str, module, entry: str | None, names: list[str] | None) -> dict:
    """The arrays of an .npz by argument index (keys arg0, arg1, ... or the
    recorded input names), each checked against its argument's element type
    and shape (atvoss_mlir.inputs). Arguments left out are output buffers
    (destination-passing style) or drawn at random; an archive without arrays
    is an error."""
    from atvoss_mlir.diagnostics import Diagnostic, SourcePosition
    from atvoss_mlir.inputs import check_inputs, function_input_specs
    from . import _entry_function
    from mlir import ir
    with module.context:
        function = _entry_function(module, entry)
        count = len(ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value)
                    .inputs)
    labels = [f"arg{i}" for i in range(count)]
    by_name = {name: label for name, label in zip(names or [], labels)}
    arrays = {}
    with np.load(path, allow_pickle=False) as archive:
        for key in archive.files:
            try:
                arrays[by_name.get(key, key)] = archive[key]
            except ValueError as error:  # object arrays (pickles) are not read
                raise DiagnosticError([Diagnostic(
                    "error", f"input '{key}' cannot be read: {error}",
                    position=SourcePosition(path, 1, 1))]) from None
    specs = function_input_specs(function, labels)
    if not arrays and specs:
        raise DiagnosticError([Diagnostic(
            "error", "the archive holds no arrays; the program takes " + ", ".join(
                f"'{s.name}' ({s.describe()})" for s in specs), position=SourcePosition(
                    path, 1, 1))])
    checked, notes = check_inputs(specs, arrays, path, require_all=False)
    for note in notes:
        print(note.format(), file=sys.stderr)
    return checked


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
