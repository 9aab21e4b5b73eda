"""`atvoss profile --compare A B`: two profiles of one graph, node by node.

The two sides are the same model under two targets, or two programs. They
must compute the same graph: the same inputs (names, shapes, element types)
and outputs, and nodes in common. A node that one side fused away has 0
cycles there."""

from __future__ import annotations

from ..diagnostics import Diagnostic, DiagnosticError


def graph_signature(compiled) -> tuple:
    inputs = tuple((spec.name, tuple(spec.shape), str(spec.dtype))
                   for spec in compiled.input_specs)
    return inputs, tuple(compiled.output_names)


def check_same_graph(a, b, labels) -> None:
    """Refuse two sides that compute different graphs, naming what differs."""
    (inputs_a, outputs_a), (inputs_b, outputs_b) = graph_signature(a.compiled), \
        graph_signature(b.compiled)
    problem = None
    if inputs_a != inputs_b:
        problem = f"inputs {_describe(inputs_a)} against {_describe(inputs_b)}"
    elif outputs_a != outputs_b:
        problem = f"outputs {list(outputs_a)} against {list(outputs_b)}"
    elif not {n["node"] for n in a.profile["nodes"]} & {n["node"] for n in b.profile["nodes"]}:
        problem = "no node in common"
    if problem:
        raise DiagnosticError([Diagnostic(
            "error", f"the two sides of --compare compute different graphs ({labels[0]} and "
                     f"{labels[1]}): {problem}")])


def _describe(inputs) -> str:
    return "(" + ", ".join(f"{name}: {'x'.join(map(str, shape))} {dtype}"
                           for name, shape, dtype in inputs) + ")"


def _figures(node: dict | None) -> dict:
    if node is None:
        return {"cycles": 0, "dram_bytes": 0, "sram_peak_bytes": 0, "overlap": 0,
                "bound": None}
    return {"cycles": node["cycles"],
            "dram_bytes": node["dram_read_bytes"] + node["dram_write_bytes"],
            "sram_peak_bytes": node["sram_peak_bytes"], "overlap": node["time"]["overlap"],
            "bound": node["bound"]}


def compare_profiles(a: dict, b: dict, labels=("A", "B")) -> dict:
    """Per-node and total deltas, nodes sorted by the size of their cycle change."""
    nodes_a = {n["node"]: n for n in a["nodes"]}
    nodes_b = {n["node"]: n for n in b["nodes"]}
    order = list(nodes_a) + [name for name in nodes_b if name not in nodes_a]
    rows = []
    for name in order:
        fa, fb = _figures(nodes_a.get(name)), _figures(nodes_b.get(name))
        rows.append({"node": name, "a": fa, "b": fb,
                     "delta": {key: fb[key] - fa[key] for key in
                               ("cycles", "dram_bytes", "sram_peak_bytes", "overlap")}})
    rows.sort(key=lambda row: -abs(row["delta"]["cycles"]))

    def total(key, profile):
        if key == "dram_bytes":
            return profile["dram_read_bytes"] + profile["dram_write_bytes"]
        if key == "overlap":
            return sum(n["time"]["overlap"] for n in profile["nodes"])
        return profile["total_cycles" if key == "cycles" else key]
    totals = {key: {"a": total(key, a), "b": total(key, b), "delta": total(key, b) - total(key, a)}
              for key in ("cycles", "dram_bytes", "sram_peak_bytes", "overlap")}
    return {"a": {"label": labels[0], "target": a["target"], "source": a["source"]},
            "b": {"label": labels[1], "target": b["target"], "source": b["source"]},
            "total": totals, "nodes": rows}
