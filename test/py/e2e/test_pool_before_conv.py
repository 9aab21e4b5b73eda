"""A DenseNet transition (batch-norm, relu, 1x1 conv, 2x2 average pool) end to
end against onnxruntime: npu-pool-before-conv pools the conv's input, so the
conv multiplies a quarter of the pixels; the result is the model's to
rounding, at every fusion level and layout."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from e2e_testing import compile_and_check
from onnx_testing import model

MOVED = "sum pooling moved before the 1x1 convolution it reads"


def transition(channels: int = 32, filters: int = 16, size: int = 16, pool_pads=None):
    rng = np.random.default_rng(5)

    def weight(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)
    pool = {"kernel_shape": [2, 2], "strides": [2, 2]}
    if pool_pads is not None:
        pool["pads"] = pool_pads
    nodes = [helper.make_node("BatchNormalization", ["x", "g", "b", "m", "v"], ["n"]),
             helper.make_node("Relu", ["n"], ["r"]),
             helper.make_node("Conv", ["r", "w", "c"], ["t"]),
             helper.make_node("AveragePool", ["t"], ["y"], **pool)]
    out = (size + sum(pool_pads or [0, 0, 0, 0]) // 2 - 2) // 2 + 1
    return model(nodes, {"x": [1, channels, size, size]}, {"y": [1, filters, out, out]},
                 {"g": weight(channels) + 1, "b": weight(channels), "m": weight(channels),
                  "v": np.abs(weight(channels)) + 0.5, "w": weight(filters, channels, 1, 1),
                  "c": weight(filters)})


def inputs(size: int = 16, channels: int = 32) -> dict:
    return {"x": np.random.default_rng(6).standard_normal((1, channels, size, size))
            .astype(np.float32)}


@pytest.mark.parametrize("target", ["npu", "npu -fusion=1", "npu -layout-pref=auto",
                                    "npu -max-sram-bytes=32768", "npu -pipeline-stages=3"])
def test_transition_pools_first_and_matches_onnxruntime(target):
    compiled, _ = compile_and_check(transition(), inputs(), target, rtol=1e-5, atol=1e-6)
    assert any(MOVED in remark.message for remark in compiled.remarks)
    # The conv multiplies the 8x8 pooled pixels: 64 x 32 x 16 MACs, not 256 x 32 x 16.
    assert compiled.report["macs"] == 64 * 32 * 16


def test_without_fusion_the_pool_stays_after_the_conv():
    compiled, _ = compile_and_check(transition(), inputs(), "npu -fusion=0")
    assert not any(MOVED in remark.message for remark in compiled.remarks)
    assert compiled.report["macs"] == 256 * 32 * 16


def test_padded_average_pool_stays_after_the_conv():
    """Padding at the conv's output is zero there, its bias at the input:
    the two orders differ, and the pool is not a sum of the conv's result."""
    compiled, _ = compile_and_check(transition(pool_pads=[1, 1, 1, 1]), inputs(),
                                    rtol=1e-5, atol=1e-6)
    assert not any(MOVED in remark.message for remark in compiled.remarks)
    assert compiled.report["macs"] == 256 * 32 * 16
