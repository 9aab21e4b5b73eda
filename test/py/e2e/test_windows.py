"""Windows read once and padding kept in SRAM, end to end against onnxruntime.

LRN's sum over a window of channels reads one tile of the zero-padded input
per tile of the output (npu-share-input-windows), each slice a view of it at
its shift; a tensor a padded conv or pool reads stays in SRAM padded, its
producer writing the interior (npu-keep-in-sram). A slice taken at the wrong
shift changes the result by a few ULPs of the window sum, which the usual
fp32 tolerance (1e-4) would let through: these tests hold it ten times closer."""

from __future__ import annotations

import os
import re

import numpy as np
import onnx
import pytest
from onnx import helper

import atvoss_mlir
from e2e_testing import EXAMPLES, bench_module, compile_and_check
from onnx_testing import model, randn

TIGHT = {"rtol": 2e-6, "atol": 4e-6}


def lrn_net(channels: int = 32, size: int = 12, on_input: bool = False) -> onnx.ModelProto:
    """conv, relu, LRN over 5 channels, conv; or LRN on the graph input itself."""
    rng = np.random.default_rng(11)
    lrn = helper.make_node("LRN", ["x" if on_input else "r"], ["n"], size=5, alpha=0.05,
                           beta=0.75, bias=1.0)
    nodes = [lrn] if on_input else [helper.make_node("Conv", ["x", "w1"], ["c"], pads=[1] * 4),
                                    helper.make_node("Relu", ["c"], ["r"]), lrn]
    weights = {"w2": (rng.standard_normal((8, channels, 1, 1)) * 0.3).astype(np.float32)}
    if not on_input:
        weights["w1"] = (rng.standard_normal((channels, 4, 3, 3)) * 0.3).astype(np.float32)
    return model(nodes + [helper.make_node("Conv", ["n", "w2"], ["y"])],
                 {"x": [1, channels if on_input else 4, size, size]},
                 {"y": [1, 8, size, size]}, weights)


@pytest.mark.parametrize("target", ["npu -fusion=0", "npu -fusion=2",
                                    "npu -fusion=2 -layout-pref=NCHW",
                                    "npu -max-sram-bytes=16384"])
@pytest.mark.parametrize("on_input", [False, True])
def test_lrn_window_read_once_is_exact(target, on_input):
    onnx_model = lrn_net(on_input=on_input)
    channels = 32 if on_input else 4
    compiled, _ = compile_and_check(onnx_model, {"x": randn(1, channels, 12, 12, seed=3) * 2},
                                    target, **TIGHT)
    assert any("inputs slicing one buffer at shifts along dim" in remark.message
               for remark in compiled.remarks)


@pytest.mark.parametrize("target", ["npu -layout-pref=NCHW -fusion=2",
                                    "npu -layout-pref=NCHW -fusion=0"])
def test_lrn_window_tiled_along_its_dim_is_exact(target):
    """In NCHW the window's dim (channels) is tiled: each tile of the window is
    two channels wider on each side than the output's, and the loop's tile
    sizes come from the output's views, not from the wider ones."""
    compiled, _ = compile_and_check(lrn_net(channels=192, size=28),
                                    {"x": randn(1, 4, 28, 28, seed=5)}, target, **TIGHT)
    channel_tiles = [int(m.group(1)) for remark in compiled.remarks
                     for m in [re.search(r"'linalg.generic': tiles d01xd1(\d+)x", remark.message)]
                     if m and "LRN" in str(remark.location)]
    assert channel_tiles and min(channel_tiles) < 192, channel_tiles


def test_lrn_squares_are_no_tensor_of_their_own():
    """Past a conv, LRN's sum squares the slices of the padded conv output,
    which the conv writes padded: with tensors too large for the SRAM, the
    program writes the padded conv output and the model's result, and no
    tensor of squares (852,992 B more). The LRN's result stays in SRAM for the
    last conv, written in place a tile at a time. The input in NHWC stays in
    SRAM, padded, for the first conv, which reads it a window of rows at a
    time."""
    channels, size = 64, 56
    onnx_model = lrn_net(channels=channels, size=size)
    compiled, _ = compile_and_check(onnx_model, {"x": randn(1, 4, size, size, seed=4)},
                                    "npu -fusion=2", **TIGHT)
    padded = (channels + 4) * size * size * 4
    lrn, result = channels * size * size * 4, 8 * size * size * 4
    assert compiled.report["dram_write_bytes"] == padded + result
    assert any(remark.message.startswith(f"kept 'linalg.generic' output in SRAM for 'Conv_3' "
                                         f"({lrn} B")
               for remark in compiled.remarks)
    assert any(remark.message.startswith("kept 'linalg.transpose' output in SRAM for 'Conv_0'")
               for remark in compiled.remarks)


def test_padded_conv_inputs_stay_in_sram_padded():
    """small_cnn: the tensors its padded convs and max pool read are kept in SRAM
    with their padding; the producer writes the interior (the remark names the
    readers) and the result matches onnxruntime."""
    small_cnn = onnx.load(os.path.join(EXAMPLES, "small_cnn.onnx"))
    compiled, _ = compile_and_check(small_cnn, {"input": randn(1, 3, 32, 32, seed=12)},
                                    None, rtol=1e-4, atol=1e-5)
    padded = [remark.message for remark in compiled.remarks
              if "writes the interior of the" in remark.message and "read in SRAM" in remark.message]
    assert len(padded) >= 4, padded
    program = str(compiled.module)
    # No vector copy of a whole tensor into a padded staging buffer is left
    # before block1's convs: they read the padded buffers themselves.
    assert program.count('"npu.activation"') < 8


