"""Pre-activations (batch-norm and relu before a 1x1 conv or a pool, as in
DenseNet) folded into the op that reads them as a prologue on its input tiles,
end to end against onnxruntime: the pre-activated tensor never goes to DRAM,
and the result is the model's to rounding in every tile program (one stage,
double and triple buffering; input tiles reused across filter tiles; the
channels tiled)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from e2e_testing import compile_and_check
from onnx_testing import model

FOLDED = "as a prologue on its input tiles"
# The pre-activated 1x64x16x16 fp32 tensor (64 KiB) does not fit beside the
# op's tiles in this SRAM: it would go through DRAM.
SMALL = "npu -max-sram-bytes=65536"


def weight(rng, *shape):
    return (rng.standard_normal(shape) * 0.3).astype(np.float32)


def pre_activated(reader: str = "conv", channels: int = 64, filters: int = 32, size: int = 16,
                  kernel: int = 1):
    """Two 1x1 convs concatenated (a dense block's) -> BatchNormalization -> Relu
    -> `reader` (a kernel x kernel conv with 'same' padding, or a 2x2 average
    pool)."""
    rng = np.random.default_rng(7)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["h0"]),
             helper.make_node("Conv", ["x", "w1"], ["h1"]),
             helper.make_node("Concat", ["h0", "h1"], ["h"], axis=1),
             helper.make_node("BatchNormalization", ["h", "g", "b", "m", "v"], ["n"]),
             helper.make_node("Relu", ["n"], ["r"])]
    initialisers = {"w0": weight(rng, channels // 2, 8, 1, 1),
                    "w1": weight(rng, channels // 2, 8, 1, 1),
                    "g": weight(rng, channels) + 1, "b": weight(rng, channels),
                    "m": weight(rng, channels), "v": np.abs(weight(rng, channels)) + 0.5}
    if reader == "conv":
        pad = kernel // 2
        nodes.append(helper.make_node("Conv", ["r", "w", "c"], ["y"], pads=[pad] * 4))
        initialisers |= {"w": weight(rng, filters, channels, kernel, kernel),
                         "c": weight(rng, filters)}
        out = [1, filters, size, size]
    else:
        nodes.append(helper.make_node("AveragePool", ["r"], ["y"], kernel_shape=[2, 2],
                                      strides=[2, 2]))
        out = [1, channels, size // 2, size // 2]
    return model(nodes, {"x": [1, 8, size, size]}, {"y": out}, initialisers)


def inputs(size: int = 16) -> dict:
    return {"x": np.random.default_rng(8).standard_normal((1, 8, size, size))
            .astype(np.float32)}


def folded(compiled) -> bool:
    return any(FOLDED in remark.message for remark in compiled.remarks)


@pytest.mark.parametrize("target", [SMALL, f"{SMALL} -pipeline-stages=1",
                                    f"{SMALL} -pipeline-stages=3",
                                    "npu -max-sram-bytes=32768"])
def test_pre_activation_folds_into_the_conv_and_matches_onnxruntime(target):
    compiled, _ = compile_and_check(pre_activated(), inputs(), target, rtol=1e-5, atol=1e-5)
    assert folded(compiled)
    whole, _ = compile_and_check(pre_activated(), inputs(), f"{target} -fusion=1",
                                 rtol=1e-5, atol=1e-5)
    assert not folded(whole)
    # The 64 KiB pre-activated tensor is neither written nor read back.
    saved = whole.report["dram_read_bytes"] + whole.report["dram_write_bytes"] - (
        compiled.report["dram_read_bytes"] + compiled.report["dram_write_bytes"])
    assert saved >= 2 * 64 * 16 * 16 * 4 - 16 * 1024


@pytest.mark.parametrize("target", [SMALL, "npu -max-sram-bytes=24576"])
def test_input_tiles_reused_across_filter_tiles_take_the_prologue_once(target):
    """More filters than one tile holds: each input tile is computed on once per
    filter tile, loaded (and pre-activated) once; relu(bn(.)) applied twice
    would differ from the model."""
    compiled, _ = compile_and_check(pre_activated(filters=256), inputs(), target,
                                    rtol=1e-5, atol=1e-5)
    assert folded(compiled)


def test_nchw_pre_activation_writes_the_conv_layout_itself():
    """With NCHW preferred, the pre-activation writes its result transposed
    (the conv's NHWC): not by the identity, so it stays an op of its own."""
    compiled, _ = compile_and_check(pre_activated(), inputs(), f"{SMALL} -layout-pref=NCHW",
                                    rtol=1e-5, atol=1e-5)
    assert not folded(compiled)


def test_pre_activation_folds_into_an_average_pool():
    compiled, _ = compile_and_check(pre_activated("pool"), inputs(), SMALL, rtol=1e-5,
                                    atol=1e-6)
    assert folded(compiled)


def average_pooled_projection(channels: int = 64, size: int = 16):
    """An Inception branch: a 3x3 average pool of stride 1 whose padding is not
    counted (a divisor per output pixel), then a 1x1 conv."""
    rng = np.random.default_rng(9)
    nodes = [helper.make_node("Conv", ["x", "w0"], ["h"]),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("AveragePool", ["r"], ["p"], kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["p", "w1", "c"], ["y"])]
    return model(nodes, {"x": [1, 8, size, size]}, {"y": [1, 32, size, size]},
                 {"w0": weight(rng, channels, 8, 1, 1), "w1": weight(rng, 32, channels, 1, 1),
                  "c": weight(rng, 32)})


@pytest.mark.parametrize("target", [SMALL, f"{SMALL} -pipeline-stages=1",
                                    "npu -max-sram-bytes=32768"])
def test_average_pool_divisor_per_pixel_folds_into_the_conv(target):
    """The divisor is a count per output pixel: its tile is cut as the conv's
    input rows and columns, a view with unit batch and channel dims."""
    compiled, _ = compile_and_check(average_pooled_projection(), inputs(), target,
                                    rtol=1e-5, atol=1e-5)
    assert folded(compiled)


def test_padded_conv_keeps_its_pre_activation():
    """A 3x3 conv reads the pre-activated tensor padded with zeros: the padding
    is not the pre-activation of a padding, so the op stays."""
    compiled, _ = compile_and_check(pre_activated(kernel=3), inputs(), SMALL,
                                    rtol=1e-4, atol=1e-5)
    assert not folded(compiled)


def squeeze_excitation(channels: int = 64, size: int = 16):
    """A 3x3 depthwise conv, its squeeze-excitation (global average pool, 1x1
    conv, relu, 1x1 conv, sigmoid: a gate per channel), the gate's scale, and
    the project 1x1 conv."""
    rng = np.random.default_rng(9)
    nodes = [helper.make_node("Conv", ["x", "we"], ["e"]),
             helper.make_node("Conv", ["e", "wd"], ["d"], group=channels, pads=[1] * 4),
             helper.make_node("GlobalAveragePool", ["d"], ["p"]),
             helper.make_node("Conv", ["p", "w1"], ["q"]),
             helper.make_node("Relu", ["q"], ["r"]),
             helper.make_node("Conv", ["r", "w2"], ["s"]),
             helper.make_node("Sigmoid", ["s"], ["gate"]),
             helper.make_node("Mul", ["d", "gate"], ["scaled"]),
             helper.make_node("Conv", ["scaled", "wp"], ["y"])]
    return model(nodes, {"x": [1, 8, size, size]}, {"y": [1, 16, size, size]},
                 {"we": weight(rng, channels, 8, 1, 1), "wd": weight(rng, channels, 1, 3, 3),
                  "w1": weight(rng, 16, channels, 1, 1), "w2": weight(rng, channels, 16, 1, 1),
                  "wp": weight(rng, 16, channels, 1, 1)})


@pytest.mark.parametrize("target", [SMALL, "npu -max-sram-bytes=32768"])
def test_squeeze_excitation_scale_folds_with_its_gate_in_sram(target):
    """The gate (64 floats) is kept in SRAM by the buffer plan; the scale is
    still folded into the project conv, read there: the scaled tensor is
    never written."""
    compiled, _ = compile_and_check(squeeze_excitation(), inputs(), target, rtol=1e-5, atol=1e-5)
    assert folded(compiled), [r.message for r in compiled.remarks]
