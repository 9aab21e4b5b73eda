"""The compiler's estimate of one tile equals the simulated cycles of its npu op,
for every npu compute and DMA op; concurrent DMAs share the DRAM bandwidth;
the roofline counts constants and int8's peak."""

import numpy as np
import pytest
from mlir import ir

from atvoss_mlir import machine_model
from atvoss_mlir.context import make_context
from atvoss_mlir.passes import npu_tile
from atvoss_mlir.sim import DiagnosticError, simulate
from atvoss_mlir.target import parse_target
from sim_programs import single_tile

TARGETS = ["npu -dataflow=ws", "npu -dataflow=os", "npu -dataflow=auto",
           "npu -array-rows=16 -array-cols=8 -vector-lanes=32 -int8-speedup=4"]


def op_cycles(program: str, target: str, op: str, timing_only: bool = True) -> int:
    """Cycles the simulator charges the ops named `op` (summed over them)."""
    report = simulate(program, None, target=target, timing_only=timing_only).report
    found = [entry["cycles"] for entry in report["ops"] if entry["op"] == op]
    assert found, f"{op} did not run"
    return sum(found)


# -- compute ops: one tile each ------------------------------------------------------------

def conv_body(stride):
    return ('"npu.conv2d"({in0}, {in1}, {out0}) {accumulate = false, activation = "none", '
            f'strides = array<i64: {stride}, {stride}>, dilations = array<i64: 1, 1>}} '
            ': ({in0_t}, {in1_t}, {out0_t}) -> ()')


# (name, inputs, outputs, body, npu op, estimate(target)): the estimate is the
# cost the tile pass computes for one tile of that op.
COMPUTE_CASES = [
    ("matmul_f16", [((33, 70), np.float16), ((70, 40), np.float16)], [((33, 40), np.float32)],
     '"npu.matmul"({in0}, {in1}, {out0}) {accumulate = false, activation = "none"} '
     ': ({in0_t}, {in1_t}, {out0_t}) -> ()', "npu.matmul",
     lambda t: machine_model.gemm_cycles(33, 40, 70, t)),
    ("matmul_i8", [((64, 96), np.int8), ((96, 48), np.int8)], [((64, 48), np.int32)],
     '"npu.matmul"({in0}, {in1}, {out0}) {accumulate = false, activation = "none"} '
     ': ({in0_t}, {in1_t}, {out0_t}) -> ()', "npu.matmul",
     lambda t: machine_model.gemm_cycles(64, 48, 96, t, int8=True)),
    ("conv2d", [((1, 9, 9, 8), np.float16), ((3, 3, 8, 16), np.float16)],
     [((1, 4, 4, 16), np.float32)], conv_body(2), "npu.conv2d",
     lambda t: machine_model.gemm_cycles(16, 16, 72, t)),
    ("conv2d_i8", [((1, 6, 6, 8), np.int8), ((3, 3, 8, 16), np.int8)],
     [((1, 4, 4, 16), np.int32)], conv_body(1), "npu.conv2d",
     lambda t: machine_model.gemm_cycles(16, 16, 72, t, int8=True)),
    ("depthwise_conv2d", [((1, 6, 6, 8), np.float16), ((3, 3, 8), np.float16)],
     [((1, 4, 4, 8), np.float16)],
     '"npu.depthwise_conv2d"({in0}, {in1}, {out0}) {activation = "none", '
     'strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} '
     ': ({in0_t}, {in1_t}, {out0_t}) -> ()', "npu.depthwise_conv2d",
     lambda t: machine_model.vector_cycles(128, t, 9)),
    ("elementwise", [((16, 40), np.float16), ((16, 40), np.float16)], [((16, 40), np.float16)],
     '"npu.elementwise"({in0}, {in1}, {out0}) {kind = "add"} '
     ': ({in0_t}, {in1_t}, {out0_t}) -> ()', "npu.elementwise",
     lambda t: machine_model.vector_cycles(640, t)),
    # Its relu epilogue rides in the same pass.
    ("elementwise_relu", [((16, 40), np.float16), ((16, 40), np.float16)],
     [((16, 40), np.float16)],
     '"npu.elementwise"({in0}, {in1}, {out0}) {kind = "sub", activation = "relu"} '
     ': ({in0_t}, {in1_t}, {out0_t}) -> ()', "npu.elementwise",
     lambda t: machine_model.vector_cycles(640, t)),
    ("activation", [((16, 40), np.float16)], [((16, 40), np.float16)],
     '"npu.activation"({in0}, {out0}) {kind = "relu"} : ({in0_t}, {out0_t}) -> ()',
     "npu.activation", lambda t: machine_model.vector_cycles(640, t)),
    ("pool2d", [((1, 8, 8, 24), np.float16)], [((1, 4, 4, 24), np.float16)],
     '"npu.pool2d"({in0}, {out0}) {kind = "max", window = array<i64: 2, 2>, '
     'strides = array<i64: 2, 2>} : ({in0_t}, {out0_t}) -> ()', "npu.pool2d",
     lambda t: machine_model.vector_cycles(384, t, 4)),
    ("transpose", [((8, 24), np.float16)], [((24, 8), np.float16)],
     '"npu.transpose"({in0}, {out0}) {permutation = array<i64: 1, 0>} '
     ': ({in0_t}, {out0_t}) -> ()', "npu.transpose",
     lambda t: machine_model.vector_cycles(192, t)),
    ("im2col", [((1, 6, 6, 8), np.float16)], [((16, 72), np.float16)],
     '"npu.im2col"({in0}, {out0}) {window = array<i64: 3, 3>, strides = array<i64: 1, 1>, '
     'dilations = array<i64: 1, 1>} : ({in0_t}, {out0_t}) -> ()', "npu.im2col",
     lambda t: machine_model.vector_cycles(16 * 72, t)),
    ("fill", [], [((16, 40), np.float32)],
     '"npu.fill"({out0}) {value = 1.0 : f64} : ({out0_t}) -> ()', "npu.fill",
     lambda t: machine_model.vector_cycles(640, t)),
    ("requantize", [((16, 40), np.int32)], [((16, 40), np.int8)],
     '"npu.requantize"({in0}, {out0}) {scale = 0.1 : f64, zero_point = 0 : i64} '
     ': ({in0_t}, {out0_t}) -> ()', "npu.requantize",
     lambda t: machine_model.vector_cycles(640, t)),
]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("case", COMPUTE_CASES, ids=[c[0] for c in COMPUTE_CASES])
def test_compute_tile_estimate_equals_simulated(case, target):
    _, inputs, outputs, body, op, estimate = case
    program = single_tile(inputs, outputs, body)
    assert op_cycles(program, target, op) == estimate(parse_target(target))


