"""The npu pipeline end to end: compiled programs run on the simulator without
hazards and match numpy, for every op family, target and pipeline depth."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import atvoss_mlir
from atvoss_mlir.diagnostics import DiagnosticError
from test_lowering_cases import (batch_matmul_case, broadcast_case, check_case, compile_text,
                                 conv_case, depthwise_case, elementwise_chain_case, matmul_case,
                                 pool_case, run_case, transpose_case)

TARGETS = ["npu", "npu -pipeline-stages=1 -max-sram-bytes=16384",
           "npu -pipeline-stages=3 -max-sram-bytes=32768 -dataflow=os"]

CASES = {
    "matmul": lambda rng: matmul_case(rng, 37, 45, 29),
    "matmul_relu": lambda rng: matmul_case(rng, 64, 96, 100, relu=True),
    "matmul_f32": lambda rng: matmul_case(rng, 33, 17, 50, element="f32"),
    "matmul_i8": lambda rng: matmul_case(rng, 40, 70, 90, element="i8"),
    "batch_matmul": lambda rng: batch_matmul_case(rng, 3, 20, 30, 40),
    "conv_1x1": lambda rng: conv_case(rng, 1, 14, 14, 32, 48, 1),
    "conv_1x1_stride2": lambda rng: conv_case(rng, 1, 14, 14, 32, 48, 1, stride=2),
    "conv_3x3_stride2_relu": lambda rng: conv_case(rng, 1, 15, 15, 16, 24, 3, stride=2, pad=1,
                                                   relu=True),
    "conv_7x7_stride2": lambda rng: conv_case(rng, 1, 32, 32, 3, 16, 7, stride=2, pad=3),
    "conv_im2col": lambda rng: conv_case(rng, 1, 12, 12, 3, 8, 3, pad=1, strategy="im2col"),
    "conv_dilated_batch2": lambda rng: conv_case(rng, 2, 12, 12, 8, 8, 3, dilation=2),
    "conv_i8": lambda rng: conv_case(rng, 1, 10, 10, 8, 16, 3, pad=1, element="i8"),
    "depthwise": lambda rng: depthwise_case(rng, 1, 16, 16, 24, 3, pad=1),
    "depthwise_stride2": lambda rng: depthwise_case(rng, 1, 17, 17, 24, 3, stride=2, pad=1),
    "pool_max": lambda rng: pool_case(rng, 1, 16, 16, 8, 3, stride=2, pad=1),
    "pool_sum": lambda rng: pool_case(rng, 1, 16, 16, 8, 2, stride=2, kind="sum"),
    "elementwise_chain": lambda rng: elementwise_chain_case(rng, [5, 33, 70]),
    "transpose": lambda rng: transpose_case(rng, [3, 40, 50], [0, 2, 1]),
    "broadcast_rows": lambda rng: broadcast_case(rng, [30, 40], [0]),
    "broadcast_cols": lambda rng: broadcast_case(rng, [30, 40], [1]),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_runs_on_npu_and_matches_numpy(name, target):
    case = CASES[name](np.random.default_rng(7))
    result, compiled, diagnostics = check_case(case, target)
    assert "linalg." not in compiled, "every op of the case runs on the NPU"
    assert result.report["engines"]["fallback"]["busy_cycles"] == 0


def test_unsupported_op_falls_back_with_a_remark():
    text = """
