"""A dense block's concatenations share one buffer (npu-share-concatenations):
each layer's input is Concat(previous input, new features), which no longer
copies the previous input. A U-Net's level computes its skip tensor and its
upsampled tensor in their slices of the concatenation. The numbers are
onnxruntime's at every target."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

import atvoss_mlir
from e2e_testing import FP16, FP32, SMALL_SRAM_TARGET, compile_and_check, without_pass
from onnx_testing import model, randn


def dense_block(layers: int = 4, channels: int = 16, growth: int = 8,
                size: int = 16, all_features: bool = False) -> onnx.ModelProto:
    """BN-ReLU-Conv3x3 layers, each appending `growth` channels to its input:
    Concat(input, new features), or with `all_features` the Concat of the
    block's input and all the features so far, as torchvision's DenseNet is
    exported."""
    rng = np.random.default_rng(13)
    nodes, weights, x, width, features = [], {}, "x", channels, ["x"]
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
                  helper.make_node("Concat", features + [f"f{i}"] if all_features
                                   else [x, f"f{i}"], [f"c{i}"], axis=1)]
        x, width = f"c{i}", width + growth
        features.append(f"f{i}")
    return model(nodes, {"x": [1, channels, size, size]}, {x: [1, width, size, size]}, weights)


@pytest.mark.parametrize("target", ["npu -fusion=0", "npu -fusion=2", "npu -layout-pref=NCHW",
                                    SMALL_SRAM_TARGET, "npu -precision=fp16"])
@pytest.mark.parametrize("all_features", [False, True])
def test_dense_block_concatenations_share_one_buffer(target, all_features):
    feeds = {"x": randn(1, 16, 16, 16, seed=14)}
    tolerance = FP16 if "fp16" in target else FP32
    compiled, _ = compile_and_check(dense_block(all_features=all_features), feeds, target,
                                    **tolerance)
    shared = [r.message for r in compiled.remarks if "concatenations, each extending" in r.message]
    # The inputs of layers 2-4 (24, 32 and 40 channels) are slices of the last one.
    saved = (24 + 32 + 40) * 16 * 16 * (2 if "fp16" in target else 4)
    assert shared == [f"4 concatenations, each extending the one before, write into one "
                      f"tensor: the earlier ones are its slices ({saved} B not copied again)"]


def unet_level(size: int = 32, channels: int = 16, skip_first: bool = False) -> onnx.ModelProto:
    """A U-Net's level: conv (the skip tensor), max pool, conv, nearest 2x
    Resize, Concat with the skip tensor, conv."""
    rng = np.random.default_rng(15)

    def w(*shape):
        return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)
    pieces = ["skip", "up"] if skip_first else ["up", "skip"]
    nodes = [helper.make_node("Conv", ["x", "w0"], ["c0"], pads=[1] * 4),
             helper.make_node("Relu", ["c0"], ["skip"]),
             helper.make_node("MaxPool", ["skip"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "w1"], ["c1"], pads=[1] * 4),
             helper.make_node("Relu", ["c1"], ["deep"]),
             helper.make_node("Resize", ["deep", "roi", "scales"], ["up"], mode="nearest"),
             helper.make_node("Concat", pieces, ["cat"], axis=1),
             helper.make_node("Conv", ["cat", "w2"], ["y"], pads=[1] * 4)]
    return model(nodes, {"x": [1, 8, size, size]}, {"y": [1, channels, size, size]},
                 {"w0": w(channels, 8, 3, 3), "w1": w(channels, channels, 3, 3),
                  "w2": w(channels, 2 * channels, 3, 3), "roi": np.zeros(0, np.float32),
                  "scales": np.asarray([1, 1, 2, 2], np.float32)})


UNET_TARGET = "npu -max-sram-bytes=65536"   # the 128 KiB concatenation exceeds it


@pytest.mark.parametrize("skip_first", [False, True])
@pytest.mark.parametrize("target", ["npu", UNET_TARGET, UNET_TARGET + " -layout-pref=NCHW",
                                    UNET_TARGET + " -fusion=0"])
def test_unet_level_matches_onnxruntime(target, skip_first):
    compile_and_check(unet_level(skip_first=skip_first), {"x": randn(1, 8, 32, 32, seed=16)},
                      target)


@pytest.mark.parametrize("skip_first", [False, True])
def test_unet_pieces_are_computed_in_their_slices(skip_first, monkeypatch):
    """In NHWC throughout (no transpose but the model's input and output), the
    skip tensor and the upsampled tensor are written in their slices of the
    concatenation: no copy into it, 2 x 64 KiB fewer DRAM bytes each."""
    feeds = {"x": randn(1, 8, 32, 32, seed=16)}
    compiled, _ = compile_and_check(unet_level(skip_first=skip_first), feeds, UNET_TARGET)
    messages = [r.message for r in compiled.remarks]
    assert "concatenation: each piece inserted where it is made, so that it is computed in " \
        "its slice" in messages, messages
    assert any(m.startswith("'linalg.broadcast' writes the view its reshaped result was "
                            "copied into: no copy") for m in messages), messages
    program = str(compiled.module)
    assert program.count('"npu.transpose"') == 2, program.count('"npu.transpose"')
    compiled.run(timing_only=True)
    in_place = compiled.report["dram_read_bytes"] + compiled.report["dram_write_bytes"]
    without_pass(monkeypatch, "npu-forward-copies")
    copied = atvoss_mlir.compile(unet_level(skip_first=skip_first), UNET_TARGET)
    copied.run(timing_only=True)
    assert copied.report["dram_read_bytes"] + copied.report["dram_write_bytes"] \
        >= in_place + 2 * 32 * 32 * 16 * 4