# -- the tile pass's own cost functions ----------------------------------------------------

def linalg_op(text: str, name: str):
    context = make_context()
    module = ir.Module.parse(text, context)
    return module, next(op for op in npu_tile.linalg_ops(module.operation) if op.name == name)


MATMUL = """
func.func @main(%a: memref<33x70xf16>, %b: memref<70x40xf16>, %c: memref<33x40xf32>) {
  linalg.matmul ins(%a, %b : memref<33x70xf16>, memref<70x40xf16>) outs(%c : memref<33x40xf32>)
  return
}"""

CONV = """
func.func @main(%x: memref<1x9x9x8xf16>, %w: memref<3x3x8x16xf16>, %y: memref<1x4x4x16xf32>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : memref<1x9x9x8xf16>, memref<3x3x8x16xf16>) outs(%y : memref<1x4x4x16xf32>)
  return
}"""

SUM_POOL = """
func.func @main(%x: memref<1x8x8x24xf16>, %k: memref<2x2xf16>, %y: memref<1x4x4x24xf16>) {
  %zero = arith.constant 0.0 : f16
  %out = memref.alloc() : memref<1x4x4x24xf16>
  linalg.fill ins(%zero : f16) outs(%out : memref<1x4x4x24xf16>)
  linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %k : memref<1x8x8x24xf16>, memref<2x2xf16>) outs(%out : memref<1x4x4x24xf16>)
  memref.copy %out, %y : memref<1x4x4x24xf16> to memref<1x4x4x24xf16>
  return
}"""

SUM_POOL_TILE = single_tile(
    [((1, 8, 8, 24), np.float16)], [((1, 4, 4, 24), np.float16)],
    '"npu.pool2d"({in0}, {out0}) {kind = "sum", window = array<i64: 2, 2>, '
    'strides = array<i64: 2, 2>} : ({in0_t}, {out0_t}) -> ()')


