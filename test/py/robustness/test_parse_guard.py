"""Dense arrays the upstream parser aborts on (index) or the Python bindings
cannot read (ui8, si64, f16, ...) are located errors, checked before parsing."""

from __future__ import annotations

from pathlib import Path

import pytest

from atvoss_mlir.context import make_context
from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.parse_guard import _used_before_definition, parse_module

PROGRAM = """func.func @f() {{
  %0 = arith.constant {{d = array<{element}: {values}>}} 1 : i32
  return
}}
"""


@pytest.mark.parametrize("element", ["index", "ui8", "si64", "f16", "bf16", "i128"])
def test_unreadable_dense_array_refused(element):
    values = "1.0" if element.startswith(("f", "b")) else "1"
    with pytest.raises(DiagnosticError) as failure:
        parse_module(PROGRAM.format(element=element, values=values), make_context(), "in.mlir")
    (diagnostic,) = failure.value.diagnostics
    assert str(diagnostic.resolved_position()) == "in.mlir:2:28"  # at `array<`
    assert diagnostic.message.startswith(f"dense array of '{element}' elements is not supported")


@pytest.mark.parametrize("element,values", [("i64", "1, 2"), ("i1", "true"), ("f32", "1.0")])
def test_readable_dense_arrays_parse(element, values):
    module = parse_module(PROGRAM.format(element=element, values=values), make_context())
    assert f"array<{element}" in str(module)


def test_comments_are_not_checked():
    text = "// array<index: 1>\n" + PROGRAM.format(element="i64", values="1")
    parse_module(text, make_context())


def test_negative_pad_refused():
    """tensor.pad's verifier aborts on a negative padding (a tensor type with a negative dim)."""
    text = """func.func @f(%x: tensor<4xf16>) -> tensor<5xf16> {
  %v = arith.constant 0.0 : f16
  %p = tensor.pad %x low[1] high[-2147483649] {
  ^bb0(%i: index):
    tensor.yield %v : f16
  } : tensor<4xf16> to tensor<5xf16>
  return %p : tensor<5xf16>
}
"""
    with pytest.raises(DiagnosticError) as failure:
        parse_module(text, make_context(), "in.mlir")
    (diagnostic,) = failure.value.diagnostics
    assert str(diagnostic.resolved_position()) == "in.mlir:3:8"
    assert diagnostic.message == "tensor.pad with a negative padding is not supported"
    parse_module(text.replace("high[-2147483649]", "high[0]"), make_context())
    # A padding near i64's range overflows the padded type's dims the same way.
    with pytest.raises(DiagnosticError) as failure:
        parse_module(text.replace("high[-2147483649]", "high[9223372036854775807]"),
                     make_context(), "in.mlir")
    assert failure.value.diagnostics[0].message == \
        "tensor.pad with a padding of 2^31 or more is not supported"


TRANSPOSE = """func.func @f(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {{
  %e = tensor.empty() : tensor<3x2xf32>
  %t = linalg.transpose ins(%a : tensor<2x3xf32>) outs(%e : tensor<3x2xf32>) permutation = [{first}, 0]
  return %t : tensor<3x2xf32>
}}
"""


@pytest.mark.parametrize("first", ["18446744073709551616", "-9223372036854775809"])
def test_integer_list_beyond_i64_refused(first):
    """The parser aborts on a linalg permutation element beyond i64."""
    with pytest.raises(DiagnosticError) as failure:
        parse_module(TRANSPOSE.format(first=first), make_context(), "in.mlir")
    (diagnostic,) = failure.value.diagnostics
    assert str(diagnostic.resolved_position()) == "in.mlir:3:93"  # at the integer
    assert diagnostic.message == f"integer {first} is out of range for i64"


def test_integer_list_within_i64_parses():
    module = parse_module(TRANSPOSE.format(first="1"), make_context(), "in.mlir")
    assert "permutation = [1, 0]" in str(module)


BROADCAST = """func.func @f(%b: tensor<8xf32>, %e: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {{
  %s = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e : tensor<1x8x8x8xf32>) dimensions = [{dims}]
  return %s : tensor<1x8x8x8xf32>
}}
"""
GENERIC_BROADCAST = """"func.func"() <{{function_type = (tensor<8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>, sym_name = "f"}}> ({{
^bb0(%b: tensor<8xf32>, %e: tensor<1x8x8x8xf32>):
  %s = "linalg.broadcast"(%b, %e) <{{dimensions = array<i64: {dims}>}}> ({{
  ^bb1(%x: f32, %y: f32):
    "linalg.yield"(%x) : (f32) -> ()
  }}) : (tensor<8xf32>, tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  "func.return"(%s) : (tensor<1x8x8x8xf32>) -> ()
}}) : () -> ()
"""


@pytest.mark.parametrize("form,position", [(BROADCAST, "in.mlir:2:80"),
                                           (GENERIC_BROADCAST, "in.mlir:3:37")])
