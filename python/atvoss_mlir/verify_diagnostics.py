"""`--verify-diagnostics`: match emitted diagnostics against `expected-*`
comments in the source, with MLIR's semantics.

    // expected-error {{message}}            this line
    // expected-error @+1 {{message}}        a relative line (@-N too), @N absolute
    // expected-remark @below {{message}}    next line without an expected-* comment
    // expected-note @above {{message}}      previous line without one
    // expected-error-re {{a {{[0-9]+}} b}}  regex inside the inner {{ }}

Every expectation must be produced and every diagnostic must be expected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .diagnostics import Diagnostic, SourcePosition

_EXPECTED = re.compile(
    r"expected-(error|warning|remark|note)(-re)? *(@([+-]?[0-9]+|above|below))? *\{\{(.*)\}\}\s*$")


@dataclass
class Expectation:
    severity: str
    line: int
    pattern: re.Pattern
    text: str
    position: SourcePosition  # where the expected-* comment is
    matched: bool = False


def _pattern(text: str, is_regex: bool) -> re.Pattern:
    if not is_regex:
        return re.compile(re.escape(text))
    parts, pos = [], 0
    for match in re.finditer(r"\{\{(.*?)\}\}", text):
        parts.append(re.escape(text[pos:match.start()]))
        parts.append(f"(?:{match.group(1)})")
        pos = match.end()
    parts.append(re.escape(text[pos:]))
    return re.compile("".join(parts))


def parse_expectations(text: str, filename: str, first_line: int = 1) -> list[Expectation]:
    """Expectations in `text`, whose first line is line `first_line` of `filename`."""
    lines = text.split("\n")
    expectations: list[Expectation] = []
    pending_below: list[Expectation] = []
    last_plain_line = None
    for index, line in enumerate(lines):
        line_no = first_line + index
        match = _EXPECTED.search(line)
        if match is None:
            for expectation in pending_below:
                expectation.line = line_no
            pending_below.clear()
            last_plain_line = line_no
            continue
        severity, is_regex, _, designator, body = match.groups()
        expectation = Expectation(severity, line_no, _pattern(body, bool(is_regex)), body,
                                  SourcePosition(filename, line_no, match.start() + 1))
        if designator == "below":
            pending_below.append(expectation)
        elif designator == "above":
            expectation.line = last_plain_line if last_plain_line is not None else line_no - 1
        elif designator is not None:
            if designator[0] in "+-":
                expectation.line = line_no + int(designator)
            else:
                expectation.line = int(designator)
        expectations.append(expectation)
    return expectations


def _flatten(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    flat = []
    for diagnostic in diagnostics:
        flat.append(diagnostic)
        flat.extend(note for note in diagnostic.notes
                    if not note.message.startswith("see current operation"))
    return flat


def verify(diagnostics: list[Diagnostic], expectations: list[Expectation],
           filename: str) -> list[str]:
    """Messages for unexpected diagnostics and unmet expectations (empty = pass)."""
    failures = []
    for diagnostic in _flatten(diagnostics):
        position = diagnostic.resolved_position(filename)
        found = None
        for expectation in expectations:
            if (not expectation.matched and expectation.severity == diagnostic.severity
                    and position is not None and position.line == expectation.line
                    and expectation.pattern.search(diagnostic.message)):
                found = expectation
                break
        if found is not None:
            found.matched = True
        else:
            where = str(position) if position else f"{filename}:0:0"
            failures.append(f"{where}: error: unexpected {diagnostic.severity}: "
                            f"{diagnostic.message}")
    for expectation in expectations:
        if not expectation.matched:
            failures.append(f"{expectation.position}: error: expected {expectation.severity} "
                            f"\"{expectation.text}\" was not produced")
    return failures
