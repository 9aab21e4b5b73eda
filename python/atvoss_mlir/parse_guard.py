"""Parsing MLIR text without aborting the process.

The upstream parser diagnoses malformed text, except for a few inputs on
which it trips an assertion and aborts the whole process. Those are refused
here first, with a located error, then the text goes to `ir.Module.parse`.
"""

from __future__ import annotations

import re

from mlir import ir

from .diagnostics import Diagnostic, DiagnosticError, diagnostics_of

# `array<index: 1, 2>`: DenseArrayAttr asks an index type for its bit width.
_INDEX_DENSE_ARRAY = re.compile(r"array\s*<\s*index\s*[:>]")


def check_text(text: str, context: ir.Context, filename: str = "-") -> None:
    """Raise DiagnosticError for text the upstream parser would abort on."""
    for match in _INDEX_DENSE_ARRAY.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if "//" in text[line_start:match.start()]:
            continue  # in a comment
        line = text.count("\n", 0, match.start()) + 1
        column = match.start() - line_start + 1
        raise DiagnosticError([Diagnostic(
            "error", "dense array of 'index' elements is not supported: use an integer "
            "element type (array<i64: ...>)", ir.Location.file(filename, line, column, context))])


def parse_module(text: str, context: ir.Context, filename: str = "-") -> ir.Module:
    """ir.Module.parse with every failure a DiagnosticError."""
    check_text(text, context, filename)
    try:
        return ir.Module.parse(text, context)
    except ir.MLIRError as error:
        raise DiagnosticError(diagnostics_of(error)) from None