@pytest.mark.parametrize("target", TARGETS)
def test_tile_pass_compute_cost_is_the_simulated_one(target):
    machine = parse_target(target)
    cases = [(MATMUL, "linalg.matmul", (33, 40, 70), COMPUTE_CASES[0], ["npu.matmul"]),
             (CONV, "linalg.conv_2d_nhwc_hwcf", (1, 4, 4, 16, 8), COMPUTE_CASES[2],
              ["npu.conv2d"])]
    for text, name, tiles, case, ops in cases:
        module, op = linalg_op(text, name)
        with module.context:
            problem = npu_tile.tiling_problem(op, machine)
        program = single_tile(case[1], case[2], case[3])
        assert problem.compute_cycles(tiles) == sum(op_cycles(program, target, o) for o in ops)
    # A sum pool is one npu.pool2d of kind sum.
    module, op = linalg_op(SUM_POOL, "linalg.pooling_nhwc_sum")
    with module.context:
        problem = npu_tile.tiling_problem(op, machine)
    simulated = op_cycles(SUM_POOL_TILE, target, "npu.pool2d")
    assert simulated > 0
    assert problem.compute_cycles((1, 4, 4, 24)) == simulated


# -- DMA -----------------------------------------------------------------------------------

def dma_program(dram_shape, element, view: str, view_type: str, tile_shape, load: bool) -> str:
    """One DMA between SRAM and `view` of a DRAM argument, alone on the machine."""
    dram = f"memref<{'x'.join(map(str, dram_shape))}x{element}>"
    sram = f"memref<{'x'.join(map(str, tile_shape))}x{element}, 1>"
    if load:
        dma = (f'%t = "npu.dma_load"(%v, %s) {{channel = 0 : i64}} : ({view_type}, {sram}) '
               f'-> !npu.token')
    else:
        dma = (f'%t = "npu.dma_store"(%s, %v) {{channel = 1 : i64}} : ({sram}, {view_type}) '
               f'-> !npu.token')
    return f"""
func.func @main(%d: {dram}) {{
  %s = "npu.alloc"() : () -> {sram}
  "npu.fill"(%s) {{value = 1.0 : f64}} : ({sram}) -> ()
  "npu.barrier"() : () -> ()
  %v = {view.format(d="%d", dram=dram, view_type=view_type)}
  {dma}
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}}"""


WHOLE = "memref.cast {d} : {dram} to {view_type}"
# (name, DRAM shape, element, view, view type, tile shape, view strides, first element)
DMA_CASES = [
    ("whole", (8, 24), "f16", WHOLE, "memref<8x24xf16>", (8, 24), (24, 1), 0),
    ("rows_aligned", (40, 64), "f16", "memref.subview {d}[8, 0] [8, 32] [1, 1] : {dram} to "
     "{view_type}", "memref<8x32xf16, strided<[64, 1], offset: 512>>", (8, 32), (64, 1), 512),
    ("misaligned", (40, 50), "f16", "memref.subview {d}[3, 5] [8, 24] [1, 1] : {dram} to "
     "{view_type}", "memref<8x24xf16, strided<[50, 1], offset: 155>>", (8, 24), (50, 1), 155),
    ("strided", (40, 50), "f32", "memref.subview {d}[1, 3] [4, 5] [2, 3] : {dram} to "
     "{view_type}", "memref<4x5xf32, strided<[100, 3], offset: 53>>", (4, 5), (100, 3), 53),
    ("int8_odd", (17, 33), "i8", "memref.subview {d}[2, 7] [9, 13] [1, 1] : {dram} to "
     "{view_type}", "memref<9x13xi8, strided<[33, 1], offset: 73>>", (9, 13), (33, 1), 73),
    ("nhwc_window", (1, 10, 10, 6), "f16", "memref.subview {d}[0, 1, 2, 0] [1, 4, 5, 6] "
     "[1, 1, 1, 1] : {dram} to {view_type}",
     "memref<1x4x5x6xf16, strided<[600, 60, 6, 1], offset: 72>>", (1, 4, 5, 6),
     (600, 60, 6, 1), 72),
]


@pytest.mark.parametrize("load", [True, False], ids=["dma_load", "dma_store"])
@pytest.mark.parametrize("target", ["npu", "npu -dma-burst-bytes=64 -dram-bytes-per-cycle=16",
                                    "npu -dma-burst-bytes=48 -dma-setup-cycles=7"])
