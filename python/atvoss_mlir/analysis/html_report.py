"""The self-contained HTML page of `atvoss profile`.

`render_html(profile)` turns the profile dict into one HTML file that needs no
network to view: the plots are inline SVG drawn by matplotlib (text as paths,
so no fonts either), the sortable node table is plain HTML with a few lines of
inline JavaScript. Every string taken from the profile is HTML-escaped: node
names, locations and remarks come from user models.

The page: a header of whole-program figures, a roofline plot of the nodes, the
SRAM occupancy over time, one timeline row per engine, and the node table.
"""

from __future__ import annotations

import html
import io
import re
import zlib

# Figures are made as matplotlib.figure.Figure, without pyplot: no display
# backend and no global figure state (nothing to close), and importing this
# module leaves the backend of a process that also plots interactively alone.
import matplotlib
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

__all__ = ["render_html"]

# A fixed salt makes matplotlib's SVG ids, hence the page, the same on every run.
_RC = {"svg.hashsalt": "atvoss-profile", "svg.fonttype": "path", "font.size": 9}

_BOUND_COLORS = {
    "compute": "#1f77b4",
    "dma-bandwidth": "#ff7f0e",
    "dma-setup": "#8c564b",
    "pipeline": "#9467bd",
    "fallback": "#d62728",
    "idle": "#7f7f7f",
    "hidden": "#c7c7c7",
}
_OTHER_COLOR = "#17becf"
# tab20's strong colours, then its light ones: neighbours in the list differ in hue.
_TAB20 = [to_hex(c) for c in matplotlib.colormaps["tab20"].colors]
_NODE_PALETTE = _TAB20[0::2] + _TAB20[1::2]

_TOP = 5


