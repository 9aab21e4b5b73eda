"""The profile and the comparison of two profiles as terminal text."""

from __future__ import annotations


def _bytes(n: int) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} B"


def format_profile(profile: dict, *, expand: bool = False, limit: int | None = None) -> str:
    total = profile["total_cycles"]
    ratio = profile["roofline_ratio"]
    dram = profile["dram_read_bytes"] + profile["dram_write_bytes"]
    lines = [
        f"{profile['source']}  ({profile['target']})",
        f"total cycles      {total:>14,}",
        f"roofline cycles   {profile['roofline_cycles']:>14,}   "
        f"(ratio {ratio if ratio is not None else '-'})",
        f"DRAM read+write   {_bytes(dram):>14}   (compulsory "
        f"{_bytes(profile['compulsory_dram_bytes'])})",
        f"SRAM peak         {_bytes(profile['sram_peak_bytes']):>14}   of "
        f"{_bytes(profile['sram_capacity_bytes'])}",
        f"fallback engine   {profile['fallback_cycles']:>14,} cycles",
    ]
    by_name = {node["node"]: node for node in profile["nodes"]}
    if profile["top_nodes"]:
        lines += ["", "top nodes by cycles lost against their roofline:"]
        for name in profile["top_nodes"]:
            node = by_name[name]
            lines.append(f"  {name:<32} {node['lost_cycles']:>12,} lost of "
                         f"{node['cycles']:,} ({node['bound']})")
    lines += ["", f"{'node':<32} {'cycles':>12} {'share':>6} {'MACs':>14} {'util':>5} "
                  f"{'DRAM rd':>10} {'DRAM wr':>10} {'B/MAC':>7} {'SRAM pk':>10} "
                  f"{'transf':>9} {'bound':<13}"]
    nodes = sorted(profile["nodes"], key=lambda n: -n["cycles"])
    for node in nodes[:limit] if limit else nodes:
        per_mac = f"{node['bytes_per_mac']:.3g}" if node["bytes_per_mac"] is not None else "-"
        lines.append(
            f"{node['node'][:32]:<32} {node['cycles']:>12,} {node['share']:>6.1%} "
            f"{node['macs']:>14,} {node['matrix_utilization']:>5.0%} "
            f"{_bytes(node['dram_read_bytes']):>10} {_bytes(node['dram_write_bytes']):>10} "
            f"{per_mac:>7} {_bytes(node['sram_peak_bytes']):>10} "
            f"{_bytes(node['transform_bytes']):>9} {node['bound']:<13}")
        for advice in node["advice"]:
            lines.append(f"    advice: {advice['text']}")
        for remark in node["remarks"] if expand else []:
            lines.append(f"    remark: {remark}")
        for op in node["ops"] if expand else []:
            lines.append(f"    {op['op']:<22} {op['engine'] or '-':<8} x{op['count']:<6,} "
                         f"{op['cycles']:>12,} engine cycles")
    if limit and len(nodes) > limit:
        lines.append(f"... {len(nodes) - limit} more nodes (--all)")
    return "\n".join(lines)


def format_compare(comparison: dict) -> str:
    a, b = comparison["a"], comparison["b"]
    totals = comparison["total"]
    lines = [f"A: {a['label']}", f"B: {b['label']}", "",
             f"{'':<18} {'A':>14} {'B':>14} {'B - A':>14}"]
    for key, label in (("cycles", "total cycles"), ("dram_bytes", "DRAM bytes"),
                       ("sram_peak_bytes", "SRAM peak"), ("overlap", "overlap cycles")):
        t = totals[key]
        lines.append(f"{label:<18} {t['a']:>14,} {t['b']:>14,} {t['delta']:>+14,}")
    lines += ["", f"{'node':<32} {'cycles A':>12} {'cycles B':>12} {'delta':>12} {'%':>7} "
                  f"{'overlap A':>10} {'overlap B':>10} {'DRAM delta':>12} {'SRAM delta':>11}"]
    for row in comparison["nodes"]:
        ca, cb = row["a"]["cycles"], row["b"]["cycles"]
        percent = f"{(cb - ca) / ca:+.1%}" if ca else "-"
        lines.append(
            f"{row['node'][:32]:<32} {ca:>12,} {cb:>12,} {cb - ca:>+12,} {percent:>7} "
            f"{row['a']['overlap']:>10,} {row['b']['overlap']:>10,} "
            f"{row['b']['dram_bytes'] - row['a']['dram_bytes']:>+12,} "
            f"{row['b']['sram_peak_bytes'] - row['a']['sram_peak_bytes']:>+11,}")
    return "\n".join(lines)
