"""The HTML page of `atvoss profile`: self-contained, escaped, and working in a
browser (plots drawn, table sortable).

The browser test drives Debian's chromium through Playwright; without a
chromium it is skipped, unless ATVOSS_REQUIRE_BROWSER=1 (CI) makes that a
failure. With ATVOSS_SCREENSHOT_DIR set, its screenshot is also saved there.
"""

import os
import re
import shutil

import pytest

from atvoss_mlir.analysis.html_report import render_html

EVIL = "relu</td><script>alert(1)</script>"


def _node(name, loc, cycles, macs, read, write, bound, *, remarks=(), ops=None, advice=()):
    total = 10_000
    return {
        "node": name, "loc": loc, "cycles": cycles, "share": cycles / total, "macs": macs,
        "matrix_utilization": min(1.0, macs / (cycles * 1024)) if macs else 0.0,
        "dram_read_bytes": read, "dram_write_bytes": write,
        "bytes_per_mac": (read + write) / macs if macs else None,
        "sram_peak_bytes": 65536, "transform_bytes": 0,
        "roofline_cycles": cycles // 2, "lost_cycles": cycles - cycles // 2,
        "time": {"compute": cycles // 2, "overlap": 0, "dma_transfer": cycles // 2,
                 "dma_setup": 0, "fallback": 0, "idle": 0},
        "bound": bound,
        "advice": [{"knob": k, "text": t, "estimated_cycles": e} for k, t, e in advice],
        "remarks": list(remarks),
        "ops": ops if ops is not None else [
            {"op": "npu.matmul" if macs else "npu.vector", "loc": loc,
             "engine": "matrix" if macs else "vector", "count": 4, "cycles": cycles,
             "macs": macs, "dram_read_bytes": read, "dram_write_bytes": write}],
    }


def make_profile():
    nodes = [
        _node("conv1", "model.onnx:1:1", 5000, 4_000_000, 200_000, 100_000, "compute",
              advice=[("-array-cols", "a wider array would halve the compute time", 2600)],
              remarks=["fused with its bias and ReLU"]),
        _node(EVIL, "model.onnx:2:1", 800, 0, 100_000, 100_000, "dma-bandwidth",
              remarks=["<b>not bold</b> & not code"]),
        _node("fc_$w$", "model.onnx:3:1", 3000, 500_000, 400_000, 4_000, "dma-bandwidth",
              advice=[(None, "keep the weights in SRAM", None)]),
        _node("const_gemm", "model.onnx:4:1", 1200, 300_000, 0, 0, "pipeline", ops=[]),
    ]
    return {
        "version": 1, "entry": "main", "target": "npu -array-rows=32 -array-cols=32",
        "timing_only": True, "source": "model<1>.onnx",
        "total_cycles": 10_000, "macs": 4_800_000, "roofline_cycles": 4_800,
        "roofline_ratio": 10_000 / 4_800,
        "dram_read_bytes": 700_000, "dram_write_bytes": 204_000,
        "compulsory_dram_bytes": 600_000,
        "sram_peak_bytes": 300_000, "sram_capacity_bytes": 1 << 20,
        "sram_occupancy": [[0, 0], [100, 65_536], [2_000, 300_000], [6_000, 120_000],
                           [9_500, 0]],
        "dram_wait_cycles": 40,
        "engines": {"matrix": {"busy_cycles": 6_000, "utilization": 0.6},
                    "vector": {"busy_cycles": 800, "utilization": 0.08},
                    "dma0": {"busy_cycles": 3_000, "utilization": 0.3},
                    "dma1": {"busy_cycles": 1_000, "utilization": 0.1},
                    "fallback": {"busy_cycles": 0, "utilization": 0.0}},
        "ops": [], "numerics": [],
        "peak_macs_per_cycle": 1024, "dram_bytes_per_cycle": 64, "fallback_cycles": 0,
        "top_nodes": ["conv1", "fc_$w$", "const_gemm", EVIL],
        "segments": {
            "matrix": [[0, 5000, "conv1"], [5800, 8800, "fc_$w$"], [8800, 10000, "const_gemm"]],
            "vector": [[5000, 5800, EVIL]],
            "dma0": [[0, 1500, "conv1"], [5000, 5800, EVIL], [5800, 7000, "fc_$w$"]],
            "dma1": [[1500, 2500, "conv1"]],
            "fallback": [],
        },
        "nodes": nodes,
    }


@pytest.fixture(scope="module")
def page_html():
    return render_html(make_profile())


