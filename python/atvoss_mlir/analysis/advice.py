"""Advice per node, from its bound: which target option to change and what
the cost model expects of it, in the spirit of a troubleshooting table.

  bound          symptom                                   knobs tried
  pipeline       compute idles while tiles load and store  -pipeline-stages, -dma-channels
  dma-setup      many small DMAs                           -tile-max, -max-sram-bytes
  dma-bandwidth  DRAM traffic: little reuse, or compulsory -max-sram-bytes, -fusion,
                                                           -layout-pref, -dram-bytes-per-cycle
  compute        the matrix or vector unit                 -dataflow, -array-rows/-cols,
                                                           -vector-lanes
  fallback       the scalar engine                         (none: the remark says what is missing)

A node whose layout transforms (npu.transpose) take a quarter of its cycles
or more is also offered -layout-pref and -fusion.

Each candidate option is estimated by the cost model: the model is compiled
again with that option, and the node's predicted cycles are its measured
cycles scaled by the ratio of the cost model's estimates of its tiled ops
(after / before), so the cost model's own bias cancels. The candidate with
the largest predicted saving is advised; one predicting no saving is not.
Options that are hardware (DMA channels, DRAM bandwidth, SRAM size) say so.
"""

from __future__ import annotations

from ..target import DEFAULT_TARGET, NpuTarget, parse_target

# A candidate must save at least this share of the node's cycles to be advised.
MIN_SAVING = 0.03
TRANSFORM_SHARE = 0.25


def with_option(target: NpuTarget, knob: str) -> NpuTarget:
    return parse_target(f"{target} {knob}")


def candidates(node: dict, target: NpuTarget) -> list[tuple[str, str]]:
    """(knob, why) pairs worth estimating for a node, most specific first."""
    bound = node["bound"]
    found = []
    if bound == "pipeline":
        if target.pipeline_stages < 3:
            found.append((f"-pipeline-stages={target.pipeline_stages + 1}",
                          "compute idles while its tiles load and store: one more SRAM buffer "
                          "per tile overlaps them"))
        if target.dma_channels < 16:
            found.append((f"-dma-channels={min(16, target.dma_channels * 2)}",
                          "loads and stores wait for each other on the DMA channels (hardware)"))
    elif bound == "dma-setup":
        dmas = _dma_count(node)
        moved = node["dram_read_bytes"] + node["dram_write_bytes"]
        small = (f"{dmas:,} DMAs of {moved // max(dmas, 1):,} B on average, each paying "
                 f"{target.dma_setup_cycles} setup cycles")
        found.append((f"-tile-max={target.tile_max * 4}", f"{small}: larger tiles"))
        found.append((f"-max-sram-bytes={target.max_sram_bytes * 2}",
                      f"{small}: larger tiles in a larger SRAM (hardware)"))
    elif bound == "dma-bandwidth":
        if node["macs"]:
            found.append((f"-max-sram-bytes={target.max_sram_bytes * 2}",
                          f"{node['bytes_per_mac']:.3g} DRAM bytes per MAC: tiles too small for "
                          f"reuse; a larger SRAM holds larger tiles (hardware)"))
        if target.tile_max < DEFAULT_TARGET.tile_max:
            found.append((f"-tile-max={DEFAULT_TARGET.tile_max}",
                          "tiles capped below the default size re-read their operands"))
        if target.fusion < 2:
            found.append(("-fusion=2", "intermediate tensors go through DRAM: fusion keeps "
                                       "them in SRAM"))
        found.append((f"-dram-bytes-per-cycle={target.dram_bytes_per_cycle * 2}",
                      "its DRAM traffic is what it waits for (hardware)"))
    elif bound == "compute":
        if target.dataflow != "auto":
            found.append(("-dataflow=auto", f"the matrix unit runs '{target.dataflow}' on "
                                            f"every op: the cheaper dataflow per op"))
        if node["macs"]:
            found.append((f"-array-rows={target.array_rows * 2} "
                          f"-array-cols={target.array_cols * 2}",
                          f"the matrix unit is busy ({node['matrix_utilization']:.0%} of its "
                          f"peak): a larger systolic array (hardware)"))
        else:
            found.append((f"-vector-lanes={target.vector_lanes * 2}",
                          "the vector unit is busy: more lanes (hardware)"))
    if node["transform_bytes"] and _transform_share(node) >= TRANSFORM_SHARE:
        if target.layout_pref == "NCHW":
            found.append(("-layout-pref=NHWC", "layout transforms dominate: tensors between "
                                               "layers in the layout the convs want"))
        if target.fusion == 0:
            found.append(("-fusion=1", "layout transforms dominate: folds them into the "
                                       "neighbouring elementwise ops"))
    return found