@pytest.mark.parametrize("case", DMA_CASES, ids=[c[0] for c in DMA_CASES])
def test_dma_estimate_equals_simulated(case, target, load):
    _, dram_shape, element, view, view_type, tile, strides, first = case
    program = dma_program(dram_shape, element, view, view_type, tile, load)
    op = "npu.dma_load" if load else "npu.dma_store"
    itemsize = machine_model.element_bytes(element)
    expected = machine_model.dma_cycles(tile, strides, itemsize, first * itemsize,
                                        parse_target(target))
    assert op_cycles(program, target, op, timing_only=False) == expected


def test_tile_pass_dma_cost_is_the_simulated_one():
    """npu-tile's DMA cost of an operand's first tile is the simulated DMA of that tile."""
    module, op = linalg_op(MATMUL, "linalg.matmul")
    target = parse_target("npu")
    with module.context:
        problem = npu_tile.tiling_problem(op, target)
        for role, tiles, shape, dram, view_type in [
                ("lhs", (16, 40, 24), (16, 24), "memref<33x70xf16>",
                 "memref<16x24xf16, strided<[70, 1]>>"),
                ("rhs", (16, 40, 24), (24, 40), "memref<70x40xf16>",
                 "memref<24x40xf16, strided<[40, 1]>>")]:
            estimate = npu_tile.dma_cycles(problem.operand(role), tiles, target)
            view = (f"memref.subview {{d}}[0, 0] [{shape[0]}, {shape[1]}] [1, 1] : {{dram}} to "
                    f"{{view_type}}")
            dram_shape = tuple(ir.MemRefType(problem.operand(role).value.type).shape)
            program = dma_program(dram_shape, "f16", view, view_type, shape, load=True)
            assert estimate == op_cycles(program, "npu", "npu.dma_load")


# -- DRAM shared by the channels -----------------------------------------------------------

def two_loads(channels=(0, 1), rows=64) -> str:
    tile = f"memref<{rows}x64xf16, 1>"
    dram = f"memref<{rows}x64xf16>"
    return f"""
func.func @main(%a: {dram}, %b: {dram}) {{
  %sa = "npu.alloc"() : () -> {tile}
  %sb = "npu.alloc"() : () -> {tile}
  %ta = "npu.dma_load"(%a, %sa) {{channel = {channels[0]} : i64}} : ({dram}, {tile}) -> !npu.token
  %tb = "npu.dma_load"(%b, %sb) {{channel = {channels[1]} : i64}} : ({dram}, {tile}) -> !npu.token
  "npu.wait"(%ta, %tb) : (!npu.token, !npu.token) -> ()
  return
}}"""


@pytest.mark.parametrize("target", ["npu", "npu -dram-bytes-per-cycle=16 -dma-setup-cycles=30",
                                    "npu -dma-channels=4 -dram-bytes-per-cycle=128"])
