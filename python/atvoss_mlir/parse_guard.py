"""Parsing MLIR text without aborting the process.

The upstream parser diagnoses malformed text, except for a few inputs on
which it trips an assertion and aborts the whole process (`array<index: 1>`),
and the Python bindings cannot read some attributes it accepts (a dense
array of ui8, si64, f16... elements raises TypeError on access, so every
pass or simulator handler reading it would fail). Those are refused here
first, with a located error, then the text goes to `ir.Module.parse`. A
small text in which a value is used before, or without, its definition is
parsed once in a forked copy of the process before: the parser's cleanup
after some errors with such forward references trips an assertion too, in
ways no pattern here foresees.
"""

from __future__ import annotations

import os
import re

from mlir import ir

from .context import make_context
from .diagnostics import Diagnostic, DiagnosticError, diagnostics_of

# Texts up to this size are parsed in a forked copy first when they use a
# value before or without its definition; larger ones are programs the tools wrote
# (their weights), which the parser reads cleanly.
_TRIAL_PARSE_BYTES = 1 << 20
# An SSA name, and `=` after it where an op defines the name or `:` where it
# is an argument (first in a list, or after a comma: a use with its type
# after an op's name, `linalg.yield %r : f32`, is a use); or a function, where
# names start again; or a comment or a string, which are skipped.
_SSA_NAME = re.compile(r"%([\w$.\-]+)(?::\d+)?(\s*=(?!=)|\s*:)?|\bfunc\.func\b"
                       r"|//[^\n]*|\"(?:[^\"\\\n]|\\.)*\"")

# Starts with a literal so that re scans for it quickly (programs hold
# hundreds of MB of weights); the character before is checked by hand.
_DENSE_ARRAY = re.compile(r"array\s*<\s*([^\s:>]+)\s*[:>]")
_READABLE_ELEMENTS = {"i1", "i8", "i16", "i32", "i64", "f32", "f64"}
# tensor.pad with a negative static padding: its verifier builds a tensor type
# with a negative dimension and aborts.
_PAD_AMOUNTS = re.compile(r"\btensor\.pad\b[^\n]*?\b(?:low|high)\s*\[([^\]]*)\]"
                          r"(?:\s*high\s*\[([^\]]*)\])?|"
                          r"static_(?:low|high)\s*=\s*array<i64:([^>]*)>")

# The integer lists of linalg's custom syntax (linalg.transpose permutation,
# linalg.broadcast dimensions): an element beyond i64 makes the parser set a
# null attribute and abort.
_INTEGER_LISTS = re.compile(r"\b(?:permutation|dimensions)\s*=\s*\[([^\]]*)\]")
# `dimensions` lists (linalg.broadcast, reduce), in the custom and the generic
# form: one naming a dim twice is invalid for every op that has one, and
# linalg.broadcast's verifier indexes past its end on it and aborts, so it is
# refused here. (A repeated permutation entry the verifiers report.)
_DIMENSION_LISTS = re.compile(r"\bdimensions\s*=\s*(?:\[([^\]]*)\]|array\s*<\s*i64\s*:([^>]*)>)")
_I64_LIMIT = 1 << 63
# In the custom syntax (the keyword right after the op's `outs(...)`), the
# same keywords followed by anything but a well-formed list (truncated,
# unterminated, a non-integer element) abort the parser the same way. The
# attribute-dictionary form (`{permutation = ...}`) is left to the parser.
_LIST_KEYWORD = re.compile(r"\)\s*(?:permutation|dimensions)\s*=\s*")
_WELL_FORMED_LIST = re.compile(r"\[\s*(?:-?\d+\s*(?:,\s*-?\d+\s*)*)?\]")
# Convolution and pooling strides and dilations: upstream canonicalization
# folds their affine maps and aborts when a product overflows (a dilation of
# 2^63 - 1), so they are bounded before any pass runs.
_WINDOW_STEPS = re.compile(r"\b(strides|dilations)\s*=\s*dense\s*<\s*\[?([^>\]]*)")
_WINDOW_STEP_LIMIT = 1 << 31
# linalg.pack/unpack dim positions: the verifier puts them in a DenseSet whose
# reserved keys are the two largest i64 values, and aborts on either.
_DIM_POSITIONS = re.compile(r"\b(inner_dims_pos|outer_dims_perm)\s*=\s*\[([^\]]*)\]")
_DIM_POSITION_LIMIT = 1 << 31
# Their static inner tiles (SSA values aside): a tile of 0 or less makes the
# verifier build a shaped type with a negative dim and abort.
_INNER_TILES = re.compile(r"\binner_tiles\s*=\s*\[([^\]]*)\]")
# Reassociation indices of expand_shape/collapse_shape: a negative one (or one
# that overflows to it) makes the verifier build an invalid affine map and abort.
# Matched at each "_shape" or "reassociation" found by str.find (fast on
# programs holding hundreds of MB of weights).
_REASSOCIATION = re.compile(r"(?:_shape\b[^\n\[]*|reassociation\s*=\s*)"
                            r"(\[\s*\[[^\n]*?\]\s*\])")
