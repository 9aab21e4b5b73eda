"""A grouped conv's activation and residual add run on each group's result.

A grouped conv imports as one conv per group, their results concatenated.
An activation of the concatenation, and at -fusion=2 a residual add, are
applied to each group's result instead (npu-fuse-epilogue), so that they fold
into that group's conv: its epilogue, or its start from the skip tensor."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from e2e_testing import FP32, SMALL_SRAM_TARGET, compile_and_check
from onnx_testing import model, randn

GROUPS = 3


def shufflenet_unit(channels: int, size: int) -> onnx.ModelProto:
    """ShuffleNet v1's unit: grouped 1x1 conv and relu, channel shuffle,
    3x3 depthwise conv, grouped 1x1 conv, residual add, relu."""
    rng = np.random.default_rng(7)
    per_group = channels // GROUPS

    def weights(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)
    return model(
        [helper.make_node("Conv", ["x", "w1", "b1"], ["g"], group=GROUPS),
         helper.make_node("Relu", ["g"], ["r"]),
         helper.make_node("Reshape", ["r", "split"], ["s"]),
         helper.make_node("Transpose", ["s"], ["t"], perm=[0, 2, 1, 3, 4]),
         helper.make_node("Reshape", ["t", "merge"], ["m"]),
         helper.make_node("Conv", ["m", "w2"], ["d"], group=channels, pads=[1] * 4),
         helper.make_node("Conv", ["d", "w3", "b3"], ["e"], group=GROUPS),
         helper.make_node("Add", ["e", "x"], ["a"]),
         helper.make_node("Relu", ["a"], ["y"])],
        {"x": [1, channels, size, size]}, {"y": [1, channels, size, size]},
        {"w1": weights(channels, per_group, 1, 1), "b1": weights(channels),
         "split": np.array([1, GROUPS, per_group, size, size], np.int64),
         "merge": np.array([1, channels, size, size], np.int64),
         "w2": weights(channels, 1, 3, 3),
         "w3": weights(channels, per_group, 1, 1), "b3": weights(channels)})


def messages(compiled, text: str) -> list[str]:
    return [remark.message for remark in compiled.remarks if text in remark.message]


@pytest.mark.parametrize("target", ["npu -fusion=0", "npu -fusion=1", "npu -fusion=2",
                                    SMALL_SRAM_TARGET])
def test_grouped_conv_epilogues_match_onnxruntime(target):
    compiled, _ = compile_and_check(shufflenet_unit(12, 8), {"x": randn(1, 12, 8, 8, seed=2)},
                                    target, **FP32)
    folded = messages(compiled, "relu folded into its epilogue")
    assert len(folded) == (0 if "fusion=0" in target else GROUPS), folded


def test_residual_add_folds_into_each_group_conv():
    """Group results larger than a quarter of the SRAM: each group's conv starts
    from its slice of the skip tensor plus its bias and the relu after the add
    is its epilogue, so the sum of the groups is never written to DRAM and read
    back, as it is at -fusion=1 (13.6 MB moved against 17.2 MB)."""
    channels, size = 72, 56
    unit, feeds = shufflenet_unit(channels, size), {"x": randn(1, channels, size, size, seed=3)}
    fused, _ = compile_and_check(unit, feeds, "npu -fusion=2", **FP32)
    epilogues, _ = compile_and_check(unit, feeds, "npu -fusion=1", **FP32)
    assert len(messages(fused, "residual add folded in")) == GROUPS
    assert len(messages(fused, "relu folded into its epilogue")) == 2 * GROUPS

    def moved(compiled):
        return compiled.report["dram_read_bytes"] + compiled.report["dram_write_bytes"]
    assert moved(epilogues) - moved(fused) >= 2 * channels * size * size * 4