def render_html(profile: dict) -> str:
    """The profile as a complete, self-contained HTML page."""
    nodes = profile.get("nodes") or []
    by_name = {n["node"]: n for n in nodes}
    colors = _node_colors(nodes)
    top = list(profile.get("top_nodes") or [])[:_TOP]
    source = profile.get("source") or profile.get("entry") or "program"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>atvoss profile: {_esc(source)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>atvoss profile: {_esc(source)}</h1>",
        _header(profile, top, by_name),
        "<h2>Roofline</h2>",
        _figure("roofline", _roofline_svg(profile, nodes, top),
                "Each node at its operational intensity (MACs per DRAM byte) and achieved "
                "MACs per cycle, under the compute and DRAM-bandwidth roofs; colour: what "
                "bounds it."),
        "<h2>SRAM occupancy</h2>",
        _figure("sram", _sram_svg(profile),
                "Live SRAM bytes over the run, against the capacity."),
        "<h2>Engines</h2>",
        _figure("engines", _engines_svg(profile, top, colors),
                "When each engine is busy, coloured by node (the table's swatches)."),
        "<h2>Nodes</h2>",
        '<p class="note">Program order; click a column header to sort, again to reverse. '
        "Open a node to see its NPU ops.</p>",
        _table(nodes, colors),
        f"<script>{_SCRIPT}</script>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


# -- formatting --------------------------------------------------------------------------

def _esc(value) -> str:
    return html.escape(str(value), quote=True)


def _int(n) -> str:
    return "–" if n is None else f"{int(n):,}"


def _bytes(n) -> str:
    if n is None:
        return "–"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            break
        n /= 1024
    # Three significant digits, without switching to exponent notation at 1000.
    digits = 0 if unit == "B" or abs(n) >= 100 else 1 if abs(n) >= 10 else 2
    return f"{n:,.{digits}f} {unit}"


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _plain(text: str, limit: int = 40) -> str:
    """A label matplotlib draws literally: `$` would otherwise start mathtext."""
    text = str(text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("$", r"\$")


def _node_colors(nodes: list) -> dict:
    """A colour per node, by program order: consecutive nodes, which sit side by
    side in the engine timelines, always get different colours."""
    return {n["node"]: _NODE_PALETTE[i % len(_NODE_PALETTE)] for i, n in enumerate(nodes)}


def _node_color(colors: dict, name) -> str:
    # A node missing from the node list still gets a stable colour (crc32, unlike
    # hash(), is the same in every run).
    return colors.get(name) or _NODE_PALETTE[zlib.crc32(str(name).encode()) % len(_NODE_PALETTE)]


# -- header ------------------------------------------------------------------------------

def _header(p: dict, top: list, by_name: dict) -> str:
    total = p.get("total_cycles") or 0
    roof = p.get("roofline_cycles")
    ratio = p.get("roofline_ratio")
    read, write = p.get("dram_read_bytes") or 0, p.get("dram_write_bytes") or 0
    compulsory = p.get("compulsory_dram_bytes") or 0
    peak, capacity = p.get("sram_peak_bytes") or 0, p.get("sram_capacity_bytes") or 0
    rows = [
        ("source", _esc(p.get("source", "–"))),
        ("entry", _esc(p.get("entry", "–"))),
        ("target", f"<code>{_esc(p.get('target', '–'))}</code>"),
        ("total cycles", _int(total)),
        ("roofline", f"{_int(roof)} cycles"
         + (f"; the run takes {ratio:.2f}× the roofline" if ratio is not None else "")),
        ("DRAM traffic", f"{_bytes(read)} read + {_bytes(write)} written = {_bytes(read + write)}"
         + (f" ({(read + write) / compulsory:.2f}× the compulsory {_bytes(compulsory)})"
            if compulsory else "")),
        ("SRAM peak", f"{_bytes(peak)} of {_bytes(capacity)}"
         + (f" ({_pct(peak / capacity)})" if capacity else "")),
        ("fallback cycles", _int(p.get("fallback_cycles", 0))),
    ]
    engines = p.get("engines") or {}
    if engines:
        rows.append(("engine utilisation", ", ".join(
            f"{_esc(name)} {_pct(e.get('utilization'))}" for name, e in engines.items())))
    items = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    lost = "".join(
        f"<li>{_esc(name)}"
        + (f" <span class=\"note\">({_int(by_name[name].get('lost_cycles'))} cycles lost)</span>"
           if name in by_name else "")
        + "</li>" for name in top)
    top_html = (f"<h2>Top {len(top)} nodes by lost cycles</h2><ol class=\"top\">{lost}</ol>"
                if top else "")
    return f'<section id="summary"><dl>{items}</dl>{top_html}</section>'


# -- plots -------------------------------------------------------------------------------

def _figure(fig_id: str, svg: str, caption: str) -> str:
    return f'<figure id="{fig_id}">{svg}<figcaption>{_esc(caption)}</figcaption></figure>'


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


def _roofline_svg(p: dict, nodes: list, top: list) -> str:
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
                           c=[_BOUND_COLORS.get(n.get("bound"), _OTHER_COLOR) for n, _, _ in group],
                           alpha=0.85, edgecolors="white", linewidths=0.5, zorder=3)
        # The legend: one entry per bound present (point size is the node's share of cycles).
        bounds = dict.fromkeys(n.get("bound") for n, _, _ in drawn)
        handles = [Line2D([], [], linestyle="", marker="o", markersize=7, label=_plain(b),
                          color=_BOUND_COLORS.get(b, _OTHER_COLOR)) for b in bounds]
        if no_traffic:
            handles.append(Line2D([], [], linestyle="", marker=">", markersize=7, color="#555",
                                  label="no DRAM traffic (at the right edge)"))

        # Alternate label offsets so neighbouring labels overlap less.
        offsets = [(8, 8), (8, -14), (-8, 12), (-8, -16), (10, 0)]
        where = {n["node"]: (x, y) for n, x, y in drawn}
        for i, name in enumerate(n for n in top if n in where):
            dx, dy = offsets[i % len(offsets)]
            ax.annotate(_plain(name), where[name], xytext=(dx, dy), textcoords="offset points",
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


def _sram_svg(p: dict) -> str:
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
                       label=f"capacity {_bytes(capacity)}")
        ax.set_xlim(0, max(total, steps[-1][0] if steps else 0) or 1)
        ax.set_ylim(0, max([capacity] + [b for _, b in steps]) / scale * 1.08 or 1)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="upper right", fontsize=8, framealpha=0.9)
        return _svg(fig, "sram")


