"""Cycle model: SCALE-Sim's matrix formula, DMA bursts, overlap, timing-only mode."""

import math

import numpy as np
import pytest

from atvoss_mlir.sim import simulate
from atvoss_mlir.target import parse_target
from sim_programs import single_tile, streamed_matmul, tiled_matmul

REPORT_KEYS = {"version", "total_cycles", "macs", "roofline_cycles", "roofline_ratio",
               "dram_read_bytes", "dram_write_bytes", "compulsory_dram_bytes",
               "sram_peak_bytes", "engines", "ops"}
OP_KEYS = {"op", "loc", "node", "engine", "count", "cycles", "macs", "dram_read_bytes",
           "dram_write_bytes", "transposed_bytes"}


def scalesim_fold_sum(rows, cols, streamed, array=32, row_weight=2):
    """Sum over folds of row_weight * R + C + T - 2, fold by fold: SCALE-Sim 3 maps
    every fold, partial ones too, onto the whole R x C array."""
    total = 0
    for _ in range(0, rows, array):
        for _ in range(0, cols, array):
            total += row_weight * array + array + streamed - 2
    return total


def compute_only_matmul(m, n, k, dtype="f16", acc="f32"):
    return f"""
func.func @main() {{
  %a = "npu.alloc"() : () -> memref<{m}x{k}x{dtype}, 1>
  %b = "npu.alloc"() : () -> memref<{k}x{n}x{dtype}, 1>
  %c = "npu.alloc"() : () -> memref<{m}x{n}x{acc}, 1>
  "npu.matmul"(%a, %b, %c) {{accumulate = false, activation = "none"}}
      : (memref<{m}x{k}x{dtype}, 1>, memref<{k}x{n}x{dtype}, 1>, memref<{m}x{n}x{acc}, 1>) -> ()
  return
}}
"""


def op_report(result, name):
    return next(op for op in result.report["ops"] if op["op"] == name)


def test_single_tile_matmul_matches_scalesim_ws_formula():
    m, n, k = 64, 40, 48
    body = ('"npu.matmul"({in0}, {in1}, {out0}) {accumulate = false, activation = "none"} '
            ': ({in0_t}, {in1_t}, {out0_t}) -> ()')
    program = single_tile([((m, k), np.float16), ((k, n), np.float16)], [((m, n), np.float32)],
                          body)
    result = simulate(program, target="npu -dataflow=ws")
    matmul = op_report(result, "npu.matmul")
    # SCALE-Sim 3.0 on this GEMM (M=64, N=40, K=48, 32x32 WS): Total Cycles 631, the
    # index of the last cycle; partial folds cost as much as full ones.
    assert matmul["cycles"] == scalesim_fold_sum(k, n, m) == 631 + 1
    assert matmul["macs"] == m * n * k and matmul["engine"] == "matrix"


@pytest.mark.parametrize("dataflow,expected", [("ws", 22400), ("os", 20352), ("auto", 20352)])
def test_gemm_256_compute_only_equals_anchors(dataflow, expected):
    # Timing-only: the tiles are never written (with numerics that is an uninitialised read).
    result = simulate(compute_only_matmul(256, 256, 256), target=f"npu -dataflow={dataflow}",
                      timing_only=True)
    assert result.total_cycles == expected  # ANCHORS.md: SCALE-Sim 22,400 WS / 20,352 OS
    assert result.report["roofline_cycles"] == 16384
    assert result.report["engines"]["matrix"]["utilization"] == 1.0


def test_gemm_256_tiled_per_tile_folds():
    # Eight 128x128x128 tiles: each streams only 128 rows per weight fold.
    result = simulate(tiled_matmul(256, 256, 256, 128, 128, 128), target="npu -dataflow=ws",
                      timing_only=True)
    matmul = op_report(result, "npu.matmul")
    per_tile = scalesim_fold_sum(128, 128, 128)
    assert per_tile == 3552 and matmul["count"] == 8
    assert matmul["cycles"] == 8 * per_tile == 28416  # 1.27x the whole-layer 22,400


def test_int8_streams_faster():
    fp16 = simulate(compute_only_matmul(256, 64, 64), timing_only=True).total_cycles
    int8 = simulate(compute_only_matmul(256, 64, 64, "i8", "i32"), timing_only=True).total_cycles
    assert fp16 == scalesim_fold_sum(64, 64, 256)
    assert int8 == scalesim_fold_sum(64, 64, 128)  # streamed rows / int8_speedup (2)


def test_conv_maps_to_gemm():
    # ResNet-50 conv2 shape on one tile: GEMM M = 56*56, N = 64, K = 3*3*64 -> 116,280 (WS).
    program = """
func.func @main() {
  %x = "npu.alloc"() : () -> memref<1x58x58x64xf16, 1>
  %w = "npu.alloc"() : () -> memref<3x3x64x64xf16, 1>
  %y = "npu.alloc"() : () -> memref<1x56x56x64xf32, 1>
  "npu.conv2d"(%x, %w, %y) {accumulate = false, activation = "none",
                            strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
      : (memref<1x58x58x64xf16, 1>, memref<3x3x64x64xf16, 1>, memref<1x56x56x64xf32, 1>) -> ()
  return
}
"""
    big_sram = "npu -max-sram-bytes=4194304"
    assert simulate(program, timing_only=True, target=big_sram).total_cycles == 116280
    assert simulate(program, timing_only=True,
                    target=big_sram + " -dataflow=os").total_cycles == 125048


