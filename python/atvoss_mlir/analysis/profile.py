"""The profile of `atvoss profile`: the simulator's report plus one entry per
model node (its npu ops rolled up), the bound that limits each node, advice
and the compiler's remarks beside it.

The profile is the simulator's report (sim/report.py, same keys) with these
keys added:
  source, peak_macs_per_cycle, dram_bytes_per_cycle, fallback_cycles,
  nodes: [{node, loc, cycles, share, macs, matrix_utilization, dram_read_bytes,
           dram_write_bytes, bytes_per_mac, sram_peak_bytes, transform_bytes,
           roofline_cycles, lost_cycles, time: {state: cycles}, dma_setup_cycles,
           dma_transfer_cycles (channel cycles of its DMAs), bound,
           advice: [{knob, why, text, estimated_cycles, model_estimated_cycles}],
           remarks: [text], ops: [...]}]
         in program order; the nodes' cycles sum to total_cycles (timeline.py),
  top_nodes: the five nodes that lose the most cycles against their roofline,
  segments: {engine: [[start, finish, node], ...]} busy intervals for pictures.

A node's roofline is max(its MACs at the peak, its DRAM bytes at the
bandwidth): the time its busiest resource needs at full speed.
"""

from __future__ import annotations

from ..diagnostics import location_label
from ..machine_model import peak_macs_per_cycle
from .timeline import attribute, engine_segments

# A node is pipeline-bound when both its compute and its DMA take at least this
# share of its cycles and less than half of the smaller one overlaps the other.
PIPELINE_SHARE = 0.2


def bound_of(time: dict, cycles: int, dma_setup: int = 0, dma_transfer: int = 0) -> str:
    """The bound of a node from the states of its engines over its cycles
    (timeline.STATES): which engine was busy while the others waited. A
    DMA-bound node is setup-bound when its DMAs spend more channel cycles in
    their setup than moving data (`dma_setup`, `dma_transfer`)."""
    if not cycles:
        return "hidden"  # its ops ran entirely while earlier nodes' ops were running
    compute = time["compute"] + time["overlap"]
    dma = time["dma_transfer"] + time["dma_setup"] + time["overlap"]
    if time["fallback"] * 2 >= cycles and time["fallback"]:
        return "fallback"
    if not (compute or dma or time["fallback"]):
        return "idle"
    if min(compute, dma) >= PIPELINE_SHARE * cycles and time["overlap"] * 2 < min(compute, dma):
        return "pipeline"
    if time["fallback"] > max(compute, dma):
        return "fallback"
    if compute >= dma:
        return "compute"
    return "dma-setup" if dma_setup > dma_transfer else "dma-bandwidth"


def node_roofline(macs: int, dram_bytes: int, target) -> int:
    return max(-(-macs // peak_macs_per_cycle(target)),
               -(-dram_bytes // target.dram_bytes_per_cycle))


def remarks_by_node(remarks, source_name: str) -> dict[str, list]:
    """The compiler's remarks keyed as the simulator keys ops: node name, else position."""
    grouped: dict[str, list] = {}
    for remark in remarks:
        position = remark.resolved_position(source_name)
        key = location_label(remark.location) or (str(position) if position else None)
        if key is not None:
            grouped.setdefault(key, []).append(remark)
    return grouped


def build_profile(result, target, remarks=(), source: str = "-") -> dict:
    """The profile of one simulation (`SimResult` with trace events)."""
    report = result.report
    total = report["total_cycles"]
    times = attribute(result.trace_events or [], total, report["sram_occupancy"])
    grouped = remarks_by_node(remarks, source)
    ops_of: dict[str, list] = {}
    for op in report["ops"]:
        ops_of.setdefault(op["node"], []).append(op)
    peak = peak_macs_per_cycle(target)
    nodes = []
    for name, time in times.items():
        ops = ops_of.get(name, [])
        macs = sum(op["macs"] for op in ops)
        read = sum(op["dram_read_bytes"] for op in ops)
        written = sum(op["dram_write_bytes"] for op in ops)
        roofline = node_roofline(macs, read + written, target)
        cycles = time.cycles
        nodes.append({
            "node": name,
            "loc": _node_loc(ops, grouped.get(name, []), source),
            "cycles": cycles,
            "share": round(cycles / total, 6) if total else 0.0,
            "macs": macs,
            "matrix_utilization": round(macs / (cycles * peak), 6) if cycles else 0.0,
            "dram_read_bytes": read,
            "dram_write_bytes": written,
            "bytes_per_mac": round((read + written) / macs, 6) if macs else None,
            "sram_peak_bytes": time.sram_peak_bytes,
            "transform_bytes": sum(op["transposed_bytes"] for op in ops),
            "roofline_cycles": roofline,
            "lost_cycles": max(0, cycles - roofline),
            "time": dict(time.states),
            "dma_setup_cycles": time.dma_setup_cycles,
            "dma_transfer_cycles": time.dma_transfer_cycles,
            "bound": bound_of(time.states, cycles, time.dma_setup_cycles,
                              time.dma_transfer_cycles),
            "advice": [],
            "remarks": [remark.message for remark in grouped.get(name, [])],
            "ops": ops,
        })
    profile = dict(report)
    profile.update({
        "source": source,
        "peak_macs_per_cycle": peak,
        "dram_bytes_per_cycle": target.dram_bytes_per_cycle,
        "fallback_cycles": report["engines"].get("fallback", {}).get("busy_cycles", 0),
        "nodes": nodes,
        "top_nodes": [n["node"] for n in sorted(nodes, key=lambda n: -n["lost_cycles"])[:5]
                      if n["lost_cycles"] > 0],
        "segments": engine_segments(result.trace_events or [], result.engines, total),
    })
    return profile


def _node_loc(ops, remarks, source: str) -> str:
    """The node's position in the model: its first op's, else its first remark's."""
    if ops:
        return ops[0]["loc"]
    for remark in remarks:
        position = remark.resolved_position(source)
        if position:
            return str(position)
    return "unknown"


def estimated_cycles_by_node(remarks, source: str) -> dict[str, int]:
    """The cost model's cycles per node: the sum of its tiled ops' estimates
    (npu-tile's remarks carry them)."""
    totals: dict[str, int] = {}
    for key, items in remarks_by_node(remarks, source).items():
        figures = [r.facts["estimated_cycles"] for r in items if "estimated_cycles" in r.facts]
        if figures:
            totals[key] = sum(figures)
    return totals

