"""Pass registry and pipeline strings mixing atvoss and upstream passes."""

import dataclasses
from dataclasses import dataclass

import pytest
from mlir import ir

from atvoss_mlir import passes
from atvoss_mlir.context import make_context
from atvoss_mlir.passes import ModulePass, PassContext, PassOptionError
from atvoss_mlir.pipeline import (PipelineError, build_pass_manager, named_pipeline,
                                  parse_options, parse_pipeline)


def test_registry_lists_and_loads_passes():
    assert "npu-verify" in passes.registered_passes()
    for argument in passes.registered_passes():
        pass_class = passes.lookup_pass(argument)
        assert pass_class.argument == argument
        assert pass_class.summary
    assert passes.lookup_pass("no-such-pass") is None


def test_pipeline_elements_nesting_and_options():
    elements = parse_pipeline("builtin.module(npu-verify, canonicalize{max-iterations=3}, "
                              "func.func(cse, canonicalize), npu-x{a=1 b=two})")
    assert [e.name for e in elements] == ["npu-verify", "canonicalize", "func.func", "npu-x"]
    assert elements[1].options == "max-iterations=3"
    assert elements[1].text == "canonicalize{max-iterations=3}"
    assert [c.name for c in elements[2].children] == ["cse", "canonicalize"]
    assert parse_options(elements[3].options, 0) == {"a": "1", "b": "two"}


def test_bare_element_list_is_accepted():
    assert [e.name for e in parse_pipeline("cse,canonicalize")] == ["cse", "canonicalize"]


@pytest.mark.parametrize("text, column, message", [
    ("builtin.module(cse", 18, "expected ')'"),
    ("builtin.module(cse,)", 19, "expected a pass or pipeline name"),
    ("builtin.module(cse{a=1)", 18, "unbalanced '{'"),
    ("builtin.module(cse) x", 20, "unexpected 'x'"),
])
def test_malformed_pipelines_point_at_a_column(text, column, message):
    with pytest.raises(PipelineError) as error:
        parse_pipeline(text)
    assert message in str(error.value)
    assert error.value.diagnostic.position.column == column + 1


@dataclass(frozen=True)
class CountOps(ModulePass):
    argument = "test-count-ops"
    summary = "remarks the number of ops"
    scale: int = 1
    verbose: bool = False
    label: str = "ops"

    def run(self, module, context):
        count = sum(1 for _ in module.regions[0].blocks[0].operations)
        context.diagnostics.remark(module.location, f"{self.label}={count * self.scale}")


def test_pass_options_are_typed_fields():
    pass_ = CountOps.from_options({"scale": "3", "verbose": "true", "label": "n"})
    assert (pass_.scale, pass_.verbose, pass_.label) == (3, True, "n")
    assert [f.name for f in dataclasses.fields(pass_)] == ["scale", "verbose", "label"]
    with pytest.raises(PassOptionError, match="expects int, got 'x'"):
        CountOps.from_options({"scale": "x"})
    with pytest.raises(PassOptionError, match="has no option 'nope'"):
        CountOps.from_options({"nope": "1"})


def test_python_and_upstream_passes_share_one_pass_manager(monkeypatch):
    monkeypatch.setitem(passes._REGISTRY, "test-count-ops", "x:CountOps")
    monkeypatch.setattr("atvoss_mlir.pipeline.lookup_pass",
                        lambda name: CountOps if name == "test-count-ops" else None)
    context = make_context()
    module = ir.Module.parse("""
      func.func @f() -> i32 { %a = arith.constant 1 : i32
        %b = arith.addi %a, %a : i32
        return %b : i32 }
      func.func private @unused()""", context)
    pass_context = PassContext()
    pm = build_pass_manager(
        "builtin.module(test-count-ops{scale=10}, symbol-dce, canonicalize, test-count-ops)",
        context, pass_context)
    pm.run(module.operation)
    remarks = [d.message for d in pass_context.diagnostics.diagnostics]
    assert remarks == ["ops=20", "ops=1"]
    assert "arith.addi" not in str(module)


def test_upstream_errors_become_pipeline_errors():
    context = make_context()
    with pytest.raises(PipelineError, match="does not refer to a registered pass"):
        build_pass_manager("builtin.module(cse, not-a-pass)", context, PassContext())


def test_named_pipeline_is_data():
    text = named_pipeline("npu-pipeline")
    assert text.startswith("builtin.module(")
    assert "#" not in text
    assert parse_pipeline(text)


@dataclass(frozen=True)
class BreakTerminator(ModulePass):
    """Leaves each function with a second terminator, before its return:
    IR the verifier refuses."""
    argument = "test-break-terminator"
    summary = "corrupts the IR"

    def run(self, module, context):
        for function in module.regions[0].blocks[0].operations:
            block = function.regions[0].blocks[0]
            ir.Operation.create("func.return", operands=list(block.arguments),
                                ip=ir.InsertionPoint.at_block_begin(block), loc=module.location)


@pytest.mark.parametrize("verify_each", [True, False])
def test_invalid_ir_is_refused_whether_verified_after_each_pass_or_once(monkeypatch,
                                                                         verify_each):
    from atvoss_mlir.diagnostics import DiagnosticError
    from atvoss_mlir.pipeline import run_pipeline
    monkeypatch.setattr("atvoss_mlir.pipeline.lookup_pass",
                        lambda name: BreakTerminator if name == BreakTerminator.argument
                        else None)
    context = make_context()
    module = ir.Module.parse("func.func @f(%a: i32) -> i32 { return %a : i32 }", context)
    with pytest.raises(DiagnosticError, match="must be the last operation"):
        run_pipeline(module, "builtin.module(test-break-terminator, cse)", PassContext(),
                     verify_each=verify_each)
    module = ir.Module.parse("func.func @f(%a: i32) -> i32 { return %a : i32 }", context)
    run_pipeline(module, "builtin.module(canonicalize, cse)", PassContext(),
                 verify_each=verify_each)
