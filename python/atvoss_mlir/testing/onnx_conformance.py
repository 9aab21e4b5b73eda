"""ONNX's node conformance cases (`onnx.backend.test`) on the atvoss ONNX
backend: which cases are out of scope by design (one reason each, in
`EXCLUSIONS`), how a run is classified, and the conformance table
(docs/onnx-conformance.md) built from the outcomes.

Used by test/py/test_onnx_conformance.py (under pytest, through
`onnx.backend.test.BackendTest`) and bench/onnx_conformance.py (writes the
table). Outcomes:

- pass: every output matches ONNX's expected values within the case's tolerance;
- refused: the compiler or the input check stopped with an error diagnostic
  (a `DiagnosticError`), not an internal error;
- wrong: an output differs (value, shape or element type);
- crash: anything else, including an "internal error" diagnostic.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Callable

import onnx

from ..diagnostics import DiagnosticError
from ..onnx_backend import shape_deciding_inputs

TABLE_PATH = "docs/onnx-conformance.md"
REGENERATE = "python bench/onnx_conformance.py"

_SEQUENCE_OPS = {"SequenceConstruct", "SequenceAt", "SequenceEmpty", "SequenceErase",
                 "SequenceInsert", "SequenceLength", "SequenceMap", "SplitToSequence",
                 "ConcatFromSequence", "Optional", "OptionalGetElement", "OptionalHasElement"}
_STRING_OPS = {"StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch",
               "TfIdfVectorizer"}
_RANDOM_OPS = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
               "Bernoulli", "Multinomial"}
_DATA_DEPENDENT_OPS = {"NonZero", "Unique", "NonMaxSuppression"}
_NUMBER_FORMATS = {"BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
                   "FLOAT8E8M0", "FLOAT4E2M1", "INT4", "UINT4", "INT2", "UINT2", "COMPLEX64",
                   "COMPLEX128"}


def _nodes(graph: onnx.GraphProto):
    """Every node, also those of subgraphs (If, Loop, Scan bodies)."""
    for node in graph.node:
        yield node
        for attribute in node.attribute:
            if attribute.g.node:
                yield from _nodes(attribute.g)
            for subgraph in attribute.graphs:
                yield from _nodes(subgraph)


def _value_types(model: onnx.ModelProto):
    graph = model.graph
    for info in list(graph.input) + list(graph.output) + list(graph.value_info):
        yield info.type


def _element_names(model: onnx.ModelProto) -> set[str]:
    names = set()
    for type_ in _value_types(model):
        if type_.HasField("tensor_type"):
            names.add(onnx.TensorProto.DataType.Name(type_.tensor_type.elem_type))
    for initializer in model.graph.initializer:
        names.add(onnx.TensorProto.DataType.Name(initializer.data_type))
    for node in _nodes(model.graph):
        for attribute in node.attribute:
            if attribute.name in ("to", "dtype", "output_dtype") and attribute.type == \
                    onnx.AttributeProto.INT:
                names.add(onnx.TensorProto.DataType.Name(attribute.i))
            if attribute.type == onnx.AttributeProto.TENSOR:
                names.add(onnx.TensorProto.DataType.Name(attribute.t.data_type))
    return names


def _op_types(model: onnx.ModelProto) -> set[str]:
    return {node.op_type for node in _nodes(model.graph)}


def _has_sequences(model) -> bool:
    kinds = {t.WhichOneof("value") for t in _value_types(model)}
    return bool(kinds & {"sequence_type", "optional_type", "map_type"}) or \
        bool(_op_types(model) & _SEQUENCE_OPS)


def _has_strings(model) -> bool:
    return "STRING" in _element_names(model) or bool(_op_types(model) & _STRING_OPS)


def _is_training(model) -> bool:
    for node in _nodes(model.graph):
        if node.domain == "ai.onnx.preview.training":
            return True
        if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2]:
            return True  # training_mode given
        if node.op_type == "BatchNormalization" and any(
                a.name == "training_mode" and a.i for a in node.attribute):
            return True
    return False


def _other_domain(model) -> bool:
    return any(n.domain not in ("", "ai.onnx", "ai.onnx.preview.training")
               for n in _nodes(model.graph))


def _dynamic_input(model) -> bool:
    return any(not d.HasField("dim_value") for i in model.graph.input
               if i.type.HasField("tensor_type") for d in i.type.tensor_type.shape.dim)


@dataclass(frozen=True)
class Exclusion:
    reason: str
    applies: Callable[[onnx.ModelProto], bool]


# Cases the backend refuses by design, each with its one reason (the first that applies).
EXCLUSIONS = [
    Exclusion("sequences, optionals or maps: the NPU program takes and gives tensors",
              _has_sequences),
    Exclusion("strings: no string tensors on the NPU", _has_strings),
    Exclusion("training: optimizers and training-mode Dropout/BatchNormalization",
              _is_training),
    Exclusion("another domain (ai.onnx.ml, ai.onnx.preview): the backend reads ai.onnx ops",
              _other_domain),
    Exclusion("number format the NPU and its simulator have no form of (bf16, float8, "
              "float4, int4, int2, complex)", lambda m: bool(_element_names(m) & _NUMBER_FORMATS)),
    Exclusion("random numbers: the expected values come from another generator",
              lambda m: bool(_op_types(m) & _RANDOM_OPS)),
    Exclusion("data-dependent output shape (NonZero, Unique, NonMaxSuppression): dynamic "
              "after binding", lambda m: bool(_op_types(m) & _DATA_DEPENDENT_OPS)),
    Exclusion("dynamic input dimensions", _dynamic_input),
]


# Cases whose expected values are not the exactly rounded result: ONNX's
# reference computes fp16 attention step by step in fp16 numpy, 1-2 ulp from
# the softmax rounded once from f32 that this backend (and onnxruntime) give;
# two of 192 elements fall just outside rtol 1e-3.
FP16_STEPWISE_REFERENCE = ("expected values rounded to fp16 at every step (the backend rounds "
                           "fp16 softmax once from f32, as onnxruntime does: 2 ulp apart)")
EXCLUDED_CASES = {
    "test_attention_4d_causal_fp16": FP16_STEPWISE_REFERENCE,
    "test_attention_4d_causal_fp16_expanded": FP16_STEPWISE_REFERENCE,
}


def exclusion_reason(model: onnx.ModelProto, name: str | None = None) -> str | None:
    if name in EXCLUDED_CASES:
        return EXCLUDED_CASES[name]
    for exclusion in EXCLUSIONS:
        if exclusion.applies(model):
            return exclusion.reason
    return None


@dataclass(frozen=True)
class Outcome:
    status: str        # pass, refused, wrong, crash, excluded
    reason: str = ""   # for refused/excluded: why; for wrong/crash: what happened
    bound: bool = False  # some inputs were bound as constants (shape-deciding inputs)


def reason_of(error: DiagnosticError) -> str:
    """The first error's message without node names or numbers specific to the case."""
    errors = [d for d in error.diagnostics if d.severity == "error"] or error.diagnostics
    message = errors[0].message.splitlines()[0] if errors else "error"
    message = re.sub(r"node '[^']*':? ?", "", message)
    message = re.sub(r"(graph )?input '[^']*'", "an input", message)
    message = re.sub(r"\(([A-Za-z]+), opset \d+\): ", "", message)
    message = re.sub(r"\[[-\d, ?]*\]|\d+", "N", message)
    return message[:120]


