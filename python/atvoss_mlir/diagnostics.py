"""Located diagnostics, printed the way MLIR prints them.

Upstream MLIR reports parse and pass errors through `ir.MLIRError`; the Python
bindings cannot emit warnings or remarks, so this project's passes, the
simulator and the tools report through a `DiagnosticEngine` instead. Both end
up as `Diagnostic`s, printed as `file:line:col: severity: message`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from mlir import ir

SEVERITIES = ("error", "warning", "remark", "note")
_FROM_MLIR = {
    ir.DiagnosticSeverity.ERROR: "error",
    ir.DiagnosticSeverity.WARNING: "warning",
    ir.DiagnosticSeverity.REMARK: "remark",
    ir.DiagnosticSeverity.NOTE: "note",
}


@dataclass(frozen=True)
class SourcePosition:
    filename: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.line}:{self.column}"


def source_position(location: ir.Location | None, default_file: str = "-") -> SourcePosition | None:
    """The first file position inside a (name, fused, callsite) location.

    Text parsed from a string carries the file name "-"; `default_file`
    replaces it with the name of the input the text came from.
    """
    if location is None:
        return None
    if location.is_a_file():
        name = location.filename
        return SourcePosition(default_file if name == "-" else name,
                              location.start_line, location.start_col)
    if location.is_a_name():
        return source_position(location.child_loc, default_file)
    if location.is_a_callsite():
        return source_position(location.callee, default_file)
    if location.is_a_fused():
        for inner in location.locations:
            found = source_position(inner, default_file)
            if found is not None:
                return found
    return None


def location_label(location: ir.Location | None) -> str | None:
    """The name of a `Location.name(...)` location (an ONNX node, say)."""
    if location is not None and location.is_a_name():
        return location.name_str
    if location is not None and location.is_a_fused():
        for inner in location.locations:
            label = location_label(inner)
            if label:
                return label
    return None


@dataclass
class Diagnostic:
    severity: str
    message: str
    location: ir.Location | None = None
    notes: list["Diagnostic"] = field(default_factory=list)
    # A position that is not an IR location (the pass pipeline, the target string).
    position: SourcePosition | None = None
    # Figures behind a remark, for tools ("estimated_cycles" of a tiled op).
    facts: dict = field(default_factory=dict)

    def resolved_position(self, default_file: str = "-") -> SourcePosition | None:
        return self.position or source_position(self.location, default_file)

    def format(self, default_file: str = "-") -> str:
        position = self.resolved_position(default_file)
        where = str(position) if position else f"{default_file}:0:0"
        label = location_label(self.location)
        # A named location is an ONNX node: its name says more than its line.
        message = f"{self.message} [node '{label}']" if label else self.message
        lines = [f"{where}: {self.severity}: {message}"]
        for note in self.notes:
            lines.append(note.format(default_file))
        return "\n".join(lines)

    @classmethod
    def from_mlir(cls, info) -> "Diagnostic":
        return cls(_FROM_MLIR[info.severity], info.message, info.location,
                   [cls.from_mlir(note) for note in info.notes])


class DiagnosticError(Exception):
    """Raised to abandon work after one or more errors have been reported."""

    def __init__(self, diagnostics: list[Diagnostic]):
        self.diagnostics = diagnostics
        super().__init__("\n".join(d.format() for d in diagnostics))


def name_of(op) -> str:
    """The ONNX node an op comes from, else the op's name and line."""
    label = location_label(op.location)
    if label:
        return f"'{label}'"
    position = source_position(op.location)
    return f"'{op.name}' at line {position.line}" if position else f"'{op.name}'"


def error_at(location: ir.Location | None, message: str) -> DiagnosticError:
    return DiagnosticError([Diagnostic("error", message, location)])


def diagnostics_of(error: ir.MLIRError) -> list[Diagnostic]:
    found = [Diagnostic.from_mlir(info) for info in error.error_diagnostics]
    return found or [Diagnostic("error", error.message)]


class DiagnosticEngine:
    """Collects the diagnostics of one run, in emission order."""

    def __init__(self):
        self.diagnostics: list[Diagnostic] = []

    def emit(self, severity: str, location: ir.Location | None, message: str,
             notes: list[Diagnostic] | None = None) -> Diagnostic:
        diagnostic = Diagnostic(severity, message, location, notes or [])
        self.diagnostics.append(diagnostic)
        return diagnostic

    def error(self, location, message, notes=None) -> Diagnostic:
        return self.emit("error", location, message, notes)

    def warning(self, location, message, notes=None) -> Diagnostic:
        return self.emit("warning", location, message, notes)

    def remark(self, location, message, notes=None) -> Diagnostic:
        return self.emit("remark", location, message, notes)

    @property
    def error_count(self) -> int:
        return sum(d.severity == "error" for d in self.diagnostics)

    def extend(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics.extend(diagnostics)

    def print(self, default_file: str = "-", stream=None) -> None:
        stream = stream or sys.stderr
        for diagnostic in self.diagnostics:
            print(diagnostic.format(default_file), file=stream)
