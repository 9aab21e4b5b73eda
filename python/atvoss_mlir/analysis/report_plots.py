"""The plots of the profile report, as inline SVG drawn by matplotlib: the
roofline of the nodes, the SRAM occupancy over time, one timeline row per
engine; and the colours the page gives bounds and nodes.

Figures are matplotlib.figure.Figure, without pyplot: no display backend and
no global figure state (nothing to close), and importing this module leaves
the backend of a process that also plots interactively alone. Text is drawn
as paths, so the SVG needs no fonts.
"""

from __future__ import annotations

import io
import re
import zlib

import matplotlib
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from .report_text import bytes_text, plain_label

# A fixed salt makes matplotlib's SVG ids, hence the page, the same on every run.
_RC = {"svg.hashsalt": "atvoss-profile", "svg.fonttype": "path", "font.size": 9}

BOUND_COLORS = {
    "compute": "#1f77b4",
    "dma-bandwidth": "#ff7f0e",
    "dma-setup": "#8c564b",
    "pipeline": "#9467bd",
    "fallback": "#d62728",
    "idle": "#7f7f7f",
    "hidden": "#c7c7c7",
}
OTHER_COLOR = "#17becf"
# tab20's strong colours, then its light ones: neighbours in the list differ in hue.
_TAB20 = [to_hex(c) for c in matplotlib.colormaps["tab20"].colors]
_NODE_PALETTE = _TAB20[0::2] + _TAB20[1::2]


def node_colors(nodes: list) -> dict:
    """A colour per node, by program order: consecutive nodes, which sit side by
    side in the engine timelines, always get different colours."""
    return {n["node"]: _NODE_PALETTE[i % len(_NODE_PALETTE)] for i, n in enumerate(nodes)}


def node_color(colors: dict, name) -> str:
    # A node missing from the node list still gets a stable colour (crc32, unlike
    # hash(), is the same in every run).
    return colors.get(name) or _NODE_PALETTE[zlib.crc32(str(name).encode()) % len(_NODE_PALETTE)]


def _svg(fig: Figure, prefix: str) -> str:
    """The figure as an <svg> element to inline into HTML.

    The XML prolog, doctype, metadata and namespace declarations go (HTML
    implies the SVG namespace), and every id gets the figure's prefix: several
    SVGs in one page would otherwise share ids such as glyph and clip paths.
    """
    buf = io.StringIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    svg = buf.getvalue()
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", svg)
    svg = re.sub(r'\bid="', f'id="{prefix}-', svg)
    svg = svg.replace('href="#', f'href="#{prefix}-').replace("url(#", f"url(#{prefix}-")
    return svg


def _message(ax, text: str) -> None:
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", color="#555")


def roofline_svg(p: dict, nodes: list, top: list) -> str:
    peak = p.get("peak_macs_per_cycle") or 0
    bandwidth = p.get("dram_bytes_per_cycle") or 0
    ridge = peak / bandwidth if peak and bandwidth else None

    points, no_traffic = [], []  # (node, intensity, MACs per cycle)
    for n in nodes:
        macs, cycles = n.get("macs") or 0, n.get("cycles") or 0
        traffic = (n.get("dram_read_bytes") or 0) + (n.get("dram_write_bytes") or 0)
        if not macs or not cycles:
            continue
        if traffic:
            points.append((n, macs / traffic, macs / cycles))
        else:
            no_traffic.append((n, None, macs / cycles))

    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(9, 5.5))
        ax = fig.add_subplot()
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("operational intensity (MACs per DRAM byte)")
        ax.set_ylabel("achieved MACs per cycle")
        ax.grid(True, which="major", color="#ddd", linewidth=0.6)

        xs = [x for _, x, _ in points] + ([ridge] if ridge else [])
        if xs:
            lo, hi = min(xs) / 4, max(xs) * 4
        else:
            lo, hi = 0.01, 100.0
        if no_traffic:
            hi *= 2  # room at the right edge for the nodes without DRAM traffic
        ax.set_xlim(lo, hi)

        if ridge:
            grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
            ax.plot(grid, [min(peak, x * bandwidth) for x in grid], color="#222", linewidth=1.5,
                    label=f"roof: {peak:,} MACs/cycle, {bandwidth:,} DRAM bytes/cycle")
            ax.axvline(ridge, color="#999", linewidth=0.8, linestyle=":")

        # Nodes with MACs but no DRAM traffic have no finite intensity: they are
        # drawn at the right edge (intensity beyond the plot) as triangles.
        edge = hi / 1.4
        drawn = points + [(n, edge, y) for n, _, y in no_traffic]
        for marker, group in (("o", points), (">", drawn[len(points):])):
            if group:
                ax.scatter([x for _, x, _ in group], [y for _, _, y in group], marker=marker,
                           s=[25 + 400 * (n.get("share") or 0) for n, _, _ in group],
                           c=[BOUND_COLORS.get(n.get("bound"), OTHER_COLOR) for n, _, _ in group],
                           alpha=0.85, edgecolors="white", linewidths=0.5, zorder=3)
        # The legend: one entry per bound present (point size is the node's share of cycles).
        bounds = dict.fromkeys(n.get("bound") for n, _, _ in drawn)
        handles = [Line2D([], [], linestyle="", marker="o", markersize=7, label=plain_label(b),
                          color=BOUND_COLORS.get(b, OTHER_COLOR)) for b in bounds]
        if no_traffic:
            handles.append(Line2D([], [], linestyle="", marker=">", markersize=7, color="#555",
                                  label="no DRAM traffic (at the right edge)"))

        # Alternate label offsets so neighbouring labels overlap less.
        offsets = [(8, 8), (8, -14), (-8, 12), (-8, -16), (10, 0)]
        where = {n["node"]: (x, y) for n, x, y in drawn}
        for i, name in enumerate(n for n in top if n in where):
            dx, dy = offsets[i % len(offsets)]
            ax.annotate(plain_label(name), where[name], xytext=(dx, dy), textcoords="offset points",
                        ha="left" if dx > 0 else "right", fontsize=8,
                        arrowprops={"arrowstyle": "-", "color": "#888", "linewidth": 0.6},
                        bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": "none",
                              "alpha": 0.8})

        # Room above the compute roof, and below the lowest point or the roof's left end.
        ys = [y for _, _, y in drawn] + ([peak] if peak else [])
        if ys:
            low = min(ys + ([lo * bandwidth] if bandwidth else []))
            ax.set_ylim(low / 2, max(ys) * 2)
        if not drawn:
            _message(ax, "no node performs MACs")
        handles = ax.get_legend_handles_labels()[0] + handles
        if handles:
            ax.legend(handles=handles, loc="lower right", fontsize=8, framealpha=0.9)
        return _svg(fig, "roofline")


