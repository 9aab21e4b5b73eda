"""ONNX's node conformance cases through atvoss_mlir.compile(...).run(...).

Each tensor-only case of `onnx.backend.test.case.node` (model + inputs +
expected outputs, generated in memory by the installed onnx) is compiled for
the default NPU target and simulated; the outputs are compared like
onnx's BackendTest does (same shape and dtype, allclose with the case's rtol
and atol, 1e-3 and 1e-7 unless the case sets its own).

Graph inputs that feed a shape-deciding input of a node (an input whose
ONNX schema only admits integer types, other than the output's type: shape,
axes, pads, indices, repeats, k, ...; and Resize's roi and scales,
Upsample's scales) are bound as
initializers from the case's data, as an ahead-of-time compiler must bind
them.

Outcomes: pass, refused (a DiagnosticError: a located refusal), wrong (a
result that differs), crash (any other exception). Refusals are grouped by
the reason with names and numbers taken out.

    python bench/onnx_node_cases.py                 # summary
    python bench/onnx_node_cases.py -k resize -v    # cases whose name contains 'resize'
    python bench/onnx_node_cases.py --json out.json # every case's outcome
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

import atvoss_mlir
from atvoss_mlir.diagnostics import DiagnosticError

_INTEGER_TYPES = {"tensor(int64)", "tensor(int32)", "tensor(int16)", "tensor(int8)",
                  "tensor(uint64)", "tensor(uint32)", "tensor(uint16)", "tensor(uint8)"}


def node_cases():
    from onnx.backend.test.loader import load_node_model_tests
    for case in load_node_model_tests():
        arrays = [a for inputs, outputs in case.data_sets for a in list(inputs) + list(outputs)]
        if all(isinstance(a, np.ndarray) for a in arrays):
            yield case


# Floating-point inputs that decide output shapes as well.
_FLOAT_SHAPE_INPUTS = {("Resize", 1), ("Resize", 2), ("Upsample", 1)}


def _shape_deciding(node: onnx.NodeProto, index: int, opset: int) -> bool:
    """Whether input `index` of `node` only admits integer types in its
    schema and is not of the output's type parameter, or is one of the
    floating-point inputs that decide shapes."""
    if (node.op_type, index) in _FLOAT_SHAPE_INPUTS:
        return True
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, node.domain or "")
    except Exception:  # noqa: BLE001 - unknown op: nothing to bind
        return False
    formals = schema.inputs
    if not formals:
        return False
    formal = formals[min(index, len(formals) - 1)]
    if formal.type_str in {o.type_str for o in schema.outputs}:
        return False  # data of the output's type (bitwise ops, BitShift, Add on ints)
    allowed = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    types = allowed.get(formal.type_str, {formal.type_str})
    return bool(types) and types <= _INTEGER_TYPES


def bound_model(case) -> tuple[onnx.ModelProto, dict]:
    """The case's model with shape-deciding integer inputs made initializers,
    and the remaining feeds."""
    model = onnx.ModelProto.FromString(case.model.SerializeToString())
    inputs = case.data_sets[0][0]
    names = [i.name for i in model.graph.input]
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 1)
    bind = set()
    for node in model.graph.node:
        for index, name in enumerate(node.input):
            if name in names and _shape_deciding(node, index, opset):
                bind.add(name)
    feeds = {}
    for info, array in zip(list(model.graph.input), inputs):
        if info.name in bind and np.asarray(array).dtype.kind in "iuf":
            model.graph.initializer.append(numpy_helper.from_array(np.asarray(array), info.name))
            model.graph.input.remove(info)
        else:
            feeds[info.name] = array
    return model, feeds


def run_case(case) -> tuple[str, str]:
    """(outcome, detail) of one case."""
    model, feeds = bound_model(case)
    expected = case.data_sets[0][1]
    try:
        compiled = atvoss_mlir.compile(model)
        outputs = list(compiled.run(feeds).values())
    except DiagnosticError as error:
        return "refused", str(error).strip().splitlines()[0] if str(error).strip() else "?"
    except Exception as error:  # noqa: BLE001 - what the bench counts
        return "crash", f"{type(error).__name__}: {error}"
    if len(outputs) != len(expected):
        return "wrong", f"{len(outputs)} outputs, expected {len(expected)}"
    for index, (got, want) in enumerate(zip(outputs, expected)):
        got = np.asarray(got)
        if got.shape != want.shape:
            return "wrong", f"output {index}: shape {got.shape}, expected {want.shape}"
        if got.dtype != want.dtype:
            return "wrong", f"output {index}: dtype {got.dtype}, expected {want.dtype}"
        try:
            if want.dtype == object:
                np.testing.assert_array_equal(got, want)
            else:
                np.testing.assert_allclose(got, want, rtol=case.rtol, atol=case.atol)
        except AssertionError as error:
            lines = [line for line in str(error).splitlines() if "Max" in line]
            return "wrong", f"output {index}: " + "; ".join(lines)
    return "pass", ""


def _reason_key(detail: str) -> str:
    """A refusal's message without the node's name, numbers and shapes."""
    text = re.sub(r"^.*?: error: ", "", detail)
    text = re.sub(r"node '[^']*'", "node", text)
    text = re.sub(r"'[^']*'", "'_'", text) if "op type" not in text else text
    text = re.sub(r"\[[^\]]*\]", "[..]", text)
    return re.sub(r"\d+", "N", text)[:150]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", help="only cases whose name contains this")
    parser.add_argument("-v", action="store_true", help="print every case")
    parser.add_argument("--json", help="write every case's outcome to this file")
    parser.add_argument("--top", type=int, default=40, help="refusal groups to print")
    options = parser.parse_args(argv)
    results, started = {}, time.perf_counter()
    for case in node_cases():
        if options.k and options.k not in case.name:
            continue
        op_type = case.model.graph.node[0].op_type if case.model.graph.node else "?"
        began = time.perf_counter()
        outcome, detail = run_case(case)
        results[case.name] = {"op": op_type, "outcome": outcome, "detail": detail,
                              "seconds": round(time.perf_counter() - began, 3)}
        if options.v:
            print(f"{outcome:8} {case.name}: {detail}", flush=True)
    counts = collections.Counter(r["outcome"] for r in results.values())
    print(f"{len(results)} cases in {time.perf_counter() - started:.0f} s: "
          + ", ".join(f"{k} {counts[k]}" for k in ("pass", "refused", "wrong", "crash")))
    for outcome in ("wrong", "crash"):
        for name, r in results.items():
            if r["outcome"] == outcome:
                print(f"  {outcome}: {name}: {r['detail'][:200]}")
    groups = collections.defaultdict(list)
    for name, r in results.items():
        if r["outcome"] == "refused":
            groups[_reason_key(r["detail"])].append(name)
    print("refusal groups:")
    for reason, names in sorted(groups.items(), key=lambda g: -len(g[1]))[:options.top]:
        print(f"  {len(names):4}  {reason}   (e.g. {names[0]})")
    by_op = collections.Counter(r["op"] for r in results.values() if r["outcome"] == "refused")
    print("refusals by op: " + ", ".join(f"{op} {n}" for op, n in by_op.most_common(60)))
    if options.json:
        with open(options.json, "w") as stream:
            json.dump(results, stream, indent=1, sort_keys=True)
    return 0 if counts["wrong"] == 0 and counts["crash"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
