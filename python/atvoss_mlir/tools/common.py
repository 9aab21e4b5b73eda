"""What the command-line tools share: mlir-opt style argument spelling,
input reading, and a top level that turns every failure into a located
`error:` line and exit status 1 (never a Python traceback)."""

from __future__ import annotations

import argparse
import os
import sys
import traceback

from ..diagnostics import DiagnosticError


class CommandLineError(Exception):
    """A bad command line or an unreadable/unwritable file."""

    def __init__(self, message: str, position: str = "<command-line>:1:1"):
        super().__init__(message)
        self.position = position


class ToolArgumentParser(argparse.ArgumentParser):
    def error(self, message: str):
        raise CommandLineError(message)


def normalize_argv(argv: list[str]) -> list[str]:
    """Accept mlir-opt's single-dash long options (`-split-input-file`)."""
    normalized = []
    for arg in argv:
        if arg.startswith("-") and not arg.startswith("--") and len(arg) > 2 \
                and arg[1].isalpha() and not arg.startswith("-o"):
            arg = "-" + arg
        normalized.append(arg)
    return normalized


def read_input(path: str) -> tuple[str, bytes]:
    """(name used in diagnostics, bytes) of a file or of stdin for '-'."""
    if path == "-":
        return "<stdin>", sys.stdin.buffer.read()
    try:
        with open(path, "rb") as stream:
            return path, stream.read()
    except OSError as error:
        raise CommandLineError(f"cannot read input file: {error.strerror}", f"{path}:1:1") from None


def write_output(path: str, data: str | bytes) -> None:
    """Write `data` to a file, or to stdout for '-'. A file is replaced only
    once everything is written: a failure leaves no partial file."""
    from ..artifact import write_file
    try:
        write_file(path, data)
    except OSError as error:
        raise CommandLineError(f"cannot write output file '{path}': {error.strerror}") from None


def write_program(module, path: str, emit: str | None = None, **printing) -> None:
    """Write a module as text or bytecode (`emit`, else the suffix of `path`)."""
    from ..artifact import emit_format, program_bytes
    write_output(path, program_bytes(module, emit_format(path, emit), **printing))


def run_tool(name: str, run, argv: list[str]) -> int:
    try:
        return run(argv)
    except CommandLineError as error:
        print(f"{error.position}: error: {error}", file=sys.stderr)
    except DiagnosticError as error:
        for diagnostic in error.diagnostics:
            print(diagnostic.format(), file=sys.stderr)
    except KeyboardInterrupt:
        print(f"{name}: error: interrupted", file=sys.stderr)
    except MemoryError as error:
        # The machine, not the input: at the input file, as the limits' refusals.
        where = next((a for a in argv if not a.startswith("-") and os.path.isfile(a)), "-")
        print(f"{where}:1:1: error: out of memory ({error}): the work needs more memory than "
              f"this process may use; ATVOSS_MEMORY_LIMIT bounds the estimate checked before "
              f"the work starts", file=sys.stderr)
    except Exception as error:  # never show a traceback to a user
        print(f"<unknown>:0:0: error: internal error in {name}: "
              f"{type(error).__name__}: {error}", file=sys.stderr)
        if os.environ.get("ATVOSS_DEBUG"):
            traceback.print_exc()
    return 1