def _mismatch(message: str) -> str:
    """numpy's assertion message in one line: what differs and by how much."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    kept = [line for line in lines if line.startswith(("Mismatched elements", "Max absolute"))]
    return " ".join((lines[:1] + kept) if lines else ["outputs differ"])[:200]


def classify(run: Callable[[], None], model: onnx.ModelProto) -> Outcome:
    """Run one case (`run` raises on a mismatch, as BackendTest's test functions do)."""
    bound = bool(shape_deciding_inputs(model))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run()
    except DiagnosticError as error:
        reason = reason_of(error)
        if reason.startswith("internal error"):
            return Outcome("crash", str(error).splitlines()[0][:300], bound)
        return Outcome("refused", reason, bound)
    except AssertionError as error:
        return Outcome("wrong", _mismatch(str(error)), bound)
    except Exception as error:  # noqa: BLE001 - a crash is an outcome here
        return Outcome("crash", f"{type(error).__name__}: {error}"[:300], bound)
    return Outcome("pass", "", bound)


class NodeSuite:
    """ONNX's node cases as `onnx.backend.test.BackendTest` builds them for a
    backend: `tests` is its unittest class of node cases (`test_<case>_cpu`),
    `cases` the cases by name, `outcome(name)` runs one and classifies it."""

    def __init__(self, backend, module_name: str | None = None):
        from onnx.backend.test import BackendTest
        from onnx.backend.test.loader import load_model_tests
        with warnings.catch_warnings():  # the case generators overflow casts on purpose
            warnings.simplefilter("ignore")
            self.runner = BackendTest(backend, module_name)
            self.cases = {case.name: case for case in load_model_tests(kind="node")}
        self.tests = self.runner.test_cases["OnnxBackendNodeModelTest"]
        self.groups = op_groups(self.cases.values())

    def function(self, name: str) -> Callable:
        """BackendTest's test function of the case on the CPU device."""
        return getattr(self.tests, f"{name}_cpu")

    def outcome(self, name: str, function: Callable | None = None, test=None) -> Outcome:
        model = self.cases[name].model
        reason = exclusion_reason(model, name)
        if reason is not None:
            return Outcome("excluded", reason)
        function = function or self.function(name)
        return classify(lambda: function(test), model)

    def table(self, outcomes: dict[str, Outcome]) -> str:
        return render_table(outcomes, self.groups, onnx.__version__)


# -- the table ---------------------------------------------------------------------------

def _schema_names() -> dict[str, str]:
    """Op types of the default domain by their name in test names (lower case,
    no underscores: `test_reduce_max_...` and `test_maxpool_...` both match)."""
    return {schema.name.lower(): schema.name for schema in onnx.defs.get_all_schemas()
            if schema.domain == ""}


def op_groups(cases) -> dict[str, str]:
    """The row of each case (by name) in the table: its op type; the cases
    that run an op's function body (`_expanded`) get a row of their own."""
    names = _schema_names()

    def direct(case) -> str:
        nodes = list(case.model.graph.node)
        if len(nodes) == 1:
            return nodes[0].op_type
        squeezed = case.name.removeprefix("test_").replace("_", "")
        matches = [key for key in names if squeezed.startswith(key)]
        return names[max(matches, key=len)] if matches else "(graphs of several ops)"

    by_name = {case.name: case for case in cases}
    groups = {}
    for case in cases:
        base = re.sub(r"_expanded(_ver\d+)?$", "", case.name)
        if base != case.name:
            groups[case.name] = f"{direct(by_name.get(base, case))} (function body)"
        else:
            groups[case.name] = direct(case)
    return groups


def _reasons(counter: Counter) -> str:
    return "; ".join(f"{reason} ({count})" if count > 1 else reason
                     for reason, count in sorted(counter.items(), key=lambda i: (-i[1], i[0])))


def _escape(text: str) -> str:
    return text.replace("|", "\\|")


def render_table(outcomes: dict[str, Outcome], groups: dict[str, str], onnx_version: str
                 ) -> str:
    """docs/onnx-conformance.md from the outcome of every node case."""
    totals = Counter(o.status for o in outcomes.values())
    bound = sum(o.status == "pass" and o.bound for o in outcomes.values())
    excluded = Counter(o.reason for o in outcomes.values() if o.status == "excluded")
    rows: dict[str, list[Outcome]] = defaultdict(list)
    for name, outcome in outcomes.items():
        rows[groups[name]].append(outcome)
    tensor_cases = len(outcomes) - totals["excluded"]
    lines = [
        "# ONNX conformance",
        "",
        f"ONNX's node test cases (`onnx.backend.test`, onnx {onnx_version}) on the atvoss",
        "ONNX backend (`atvoss_mlir.onnx_backend`, default NPU target, simulated). Generated by",
        f"`{REGENERATE}`; `pytest test/py/test_onnx_conformance.py` runs the same",
        "cases and fails when this file is stale. Do not edit it by hand.",
        "",
        "A case passes when every output matches ONNX's expected values within the case's",
        "tolerance. Refused: the backend stopped with a located error (the reason is its",
        "message, case-specific names and numbers as N). Excluded: out of scope by design,",
        "one reason each (`EXCLUSIONS` in `atvoss_mlir/testing/onnx_conformance.py`).",
        "Inputs that decide shapes are bound from the case's values before compiling",
        "([onnx-backend.md](onnx-backend.md)).",
        "",
        "## Totals",
        "",
        "| outcome | cases |",
        "|---|---:|",
        f"| node cases | {len(outcomes)} |",
        f"| excluded by design | {totals['excluded']} |",
        f"| in scope | {tensor_cases} |",
        f"| pass | {totals['pass']} |",
        f"| pass with inputs bound as constants | {bound} |",
        f"| refused with a located error | {totals['refused']} |",
        f"| wrong result | {totals['wrong']} |",
        f"| crash | {totals['crash']} |",
        "",
        "Excluded, by reason:",
        "",
        "| reason | cases |",
        "|---|---:|",
    ]
    lines += [f"| {_escape(r)} | {n} |" for r, n in sorted(excluded.items(), key=lambda i: -i[1])]
    lines += ["", "## By op type", "",
              "| op type | cases | pass | refused | excluded | wrong or crash | reasons |",
              "|---|---:|---:|---:|---:|---:|---|"]
    for group in sorted(rows, key=str.lower):
        counts = Counter(o.status for o in rows[group])
        reasons = []
        for status in ("wrong", "crash", "refused", "excluded"):
            found = Counter(o.reason for o in rows[group] if o.status == status)
            if found:
                reasons.append(f"{status}: {_reasons(found)}" if status in ("refused", "excluded")
                               else f"{status}: {sum(found.values())}, listed below")
        lines.append(f"| {group} | {len(rows[group])} | {counts['pass']} | {counts['refused']} "
                     f"| {counts['excluded']} | {counts['wrong'] + counts['crash']} | "
                     f"{_escape(' — '.join(reasons))} |")
    failures = sorted((name, o) for name, o in outcomes.items() if o.status in ("wrong", "crash"))
    if failures:
        lines += ["", "## Wrong results and crashes", ""]
        lines += [f"- `{name}` ({o.status}): {_escape(o.reason)}" for name, o in failures]
    return "\n".join(lines) + "\n"