# -- the page as text ----------------------------------------------------------------

EXTERNAL = re.compile(r"""(?:\b(?:src|href)\s*=\s*["']?\s*(?:https?:)?//"""
                      r"""|url\(\s*["']?\s*(?:https?:)?//|@import)""", re.I)


def test_no_external_resources(page_html):
    assert not EXTERNAL.search(page_html)
    assert "<link" not in page_html and "<img" not in page_html
    assert not re.search(r"<script[^>]*\bsrc=", page_html)


def test_figures_hold_inline_svg(page_html):
    for fig in ("roofline", "sram", "engines"):
        match = re.search(rf'<figure id="{fig}">(.*?)</figure>', page_html, re.S)
        assert match, fig
        assert "<svg" in match.group(1)


def test_svg_ids_are_unique_and_resolve(page_html):
    ids = re.findall(r'\bid="([^"]+)"', page_html)
    assert len(ids) == len(set(ids))
    refs = set(re.findall(r'href="#([^"]+)"', page_html))
    refs |= set(re.findall(r"url\(#([^)]+)\)", page_html))
    assert refs and refs <= set(ids)


def test_one_row_per_node(page_html):
    table = re.search(r'<table id="nodes">.*?<tbody>(.*)</tbody></table></div>', page_html, re.S)
    assert table
    rows = re.findall(r'<tr data-index="\d+">', table.group(1))
    assert len(rows) == len(make_profile()["nodes"])


def test_strings_from_the_model_are_escaped(page_html):
    assert "<script>alert(1)" not in page_html
    assert "relu&lt;/td&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page_html
    assert "&lt;b&gt;not bold&lt;/b&gt; &amp; not code" in page_html
    assert "model&lt;1&gt;.onnx" in page_html
    assert page_html.count("<script>") == 1  # the page's own sorting script


def test_deterministic():
    assert render_html(make_profile()) == render_html(make_profile())


def test_empty_profile_parts():
    profile = make_profile()
    profile.update(nodes=[], top_nodes=[], sram_occupancy=[],
                   segments={"matrix": [], "vector": []}, roofline_ratio=None)
    page = render_html(profile)
    assert page.count("<svg") == 3 and '<tbody>\n\n</tbody>' in page


# -- the page in a browser -------------------------------------------------------------

def _unavailable(reason):
    if os.environ.get("ATVOSS_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{reason}; ATVOSS_REQUIRE_BROWSER=1 requires the browser test to run")
    pytest.skip(reason)


def _chromium():
    path = shutil.which("chromium") or "/usr/bin/chromium"
    return path if os.path.exists(path) else None


def test_in_chromium(tmp_path, page_html):
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright module is missing: pip install -e '.[test]'")
    chromium = _chromium()
    if chromium is None:
        _unavailable("no chromium executable found: apt-get install chromium")

    report = tmp_path / "report.html"
    report.write_text(page_html, encoding="utf-8")
    profile = make_profile()
    by_cycles = [n["node"] for n in sorted(profile["nodes"], key=lambda n: -n["cycles"])]

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            # Any request leaving the file would be an external resource.
            requests = []
            page.on("request", lambda r: requests.append(r.url))
            page.goto(report.as_uri())

            for fig in ("roofline", "sram", "engines"):
                svg = page.locator(f"#{fig} > svg")
                assert svg.count() == 1, fig
                box = svg.bounding_box()
                assert box and box["width"] > 0 and box["height"] > 0, (fig, box)
                assert svg.locator("path").count() > 0, fig

            rows = page.locator("#nodes > tbody > tr")
            assert rows.count() == len(profile["nodes"])

            def first_column():
                return page.eval_on_selector_all(
                    "#nodes > tbody > tr",
                    "rows => rows.map(r => r.cells[0].getAttribute('data-value'))")

            assert first_column() == [n["node"] for n in profile["nodes"]]
            header = page.locator("#nodes > thead th", has_text=re.compile(r"^cycles$"))
            header.click()
            assert first_column() == by_cycles
            header.click()
            assert first_column() == by_cycles[::-1]

            # A node's ops open from its cell.
            page.locator("#nodes > tbody > tr summary").first.click()
            assert page.locator("#nodes table.ops").first.is_visible()

            assert requests == [report.as_uri()]
            page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
            out = os.environ.get("ATVOSS_SCREENSHOT_DIR")
            if out:
                os.makedirs(out, exist_ok=True)
                page.screenshot(path=os.path.join(out, "report.png"), full_page=True)
        finally:
            browser.close()