_REASSOCIATION_LIMIT = 1 << 16


# An npu type followed by a bare '@' (no symbol name after it): the type's
# parser meets the lexer's error, and the bindings abort on the diagnostic
# left behind ("unhandled captured errors").
_TYPE_BEFORE_BARE_AT = re.compile(r"!npu\.[\w.]+\s*(@)(?![\w\"$.@-])")


def _error_at(text: str, offset: int, message: str, context, filename: str):
    line_start = text.rfind("\n", 0, offset) + 1
    line = text.count("\n", 0, offset) + 1
    return DiagnosticError([Diagnostic("error", message, ir.Location.file(
        filename, line, offset - line_start + 1, context))])


def check_text(text: str, context: ir.Context, filename: str = "-") -> None:
    """Raise DiagnosticError for text the upstream parser would abort on."""
    pads = "tensor.pad" in text or "static_low" in text or "static_high" in text
    for match in _PAD_AMOUNTS.finditer(text) if pads else ():
        amounts = ",".join(g for g in match.groups() if g)
        if re.search(r"(^|,)\s*-\s*\d", amounts):
            raise _error_at(text, match.start(), "tensor.pad with a negative padding is not "
                            "supported", context, filename)
        # A padding near i64's range overflows the padded type's dims.
        if any(int(literal) >= _WINDOW_STEP_LIMIT for literal in re.findall(r"\d+", amounts)):
            raise _error_at(text, match.start(), "tensor.pad with a padding of 2^31 or more "
                            "is not supported", context, filename)
    if "permutation" in text or "dimensions" in text:
        for match in _LIST_KEYWORD.finditer(text):
            line_start = text.rfind("\n", 0, match.start()) + 1
            if "//" in text[line_start:match.start()]:
                continue  # in a comment
            if not _WELL_FORMED_LIST.match(text, match.end()):
                keyword = match.group(0).split("=")[0].strip(") \t\n")
                raise _error_at(text, match.end(), "expected a list of integers such as "
                                f"[1, 0] after '{keyword} ='", context, filename)
        for match in _INTEGER_LISTS.finditer(text):
            for literal in re.findall(r"-?\d+", match.group(1)):
                if not -_I64_LIMIT <= int(literal) < _I64_LIMIT:
                    raise _error_at(text, match.start(1) + match.group(1).find(literal),
                                    f"integer {literal} is out of range for i64", context,
                                    filename)
        for match in _DIMENSION_LISTS.finditer(text):
            line_start = text.rfind("\n", 0, match.start()) + 1
            if "//" in text[line_start:match.start()]:
                continue  # in a comment
            values = [int(literal) for literal in
                      re.findall(r"-?\d+", match.group(1) or match.group(2))]
            repeated = next((v for n, v in enumerate(values) if v in values[:n]), None)
            if repeated is not None:
                raise _error_at(text, match.start(), f"'dimensions' names dim {repeated} twice",
                                context, filename)
    if "_dims_p" in text:
        for match in _DIM_POSITIONS.finditer(text):
            for literal in re.findall(r"-?\d+", match.group(2)):
                if not 0 <= int(literal) < _DIM_POSITION_LIMIT:
                    raise _error_at(text, match.start(2) + match.group(2).find(literal),
                                    f"{match.group(1)} value {literal} is out of range "
                                    f"[0, 2^31)", context, filename)
    if "inner_tiles" in text:
        for match in _INNER_TILES.finditer(text):
            offset = match.start(1)
            for item in match.group(1).split(","):
                literal = item.strip()
                if re.fullmatch(r"-?\d+", literal) and \
                        not 0 < int(literal) < _DIM_POSITION_LIMIT:
                    raise _error_at(text, offset + item.find(literal),
                                    f"inner_tiles value {literal} is out of range [1, 2^31)",
                                    context, filename)
                offset += len(item) + 1
    for keyword in ("_shape", "reassociation"):
        position = text.find(keyword)
        while position >= 0:
            match = _REASSOCIATION.match(text, position)
            line_start = text.rfind("\n", 0, position) + 1
            position = text.find(keyword, position + len(keyword))
            if match is None or "//" in text[line_start:match.start()]:
                continue  # no reassociation here, or in a comment
            for literal in re.finditer(r"-?\d+", match.group(1)):
                if not 0 <= int(literal.group()) < _REASSOCIATION_LIMIT:
                    raise _error_at(text, match.start(1) + literal.start(),
                                    f"reassociation index {literal.group()} is out of range",
                                    context, filename)
    if "strides" in text or "dilations" in text:
        for match in _WINDOW_STEPS.finditer(text):
            for literal in re.findall(r"-?\d+", match.group(2)):
                if not 0 < int(literal) < _WINDOW_STEP_LIMIT:
                    raise _error_at(text, match.start(2) + match.group(2).find(literal),
                                    f"{match.group(1)} value {literal} is out of range "
                                    f"[1, 2^31)", context, filename)
    if "!npu." in text and "@" in text:
        for match in _TYPE_BEFORE_BARE_AT.finditer(text):
            line_start = text.rfind("\n", 0, match.start())
            if "//" not in text[line_start + 1:match.start()]:
                raise _error_at(text, match.start(1), "@ identifier expected to start with "
                                "letter or '_'", context, filename)
    for match in _DENSE_ARRAY.finditer(text):
        before = text[match.start() - 1] if match.start() else " "
        if match.group(1) in _READABLE_ELEMENTS or before.isalnum() or before in "_.!":
            continue
        line_start = text.rfind("\n", 0, match.start()) + 1
        if "//" in text[line_start:match.start()]:
            continue  # in a comment
        line = text.count("\n", 0, match.start()) + 1
        column = match.start() - line_start + 1
        raise DiagnosticError([Diagnostic(
            "error", f"dense array of '{match.group(1)}' elements is not supported: use i1, "
            f"i8, i16, i32, i64, f32 or f64 (array<i64: ...>)",
            ir.Location.file(filename, line, column, context))])


