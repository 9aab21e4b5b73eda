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


def read_input(path: str) -> tuple[str, str]:
    """(name used in diagnostics, text) of a file or of stdin for '-'."""
    if path == "-":
        return "<stdin>", sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as stream:
            return path, stream.read()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise CommandLineError(f"cannot read input file: {reason}", f"{path}:1:1") from None


def write_output(path: str, text: str) -> None:
    """Write `text` to a file, or to stdout for '-'."""
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        with open(path, "w") as stream:
            stream.write(text)
    except OSError as error:
        raise CommandLineError(f"cannot write output file '{path}': {error.strerror}") from None


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
    except Exception as error:  # never show a traceback to a user
        print(f"<unknown>:0:0: error: internal error in {name}: "
              f"{type(error).__name__}: {error}", file=sys.stderr)
        if os.environ.get("ATVOSS_DEBUG"):
            traceback.print_exc()
    return 1