def test_dimensions_naming_a_dim_twice_refused(form, position):
    """linalg.broadcast's verifier indexes past the end of its dims on a
    repeated one and aborts (fuzz finding atvoss-opt-278956a0a8)."""
    with pytest.raises(DiagnosticError) as failure:
        parse_module(form.format(dims="0, 2, 2"), make_context(), "in.mlir")
    (diagnostic,) = failure.value.diagnostics
    assert str(diagnostic.resolved_position()) == position   # at the keyword
    assert diagnostic.message == "'dimensions' names dim 2 twice"


@pytest.mark.parametrize("form", [BROADCAST, GENERIC_BROADCAST])
def test_dimensions_each_named_once_parse(form):
    module = parse_module(form.format(dims="0, 1, 2"), make_context(), "in.mlir")
    assert "linalg.broadcast" in str(module)


@pytest.mark.parametrize("keyword", ["inner_dims_pos", "outer_dims_perm"])
def test_pack_dim_positions_out_of_range_refused(keyword):
    """linalg.pack's verifier keeps its dim positions in a DenseSet, whose reserved
    keys (the two largest i64 values) abort it."""
    perm = "outer_dims_perm = [1, 0] " if keyword == "inner_dims_pos" else \
        "outer_dims_perm = [9223372036854775807, 0] "
    inner = "[0, 9223372036854775807]" if keyword == "inner_dims_pos" else "[0, 1]"
    text = f"""func.func @f(%x: tensor<4x6xf32>, %init: tensor<3x2x2x2xf32>) -> tensor<3x2x2x2xf32> {{
  %r = linalg.pack %x {perm}inner_dims_pos = {inner} inner_tiles = [2, 2] into %init : tensor<4x6xf32> -> tensor<3x2x2x2xf32>
  return %r : tensor<3x2x2x2xf32>
}}
"""
    with pytest.raises(DiagnosticError) as failure:
        parse_module(text, make_context(), "in.mlir")
    (diagnostic,) = failure.value.diagnostics
    assert diagnostic.message == f"{keyword} value 9223372036854775807 is out of range [0, 2^31)"
    assert diagnostic.resolved_position().line == 2
    parse_module(text.replace("9223372036854775807", "1"), make_context())


def test_unpack_tile_out_of_range_refused():
    """A static inner tile of 0 or less makes linalg.unpack's verifier build a
    type with a negative dim and abort; an SSA tile is left to the verifier."""
    text = """func.func @f(%x: tensor<2x3x2x2xf32>, %t: index) -> tensor<4x6xf32> {
  %e = tensor.empty() : tensor<4x6xf32>
  %r = linalg.unpack %x inner_dims_pos = [0, 1] inner_tiles = [-2147483649, 2] into %e : tensor<2x3x2x2xf32> -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}
"""
    with pytest.raises(DiagnosticError) as failure:
        parse_module(text, make_context(), "in.mlir")
    (diagnostic,) = failure.value.diagnostics
    assert diagnostic.message == "inner_tiles value -2147483649 is out of range [1, 2^31)"
    assert str(diagnostic.resolved_position()) == "in.mlir:3:64"   # at the literal
    parse_module(text.replace("-2147483649", "2"), make_context())


def test_text_the_parser_aborts_on_is_a_located_error():
    # A value used before its definition in one generic's body while another
    # function's body has two entry blocks: the parser's cleanup after the
    # error asserts (a placeholder value destroyed with uses left).
    text = """
func.func @a(%a: tensor<8x4xf32>, %b: tensor<4x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>,
                                        affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<8x4xf32>, tensor<4x8xf32>) outs(%c : tensor<8x8xf32>) {
    linalg.yield %s : f32
    %p = arith.mulf %x, %y : f32
    %s = arith.subf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

func.func @b(%a: tensor<8x4xf32>, %c: tensor<8xf32>) -> tensor<8xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> (m)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<8x4xf32>) outs(%c : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %s = arith.addf %acc, %p : f32
    %p = arith.mulf %x, %x : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
"""
    with pytest.raises(DiagnosticError) as failure:
        parse_module(text, make_context(), "in.mlir")
    (diagnostic,) = failure.value.diagnostics
    assert str(diagnostic.resolved_position()) == "in.mlir:1:1"
    assert "the upstream parser aborts on it" in diagnostic.message


def test_text_without_forward_references_is_parsed_once(monkeypatch):
    # Sibling regions may reuse names; only a use before its definition makes
    # the text worth a trial parse in a forked copy.
    import atvoss_mlir.parse_guard as guard

    def no_trial(text):
        raise AssertionError("a trial parse of a text without forward references")
    monkeypatch.setattr(guard, "_parse_aborts", no_trial)
    body = """linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
      iterator_types = ["parallel"]}} ins(%{src} : tensor<4xf32>) outs(%a : tensor<4xf32>) {{
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %x : f32
    linalg.yield %s : f32
  }} -> tensor<4xf32>"""
    text = f"""func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {{
  %r = {body.format(src="a")}
  %t = {body.format(src="r")}
  return %t : tensor<4xf32>
}}"""
    assert str(parse_module(text, make_context())).count("linalg.generic") == 2


