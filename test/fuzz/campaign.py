"""Fuzz campaigns: hypothesis draws inputs of one category, the tools run them
in-process, and every finding (see harness.finding) is shrunk by hypothesis
and kept as a regression case (test/fuzz/regressions/<name>.json + input).

Categories:
  opt     mutated MLIR into atvoss-opt (parser/verifier, each pass, --npu-pipeline)
  sim     mutated npu programs into atvoss-sim
  onnx    mutated / structurally invalid ONNX models into atvoss import/compile/run
  target  random --target strings into atvoss-opt --npu-pipeline and atvoss run
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from harness import Outcome, finding, label, run_in_process, signature
import mlir_inputs
import onnx_inputs

REGRESSIONS = Path(__file__).resolve().parent / "regressions"
CATEGORIES = ("opt", "sim", "onnx", "target")


@dataclass
class Case:
    """One tool invocation: `{input}` in args stands for the input file."""
    tool: str
    args: list[str]
    data: bytes
    suffix: str

    def argv(self, path: str) -> list[str]:
        return [path if a == "{input}" else a for a in self.args]


def _target_case(draw_target: str, which: int) -> Case:
    target = f"--target={draw_target}"
    if which == 0:
        text = mlir_inputs.opt_seeds()[0]
        for seed in mlir_inputs.opt_seeds():
            if "linalg.matmul" in seed and "tensor<" in seed:
                text = seed
                break
        return Case("atvoss-opt", ["{input}", "--npu-pipeline", target], text.encode(), ".mlir")
    model = onnx_inputs.seeds()[which % len(onnx_inputs.seeds())]
    return Case("atvoss", ["run", "{input}", "-q", "--report=json", target], model, ".onnx")


def strategy(category: str):
    if category == "opt":
        return mlir_inputs.opt_inputs().map(
            lambda c: Case("atvoss-opt", ["{input}", *c[0]], c[1].encode(), ".mlir"))
    if category == "sim":
        return mlir_inputs.sim_inputs().map(
            lambda c: Case("atvoss-sim", ["{input}", *c[0]], c[1].encode(), ".mlir"))
    if category == "onnx":
        return onnx_inputs.onnx_models().map(
            lambda c: Case("atvoss", [c[0][0], "{input}", *c[0][1:]]
                           + (["-q"] if c[0][0] != "import" else []), c[1], ".onnx"))
    if category == "target":
        return st.builds(_target_case, onnx_inputs.target_strings(), st.integers(0, 3))
    raise ValueError(category)


def execute(case: Case, workdir: str) -> Outcome:
    path = os.path.join(workdir, "input" + case.suffix)
    with open(path, "wb") as stream:
        stream.write(case.data)
    return run_in_process(case.tool, case.argv(path))


@dataclass
class Report:
    category: str
    inputs: int = 0
    outcomes: dict = field(default_factory=dict)      # "ok" / "error" / finding kind -> count
    findings: list = field(default_factory=list)      # (signature, regression name)


class _NewFinding(Exception):
    pass


def run_campaign(category: str, count: int, seed: int = 0, known: set | None = None,
                 save: bool = True, workdir: str | None = None, derandomize: bool = False,
                 current_file: str | None = None) -> Report:
    """Run `count` inputs of `category`; every new finding is shrunk and saved."""
    report = Report(category)
    known = set() if known is None else known
    workdir = workdir or tempfile.mkdtemp(prefix=f"fuzz-{category}-")
    restart = 0
    while report.inputs < count:
        # Every new kind met, with its latest case: a shrink runs variants of
        # the first finding, which may fail in other ways too.
        met = {}

        @settings(max_examples=count - report.inputs, deadline=None, database=None,
                  derandomize=derandomize, suppress_health_check=list(HealthCheck),
                  phases=[Phase.generate, Phase.shrink], print_blob=False)
        @given(strategy(category))
        def body(case):
            if current_file:  # survives a crash of this process
                with open(current_file, "w") as stream:
                    json.dump(case_record(case), stream)
            outcome = execute(case, workdir)
            report.inputs += 1
            kind = finding(outcome)
            outcome_label = label(outcome)
            report.outcomes[outcome_label] = report.outcomes.get(outcome_label, 0) + 1
            if kind:
                key = signature(kind, outcome)
                if key not in known:
                    met[key] = (case, outcome)
                    raise _NewFinding(key)

        if not derandomize:
            body = hypothesis_seed(seed * 1000 + restart)(body)
        restart += 1
        try:
            body()
            break
        except _NewFinding:
            for key, (case, outcome) in met.items():
                known.add(key)
                name = save_regression(case, key, outcome) if save else None
                report.findings.append((key, name))
        if derandomize:
            break  # the same seed would replay the same examples
    return report


def case_record(case: Case) -> dict:
    return {"tool": case.tool, "args": case.args, "suffix": case.suffix,
            "data": case.data.hex()}


def save_regression(case: Case, key: str, outcome: Outcome | None = None) -> str:
    REGRESSIONS.mkdir(exist_ok=True)
    digest = hashlib.sha1(case.data + " ".join(case.args).encode()).hexdigest()[:10]
    name = f"{case.tool}-{digest}"
    (REGRESSIONS / f"{name}{case.suffix}").write_bytes(case.data)
    meta = {"tool": case.tool, "args": case.args, "input": f"{name}{case.suffix}",
            "finding": key}
    if outcome is not None:
        meta["stderr"] = outcome.stderr[-2000:]
    (REGRESSIONS / f"{name}.json").write_text(json.dumps(meta, indent=2) + "\n")
    return name


def regression_cases() -> list[tuple[str, Case]]:
    cases = []
    for meta_path in sorted(REGRESSIONS.glob("*.json")):
        meta = json.loads(meta_path.read_text())
        data = (REGRESSIONS / meta["input"]).read_bytes()
        suffix = os.path.splitext(meta["input"])[1]
        cases.append((meta_path.stem, Case(meta["tool"], meta["args"], data, suffix)))
    return cases
