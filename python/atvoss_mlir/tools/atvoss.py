"""atvoss: the whole job on a model file.

    atvoss import model.onnx -o model.mlir            ONNX -> linalg on tensors
    atvoss compile model.onnx --target='npu ...' -o model.mlirbc
                                                      -> npu program (bytecode; .mlir: text)
    atvoss run model.onnx --check --report table      compile, simulate, compare
    atvoss profile model.onnx --html report.html      where the cycles and bytes go, and why
    atvoss tune model.onnx --strategy coordinate      search schedules on the simulator; compile
                                                      and run then take the tuned ones
    atvoss quantize model.onnx --calibration data.npz -o model.qdq.onnx
                                                      fp32 -> int8 QDQ ONNX, calibrated

Errors are `file:line:col: error: ...` lines with exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from .. import __version__
from ..artifact import EMIT_FORMATS
from ..diagnostics import location_label
from ..target import NpuTarget, TargetError, parse_target
from .check import compare, quantization_steps, reference_outputs
from .common import (CommandLineError, ToolArgumentParser, normalize_argv, run_tool,
                     write_output, write_program)

EMIT_HELP = "output format (default: bytecode for a .mlirbc file, else text)"


class Progress:
    """Stage lines on stderr (`[compile] 1.23 s`), so long jobs show where they are."""

    def __init__(self, quiet: bool):
        self.quiet = quiet

    def stage(self, name: str, work):
        live = not self.quiet and sys.stderr.isatty()
        if live:
            print(f"[{name}] ...", file=sys.stderr, end="", flush=True)
        start = time.perf_counter()
        try:
            return work()
        finally:
            if not self.quiet:
                print(f"{chr(13) if live else ''}[{name}] {time.perf_counter() - start:.2f} s",
                      file=sys.stderr)


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(prog="atvoss", description=__doc__.splitlines()[0],
                                epilog="target options:\n" + NpuTarget.options_help(),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"atvoss {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=ToolArgumentParser)

    importer = commands.add_parser("import", help="ONNX -> linalg MLIR on tensors")
    importer.add_argument("model")
    importer.add_argument("-o", dest="output", default="-")
    importer.add_argument("--emit", choices=EMIT_FORMATS, help=EMIT_HELP)
    importer.add_argument("--debug-info", action="store_true", help="print op locations")
    add_input_shape_option(importer)

    for name, help_text in (("compile", "ONNX or MLIR -> npu program"),
                            ("run", "compile, simulate, and optionally check against onnxruntime")):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("model", help=".onnx or .mlir (linalg on tensors)")
        sub.add_argument("--target", default=None, help="'npu -name=value ...'")
        sub.add_argument("--remarks", action="store_true", help="print the compiler's remarks")
        sub.add_argument("--explain", action="store_true",
                         help="print the compiler's decisions grouped by model node")
        sub.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
        sub.add_argument("--db", help="tuning database to take tuned schedules from "
                                      "(default: the user's, when it exists)")
        sub.add_argument("--calibration", metavar="NPZ",
                         help="calibration samples by input name, for -precision=int8|mixed")
        add_input_shape_option(sub)
        if name == "compile":
            sub.add_argument("-o", dest="output", default="-",
                             help="output file: .mlirbc writes bytecode, else text")
            sub.add_argument("--emit", choices=EMIT_FORMATS, help=EMIT_HELP)
            continue
        sub.add_argument("--inputs", help=".npz with the model's inputs (by name or arg0, ...)")
        sub.add_argument("--seed", type=int, default=0, help="seed of random inputs")
        sub.add_argument("--outputs", help="write the outputs to this .npz")
        sub.add_argument("--check", action="store_true",
                         help="compare with onnxruntime on the same inputs")
        sub.add_argument("--rtol", type=float, default=None)
        sub.add_argument("--atol", type=float, default=None)
        sub.add_argument("--timing-only", action="store_true", help="skip numerics")
        sub.add_argument("--trace", help="write a Chrome trace (Perfetto) here")
        sub.add_argument("--report", choices=("json", "table"), default="table")

    profile = commands.add_parser(
        "profile", help="per model node: cycles, bytes, bound, advice; HTML report; compare")
    profile.add_argument("model", nargs="?",
                         help=".onnx or .mlir model, or a compiled program (.mlir, .mlirbc)")
    profile.add_argument("--target", default=None, help="'npu -name=value ...'")
    add_input_shape_option(profile)
    profile.add_argument("--html", help="write a self-contained HTML report here")
    profile.add_argument("--json", action="store_true",
                         help="print the simulator's report with per-node entries as JSON")
    profile.add_argument("--trace", help="write a Chrome trace (Perfetto) here")
    profile.add_argument("--compare", nargs=2, metavar=("A", "B"),
                         help="two targets ('npu ...') for the model, or two programs")
    profile.add_argument("--all", action="store_true", help="every node (default: top 20)")
    profile.add_argument("--expand", action="store_true",
                         help="each node's npu ops and the compiler's remarks")
    profile.add_argument("--no-advice", action="store_true",
                         help="skip the advice (it compiles the model again per option tried)")
    profile.add_argument("-q", "--quiet", action="store_true", help="no progress lines")

    tune = commands.add_parser("tune", help="search each op's schedule on the simulator and "
                                            "record the best in the tuning database")
    tune.add_argument("model", nargs="?", help=".onnx or .mlir model")
    tune.add_argument("--target", default=None, help="'npu -name=value ...'")
    tune.add_argument("--strategy", choices=("coordinate", "grid", "tpe"), default="coordinate")
    tune.add_argument("--trials", type=int, default=32, help="candidates simulated per op")
    tune.add_argument("--db", help="tuning database (default: in the user's cache directory)")
    tune.add_argument("--executor", default="local",
                      help="local (a process pool), ray, or ray://host:port")
    tune.add_argument("--workers", type=int, default=None, help="parallel trials")
    tune.add_argument("--report", action="store_true",
                      help="per op: the cost model's error against the simulator")
    tune.add_argument("--export", metavar="FILE", help="write the database's records as JSON lines")
    tune.add_argument("--import", dest="import_", metavar="FILE",
                      help="add records from JSON lines")
    tune.add_argument("-q", "--quiet", action="store_true", help="no progress bar")

    quantize = commands.add_parser("quantize", help="fp32 ONNX -> int8 QDQ ONNX, calibrated "
                                                    "on sample inputs (onnxruntime)")
    quantize.add_argument("model", help=".onnx (fp32)")
    quantize.add_argument("--calibration", metavar="NPZ", required=True,
                          help="samples by input name, stacked on the batch axis")
    quantize.add_argument("-o", dest="output", required=True, help="the QDQ model (.onnx)")
    quantize.add_argument("--per-channel", action="store_true",
                          help="a weight scale per output channel (default: per tensor)")
    quantize.add_argument("--method", choices=("minmax", "entropy", "percentile"),
                          default="minmax", help="how activation ranges are chosen")
    return parser


def add_input_shape_option(parser) -> None:
    parser.add_argument("--input-shape", action="append", default=[], metavar="NAME=D0,D1,...",
                        help="the shape of an ONNX input with dynamic dimensions "
                             "(a batch exported as 'N'); repeat per input")


def input_shapes_of(args) -> dict[str, list[int]] | None:
    """--input-shape NAME=D0,D1,... options as {name: dims}."""
    shapes = {}
    for text in getattr(args, "input_shape", None) or []:
        name, _, dims = text.rpartition("=")
        try:
            parsed = [int(d) for d in dims.split(",")]
        except ValueError:
            parsed = None
        if not name or not parsed:
            raise CommandLineError(f"invalid --input-shape '{text}': expected "
                                   f"NAME=D0,D1,... (integers)")
        shapes[name] = parsed
    return shapes or None


def _write(path: str, text: str) -> None:
    write_output(path, text if path != "-" or text.endswith("\n") else text + "\n")


def _parse_target_option(text: str | None):
    try:
        return parse_target(text)
    except TargetError as error:
        raise CommandLineError(f"invalid --target '{text}': {error}", "<target>:1:1") from None


def _compile(args, progress: Progress):
    from ..compiler import compile as compile_model
    target = _parse_target_option(args.target)
    database = _tuning_db(args.db)
    if args.calibration and target.precision not in ("int8", "mixed"):
        print(f"{args.calibration}: note: --calibration is unused at "
              f"-precision={target.precision}", file=sys.stderr)
    compiled = progress.stage("compile", lambda: compile_model(
        args.model, target, tuning_db=database, calibration=args.calibration,
        input_shapes=input_shapes_of(args)))
    if args.remarks:
        for remark in compiled.remarks:
            print(remark.format(compiled.source_name), file=sys.stderr)
    if args.explain:
        print(explain(compiled.remarks, compiled.source_name), file=sys.stderr)
    dynamic = [r.format(compiled.source_name) for r in compiled.remarks
               if "has the dynamic dimension" in r.message]
    for line in compiled.fallback_ops + dynamic:
        if not args.remarks:
            print(line, file=sys.stderr)
    return compiled


def explain(remarks, source_name: str) -> str:
    """The remarks grouped by the model node they concern, each under its
    node's name and position: the nodes in the model's order (those without a
    position where they first appear, after the others), then the remarks of
    no node (a summary closes the list); a message said several times (of
    each of a grouped conv's groups) once, with its count."""
    groups: dict = {}
    for remark in remarks:
        # -precision=mixed rewrites the model before import: its remarks name
        # their layer in facts, not in a location.
        node = location_label(remark.location) or remark.facts.get("node")
        position = remark.resolved_position(source_name)
        key = node or "(no model node)"
        if key not in groups:
            groups[key] = (position, {})
        messages = groups[key][1]
        messages[remark.message] = messages.get(remark.message, 0) + 1
    in_model_order = sorted(groups.items(), key=lambda item: (
        item[0] == "(no model node)", item[1][0] is None,
        item[1][0].line if item[1][0] else 0))
    lines = []
    for node, (position, messages) in in_model_order:
        where = f" ({position})" if position else ""
        lines.append(f"{node if node.startswith('(') else repr(node)}{where}")
        lines += [f"  {message}" + (f" ({count} times)" if count > 1 else "")
                  for message, count in messages.items()]
    return "\n".join(lines)


def _load_inputs(args, compiled) -> dict[str, np.ndarray] | None:
    """The arrays of --inputs by input name (keys may also be arg0, arg1, ...),
    checked against the model's inputs; None without --inputs."""
    if not args.inputs:
        return None
    from ..inputs import check_inputs
    position = f"{args.inputs}:1:1"
    try:
        data = np.load(args.inputs, allow_pickle=False)
    except (OSError, ValueError, EOFError) as error:
        raise CommandLineError(f"cannot read inputs '{args.inputs}': {error}", position) from None
    if not isinstance(data, np.lib.npyio.NpzFile):
        raise CommandLineError(f"inputs '{args.inputs}' is a single array, not an .npz of "
                               f"arrays by input name", position)
    by_position = {f"arg{i}": name for i, name in enumerate(compiled.input_names)}
    arrays = {}
    with data:
        if not data.files and compiled.input_names:
            takes = ", ".join(f"'{s.name}' ({s.describe()})" for s in compiled.input_specs)
            raise CommandLineError(f"inputs '{args.inputs}' holds no arrays; the model takes "
                                   f"{takes}", position)
        for key in data.files:
            try:
                arrays[by_position.get(key, key)] = data[key]
            except ValueError as error:  # object arrays (pickles) are not read
                raise CommandLineError(f"input '{by_position.get(key, key)}' in "
                                       f"'{args.inputs}' cannot be read: {error}",
                                       position) from None
    checked, notes = check_inputs(compiled.input_specs, arrays, source=args.inputs)
    for note in notes:
        print(note.format(), file=sys.stderr)
    return checked


def _run(args, progress: Progress) -> int:
    if args.check and args.timing_only:  # before any work
        raise CommandLineError("--check needs numerics: drop --timing-only")
    compiled = _compile(args, progress)
    inputs = _load_inputs(args, compiled)
    if inputs is None and not args.timing_only and compiled.input_names:
        print(f"{compiled.source_name}: note: no --inputs: running on random inputs (seed "
              f"{args.seed})", file=sys.stderr)
    if inputs is None and args.check:
        from ..sim import random_inputs
        drawn = random_inputs(compiled.module, "main", args.seed)
        # The program's integers are signless: a uint8 input is drawn as int8 bits.
        inputs = {spec.name: value.view(spec.dtype) if spec.dtype is not None
                  and value.dtype.kind in "iu" and spec.dtype.kind in "iu"
                  and value.dtype.itemsize == spec.dtype.itemsize else value
                  for spec, value in zip(compiled.input_specs, drawn)}
    outputs = progress.stage("simulate", lambda: compiled.run(
        inputs, seed=args.seed, timing_only=args.timing_only, trace=bool(args.trace)))
    report = dict(compiled.report)
    from ..sim.numeric_safety import warning_lines
    for line in warning_lines(report.get("numerics", [])):
        print(line, file=sys.stderr)
    status = 0
    if args.check:
        reference = progress.stage("onnxruntime", lambda: reference_outputs(args, compiled,
                                                                            inputs))
        report["check"] = compare(args, outputs, reference, compiled.target.precision,
                                  quantization_steps(args, compiled))
        for name, result in report["check"].items():
            verdict = "ok" if result["ok"] else "MISMATCH"
            print(f"check {name}: max abs error {result['max_abs_error']}, max rel error "
                  f"{result['max_rel_error']} ({verdict})", file=sys.stderr)
            if not result["ok"]:
                status = 1
    if args.outputs:
        np.savez(args.outputs, **outputs)
    if args.trace:
        _write(args.trace, json.dumps(compiled.last_result.chrome_trace()))
    if args.report == "json":
        _write("-", json.dumps(report, indent=2, sort_keys=True))
    else:
        from ..sim.report import format_table
        _write("-", format_table(report))
    if status:
        print(f"{args.model}: error: outputs differ from onnxruntime beyond the tolerance",
              file=sys.stderr)
    return status


def _tuning_db(path: str | None) -> str | None:
    """The database compile and run read: --db (which must exist), else the
    user's default one when it exists."""
    import os
    from ..tuning.database import default_path
    if path is not None:
        if not os.path.exists(path):
            raise CommandLineError(f"tuning database '{path}' does not exist (atvoss tune "
                                   f"--db {path} writes it)")
        return path
    default = default_path()
    return default if os.path.exists(default) else None


def _tune(args, progress: Progress) -> int:
    from ..tuning.database import TuningDatabase, default_path
    path = args.db or default_path()
    if args.import_ or args.export:
        database = TuningDatabase(path, create=bool(args.import_))
        if args.import_:
            try:
                with open(args.import_) as stream:
                    count = database.import_(stream, args.import_)
            except OSError as error:
                raise CommandLineError(f"cannot read '{args.import_}': {error.strerror}") from None
            print(f"imported {count} records into {path}", file=sys.stderr)
        if args.export:
            from io import StringIO
            buffer = StringIO()
            count = database.export(buffer)
            _write(args.export, buffer.getvalue())
            print(f"exported {count} records from {path}", file=sys.stderr)
        if not args.model:
            return 0
    if not args.model:
        raise CommandLineError("tune needs a model (or --import/--export)")
    if args.trials < 1:
        raise CommandLineError("--trials must be at least 1")
    target = _parse_target_option(args.target)
    from ..tuning.executors import ExecutorError, make_executor
    from ..tuning.tuner import cost_model_error, tune_model
    try:
        executor = make_executor(args.executor, args.workers)
    except ExecutorError as error:
        raise CommandLineError(str(error)) from None
    database = TuningDatabase(path)
    try:
        results = tune_model(args.model, target, database, strategy=args.strategy,
                             trials=args.trials, executor=executor, progress=not args.quiet)
    finally:
        executor.close()
    from ..tuning.tuner import check_in_model
    check = progress.stage("check in the model",
                           lambda: check_in_model(args.model, target, database, results))
    lines = [f"{'op':<44} {'space':>7} {'valid':>7} {'simulated':>9} {'heuristic':>10} "
             f"{'tuned':>10} {'gain':>6}" + ("  cost model error: median, worst"
                                              if args.report else "")]
    for result in results:
        gain = (f"{(result.heuristic_cycles - result.best_cycles) / result.heuristic_cycles:.1%}"
                if result.heuristic_cycles and result.best_cycles is not None else "-")
        line = (f"{result.label[:44]:<44} {result.space_size:>7,} {result.valid:>7,} "
                f"{result.measured:>9,} {result.heuristic_cycles or 0:>10,} "
                f"{result.best_cycles or 0:>10,} {gain:>6}")
        if args.report:
            error = cost_model_error(result.errors)
            line += (f"  {error[0]:.1%}, {error[1]:.1%} over {len(result.errors)}"
                     if error else "  -")
        lines.append(line)
        if args.report and result.refused:
            lines.append("    refused before trying: " + ", ".join(
                f"{count:,} {reason}" for reason, count in result.refused.items()))
    lines.append(f"{len(results)} ops tuned; records in {path}")
    kept = f"; {len(check.kept_heuristic)} op(s) keep the heuristic's schedule: their best " \
           f"trial did not pay in the model ({', '.join(check.kept_heuristic)})" \
        if check.kept_heuristic else ""
    lines.append(f"whole model: heuristic {check.heuristic_cycles:,} cycles, best trials "
                 f"{check.best_trials_cycles:,}, tuned {check.tuned_cycles:,} "
                 f"({check.tuned_cycles / check.heuristic_cycles - 1:+.1%}){kept}"
                 if check.heuristic_cycles else "whole model: no cycles")
    _write("-", "\n".join(lines))
    return 0


def _quantize(args) -> int:
    from ..frontend.onnx_model import load_model
    from ..quantization.calibration import quantize_model, quantized_nodes
    model, path = load_model(args.model)
    quantized = quantize_model(model, args.calibration, per_channel=args.per_channel,
                               method=args.method, source=path)
    write_output(args.output, quantized.SerializeToString())
    computing = [n for n in quantized.graph.node
                 if n.op_type not in ("QuantizeLinear", "DequantizeLinear")]
    print(f"quantised {len(quantized_nodes(quantized))} of {len(computing)} nodes to int8 "
          f"({args.method}, {'per-channel' if args.per_channel else 'per-tensor'} weights) "
          f"into {args.output}", file=sys.stderr)
    return 0


def _profile(args, progress: Progress) -> int:
    from ..analysis.collect import profile_file
    from ..analysis.terminal import format_compare, format_profile
    if args.compare:
        from ..analysis.compare import check_same_graph, compare_profiles
        first, second = args.compare
        if first.startswith("npu") and second.startswith("npu"):
            if not args.model:
                raise CommandLineError("--compare of two targets needs the model to compile")
            sides = [(first, args.model, _parse_target_option(first)),
                     (second, args.model, _parse_target_option(second))]
        elif not first.startswith("npu") and not second.startswith("npu"):
            if args.model:
                raise CommandLineError("--compare of two programs takes no other model")
            target = _parse_target_option(args.target) if args.target else None
            sides = [(first, first, target), (second, second, target)]
        else:
            raise CommandLineError("--compare takes two targets ('npu ...') or two files")
        profiled = [profile_file(path, target, with_advice=False, progress=progress.stage,
                                 input_shapes=input_shapes_of(args))
                    for _, path, target in sides]
        labels = [label for label, _, _ in sides]
        check_same_graph(*profiled, labels)
        comparison = compare_profiles(profiled[0].profile, profiled[1].profile, labels)
        _write("-", json.dumps(comparison, indent=2) if args.json
               else format_compare(comparison))
        return 0
    if not args.model:
        raise CommandLineError("profile needs a model or a program (or --compare A B)")
    target = _parse_target_option(args.target) if args.target else None
    profiled = profile_file(args.model, target, with_advice=not args.no_advice,
                            progress=progress.stage, input_shapes=input_shapes_of(args))
    profile = profiled.profile
    if args.trace:
        _write(args.trace, json.dumps(profiled.result.chrome_trace()))
    if args.html:
        from ..analysis.html_report import render_html
        _write(args.html, render_html(profile))
    if args.json:
        _write("-", json.dumps(profile, indent=2, sort_keys=True))
    else:
        _write("-", format_profile(profile, expand=args.expand, limit=None if args.all else 20))
    return 0


def run(argv: list[str]) -> int:
    args = _parser().parse_args(normalize_argv(argv))
    if args.command == "import":
        from ..frontend.onnx_importer import import_onnx
        write_program(import_onnx(args.model, input_shapes=input_shapes_of(args)), args.output,
                      args.emit,
                      debug_info=args.debug_info)
        return 0
    if args.command == "quantize":
        return _quantize(args)
    progress = Progress(args.quiet)
    if args.command == "profile":
        return _profile(args, progress)
    if args.command == "tune":
        return _tune(args, progress)
    if args.command == "compile":
        compiled = _compile(args, progress)
        progress.stage("write", lambda: write_program(compiled.module, args.output, args.emit))
        return 0
    return _run(args, progress)


def main(argv: list[str] | None = None) -> int:
    return run_tool("atvoss", run, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
