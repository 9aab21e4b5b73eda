"""Reports of a simulation: the JSON contract, a readable table and a Chrome
trace (one track per engine; opens in Perfetto or chrome://tracing).

JSON contract (version 1; keys are stable):
  version, entry, target, timing_only,
  total_cycles, macs, roofline_cycles, roofline_ratio (total / roofline),
  dram_read_bytes, dram_write_bytes,
  compulsory_dram_bytes (argument and constant bytes read once + results written once),
  sram_peak_bytes, sram_capacity_bytes, sram_occupancy ([cycle, live bytes] steps),
  dram_wait_cycles (cycles DMAs waited for DRAM that other channels' transfers held),
  engines: {name: {busy_cycles, utilization}} for matrix, vector, dma0.., fallback,
  ops: [{op, loc, node, engine, count, cycles, macs, dram_read_bytes, dram_write_bytes,
        transposed_bytes}] aggregated per source location ("file:line:col"), in order
       of first issue; node: the model node (name location) of the op, else its loc;
       transposed_bytes: bytes rearranged by npu.transpose (layout transforms),
  numerics: [{op, loc, kind, dtype, count}]: results that overflowed to inf/nan from
       finite inputs, nonzero results flushed to zero, int8 requantisation
       saturation (numeric_safety.py); empty in timing-only runs.
"""

from __future__ import annotations

import json

from atvoss_mlir.machine_model import roofline_cycles

REPORT_VERSION = 1


def build_report(machine, *, entry: str, total_cycles: int, compulsory_dram_bytes: int) -> dict:
    target = machine.target
    roofline = roofline_cycles(machine.macs, machine.int8_macs, compulsory_dram_bytes, target)
    engines = {
        name: {"busy_cycles": busy,
               "utilization": round(busy / total_cycles, 6) if total_cycles else 0.0}
        for name, busy in machine.engine_busy.items()
    }
    ops: dict[tuple, dict] = {}  # ops sharing a source location are one entry
    for info in machine.ops.values():
        stats = ops.setdefault((info.name, info.loc), {
            "op": info.name, "loc": info.loc, "node": info.node, "engine": info.engine,
            "count": 0, "cycles": 0, "macs": 0, "dram_read_bytes": 0, "dram_write_bytes": 0,
            "transposed_bytes": 0})
        stats["count"] += info.count
        stats["cycles"] += info.cycles
        stats["macs"] += info.macs
        stats["dram_read_bytes"] += info.dram_read
        stats["dram_write_bytes"] += info.dram_write
        stats["transposed_bytes"] += info.moved_bytes
    return {
        "version": REPORT_VERSION,
        "entry": entry,
        "target": str(target),
        "timing_only": not machine.numerics,
        "total_cycles": total_cycles,
        "macs": machine.macs,
        "roofline_cycles": roofline,
        "roofline_ratio": round(total_cycles / roofline, 6) if roofline else None,
        "dram_read_bytes": machine.dram_read_bytes,
        "dram_write_bytes": machine.dram_write_bytes,
        "compulsory_dram_bytes": compulsory_dram_bytes,
        "sram_peak_bytes": machine.sram_peak_bytes,
        "sram_capacity_bytes": target.max_sram_bytes,
        "sram_occupancy": machine.sram_occupancy,
        "dram_wait_cycles": machine.dram_wait_cycles,
        "engines": engines,
        "ops": list(ops.values()),
        "numerics": machine.numeric_events.entries(),
    }


def to_json(report: dict) -> str:
    return json.dumps(report, indent=2)


def format_table(report: dict) -> str:
    lines = [
        f"total cycles      {report['total_cycles']:>14,}",
        f"roofline cycles   {report['roofline_cycles']:>14,}   "
        f"(ratio {report['roofline_ratio'] if report['roofline_ratio'] is not None else '-'})",
        f"MACs              {report['macs']:>14,}",
        f"DRAM read / write {report['dram_read_bytes']:>14,} / {report['dram_write_bytes']:,} B"
        f"   (compulsory {report['compulsory_dram_bytes']:,} B)",
        f"SRAM peak         {report['sram_peak_bytes']:>14,} B of "
        f"{report['sram_capacity_bytes']:,} B",
        "",
        f"{'engine':<10} {'busy cycles':>14} {'utilization':>12}",
    ]
    for name, engine in report["engines"].items():
        lines.append(f"{name:<10} {engine['busy_cycles']:>14,} {engine['utilization']:>11.1%}")
    lines += ["", f"{'op':<24} {'location':<28} {'engine':<9} {'count':>7} {'cycles':>12} "
                  f"{'MACs':>14} {'DRAM rd':>12} {'DRAM wr':>12}"]
    for op in sorted(report["ops"], key=lambda o: -o["cycles"]):
        lines.append(f"{op['op']:<24} {op['loc']:<28} {op['engine'] or '-':<9} {op['count']:>7,} "
                     f"{op['cycles']:>12,} {op['macs']:>14,} {op['dram_read_bytes']:>12,} "
                     f"{op['dram_write_bytes']:>12,}")
    if report.get("numerics"):
        from .numeric_safety import warning_lines
        lines += ["", "numerics:"] + [f"  {line}" for line in warning_lines(report["numerics"])]
    return "\n".join(lines)


def chrome_trace(events, engines, target) -> dict:
    """Trace Event Format: one thread (track) per engine, times in microseconds."""
    us_per_cycle = 1.0 / (target.clock_ghz * 1000.0)
    tids = {name: i for i, name in enumerate(engines)}
    trace = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "npu"}}]
    trace += [{"ph": "M", "name": "thread_name", "pid": 0, "tid": tid, "args": {"name": name}}
              for name, tid in tids.items()]
    for e in events:
        trace.append({"ph": "X", "name": e.name, "cat": e.engine, "pid": 0,
                      "tid": tids[e.engine], "ts": e.start * us_per_cycle,
                      "dur": (e.finish - e.start) * us_per_cycle,
                      "args": {"loc": e.loc, "start_cycle": e.start, "cycles": e.finish - e.start}})
    return {"traceEvents": trace, "displayTimeUnit": "ns"}
