"""A seeded, bounded fuzz run of the tools (the long run is fuzz/run_fuzz.py)
and the replay of every stored finding under test/fuzz/regressions/."""

from __future__ import annotations

import resource
import sys
from pathlib import Path

import pytest

FUZZ_DIR = Path(__file__).resolve().parents[2] / "fuzz"
sys.path.insert(0, str(FUZZ_DIR))

import campaign  # noqa: E402
from harness import finding, run_in_process, run_subprocess  # noqa: E402

# Inputs per category: about 40 s in all on one core.
BUDGET = {"opt": 600, "sim": 300, "onnx": 250, "target": 150}


@pytest.fixture
def address_space_limit():
    """A runaway allocation becomes a MemoryError (a finding), not an OOM kill of pytest."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = 12 << 30 if hard == resource.RLIM_INFINITY else min(hard, 12 << 30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    yield
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.mark.parametrize("category", campaign.CATEGORIES)
def test_bounded_fuzz(category, tmp_path, address_space_limit):
    report = campaign.run_campaign(category, BUDGET[category], save=False,
                                   workdir=str(tmp_path), derandomize=True)
    assert report.inputs >= BUDGET[category]
    assert report.findings == [], report.findings
    assert set(report.outcomes) <= {"ok", "error", "raw exception"}, report.outcomes


REGRESSIONS = campaign.regression_cases()


@pytest.mark.parametrize("name,case", REGRESSIONS, ids=[n for n, _ in REGRESSIONS])
def test_regression(name, case, tmp_path, address_space_limit):
    path = tmp_path / f"input{case.suffix}"
    path.write_bytes(case.data)
    outcome = run_in_process(case.tool, case.argv(str(path)))
    assert finding(outcome) is None, outcome.stderr


@pytest.mark.parametrize("name,case", REGRESSIONS[:3], ids=[n for n, _ in REGRESSIONS[:3]])
def test_regression_subprocess(name, case, tmp_path):
    """The same cases in a process of their own: crashes (signals) show here."""
    path = tmp_path / f"input{case.suffix}"
    path.write_bytes(case.data)
    outcome = run_subprocess(case.tool, case.argv(str(path)))
    assert finding(outcome) is None, (outcome.signal, outcome.stderr)


@pytest.mark.parametrize("tool,argv", [
    ("atvoss-opt", ["--target=npu -array-rows=0", "-"]),
    ("atvoss-opt", ["{missing}"]),
    ("atvoss", ["compile", "{missing}"]),
    ("atvoss-sim", ["{garbage}"]),
])
def test_subprocess_errors_are_located(tool, argv, tmp_path):
    garbage = tmp_path / "garbage.mlir"
    garbage.write_bytes(b"\x00\xff func.func @main( {")
    argv = [str(tmp_path / "missing.onnx") if a == "{missing}" else
            str(garbage) if a == "{garbage}" else a for a in argv]
    outcome = run_subprocess(tool, argv)
    assert outcome.status == 1 and finding(outcome) is None, outcome.stderr


def test_harness_judges_outcomes(monkeypatch):
    import harness
    from harness import Outcome
    assert finding(Outcome(0, "", "", 0.1)) is None
    assert finding(Outcome(1, "", "in.mlir:3:7: error: bad\n", 0.1)) is None
    assert finding(Outcome(1, "", "error: no location\n", 0.1)) == "unlocated error"
    assert finding(Outcome(1, "", "<unknown>:0:0: error: internal error in atvoss: KeyError\n",
                           0.1)) == "internal error"
    assert finding(Outcome(1, "", "Traceback (most recent call last):\n", 0.1)) == "traceback"
    assert finding(Outcome(-6, "", "", 0.1, signal=6)) == "crash"

    def sleeper(argv):
        import time
        time.sleep(5)
        return 0
    monkeypatch.setattr(harness, "_tool_main", lambda tool: sleeper)
    outcome = run_in_process("atvoss-opt", [], time_limit=0.2)
    assert finding(outcome) == "hang" and outcome.seconds < 2
