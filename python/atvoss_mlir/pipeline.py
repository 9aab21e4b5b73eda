"""Textual pass pipelines mixing atvoss-mlir's Python passes with upstream
MLIR passes, run through one `PassManager`.

    builtin.module(npu-verify, canonicalize, func.func(cse), npu-verify{...})

Registered `npu-*` elements become Python passes; every other element is
handed to MLIR as text, so upstream passes keep their own option parsing.
Named pipelines are declared as data in `pipelines/<name>.txt`.
"""

from __future__ import annotations

import sys
import traceback
from dataclasses import dataclass, field
from importlib import resources

from mlir import ir, passmanager

from .diagnostics import Diagnostic, DiagnosticError, SourcePosition, diagnostics_of
from .passes import ModulePass, PassContext, PassOptionError, lookup_pass

PIPELINE_SOURCE = "<pass-pipeline>"


class PipelineError(Exception):
    """A malformed pipeline, unknown pass or bad option, at a column of the text."""

    def __init__(self, message: str, column: int, source: str = PIPELINE_SOURCE):
        super().__init__(message)
        self.diagnostic = Diagnostic("error", message,
                                     position=SourcePosition(source, 1, column + 1))


@dataclass
class Element:
    name: str
    start: int                   # offset in the pipeline text
    text: str                    # the element as written
    options: str | None = None   # text between { }
    children: list["Element"] = field(default_factory=list)
    nested: bool = False         # written as name(...)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def _skip_space(self):
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def _error(self, message: str):
        raise PipelineError(message, self.pos)

    def elements(self, closing: str | None) -> list[Element]:
        result = []
        while True:
            self._skip_space()
            if closing and self.pos < len(self.text) and self.text[self.pos] == closing \
                    and not result:
                return result
            result.append(self.element())
            self._skip_space()
            if self.pos < len(self.text) and self.text[self.pos] == ",":
                self.pos += 1
                continue
            return result

    def element(self) -> Element:
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum()
                                              or self.text[self.pos] in "-_."):
            self.pos += 1
        name = self.text[start:self.pos]
        if not name:
            self._error("expected a pass or pipeline name")
        element = Element(name, start, "")
        if self.pos < len(self.text) and self.text[self.pos] == "{":
            element.options = self._balanced("{", "}")[1:-1]
        if self.pos < len(self.text) and self.text[self.pos] == "(":
            self.pos += 1
            element.nested = True
            element.children = self.elements(")")
            self._skip_space()
            if self.pos >= len(self.text) or self.text[self.pos] != ")":
                self._error(f"expected ')' to close '{name}('")
            self.pos += 1
        element.text = self.text[start:self.pos]
        return element

    def _balanced(self, open_char: str, close_char: str) -> str:
        start, depth = self.pos, 0
        while self.pos < len(self.text):
            char = self.text[self.pos]
            depth += (char == open_char) - (char == close_char)
            self.pos += 1
            if depth == 0:
                return self.text[start:self.pos]
        raise PipelineError(f"unbalanced '{open_char}'", start)


def parse_pipeline(text: str) -> list[Element]:
    """Parse `builtin.module(...)` (or a bare element list) into elements."""
    parser = _Parser(text)
    elements = parser.elements(None)
    parser._skip_space()
    if parser.pos != len(text):
        parser._error(f"unexpected '{text[parser.pos]}' in pass pipeline")
    if len(elements) == 1 and elements[0].name == "builtin.module" and elements[0].nested:
        return elements[0].children
    return elements


def parse_options(text: str | None, column: int) -> dict[str, str]:
    """`a=1 b=x` -> {'a': '1', 'b': 'x'} (MLIR's pass option syntax)."""
    options = {}
    for word in (text or "").split():
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise PipelineError(f"malformed pass option '{word}': expected name=value", column)
        options[key] = value
    return options


def named_pipeline(name: str) -> str:
    """The text of `pipelines/<name>.txt` (comments and blank lines dropped)."""
    source = resources.files("atvoss_mlir.pipelines").joinpath(f"{name}.txt")
    lines = [line.split("#", 1)[0].strip() for line in source.read_text().splitlines()]
    return " ".join(line for line in lines if line)


