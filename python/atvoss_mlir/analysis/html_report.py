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

from .report_plots import engines_svg, node_colors, roofline_svg, sram_svg
from .report_table import SORT_SCRIPT, node_table
from .report_text import bytes_text, count_text, esc, percent_text

__all__ = ["render_html"]

_TOP = 5


def render_html(profile: dict) -> str:
    """The profile as a complete, self-contained HTML page."""
    nodes = profile.get("nodes") or []
    by_name = {n["node"]: n for n in nodes}
    colors = node_colors(nodes)
    top = list(profile.get("top_nodes") or [])[:_TOP]
    source = profile.get("source") or profile.get("entry") or "program"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>atvoss profile: {esc(source)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>atvoss profile: {esc(source)}</h1>",
        _header(profile, top, by_name),
        "<h2>Roofline</h2>",
        _figure("roofline", roofline_svg(profile, nodes, top),
                "Each node at its operational intensity (MACs per DRAM byte) and achieved "
                "MACs per cycle, under the compute and DRAM-bandwidth roofs; colour: what "
                "bounds it."),
        "<h2>SRAM occupancy</h2>",
        _figure("sram", sram_svg(profile),
                "Live SRAM bytes over the run, against the capacity."),
        "<h2>Engines</h2>",
        _figure("engines", engines_svg(profile, top, colors),
                "When each engine is busy, coloured by node (the table's swatches)."),
        "<h2>Nodes</h2>",
        '<p class="note">Program order; click a column header to sort, again to reverse. '
        "Open a node to see its NPU ops.</p>",
        node_table(nodes, colors),
        f"<script>{SORT_SCRIPT}</script>",
        "</body>",
        "</html>",
    ]
    return "\n".join(parts) + "\n"


def _header(p: dict, top: list, by_name: dict) -> str:
    total = p.get("total_cycles") or 0
    roof = p.get("roofline_cycles")
    ratio = p.get("roofline_ratio")
    read, write = p.get("dram_read_bytes") or 0, p.get("dram_write_bytes") or 0
    compulsory = p.get("compulsory_dram_bytes") or 0
    peak, capacity = p.get("sram_peak_bytes") or 0, p.get("sram_capacity_bytes") or 0
    rows = [
        ("source", esc(p.get("source", "–"))),
        ("entry", esc(p.get("entry", "–"))),
        ("target", f"<code>{esc(p.get('target', '–'))}</code>"),
        ("total cycles", count_text(total)),
        ("roofline", f"{count_text(roof)} cycles"
         + (f"; the run takes {ratio:.2f}× the roofline" if ratio is not None else "")),
        ("DRAM traffic", f"{bytes_text(read)} read + {bytes_text(write)} written = "
                         f"{bytes_text(read + write)}"
         + (f" ({(read + write) / compulsory:.2f}× the compulsory {bytes_text(compulsory)})"
            if compulsory else "")),
        ("SRAM peak", f"{bytes_text(peak)} of {bytes_text(capacity)}"
         + (f" ({percent_text(peak / capacity)})" if capacity else "")),
        ("fallback cycles", count_text(p.get("fallback_cycles", 0))),
    ]
    engines = p.get("engines") or {}
    if engines:
        rows.append(("engine utilisation", ", ".join(
            f"{esc(name)} {percent_text(e.get('utilization'))}" for name, e in engines.items())))
    items = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    lost = "".join(
        f"<li>{esc(name)}"
        + (f" <span class=\"note\">({count_text(by_name[name].get('lost_cycles'))} "
           f"cycles lost)</span>" if name in by_name else "")
        + "</li>" for name in top)
    top_html = (f"<h2>Top {len(top)} nodes by lost cycles</h2><ol class=\"top\">{lost}</ol>"
                if top else "")
    return f'<section id="summary"><dl>{items}</dl>{top_html}</section>'


def _figure(fig_id: str, svg: str, caption: str) -> str:
    return f'<figure id="{fig_id}">{svg}<figcaption>{esc(caption)}</figcaption></figure>'


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
