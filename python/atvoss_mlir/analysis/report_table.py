"""The node table of the profile report: one row per node, its npu ops in a
<details>, sortable by any column (a few lines of inline JavaScript)."""

from __future__ import annotations

from .report_plots import BOUND_COLORS, OTHER_COLOR, node_color
from .report_text import bytes_text, count_text, esc

# (header, numeric?) in column order; the script sorts by each cell's data-value.
_COLUMNS = [
    ("node", False), ("loc", False), ("cycles", True), ("share (%)", True), ("MACs", True),
    ("matrix util (%)", True), ("DRAM read", True), ("DRAM write", True), ("bytes/MAC", True),
    ("SRAM peak", True), ("transform bytes", True), ("bound", False), ("advice", False),
    ("remarks", True),
]


def _cell(text: str, value, cls: str = "", title: str = "") -> str:
    value = "" if value is None else value
    attrs = f' data-value="{esc(value)}"'
    if cls:
        attrs += f' class="{cls}"'
    if title:
        attrs += f' title="{esc(title)}"'
    return f"<td{attrs}>{text}</td>"


def _num(n, text=None) -> str:
    return _cell(count_text(n) if text is None else text, n, "num")


def _byte_cell(n) -> str:
    return _cell(bytes_text(n), n, "num", f"{count_text(n)} bytes" if n is not None else "")


def _ops_table(ops: list) -> str:
    head = "".join(f"<th>{h}</th>" for h in
                   ("op", "loc", "engine", "count", "cycles", "MACs", "DRAM read", "DRAM write"))
    rows = "".join(
        "<tr>"
        f"<td><code>{esc(o.get('op', ''))}</code></td><td>{esc(o.get('loc', ''))}</td>"
        f"<td>{esc(o.get('engine') or '–')}</td>"
        f"<td class=\"num\">{count_text(o.get('count'))}</td>"
        f"<td class=\"num\">{count_text(o.get('cycles'))}</td>"
        f"<td class=\"num\">{count_text(o.get('macs'))}</td>"
        f"<td class=\"num\">{bytes_text(o.get('dram_read_bytes'))}</td>"
        f"<td class=\"num\">{bytes_text(o.get('dram_write_bytes'))}</td>"
        "</tr>" for o in ops)
    return f'<table class="ops"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def _node_row(index: int, n: dict, colors: dict) -> str:
    name = n.get("node", "")
    swatch = f'<span class="swatch" style="background:{node_color(colors, name)}"></span>'
    ops = n.get("ops") or []
    if ops:
        label = (f"<details><summary>{swatch}{esc(name)} "
                 f"<span class=\"note\">({len(ops)} ops)</span></summary>"
                 f"{_ops_table(ops)}</details>")
    else:
        label = f"{swatch}{esc(name)}"
    bound = n.get("bound", "")
    color = BOUND_COLORS.get(bound, OTHER_COLOR)
    advice = n.get("advice") or []
    advice_html = "".join(
        f"<li title=\"{esc(_advice_title(a))}\">{esc(a.get('text', ''))}</li>" for a in advice)
    remarks = n.get("remarks") or []
    remarks_html = (
        f"<details><summary>{len(remarks)}</summary><ul>"
        + "".join(f"<li>{esc(r)}</li>" for r in remarks) + "</ul></details>"
        if remarks else "0")
    bpm = n.get("bytes_per_mac")
    cells = [
        _cell(label, name, "name"),
        _cell(esc(n.get("loc", "")), n.get("loc", ""), "loc"),
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
        _cell(f'<span class="bound" style="border-color:{color}">{esc(bound)}</span>', bound,
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


def node_table(nodes: list, colors: dict) -> str:
    head = "".join(
        f'<th data-type="{"num" if numeric else "text"}" title="sort">{esc(h)}</th>'
        for h, numeric in _COLUMNS)
    rows = "\n".join(_node_row(i, n, colors) for i, n in enumerate(nodes))
    return (f'<div class="scroll"><table id="nodes"><thead><tr>{head}</tr></thead>\n'
            f"<tbody>\n{rows}\n</tbody></table></div>")


# Sort the node table by a clicked column: numeric columns by data-value, first
# largest first; text columns alphabetically. Clicking the same header again
# reverses; ties keep program order.
SORT_SCRIPT = """
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
