"""A dense block's concatenations share one buffer (npu-share-concatenations):
each layer's input is Concat(previous input, new features), which no longer
copies the previous input. The numbers are onnxruntime's at every target."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from e2e_testing import FP16, FP32, SMALL_SRAM_TARGET, compile_and_check
from onnx_testing import model, randn


def dense_block(layers: int = 4, channels: int = 16, growth: int = 8,
                size: int = 16) -> onnx.ModelProto:
    """BN-ReLU-Conv3x3 layers, each appending `growth` channels to its input."""
    rng = np.random.default_rng(13)
    nodes, weights, x, width = [], {}, "x", channels
    for i in range(layers):
        weights.update({f"s{i}": rng.uniform(0.5, 1.5, width).astype(np.float32),
                        f"b{i}": rng.uniform(-0.1, 0.1, width).astype(np.float32),
                        f"m{i}": rng.uniform(-0.1, 0.1, width).astype(np.float32),
                        f"v{i}": np.ones(width, np.float32),
                        f"w{i}": (rng.standard_normal((growth, width, 3, 3)) * 0.1)
                        .astype(np.float32)})
        nodes += [helper.make_node("BatchNormalization", [x, f"s{i}", f"b{i}", f"m{i}", f"v{i}"],
                                   [f"bn{i}"]),
                  helper.make_node("Relu", [f"bn{i}"], [f"r{i}"]),
                  helper.make_node("Conv", [f"r{i}", f"w{i}"], [f"f{i}"], pads=[1] * 4),
                  helper.make_node("Concat", [x, f"f{i}"], [f"c{i}"], axis=1)]
        x, width = f"c{i}", width + growth
    return model(nodes, {"x": [1, channels, size, size]}, {x: [1, width, size, size]}, weights)


@pytest.mark.parametrize("target", ["npu -fusion=0", "npu -fusion=2", "npu -layout-pref=NCHW",
                                    SMALL_SRAM_TARGET, "npu -precision=fp16"])
def test_dense_block_concatenations_share_one_buffer(target):
    feeds = {"x": randn(1, 16, 16, 16, seed=14)}
    tolerance = FP16 if "fp16" in target else FP32
    compiled, _ = compile_and_check(dense_block(), feeds, target, **tolerance)
    shared = [r.message for r in compiled.remarks if "concatenations, each extending" in r.message]
    # The inputs of layers 2-4 (24, 32 and 40 channels) are slices of the last one.
    saved = (24 + 32 + 40) * 16 * 16 * (2 if "fp16" in target else 4)
    assert shared == [f"4 concatenations, each extending the one before, write into one "
                      f"tensor: the earlier ones are its slices ({saved} B not copied again)"]
