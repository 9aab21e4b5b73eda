"""Inverted bottlenecks run in groups of channels (npu-cascade-channels) end to
end against onnxruntime: MobileNetV2's block at 14x14 (1x1 expand, 3x3
depthwise, 1x1 project, residual add), whose project conv accumulates over the
groups. The results are the model's to rounding on machines of other shapes
too, and the pipelined groups take fewer cycles than the block run whole."""

from __future__ import annotations

import numpy as np
import pytest

import atvoss_mlir
from e2e_testing import compile_and_check, without_pass
from test_cascade_rows import inverted_residual

GROUPS = "groups of"


def bottleneck(size: int = 14, channels: int = 64, expanded: int = 384, stride: int = 1):
    """expand, relu6, depthwise 3x3, relu6, project (+ x when the stride is 1)."""
    return inverted_residual(size, stride, stride == 1, channels, expanded, seed=21)


def feeds(channels: int = 64, size: int = 14) -> dict:
    return {"x": np.random.default_rng(22).standard_normal((1, channels, size, size))
            .astype(np.float32)}


def grouped(compiled) -> list:
    return [r.message for r in compiled.remarks
            if r.message.startswith("cascaded") and GROUPS in r.message]


@pytest.mark.parametrize("target", ["npu", "npu -pipeline-stages=1", "npu -pipeline-stages=3",
                                    "npu -layout-pref=auto", "npu -dram-bytes-per-cycle=32",
                                    "npu -vector-lanes=32"])
def test_bottleneck_in_groups_of_channels_matches_onnxruntime(target):
    compiled, _ = compile_and_check(bottleneck(), feeds(), target, rtol=1e-5, atol=1e-5)
    assert grouped(compiled), [r.message for r in compiled.remarks]
    if target == "npu":
        assert "in 3 groups of 128 channels" in grouped(compiled)[0]


@pytest.mark.parametrize("target", ["npu -array-rows=16 -array-cols=16",
                                    "npu -max-sram-bytes=524288"])
def test_bottleneck_left_whole_says_why(target):
    """On a quarter of the array the convs outweigh the depthwise conv beside
    them; in half the SRAM two groups of 64 channels do not fit beside the
    input and the result. The block stays whole and matches onnxruntime."""
    compiled, _ = compile_and_check(bottleneck(), feeds(), target, rtol=1e-5, atol=1e-5)
    assert not grouped(compiled)
    assert any("not cascaded by channels: in groups of a multiple of 64 channels" in r.message
               for r in compiled.remarks), [r.message for r in compiled.remarks]


def test_bottleneck_in_fp16_groups_matches_onnxruntime():
    """-precision=fp16 runs the block in the same groups, to fp16 rounding."""
    compiled, _ = compile_and_check(bottleneck(), feeds(), "npu -precision=fp16",
                                    rtol=2e-2, atol=2e-2)
    assert "in 3 groups of 128 channels" in grouped(compiled)[0]


def test_uneven_groups_match_onnxruntime():
    """320 channels: two groups of 128 and a last one of 64."""
    compiled, _ = compile_and_check(bottleneck(expanded=320), feeds(), "npu",
                                    rtol=1e-5, atol=1e-5)
    assert "in 3 groups of 128 channels" in grouped(compiled)[0]


@pytest.mark.parametrize("shape", [dict(size=14, stride=2, expanded=576, channels=96),
                                   dict(size=7, channels=160, expanded=960),
                                   dict(size=28, channels=32, expanded=192)])
def test_other_bottlenecks_match_onnxruntime(shape):
    """A strided one (in groups), a 7x7 one with 960 channels and a 28x28 one
    (both whole on the default machine, with a remark)."""
    channels, size = shape["channels"], shape["size"]
    compiled, _ = compile_and_check(bottleneck(**shape), feeds(channels, size), "npu",
                                    rtol=1e-5, atol=1e-5)
    if shape.get("stride") == 2:
        assert "in 3 groups of 192 channels" in grouped(compiled)[0]
    else:
        assert not grouped(compiled)
        assert any("not cascaded by channels" in r.message for r in compiled.remarks)


def test_groups_take_fewer_cycles_than_the_block_whole(monkeypatch):
    cascaded = atvoss_mlir.compile(bottleneck(), "npu")
    cascaded.run(timing_only=True)
    without_pass(monkeypatch, "npu-cascade-channels")
    whole = atvoss_mlir.compile(bottleneck(), "npu")
    whole.run(timing_only=True)
    assert grouped(cascaded) and not grouped(whole)
    # The depthwise conv of a group runs beside the convs around it.
    assert cascaded.report["total_cycles"] < 0.9 * whole.report["total_cycles"], \
        (cascaded.report["total_cycles"], whole.report["total_cycles"])