func.func @main(%x: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %e = tensor.empty() : tensor<16x16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
      affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<16x16xf32>) outs(%e : tensor<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %y = math.sin %in : f32
    linalg.yield %y : f32
  } -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}"""
    compiled, diagnostics = compile_text(text)
    assert "linalg.generic" in compiled
    assert any("stays on the fallback engine: 'math.sin'" in d.message for d in diagnostics)


def test_budget_too_small_for_any_tiling_is_a_located_error():
    # One output row keeps its whole width: 7 input rows of 261 pixels do not
    # fit 2 KiB even one channel and one filter at a time with one stage.
    case = conv_case(np.random.default_rng(0), 1, 64, 256, 3, 32, 7, stride=2, pad=3)
    with pytest.raises(DiagnosticError) as failure:
        compile_text(case.text, "npu -max-sram-bytes=2048")
    [error] = [d for d in failure.value.diagnostics if d.severity == "error"]
    assert "exceeds SRAM budget 2048 B" in error.message
    assert error.resolved_position().line > 0


def test_double_buffering_is_faster_than_one_stage():
    case = matmul_case(np.random.default_rng(0), 512, 512, 512)
    cycles = {}
    for stages in (1, 2):
        result, _, _ = run_case(case, f"npu -pipeline-stages={stages}", timing_only=True)
        cycles[stages] = result.report["total_cycles"]
    assert cycles[2] < 0.95 * cycles[1]


@pytest.mark.parametrize("model", ["small_cnn.onnx", "transformer_block.onnx"])
def test_pipelining_never_slower_than_one_stage_on_bundled_models(model):
    """The tile search chooses per op between one tile and a pipelined loop with
    the same cost formula, so more stages never lose against one."""
    path = pathlib.Path(__file__).resolve().parents[2] / "examples" / model
    cycles = {}
    for stages in (1, 2, 3):
        compiled = atvoss_mlir.compile(str(path), f"npu -pipeline-stages={stages}")
        compiled.run(timing_only=True)
        cycles[stages] = compiled.report["total_cycles"]
    assert cycles[2] <= cycles[1], cycles
    assert cycles[3] <= cycles[1], cycles


# Property: random shapes (primes, sizes that tiles do not divide), SRAM sizes
# and pipeline depths. Either the budget is too small for any tiling (a
# located error) or the program runs without hazards and matches numpy.

SIZES = st.sampled_from([1, 2, 3, 5, 7, 13, 17, 31, 32, 33, 37, 47, 64, 65, 97])
SRAM = st.sampled_from([2048, 4096, 8192, 16384, 1048576])
TILE_MAX = st.sampled_from([8, 16, 256])


@st.composite
def programs(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    kind = draw(st.sampled_from(["matmul", "batch_matmul", "conv", "depthwise", "pool",
                                 "elementwise"]))
    if kind == "matmul":
        return matmul_case(rng, draw(SIZES), draw(SIZES), draw(SIZES),
                           element=draw(st.sampled_from(["f16", "f32", "i8"])),
                           relu=draw(st.booleans()))
    if kind == "batch_matmul":
        return batch_matmul_case(rng, draw(st.integers(1, 3)), draw(SIZES), draw(SIZES),
                                 draw(SIZES))
    kernel = draw(st.sampled_from([1, 2, 3, 5]))
    stride = draw(st.sampled_from([1, 2]))
    pad = draw(st.integers(0, kernel // 2))
    height = draw(st.integers(kernel, 19))
    width = draw(st.integers(kernel, 19))
    channels = draw(st.sampled_from([1, 3, 8, 13, 33]))
    if kind == "conv":
        strategy = draw(st.sampled_from([None, "im2col"]))
        return conv_case(rng, 1, height, width, channels, draw(SIZES), kernel, stride=stride,
                         pad=pad, relu=draw(st.booleans()), strategy=strategy)
    if kind == "depthwise":
        return depthwise_case(rng, 1, height, width, channels, kernel, stride=stride, pad=pad)
    if kind == "pool":
        return pool_case(rng, 1, height, width, channels, kernel, stride=stride, pad=pad,
                         kind=draw(st.sampled_from(["max", "sum"])))
    return elementwise_chain_case(rng, [draw(SIZES), draw(SIZES)])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=programs(), sram=SRAM, stages=st.integers(1, 3), tile_max=TILE_MAX)
def test_random_programs_run_without_hazards_and_match_numpy(case, sram, stages, tile_max):
    target = f"npu -max-sram-bytes={sram} -pipeline-stages={stages} -tile-max={tile_max}"
    try:
        check_case(case, target)
    except DiagnosticError as failure:
        errors = [d for d in failure.diagnostics if d.severity == "error"]
        assert errors and all("exceeds SRAM budget" in d.message for d in errors), \
            "\n".join(d.format() for d in failure.diagnostics)


def test_nchw_convolution_runs_in_nhwc_between_transposes():
    rng = np.random.default_rng(3)
    nhwc = conv_case(rng, 1, 12, 12, 8, 16, 3, stride=2)
    x = np.ascontiguousarray(np.transpose(nhwc.inputs[0], (0, 3, 1, 2)))
    w = np.ascontiguousarray(np.transpose(nhwc.inputs[1], (3, 2, 0, 1)))
    text = """
func.func @main(%x: tensor<1x8x12x12xf16>, %w: tensor<16x8x3x3xf16>) -> tensor<1x16x5x5xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x5x5xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x16x5x5xf32>) -> tensor<1x16x5x5xf32>
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x12x12xf16>, tensor<16x8x3x3xf16>) outs(%f : tensor<1x16x5x5xf32>)
      -> tensor<1x16x5x5xf32>
  return %r : tensor<1x16x5x5xf32>
}"""
    case = type(nhwc)(text, [x, w], np.transpose(nhwc.reference, (0, 3, 1, 2)), nhwc.tolerance)
    result, compiled, diagnostics = check_case(case)
    assert "linalg." not in compiled and '"npu.transpose"' in compiled


def test_pointwise_conv_reads_a_kept_tensor_in_place():
    # A 1x1 conv's input kept in SRAM whole is already the matrix its
    # implicit GEMM multiplies: no vector-unit copy into a tile of its own.
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 16, 16, 32)).astype(np.float32)
    w1 = rng.standard_normal((1, 1, 32, 64)).astype(np.float32)
    w2 = rng.standard_normal((1, 1, 64, 32)).astype(np.float32)
    conv = 'linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, ' \
        'strides = dense<1> : tensor<2xi64>}'
    text = f"""
func.func @main(%x: tensor<1x16x16x32xf32>, %w1: tensor<1x1x32x64xf32>,
                %w2: tensor<1x1x64x32xf32>) -> tensor<1x16x16x32xf32> {{
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x16x16x64xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  %c1 = {conv} ins(%x, %w1 : tensor<1x16x16x32xf32>, tensor<1x1x32x64xf32>)
      outs(%f1 : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  %e2 = tensor.empty() : tensor<1x16x16x32xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32>
  %c2 = {conv} ins(%c1, %w2 : tensor<1x16x16x64xf32>, tensor<1x1x64x32xf32>)
      outs(%f2 : tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32>
  return %c2 : tensor<1x16x16x32xf32>
}}"""
    reference = np.einsum("nhwc,cf->nhwf", np.einsum("nhwc,cf->nhwf", x, w1[0, 0]), w2[0, 0])
    case = type(conv_case(rng, 1, 4, 4, 2, 2, 1))(text, [x, w1, w2], reference, 1e-3)
    result, compiled, diagnostics = check_case(case)
    assert "npu.resident" in compiled, "the first conv's result stays in SRAM"
    assert '"npu.activation"' not in compiled, compiled
    assert result.report["dram_read_bytes"] == x.nbytes + w1.nbytes + w2.nbytes