def test_buffer_plan_gives_a_kept_tensors_space_to_smaller_ones_that_save_more(monkeypatch):
    """ShuffleNet (bench/zoo.py, 64x64) at 96 KiB of SRAM: taken by its saving
    alone, a large tensor would be kept where the smaller ones beside it save
    more together. The plan gives its space to them (the remark says so), the
    program takes fewer cycles than the plan without that exchange (126,196
    against 127,987), and it matches onnxruntime. (At 128 KiB, since a
    concatenation's pieces are computed in it, the exchanges the estimate
    took there lost 0.3%: what the passes after the plan make of it is not in
    the estimate. Since the depthwise convs run per group, the exchange no
    longer arises at 124 KiB, where this test ran before.)"""
    from atvoss_mlir.passes.buffer_plan import Plan
    shufflenet = bench_module("zoo").shufflenet(image=64, classes=10)
    target = "npu -max-sram-bytes=98304"
    compiled, _ = compile_and_check(shufflenet, {"input": randn(1, 3, 64, 64, seed=5)}, target)
    exchanged = [remark.message for remark in compiled.remarks
                 if "not kept in SRAM: its space is worth more to the outputs of" in remark.message]
    assert exchanged
    compiled.run(timing_only=True)
    monkeypatch.setattr(Plan, "exchange", lambda plan, refusals: None)
    greedy = atvoss_mlir.compile(shufflenet, target)
    greedy.run(timing_only=True)
    assert compiled.report["total_cycles"] < greedy.report["total_cycles"]


@pytest.mark.parametrize("kib", [164, 168])
def test_buffer_plan_prices_reading_the_interior_of_a_tensor_kept_padded(kib):
    """ShuffleNet 64x64 at 164 or 168 KiB: the max pool's result is kept padded
    for the average pool of the shortcut, and the 1x1 conv beside it reads the
    interior of that padded buffer, a view it cannot take as a matrix: it copies
    it to a tile. The plan priced that read as one of a whole buffer, kept
    tensors that left the conv too little SRAM, and the compile failed ('does
    not fit in SRAM'). It compiles and matches onnxruntime."""
    shufflenet = bench_module("zoo").shufflenet(image=64, classes=10)
    compile_and_check(shufflenet, {"input": randn(1, 3, 64, 64, seed=5)},
                      f"npu -max-sram-bytes={kib * 1024}")


def depthwise_net(channels: int, size: int, stride: int) -> onnx.ModelProto:
    """A padded 3x3 depthwise conv (with a relu6) and a 1x1 conv reading it."""
    rng = np.random.default_rng(21)
    weights = {"wd": (rng.standard_normal((channels, 1, 3, 3)) * 0.3).astype(np.float32),
               "bd": (rng.standard_normal(channels) * 0.1).astype(np.float32),
               "w": (rng.standard_normal((8, channels, 1, 1)) * 0.3).astype(np.float32),
               "lo": np.array(0.0, np.float32), "hi": np.array(6.0, np.float32)}
    out = (size - 1) // stride + 1
    nodes = [helper.make_node("Conv", ["x", "wd", "bd"], ["d"], group=channels, pads=[1] * 4,
                              strides=[stride] * 2),
             helper.make_node("Clip", ["d", "lo", "hi"], ["r"]),
             helper.make_node("Conv", ["r", "w"], ["y"])]
    return model(nodes, {"x": [1, channels, size, size]}, {"y": [1, 8, out, out]}, weights)


@pytest.mark.parametrize("stride, sram", [(1, 196608), (2, 131072)])
def test_depthwise_writes_its_kept_result_a_block_of_rows_at_a_time(stride, sram):
    """The depthwise conv's result (128 KiB at stride 1 in a 192 KiB SRAM,
    32 KiB at stride 2 in 128 KiB) stays in SRAM for the 1x1 conv: too little
    is left below it for the whole padded input, so the depthwise conv writes
    the kept tensor a block of rows at a time, all channels, from row tiles of
    its input with their halo. It matches onnxruntime ten times closer than
    the usual tolerance."""
    channels, size = 32, 32
    compiled, _ = compile_and_check(depthwise_net(channels, size, stride),
                                    {"x": randn(1, channels, size, size, seed=8) * 3},
                                    f"npu -max-sram-bytes={sram}", **TIGHT)
    rows = size // stride
    result = channels * rows * rows * 4
    assert any(remark.message.startswith(f"kept 'linalg.depthwise_conv_2d_nhwc_hwc' output in "
                                         f"SRAM for 'Conv_2' ({result} B")
               for remark in compiled.remarks), [r.message for r in compiled.remarks]
    tiles = [re.search(r"tiles n1xoh(\d+)xow(\d+)xc(\d+)", remark.message)
             for remark in compiled.remarks
             if remark.message.startswith("'linalg.depthwise_conv_2d_nhwc_hwc': tiles")]
    assert tiles and all(t and int(t[1]) < rows and int(t[3]) == channels for t in tiles), tiles