def _wrap(pass_: ModulePass, pass_context: PassContext):
    def run(op: ir.Operation, external_pass) -> None:
        before = pass_context.diagnostics.error_count
        try:
            pass_.run(op, pass_context)
        except Exception as error:  # an internal error still gets a location
            pass_context.diagnostics.error(
                op.location, f"internal error in pass '{pass_.argument}': "
                f"{type(error).__name__}: {error}")
            pass_context.internal_errors.append(traceback.format_exc())
        if pass_context.diagnostics.error_count > before:
            external_pass.signal_pass_failure()
    return run


def _printer(when: str, argument: str):
    """A pass printing the module to stderr, headed as mlir-opt's IR dumps are."""
    def run(op: ir.Operation, external_pass) -> None:
        print(f"// -----// IR Dump {when} {argument} //----- //", file=sys.stderr)
        print(op, file=sys.stderr)
    return run


def build_pass_manager(text: str, context: ir.Context, pass_context: PassContext,
                       print_before: tuple = (), print_after: tuple = ()
                       ) -> passmanager.PassManager:
    """A PassManager on builtin.module running the pipeline `text`, printing the
    IR before the passes named in `print_before` and after those in `print_after`
    (`--mlir-print-ir-before=` / `--mlir-print-ir-after=`)."""
    pm = passmanager.PassManager("builtin.module", context)
    upstream: list[Element] = []

    def print_if(when: str, names: tuple, element: Element):
        if element.name in names:
            flush()
            pm.add(_printer(when, element.name), name=f"Print{when}",
                   argument=f"print-ir-{when.lower()}")

    def flush():
        if not upstream:
            return
        try:
            pm.add(",".join(element.text for element in upstream))
        except ValueError as error:
            raise _locate_upstream_error(upstream, context, error) from None
        upstream.clear()

    for element in parse_pipeline(text):
        print_if("Before", print_before, element)
        pass_class = lookup_pass(element.name)
        if pass_class is None:
            _reject_nested_npu_passes(element)
            upstream.append(element)
            print_if("After", print_after, element)
            continue
        if element.nested:
            raise PipelineError(f"'{element.name}' is a pass, not an op anchor", element.start)
        flush()
        try:
            pass_ = pass_class.from_options(parse_options(element.options, element.start))
        except PassOptionError as error:
            raise PipelineError(str(error), element.start) from None
        pm.add(_wrap(pass_, pass_context), name=type(pass_).__name__,
               argument=pass_.argument, description=pass_.summary)
        print_if("After", print_after, element)
    flush()
    return pm


def run_pipeline(module: ir.Module, text: str, pass_context: PassContext,
                 configure=None, print_before: tuple = (), print_after: tuple = (),
                 verify_each: bool = True) -> None:
    """Run the pipeline `text` on `module`; raises DiagnosticError on failure.

    `configure(pm)` may enable IR printing or timing before the run. The
    remarks and warnings of a successful run stay in `pass_context.diagnostics`.
    The IR is verified after each pass (as mlir-opt does), or with
    `verify_each=False` once after the last (a tenth of a whole compile's
    time on a ResNet-50: the verifier walks the whole module after each of
    some thirty passes).
    """
    try:
        pm = build_pass_manager(text, module.context, pass_context, print_before, print_after)
    except PipelineError as error:
        raise DiagnosticError([error.diagnostic]) from None
    pm.enable_verifier(verify_each)
    if configure is not None:
        configure(pm)
    try:
        pm.run(module.operation)
        if not verify_each:
            module.operation.verify()
    except ir.MLIRError as error:
        own = pass_context.diagnostics.diagnostics
        # A Python pass's errors are in its own list; the MLIRError then only
        # says that the pipeline failed.
        raise DiagnosticError(own if pass_context.diagnostics.error_count
                              else own + diagnostics_of(error)) from None


def _locate_upstream_error(elements: list[Element], context: ir.Context,
                           error: ValueError) -> PipelineError:
    """The element MLIR rejected, found by adding each to a scratch manager."""
    culprit, message = elements[0], str(error)
    for element in elements:
        try:
            passmanager.PassManager("builtin.module", context).add(element.text)
        except ValueError as element_error:
            culprit, message = element, str(element_error)
            break
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()]
    detail = next((line.split("error: ", 1)[1] for line in lines if "error: " in line),
                  "; ".join(lines) or "invalid pass pipeline")
    return PipelineError(detail, culprit.start)


def _reject_nested_npu_passes(element: Element) -> None:
    for child in element.children:
        if lookup_pass(child.name) is not None:
            raise PipelineError(f"'{child.name}' runs on builtin.module and cannot be nested "
                                f"under '{element.name}'", child.start)
        _reject_nested_npu_passes(child)