def _before(text: str, offset: int) -> str:
    """The last character before `offset` that is not white space ('' if none)."""
    offset -= 1
    while offset >= 0 and text[offset] in " \t\r\n":
        offset -= 1
    return text[offset] if offset >= 0 else ""


def _used_before_definition(text: str) -> bool:
    """Whether some SSA name of a function appears before the op or argument
    defining it (text order; a function's names start again), or is never
    defined there."""
    defined = set()
    for match in _SSA_NAME.finditer(text):
        name = match.group(1)
        if match.group(0)[0] in "/\"":
            continue
        if name is None:
            defined.clear()
        elif match.group(2) and (match.group(2).strip() == "=" or
                                 _before(text, match.start()) in "(,"):
            defined.add(name)
        elif name not in defined:
            return True
    return False


def _parse_aborts(text: str) -> bool:
    """Whether parsing `text` kills a forked copy of this process (no core
    file, the assertion's text not shown)."""
    pid = os.fork()
    if pid == 0:
        try:
            import resource
            resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
            ir.Module.parse(text, make_context(multithreading=False))
        except BaseException:
            pass
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.WIFSIGNALED(status)


def parse_module(text: str, context: ir.Context, filename: str = "-") -> ir.Module:
    """ir.Module.parse with every failure a DiagnosticError."""
    check_text(text, context, filename)
    if len(text) <= _TRIAL_PARSE_BYTES and _used_before_definition(text) and \
            _parse_aborts(text):
        raise DiagnosticError([Diagnostic(
            "error", "malformed MLIR: the upstream parser aborts on it (an assertion) "
            "instead of reporting where", ir.Location.file(filename, 1, 1, context))])
    # Parsed on this thread alone: the verifier's diagnostics on a malformed
    # module, emitted from the context's worker threads, reach the Python
    # diagnostic handler without the GIL and abort the process.
    threaded = context.get_num_threads() > 1
    if threaded:
        context.enable_multithreading(False)
    try:
        return ir.Module.parse(text, context)
    except ir.MLIRError as error:
        raise DiagnosticError(diagnostics_of(error)) from None
    finally:
        if threaded:
            context.enable_multithreading(True)