def test_text_using_a_name_it_never_defines_is_a_located_error():
    # A use outside any function of names only block arguments define later,
    # and a body with two entry blocks: the same cleanup assertion (fuzz
    # finding atvoss-opt-9cd5ab7e27), though no name is defined after its use.
    text = """
    %s = arith.addf %in, %acc : f32
func.func @f(%x: memref<16x64xf32, 1>, %y: memref<16xf32, 1>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x64xf32, 1>) outs(%y : memref<16xf32, 1>) {
  ^bb0(%in: f32, %acc: f32):
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}
"""
    with pytest.raises(DiagnosticError) as failure:
        parse_module(text, make_context(), "in.mlir")
    (diagnostic,) = failure.value.diagnostics
    assert "the upstream parser aborts on it" in diagnostic.message


def test_names_in_comments_and_strings_need_no_trial_parse(monkeypatch):
    import atvoss_mlir.parse_guard as guard

    def no_trial(text):
        raise AssertionError("a trial parse of a text without forward references")
    monkeypatch.setattr(guard, "_parse_aborts", no_trial)
    text = """// RUN: atvoss-opt %s | FileCheck %s
// CHECK: %[[R:.*]] = arith.addi
func.func @f(%a: i32) -> i32 {
  %r = arith.addi %a, %a {note = "%b is not a value"} : i32
  return %r : i32
}"""
    assert "arith.addi" in str(parse_module(text, make_context()))


TOKEN_THEN_BARE_AT = """func.func @f(%s: memref<4xi8>, %x: memref<4xi8, 1>) {{
  %t = "npu.dma_load"(%s, %x) {{channel = 1 : i64}} : (memref<4xi8>, memref<4xi8, 1>) -> !npu.token{gap}@{after}
  return
}}
"""


@pytest.mark.parametrize("gap,after", [("\n", "  "), (" ", " "), ("\n", ")")])
def test_npu_type_before_a_bare_at_refused(gap, after):
    """The npu type's parser meets the lexer's error on a bare '@', and the
    bindings abort on the diagnostic it leaves (fuzz finding, a mutation of a
    lit file)."""
    with pytest.raises(DiagnosticError) as failure:
        parse_module(TOKEN_THEN_BARE_AT.format(gap=gap, after=after), make_context(), "in.mlir")
    (diagnostic,) = failure.value.diagnostics
    assert diagnostic.message == "@ identifier expected to start with letter or '_'"
    assert str(diagnostic.resolved_position()) == ("in.mlir:3:1" if gap == "\n" else
                                                   "in.mlir:2:99")


def test_npu_type_before_a_symbol_parses_as_before():
    """'@name' after an npu type is the parser's to judge (no abort there)."""
    with pytest.raises(DiagnosticError) as failure:
        parse_module(TOKEN_THEN_BARE_AT.format(gap="\n", after="x"), make_context(), "in.mlir")
    assert "@ identifier" not in failure.value.diagnostics[0].message


def test_typed_use_before_its_definition_is_a_use():
    """`linalg.yield %r : f32` ahead of `%r = ...` is a use of %r: the trial
    parse runs and the parser's abort (a value destroyed with uses) is a
    located error (fuzz finding atvoss-opt-329bbf5eb7)."""
    text = """func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(d) -> (d)>, affine_map<(d) -> (d)>],
      iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    linalg.yield %r : f32
    %r = arith.negf %v : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %n : tensor<4xf32>
}
"""
    assert _used_before_definition(text)
    with pytest.raises(DiagnosticError):
        parse_module(text, make_context(), "in.mlir")


def test_arguments_and_typed_uses_after_definitions_parse():
    text = """func.func @f(%x: tensor<4xf32>, %y: f32) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %n = linalg.generic {indexing_maps = [affine_map<(d) -> (d)>, affine_map<(d) -> (d)>],
      iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.addf %v, %y : f32
    linalg.yield %r : f32
  } -> tensor<4xf32>
  return %n : tensor<4xf32>
}
"""
    assert not _used_before_definition(text)
    assert "arith.addf" in str(parse_module(text, make_context(), "in.mlir"))


# The fuzzer's case: functions whose bodies hold stray `func.func` lines. The
# verifier checks the functions on the context's worker threads, and its
# diagnostics reached the Python handler without the GIL (the process
# aborted: "Critical nanobind error").
STRAY_DECLARATIONS = (Path(__file__).resolve().parents[2] / "fuzz" / "regressions" /
                      "atvoss-opt-bb57f504a3.mlir")


def test_verifier_errors_on_worker_threads_are_diagnostics_not_an_abort():
    """In a subprocess: an abort would kill the test run."""
    import subprocess
    import sys
    code = ("import sys\n"
            "from atvoss_mlir.context import make_context\n"
            "from atvoss_mlir.diagnostics import DiagnosticError\n"
            "from atvoss_mlir.parse_guard import parse_module\n"
            "try:\n"
            "    parse_module(sys.stdin.read(), make_context(), 'in.mlir')\n"
            "except DiagnosticError as failure:\n"
            "    print(failure.diagnostics[0].message)\n")
    result = subprocess.run([sys.executable, "-c", code], input=STRAY_DECLARATIONS.read_text(),
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "symbol declaration cannot have public visibility" in result.stdout, result.stdout