def _engines_svg(p: dict, top: list, colors: dict) -> str:
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
            bar_colors = [_node_color(colors, node) for _, _, node in segs]
            # A thin edge in the bar's own colour keeps sub-pixel segments visible.
            ax.broken_barh([(s, f - s) for s, f, _ in segs], (row - 0.38, 0.76),
                           facecolors=bar_colors, edgecolors=bar_colors, linewidth=0.3)
            last = max(last, max(f for _, f, _ in segs))
        ax.set_yticks(range(len(engines)))
        ax.set_yticklabels([
            _plain(e) + (f" ({100 * utilization[e]:.0f}%)" if utilization.get(e) is not None
                         else "") for e in engines])
        ax.set_ylim(len(engines) - 0.5, -0.5)  # first engine on top
        ax.set_xlim(0, max(total, last) or 1)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
        ax.grid(True, axis="x", color="#eee", linewidth=0.6)
        ax.set_axisbelow(True)
        if not any(segments.get(e) for e in engines):
            _message(ax, "no engine activity recorded")
        if top:
            ax.legend(handles=[Patch(color=_node_color(colors, n), label=_plain(n, 30)) for n in top],
                      title=f"top {len(top)} nodes", fontsize=8, title_fontsize=8,
                      loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
        return _svg(fig, "engines")


# -- node table --------------------------------------------------------------------------

# (header, numeric?) in column order; the script sorts by each cell's data-value.
_COLUMNS = [
    ("node", False), ("loc", False), ("cycles", True), ("share (%)", True), ("MACs", True),
    ("matrix util (%)", True), ("DRAM read", True), ("DRAM write", True), ("bytes/MAC", True),
    ("SRAM peak", True), ("transform bytes", True), ("bound", False), ("advice", False),
    ("remarks", True),
]


def _cell(text: str, value, cls: str = "", title: str = "") -> str:
    value = "" if value is None else value
    attrs = f' data-value="{_esc(value)}"'
    if cls:
        attrs += f' class="{cls}"'
    if title:
        attrs += f' title="{_esc(title)}"'
    return f"<td{attrs}>{text}</td>"


def _num(n, text=None) -> str:
    return _cell(_int(n) if text is None else text, n, "num")


def _byte_cell(n) -> str:
    return _cell(_bytes(n), n, "num", f"{_int(n)} bytes" if n is not None else "")


def _ops_table(ops: list) -> str:
    head = "".join(f"<th>{h}</th>" for h in
                   ("op", "loc", "engine", "count", "cycles", "MACs", "DRAM read", "DRAM write"))
    rows = "".join(
        "<tr>"
        f"<td><code>{_esc(o.get('op', ''))}</code></td><td>{_esc(o.get('loc', ''))}</td>"
        f"<td>{_esc(o.get('engine') or '–')}</td>"
        f"<td class=\"num\">{_int(o.get('count'))}</td>"
        f"<td class=\"num\">{_int(o.get('cycles'))}</td>"
        f"<td class=\"num\">{_int(o.get('macs'))}</td>"
        f"<td class=\"num\">{_bytes(o.get('dram_read_bytes'))}</td>"
        f"<td class=\"num\">{_bytes(o.get('dram_write_bytes'))}</td>"
        "</tr>" for o in ops)
    return f'<table class="ops"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def _node_row(index: int, n: dict, colors: dict) -> str:
    name = n.get("node", "")
    swatch = f'<span class="swatch" style="background:{_node_color(colors, name)}"></span>'
    ops = n.get("ops") or []
    if ops:
        label = (f"<details><summary>{swatch}{_esc(name)} "
                 f"<span class=\"note\">({len(ops)} ops)</span></summary>"
                 f"{_ops_table(ops)}</details>")
    else:
        label = f"{swatch}{_esc(name)}"
    bound = n.get("bound", "")
    color = _BOUND_COLORS.get(bound, _OTHER_COLOR)
    advice = n.get("advice") or []
    advice_html = "".join(
        f"<li title=\"{_esc(_advice_title(a))}\">{_esc(a.get('text', ''))}</li>" for a in advice)
    remarks = n.get("remarks") or []
    remarks_html = (
        f"<details><summary>{len(remarks)}</summary><ul>"
        + "".join(f"<li>{_esc(r)}</li>" for r in remarks) + "</ul></details>"
        if remarks else "0")
    bpm = n.get("bytes_per_mac")
    cells = [
        _cell(label, name, "name"),
        _cell(_esc(n.get("loc", "")), n.get("loc", ""), "loc"),
        _num(n.get("cycles")),
        _cell(f"{100 * (n.get('share') or 0):.1f}", n.get("share"), "num"),
        _num(n.get("macs")),
        _cell(f"{100 * (n.get('matrix_utilization') or 0):.1f}", n.get("matrix_utilization"),
              "num"),
        _byte_cell(n.get("dram_read_bytes")),
        _byte_cell(n.get("dram_write_bytes")),
        _cell("–" if bpm is None else f"{bpm:.3g}", bpm, "num"),
        _byte_cell(n.get("sram_peak_bytes")),
        _byte_cell(n.get("transform_bytes")),
        _cell(f'<span class="bound" style="border-color:{color}">{_esc(bound)}</span>', bound,
              title=_time_title(n.get("time") or {})),
        _cell(f"<ul>{advice_html}</ul>" if advice else "", " ".join(
            str(a.get("text", "")) for a in advice), "advice"),
        _cell(remarks_html, len(remarks), "remarks"),
    ]
    return f'<tr data-index="{index}">' + "".join(cells) + "</tr>"


def _advice_title(a: dict) -> str:
    bits = []
    if a.get("knob"):
        bits.append(f"knob: {a['knob']}")
    if a.get("estimated_cycles") is not None:
        bits.append(f"estimated cycles: {a['estimated_cycles']:,}")
    return "; ".join(bits)


def _time_title(time: dict) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in time.items() if v)