def _byte_unit(n: float) -> tuple[str, int]:
    """The binary unit for an axis up to n bytes: ticks then fall on round numbers of it."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return unit, scale
    return "B", 1


def sram_svg(p: dict) -> str:
    steps = p.get("sram_occupancy") or []
    capacity = p.get("sram_capacity_bytes") or 0
    total = p.get("total_cycles") or 0
    unit, scale = _byte_unit(max([capacity] + [b for _, b in steps]))
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(12, 3.2))
        ax = fig.add_subplot()
        ax.set_xlabel("cycle")
        ax.set_ylabel(f"live SRAM ({unit})")
        ax.grid(True, color="#eee", linewidth=0.6)
        if steps:
            xs = [c for c, _ in steps]
            ys = [b / scale for _, b in steps]
            if total > xs[-1]:  # hold the last level to the end of the run
                xs.append(total)
                ys.append(ys[-1])
            ax.plot(xs, ys, drawstyle="steps-post", color="#1f77b4", linewidth=1.2,
                    label="live bytes")
            ax.fill_between(xs, ys, step="post", color="#1f77b4", alpha=0.15)
        else:
            _message(ax, "no SRAM occupancy recorded")
        if capacity:
            ax.axhline(capacity / scale, color="#d62728", linestyle="--", linewidth=1,
                       label=f"capacity {bytes_text(capacity)}")
        ax.set_xlim(0, max(total, steps[-1][0] if steps else 0) or 1)
        ax.set_ylim(0, max([capacity] + [b for _, b in steps]) / scale * 1.08 or 1)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper right", fontsize=8, framealpha=0.9)
        return _svg(fig, "sram")


def engines_svg(p: dict, top: list, colors: dict) -> str:
    segments = p.get("segments") or {}
    engines = list(segments) or list(p.get("engines") or {})
    utilization = {k: (v or {}).get("utilization") for k, v in (p.get("engines") or {}).items()}
    total = p.get("total_cycles") or 0
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=(12, 0.45 * max(len(engines), 1) + 1.4))
        ax = fig.add_subplot()
        ax.set_xlabel("cycle")
        last = 0
        for row, engine in enumerate(engines):
            segs = segments.get(engine) or []
            if not segs:
                continue
            bar_colors = [node_color(colors, node) for _, _, node in segs]
            # A thin edge in the bar's own colour keeps sub-pixel segments visible.
            ax.broken_barh([(s, f - s) for s, f, _ in segs], (row - 0.38, 0.76),
                           facecolors=bar_colors, edgecolors=bar_colors, linewidth=0.3)
            last = max(last, max(f for _, f, _ in segs))
        ax.set_yticks(range(len(engines)))
        ax.set_yticklabels([
            plain_label(e) + (f" ({100 * utilization[e]:.0f}%)" if utilization.get(e) is not None
                         else "") for e in engines])
        ax.set_ylim(len(engines) - 0.5, -0.5)  # first engine on top
        ax.set_xlim(0, max(total, last) or 1)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.grid(True, axis="x", color="#eee", linewidth=0.6)
        ax.set_axisbelow(True)
        if not any(segments.get(e) for e in engines):
            _message(ax, "no engine activity recorded")
        if top:
            ax.legend(handles=[Patch(color=node_color(colors, n), label=plain_label(n, 30))
                               for n in top],
                      title=f"top {len(top)} nodes", fontsize=8, title_fontsize=8,
                      loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
        return _svg(fig, "engines")
