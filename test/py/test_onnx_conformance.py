"""ONNX's node conformance cases on the atvoss ONNX backend, run the way
onnxruntime and onnx-mlir run them: `onnx.backend.test.BackendTest` builds a
unittest class with one test per case, collected here by pytest.

Each case's test passes when the outputs match ONNX's expected values; it is
an expected failure (xfail, with the reason) when the backend refuses the
model with a located error, such as an op the importer does not handle yet;
it fails on a wrong result and on a crash (an internal error included).
Cases out of scope by design are skipped with their one reason
(`EXCLUSIONS` in atvoss_mlir/testing/onnx_conformance.py). The CUDA variants
BackendTest also builds are dropped: the backend has no such device.

The last test compares docs/onnx-conformance.md with the table these
outcomes give (running any case the session did not run), so a stale table
fails without a second pass over the cases.
"""

from __future__ import annotations

import difflib
import functools
from pathlib import Path

import pytest

from atvoss_mlir import onnx_backend
from atvoss_mlir.diagnostics import Diagnostic, DiagnosticError
from atvoss_mlir.testing.onnx_conformance import REGENERATE, TABLE_PATH, NodeSuite, classify

ROOT = Path(__file__).resolve().parents[2]
SUITE = NodeSuite(onnx_backend, __name__)
OUTCOMES = {}  # case name -> Outcome, as the tests below run


def _conformance_test(name: str, function):
    @functools.wraps(function)
    def test(self):
        outcome = OUTCOMES[name] = SUITE.outcome(name, function, self)
        if outcome.status == "excluded":
            pytest.skip(outcome.reason)
        if outcome.status == "refused":
            pytest.xfail(f"refused: {outcome.reason}")
        assert outcome.status == "pass", f"{outcome.status}: {outcome.reason}"
    return test


for _attribute in [a for a in vars(SUITE.tests) if a.startswith("test_")]:
    if not _attribute.endswith("_cpu"):
        delattr(SUITE.tests, _attribute)
        continue
    _case = _attribute.removesuffix("_cpu")
    setattr(SUITE.tests, _attribute, _conformance_test(_case, getattr(SUITE.tests, _attribute)))
globals()[SUITE.tests.__name__] = SUITE.tests


def _raises(error):
    def run(*_):
        raise error
    return run


def test_a_wrong_result_or_a_crash_fails_and_a_refusal_is_an_xfail():
    model = SUITE.cases["test_abs"].model
    refusal = DiagnosticError([Diagnostic("error", "node 'n': op type 'Abs' is not supported")])
    internal = DiagnosticError([Diagnostic("error", "internal error importing the ONNX model")])
    assert classify(_raises(AssertionError("outputs differ")), model).status == "wrong"
    assert classify(_raises(ValueError("bad")), model).status == "crash"
    assert classify(_raises(internal), model).status == "crash"
    assert classify(_raises(refusal), model).status == "refused"
    kept = OUTCOMES.get("test_abs")
    try:
        with pytest.raises(AssertionError, match="wrong: outputs differ"):
            _conformance_test("test_abs", _raises(AssertionError("outputs differ")))(None)
        with pytest.raises(pytest.xfail.Exception, match="refused: op type 'Abs'"):
            _conformance_test("test_abs", _raises(refusal))(None)
    finally:
        OUTCOMES.pop("test_abs")
        if kept is not None:
            OUTCOMES["test_abs"] = kept


def test_every_node_case_is_collected():
    """One test per node case of the installed onnx, none lost to a filter."""
    collected = {a.removesuffix("_cpu") for a in vars(SUITE.tests) if a.startswith("test_")}
    assert collected == set(SUITE.cases) and len(collected) > 1000


def test_conformance_table_is_current():
    outcomes = {name: OUTCOMES.get(name) or SUITE.outcome(name) for name in sorted(SUITE.cases)}
    table = SUITE.table(outcomes)
    committed = (ROOT / TABLE_PATH).read_text()
    if committed != table:
        diff = "".join(list(difflib.unified_diff(
            committed.splitlines(True), table.splitlines(True), TABLE_PATH, "regenerated"))[:40])
        pytest.fail(f"{TABLE_PATH} is stale: run `{REGENERATE}`\n{diff}")