def _table(nodes: list, colors: dict) -> str:
    head = "".join(
        f'<th data-type="{"num" if numeric else "text"}" title="sort">{_esc(h)}</th>'
        for h, numeric in _COLUMNS)
    rows = "\n".join(_node_row(i, n, colors) for i, n in enumerate(nodes))
    return (f'<div class="scroll"><table id="nodes"><thead><tr>{head}</tr></thead>\n'
            f"<tbody>\n{rows}\n</tbody></table></div>")


# The sort indicator is CSS (::after), so a header's text stays its column name.
_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
dl { display: grid; grid-template-columns: max-content auto; gap: 0.2em 1em; }
dt { font-weight: 600; } dd { margin: 0; }
code { font-size: 0.92em; }
.note { color: #666; font-size: 0.9em; }
ol.top { margin-top: 0.3em; }
figure { margin: 0.5em 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { color: #666; font-size: 0.9em; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; }
#nodes th, #nodes td { border-bottom: 1px solid #e3e3e3; padding: 0.25em 0.5em;
  vertical-align: top; text-align: left; }
#nodes > thead th { position: sticky; top: 0; background: #f4f4f4; cursor: pointer;
  white-space: nowrap; user-select: none; }
#nodes > thead th[aria-sort="ascending"]::after { content: " ▲"; }
#nodes > thead th[aria-sort="descending"]::after { content: " ▼"; }
#nodes td.num, table.ops td.num { text-align: right; white-space: nowrap; }
#nodes td.name { white-space: nowrap; }
#nodes td.advice { min-width: 18em; } #nodes td.remarks { min-width: 14em; }
#nodes ul { margin: 0; padding-left: 1.1em; }
table.ops { margin: 0.3em 0 0.5em 1em; font-size: 0.9em; }
table.ops th, table.ops td { border-bottom: 1px solid #eee; padding: 0.1em 0.5em; }
.swatch { display: inline-block; width: 0.8em; height: 0.8em; margin-right: 0.35em;
  border-radius: 2px; vertical-align: -0.05em; }
.bound { border-left: 4px solid; padding-left: 0.35em; white-space: nowrap; }
summary { cursor: pointer; }
"""

# Sort the node table by a clicked column: numeric columns by data-value, first
# largest first; text columns alphabetically. Clicking the same header again
# reverses; ties keep program order.
_SCRIPT = """
(function () {
  var table = document.getElementById("nodes");
  var heads = table.tHead.rows[0].cells;
  function key(cell, numeric) {
    var v = cell.getAttribute("data-value");
    if (v === null) v = cell.textContent;
    if (!numeric) return v;
    return v === "" ? -Infinity : Number(v);
  }
  Array.prototype.forEach.call(heads, function (th, col) {
    th.addEventListener("click", function () {
      var numeric = th.getAttribute("data-type") === "num";
      var first = numeric ? "descending" : "ascending";
      var other = numeric ? "ascending" : "descending";
      var order = th.getAttribute("aria-sort") === first ? other : first;
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", order);
      var sign = order === "ascending" ? 1 : -1;
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = key(a.cells[col], numeric), y = key(b.cells[col], numeric);
        var c = numeric ? (x === y ? 0 : (x < y ? -1 : 1)) : x.localeCompare(y);
        return c * sign || a.getAttribute("data-index") - b.getAttribute("data-index");
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
})();
"""