def _dma_count(node: dict) -> int:
    return sum(op["count"] for op in node["ops"] if op["op"].startswith("npu.dma_"))


def _transform_share(node: dict) -> float:
    cycles = sum(op["cycles"] for op in node["ops"] if op["op"] == "npu.transpose")
    return cycles / node["cycles"] if node["cycles"] else 0.0


def advise(profile: dict, target: NpuTarget, estimate=None, base_estimates=None) -> None:
    """Fill each node's "advice". `estimate(target)` returns the cost model's
    cycles per node for another target (None when the program cannot be
    compiled again); `base_estimates` are the current target's."""
    wanted = {node["node"]: candidates(node, target) for node in profile["nodes"]}
    cache: dict[str, dict] = {}

    def estimates_for(knob):
        if knob not in cache:
            cache[knob] = estimate(with_option(target, knob)) if estimate else {}
        return cache[knob]

    def model_cycles(knob) -> int | None:
        """The whole model under the option: every node scaled as above (the
        option is global), nodes without estimates as they are."""
        after, before = estimates_for(knob), base_estimates or {}
        if not after:
            return None
        return sum(round(n["cycles"] * after[n["node"]] / before[n["node"]])
                   if before.get(n["node"]) and n["node"] in after else n["cycles"]
                   for n in profile["nodes"])

    for node in profile["nodes"]:
        advice = []
        for knob, why in wanted[node["node"]]:
            before = (base_estimates or {}).get(node["node"])
            after = estimates_for(knob).get(node["node"]) if before else None
            predicted = (round(node["cycles"] * after / before)
                         if before and after is not None else None)
            if predicted is not None and node["cycles"] - predicted < MIN_SAVING * node["cycles"]:
                continue  # the cost model expects nothing of it
            model = model_cycles(knob) if predicted is not None else None
            advice.append({"knob": knob, "why": why, "estimated_cycles": predicted,
                           "model_estimated_cycles": model,
                           "text": _text(knob, why, node["cycles"], predicted, model,
                                         profile["total_cycles"])})
        advice.sort(key=lambda a: a["estimated_cycles"] if a["estimated_cycles"] is not None
                    else node["cycles"])
        if node["bound"] == "fallback":
            advice.append({"knob": None, "why": "", "estimated_cycles": None,
                           "model_estimated_cycles": None, "text": _fallback_text(node)})
        elif not advice and wanted[node["node"]]:
            tried = ", ".join(knob for knob, _ in wanted[node["node"]])
            advice.append({"knob": None, "why": "", "estimated_cycles": None,
                           "model_estimated_cycles": None,
                           "text": f"{node['bound']}-bound; the cost model expects less than "
                                   f"{MIN_SAVING:.0%} from {tried}"})
        node["advice"] = advice[:2]


def _text(knob: str, why: str, cycles: int, predicted: int | None, model: int | None,
          total: int) -> str:
    if predicted is None:
        return f"{knob}: {why} (no estimate: the cost model has none for this node)"
    text = (f"{knob}: {why}; the cost model expects {predicted:,} cycles instead of "
            f"{cycles:,} ({(cycles - predicted) / cycles:.0%} fewer)")
    if model is not None and total:
        text += f", the whole model {(model - total) / total:+.1%}"
    return text


def _fallback_text(node: dict) -> str:
    reasons = [r for r in node["remarks"] if "fallback" in r]
    reason = f": {reasons[0]}" if reasons else ""
    return f"runs on the scalar fallback engine{reason}"