def test_two_channels_share_the_dram_bandwidth(target):
    """Two 8 KiB loads on two channels: the setups overlap, the transfers take
    their bytes at the (total) bandwidth: setup + 16 KiB / bandwidth."""
    machine = parse_target(target)
    report = simulate(two_loads(), None, target=target, timing_only=True).report
    transfer = 2 * 8192 // machine.dram_bytes_per_cycle
    assert report["total_cycles"] == machine.dma_setup_cycles + transfer
    assert report["dram_wait_cycles"] == transfer // 2
    # Each DMA's own cost is still setup + its transfer (the estimate).
    loads = [op for op in report["ops"] if op["op"] == "npu.dma_load"]
    assert [op["cycles"] for op in loads] == [machine.dma_setup_cycles + transfer // 2] * 2


def test_one_channel_runs_its_dmas_in_order():
    report = simulate(two_loads(channels=(0, 0)), None, timing_only=True).report
    assert report["total_cycles"] == 2 * (100 + 128)
    assert report["dram_wait_cycles"] == 0


def test_a_transfer_takes_an_earlier_gap_on_dram():
    """A DMA queued behind a busy channel does not hold DRAM back from a DMA
    issued after it on an idle channel."""
    dram_timeline = machine_model.SharedDram()
    assert dram_timeline.book(100, 128, 0) == 100
    assert dram_timeline.book(1000, 128, 0) == 1000  # channel 0 busy until 1000
    assert dram_timeline.book(100, 128, 0) == 228     # channel 1: right after the first
    assert dram_timeline.book(300, 800, 0) == 1128    # no gap of 800 before 1128
    assert dram_timeline.book(400, 50, 0) == 400
    assert dram_timeline.book(356, 44, 0) == 356     # fills the gap up to 400 exactly
    assert dram_timeline.book(0, 10, 0) == 0
    assert dram_timeline.book(0, 91, 0) == 450      # the gap 450..1000
    # Touching transfers are one interval; those ended before the horizon are dropped.
    assert list(zip(dram_timeline.starts, dram_timeline.ends)) == \
        [(0, 10), (100, 541), (1000, 1928)]
    assert dram_timeline.book(2500, 1, 2000) == 2500
    assert list(zip(dram_timeline.starts, dram_timeline.ends)) == [(2500, 2501)]


def test_many_dmas_without_waits_stay_fast():
    """Back-to-back transfers merge into one DRAM interval: booking stays cheap."""
    dram_timeline = machine_model.SharedDram()
    for i in range(20000):
        dram_timeline.book(0, 10, 0)
    assert len(dram_timeline.starts) == 1 and dram_timeline.ends == [200000]


# -- roofline ------------------------------------------------------------------------------

def test_roofline_peak_of_int8_is_higher():
    body = ('"npu.matmul"({in0}, {in1}, {out0}) {accumulate = false, activation = "none"} '
            ': ({in0_t}, {in1_t}, {out0_t}) -> ()')
    shapes = [(256, 256), (256, 256)]
    for dtype, out, peak in [(np.float16, np.float32, 1024), (np.int8, np.int32, 2048)]:
        program = single_tile([(s, dtype) for s in shapes], [((256, 256), out)], body)
        report = simulate(program, None, target="npu -dram-bytes-per-cycle=4096",
                          timing_only=True).report
        assert report["roofline_cycles"] == 256 ** 3 // peak


WEIGHTS = """
memref.global "private" constant @weights : memref<64x64xf16> = dense<1.0>
func.func @main(%x: memref<32x64xf16>, %y: memref<32x64xf32>) {
  %w = memref.get_global @weights : memref<64x64xf16>
  %sx = "npu.alloc"() : () -> memref<32x64xf16, 1>
  %sw = "npu.alloc"() : () -> memref<64x64xf16, 1>
  %sy = "npu.alloc"() : () -> memref<32x64xf32, 1>
  %t0 = "npu.dma_load"(%x, %sx) {channel = 0 : i64} : (memref<32x64xf16>, memref<32x64xf16, 1>) -> !npu.token
  %t1 = "npu.dma_load"(%w, %sw) {channel = 1 : i64} : (memref<64x64xf16>, memref<64x64xf16, 1>) -> !npu.token
  "npu.wait"(%t0, %t1) : (!npu.token, !npu.token) -> ()
  "npu.matmul"(%sx, %sw, %sy) {accumulate = false, activation = "none"} : (memref<32x64xf16, 1>, memref<64x64xf16, 1>, memref<32x64xf32, 1>) -> ()
  "npu.barrier"() : () -> ()
  %t2 = "npu.dma_store"(%sy, %y) {channel = 0 : i64} : (memref<32x64xf32, 1>, memref<32x64xf32>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  return
}"""


@pytest.mark.parametrize("timing_only", [False, True])
def test_compulsory_bytes_count_the_weights_once(timing_only):
    report = simulate(WEIGHTS, None, timing_only=timing_only).report
    inputs, weights, outputs = 32 * 64 * 2, 64 * 64 * 2, 32 * 64 * 4
    assert report["compulsory_dram_bytes"] == inputs + weights + outputs
    assert report["roofline_cycles"] == -(-(inputs + weights + outputs) // 64)


def test_simulator_refuses_bf16():
    program = """
func.func @main(%a: memref<4xbf16>, %b: memref<4xbf16>) {
  memref.copy %a, %b : memref<4xbf16> to memref<4xbf16>
  return
}"""
    for timing_only in (False, True):
        with pytest.raises(DiagnosticError, match="argument #0: bf16 is not supported"):
            simulate(program, None, timing_only=timing_only)
    inner = """
func.func @main() {
  %s = "npu.alloc"() : () -> memref<4xbf16, 1>
  return
}"""
    with pytest.raises(DiagnosticError, match=r"3:8: .*bf16 is not supported"):
        simulate(inner, None, timing_only=True, filename="p.mlir")
