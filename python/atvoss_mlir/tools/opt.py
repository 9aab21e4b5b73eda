"""atvoss-opt: parse, verify and transform MLIR with atvoss-mlir's and
upstream passes, in the style of mlir-opt.

    atvoss-opt in.mlir --npu-pipeline --target='npu -max-sram-bytes=262144'
    atvoss-opt in.mlir --pass-pipeline='builtin.module(npu-verify,canonicalize)'
    atvoss-opt in.mlir -split-input-file -verify-diagnostics -npu-verify
    atvoss-opt in.mlirbc --npu-pipeline -o out.mlirbc     (MLIR bytecode in and out)

The input is MLIR text or bytecode. The output is bytecode when `-o` names a
`.mlirbc` file or with `--emit=bytecode`, text otherwise; an output file is
written only when everything succeeded. Every error is printed as
`file:line:col: error: message` with exit status 1.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

from mlir import ir

from .. import __version__
from ..artifact import EMIT_FORMATS, emit_format, is_bytecode, parse_program
from ..context import make_context
from ..diagnostics import Diagnostic, DiagnosticError
from ..layout_choice import run_npu_pipeline
from ..passes import PassContext, lookup_pass, registered_passes
from ..pipeline import named_pipeline, run_pipeline
from ..target import NpuTarget, TargetError, parse_target
from ..verify_diagnostics import parse_expectations, verify
from .common import (CommandLineError, ToolArgumentParser, normalize_argv, read_input,
                     write_output, write_program)

SPLIT_MARKER = "// -----"


def _parser() -> argparse.ArgumentParser:
    parser = ToolArgumentParser(
        prog="atvoss-opt", description="Parse, verify and transform MLIR for the atvoss NPU.",
        epilog="target options (--target='npu -name=value ...'):\n" + NpuTarget.options_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", nargs="?", default="-", help="input file ('-' = stdin)")
    parser.add_argument("-o", dest="output", default="-",
                        help="output file ('-' = stdout); .mlirbc writes bytecode")
    parser.add_argument("--emit", choices=EMIT_FORMATS,
                        help="output format (default: bytecode for a .mlirbc file, else text)")
    parser.add_argument("--pass-pipeline", help="textual pipeline: 'builtin.module(...)'")
    parser.add_argument("--npu-pipeline", action="store_true",
                        help="run the named pipeline pipelines/npu-pipeline.txt")
    parser.add_argument("--target", default=None, help="the machine: 'npu -name=value ...'")
    parser.add_argument("--split-input-file", action="store_true",
                        help=f"process each chunk between '{SPLIT_MARKER}' lines separately")
    parser.add_argument("--verify-diagnostics", action="store_true",
                        help="check diagnostics against expected-* comments")
    parser.add_argument("--remarks", action="store_true",
                        help="print remarks (why a pass chose what it chose)")
    parser.add_argument("--mlir-print-ir-before-all", action="store_true")
    parser.add_argument("--mlir-print-ir-after-all", action="store_true")
    parser.add_argument("--mlir-print-ir-before", default="", metavar="PASS[,PASS]",
                        help="print the IR before these passes")
    parser.add_argument("--mlir-print-ir-after", default="", metavar="PASS[,PASS]",
                        help="print the IR after these passes (e.g. npu-tile)")
    parser.add_argument("--mlir-print-op-generic", action="store_true")
    parser.add_argument("--mlir-print-debuginfo", action="store_true")
    parser.add_argument("--mlir-timing", action="store_true")
    parser.add_argument("--list-passes", action="store_true", help="list registered passes")
    parser.add_argument("--version", action="version", version=f"atvoss-opt {__version__}")
    passes = parser.add_argument_group("passes (run in command-line order)")
    for argument in registered_passes():
        passes.add_argument(f"--{argument}", dest="passes", action="append_const",
                            const=argument, help=lookup_pass(argument).summary)
    return parser


@dataclass
class Chunk:
    text: str
    first_line: int  # line of the input where the chunk starts (1-based)
    bytecode: bytes | None = None  # the whole input, when it is MLIR bytecode


def split_input(text: str, split: bool) -> list[Chunk]:
    if not split:
        return [Chunk(text, 1)]
    chunks, current, start = [], [], 1
    for number, line in enumerate(text.split("\n"), start=1):
        if line.strip() == SPLIT_MARKER:
            chunks.append(Chunk("\n".join(current), start))
            current, start = [], number + 1
        else:
            current.append(line)
    chunks.append(Chunk("\n".join(current), start))
    return chunks


def pipeline_text(args) -> str | None:
    chosen = [bool(args.pass_pipeline), args.npu_pipeline, bool(args.passes)]
    if sum(chosen) > 1:
        raise CommandLineError("use only one of --pass-pipeline, --npu-pipeline "
                               "and individual pass flags")
    if args.pass_pipeline:
        return args.pass_pipeline
    if args.npu_pipeline:
        return named_pipeline("npu-pipeline")
    if args.passes:
        return f"builtin.module({','.join(args.passes)})"
    return None


class ChunkResult:
    def __init__(self):
        self.diagnostics: list[Diagnostic] = []
        self.module: ir.Module | None = None  # the result, when the chunk succeeded
        self.internal_errors: list[str] = []


def process_chunk(chunk: Chunk, context: ir.Context, pipeline: str | None,
                  target: NpuTarget, args, filename: str = "-") -> ChunkResult:
    result = ChunkResult()
    # Leading newlines keep line numbers those of the whole input.
    source = chunk.bytecode or "\n" * (chunk.first_line - 1) + chunk.text
    try:
        module = parse_program(source, context, filename)
    except DiagnosticError as error:
        result.diagnostics = error.diagnostics
        return result
    pass_context = PassContext(target=target)
    if pipeline is not None:
        def configure(pm):
            if args.mlir_print_ir_before_all or args.mlir_print_ir_after_all:
                pm.enable_ir_printing(print_before_all=args.mlir_print_ir_before_all,
                                      print_after_all=args.mlir_print_ir_after_all)
            if args.mlir_timing:
                pm.enable_timing()
        # The named npu pipeline chooses the layout over the whole program
        # under -layout-pref=auto (layout_choice).
        run = run_npu_pipeline if pipeline == named_pipeline("npu-pipeline") else \
            lambda m, c, *rest: run_pipeline(m, pipeline, c, *rest)
        try:
            run(module, pass_context, configure,
                tuple(filter(None, args.mlir_print_ir_before.split(","))),
                tuple(filter(None, args.mlir_print_ir_after.split(","))))
        except DiagnosticError as error:
            result.diagnostics = error.diagnostics
            result.internal_errors = pass_context.internal_errors
            return result
    result.diagnostics = pass_context.diagnostics.diagnostics
    result.module = module
    return result


def read_chunks(path: str, split: bool) -> tuple[str, list[Chunk]]:
    """(name used in diagnostics, chunks) of a text or bytecode input."""
    filename, data = read_input(path)
    if is_bytecode(data):
        if split:
            raise CommandLineError("--split-input-file needs MLIR text, the input is bytecode",
                                   f"{filename}:1:1")
        return filename, [Chunk("", 1, data)]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CommandLineError("cannot read input file: not UTF-8 text and not MLIR bytecode",
                               f"{filename}:1:1") from None
    return filename, split_input(text, split)


def write_results(modules: list[ir.Module], args) -> None:
    if emit_format(args.output, args.emit) == "bytecode":
        if len(modules) != 1:
            raise CommandLineError(f"bytecode holds one module, --split-input-file gave "
                                   f"{len(modules)}: write text")
        write_program(modules[0], args.output, "bytecode")
        return
    texts = [module.operation.get_asm(print_generic_op_form=args.mlir_print_op_generic,
                                      enable_debug_info=args.mlir_print_debuginfo)
             for module in modules]
    write_output(args.output, f"\n{SPLIT_MARKER}\n".join(texts))


def run(argv: list[str]) -> int:
    args = _parser().parse_args(normalize_argv(argv))
    if args.list_passes:
        for argument in registered_passes():
            print(f"  {argument:24} {lookup_pass(argument).summary}")
        return 0
    try:
        target = parse_target(args.target)
    except TargetError as error:
        print(f"<target>:1:1: error: invalid --target '{args.target}': {error}", file=sys.stderr)
        return 1
    pipeline = pipeline_text(args)
    filename, chunks = read_chunks(args.input, args.split_input_file)
    context = make_context()
    if args.mlir_print_ir_before_all or args.mlir_print_ir_after_all:
        context.enable_multithreading(False)

    outputs, failed, verify_failures = [], False, []
    for chunk in chunks:
        result = process_chunk(chunk, context, pipeline, target, args, filename)
        if args.verify_diagnostics:
            expectations = parse_expectations(chunk.text, filename, chunk.first_line)
            verify_failures += verify(result.diagnostics, expectations, filename)
        else:
            for diagnostic in result.diagnostics:
                if diagnostic.severity != "remark" or args.remarks:
                    print(diagnostic.format(filename), file=sys.stderr)
            if os.environ.get("ATVOSS_DEBUG"):
                for trace in result.internal_errors:
                    print(trace, file=sys.stderr)
        if any(d.severity == "error" for d in result.diagnostics):
            failed = True
        elif result.module is not None:
            outputs.append(result.module)

    if args.verify_diagnostics:
        for failure in verify_failures:
            print(failure, file=sys.stderr)
        status = 1 if verify_failures else 0
    else:
        status = 1 if failed else 0
    # A failure writes no output file; standard output still shows what succeeded.
    if status == 0 or (args.output == "-" and not args.verify_diagnostics):
        write_results(outputs, args)
    return status


def main(argv: list[str] | None = None) -> int:
    from .common import run_tool
    return run_tool("atvoss-opt", run, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