def test_dma_cycles_count_whole_bursts():
    target = parse_target(None)
    # A contiguous 64x64 f16 tile: 8192 B = 256 bursts of 32 B -> 100 + 128 cycles.
    program = single_tile([((64, 64), np.float16)], [], "")
    load = op_report(simulate(program, timing_only=True), "npu.dma_load")
    assert load["cycles"] == target.dma_setup_cycles + 8192 // 64
    # The same tile from a 64x100 f16 matrix at column 3: each 128 B row starts at byte
    # 200*r + 6 and touches 5 bursts (not 4): 64*5*32 B / 64 B per cycle = 160 cycles.
    strided = """
func.func @main(%A: memref<64x100xf16>) {
  %t = "npu.alloc"() : () -> memref<64x64xf16, 1>
  %s = memref.subview %A[0, 3] [64, 64] [1, 1] : memref<64x100xf16> to memref<64x64xf16, strided<[100, 1], offset: 3>>
  %k = "npu.dma_load"(%s, %t) {channel = 0 : i64} : (memref<64x64xf16, strided<[100, 1], offset: 3>>, memref<64x64xf16, 1>) -> !npu.token
  "npu.wait"(%k) : (!npu.token) -> ()
  return
}
"""
    load = op_report(simulate(strided, timing_only=True), "npu.dma_load")
    starts = [200 * r + 6 for r in range(64)]
    bursts = sum(math.ceil((s + 128) / 32) - s // 32 for s in starts)
    assert load["cycles"] == 100 + bursts * 32 // 64 == 260


def test_double_buffering_overlaps_dma_and_compute():
    single = simulate(streamed_matmul(1024, 32, 64, 128, buffers=1), timing_only=True)
    double = simulate(streamed_matmul(1024, 32, 64, 128, buffers=2), timing_only=True)
    assert double.total_cycles < 0.8 * single.total_cycles
    # Same work on the matrix unit, better utilised.
    assert single.report["engines"]["matrix"]["busy_cycles"] == \
        double.report["engines"]["matrix"]["busy_cycles"]
    assert double.report["roofline_ratio"] < single.report["roofline_ratio"]


def test_double_buffering_numerics():
    rng = np.random.default_rng(3)
    a = rng.uniform(-1, 1, (512, 64)).astype(np.float16)
    b = rng.uniform(-1, 1, (64, 32)).astype(np.float16)
    for buffers in (1, 2):
        result = simulate(streamed_matmul(512, 32, 64, 64, buffers), [a, b, np.zeros((512, 32),
                                                                                       np.float32)])
        np.testing.assert_allclose(result.outputs[2], a.astype(np.float64) @ b, rtol=1e-5,
                                   atol=1e-5)


def test_timing_only_gives_the_same_report():
    program = tiled_matmul(100, 72, 80, 32, 32, 48)
    full = simulate(program).report
    fast = simulate(program, timing_only=True).report
    assert fast["timing_only"] and not full["timing_only"]
    for key in REPORT_KEYS - {"version"}:
        assert fast[key] == full[key], key


def test_report_contract():
    result = simulate(tiled_matmul(100, 72, 80, 32, 32, 48), trace=True, filename="prog.mlir")
    report = result.report
    assert REPORT_KEYS <= set(report) and report["version"] == 1
    assert report["entry"] == "main" and not report["timing_only"]
    assert set(report["engines"]) == {"matrix", "vector", "dma0", "dma1", "fallback"}
    for engine in report["engines"].values():
        assert set(engine) == {"busy_cycles", "utilization"}
        assert 0 <= engine["utilization"] <= 1
    for op in report["ops"]:
        assert set(op) == OP_KEYS
        assert op["loc"].startswith("prog.mlir:")
    assert report["macs"] == 100 * 72 * 80
    # A and B read at least once, C written once.
    assert report["compulsory_dram_bytes"] == (100 * 80 + 80 * 72) * 2 + 100 * 72 * 4
    assert report["dram_read_bytes"] >= (100 * 80 + 80 * 72) * 2
    assert report["dram_write_bytes"] == 100 * 72 * 4
    assert report["roofline_ratio"] == pytest.approx(
        report["total_cycles"] / report["roofline_cycles"], rel=1e-5)
    assert report["sram_peak_bytes"] == 32 * 48 * 2 + 48 * 32 * 2 + 32 * 32 * 4
    trace = result.chrome_trace()["traceEvents"]
    tracks = {e["args"]["name"] for e in trace if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"matrix", "dma0", "dma1"} <= tracks
    assert any(e["ph"] == "X" and e["args"]["loc"].startswith("prog.mlir:") for e in trace)
    assert "total cycles" in result.table()


def test_barrier_waits_for_all_engines_and_wait_for_its_token():
    program = single_tile([((64, 64), np.float16)], [], "")
    result = simulate(program, timing_only=True)
    assert result.total_cycles == 100 + 128  # one load, then a wait; nothing else
