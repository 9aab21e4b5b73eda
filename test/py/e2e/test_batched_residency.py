"""Tensors kept in SRAM over a batch: a conv, depthwise conv or pool takes one
image per tile, and writes or reads its image of a tensor kept in SRAM in
place (a 1x1 conv's matmul on that image's slice seen as a matrix). Against
onnxruntime at several targets; a batch of images moves no more DRAM bytes
per image than one image does."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from e2e_testing import compile_and_check
from onnx_testing import model


def weight(rng, *shape):
    return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)


def fire(batch: int):
    """SqueezeNet's fire module: squeeze 1x1, then 1x1 and 3x3 expands concatenated."""
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Conv", ["x", "ws", "bs"], ["s"]),
             helper.make_node("Relu", ["s"], ["s1"]),
             helper.make_node("Conv", ["s1", "w1", "b1"], ["e1"]),
             helper.make_node("Relu", ["e1"], ["r1"]),
             helper.make_node("Conv", ["s1", "w3", "b3"], ["e3"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["e3"], ["r3"]),
             helper.make_node("Concat", ["r1", "r3"], ["c"], axis=1),
             helper.make_node("Conv", ["c", "wo", "bo"], ["y"])]
    return model(nodes, {"x": [batch, 32, 14, 14]}, {"y": [batch, 16, 14, 14]},
                 {"ws": weight(rng, 16, 32, 1, 1), "bs": weight(rng, 16),
                  "w1": weight(rng, 32, 16, 1, 1), "b1": weight(rng, 32),
                  "w3": weight(rng, 32, 16, 3, 3), "b3": weight(rng, 32),
                  "wo": weight(rng, 16, 64, 1, 1), "bo": weight(rng, 16)})


def inverted_residual(batch: int):
    """expand 1x1, depthwise 3x3, project 1x1, plus the input."""
    rng = np.random.default_rng(5)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["e"]),
             helper.make_node("Relu", ["e"], ["e1"]),
             helper.make_node("Conv", ["e1", "wd"], ["d"], group=48, pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["d"], ["d1"]),
             helper.make_node("Conv", ["d1", "w2"], ["p"]),
             helper.make_node("Add", ["p", "x"], ["y"])]
    return model(nodes, {"x": [batch, 16, 12, 12]}, {"y": [batch, 16, 12, 12]},
                 {"w1": weight(rng, 48, 16, 1, 1), "wd": weight(rng, 48, 1, 3, 3),
                  "w2": weight(rng, 16, 48, 1, 1)})


def conv_pool(batch: int):
    """3x3 conv, 2x2 max pool, 1x1 conv."""
    rng = np.random.default_rng(7)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["a"], ["a1"]),
             helper.make_node("MaxPool", ["a1"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "w2"], ["y"])]
    return model(nodes, {"x": [batch, 8, 16, 16]}, {"y": [batch, 16, 8, 8]},
                 {"w1": weight(rng, 24, 8, 3, 3), "w2": weight(rng, 16, 24, 1, 1)})


MODELS = {"fire": fire, "inverted_residual": inverted_residual, "conv_pool": conv_pool}
TARGETS = [None, "npu -max-sram-bytes=65536", "npu -layout-pref=NCHW", "npu -fusion=1",
           "npu -pipeline-stages=3 -dataflow=os"]


def random_input(onnx_model, seed: int) -> dict:
    shape = [d.dim_value for d in onnx_model.graph.input[0].type.tensor_type.shape.dim]
    return {"x": np.random.default_rng(seed).standard_normal(shape).astype(np.float32)}


def dram_bytes(compiled) -> int:
    return compiled.report["dram_read_bytes"] + compiled.report["dram_write_bytes"]


@pytest.mark.parametrize("target", TARGETS, ids=["default", "sram64k", "nchw", "fusion1",
                                                 "stages3_os"])
@pytest.mark.parametrize("name,batch", [("fire", 2), ("inverted_residual", 3), ("conv_pool", 2)])
def test_batch_matches_onnxruntime(name, batch, target):
    onnx_model = MODELS[name](batch)
    compile_and_check(onnx_model, random_input(onnx_model, batch), target, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", MODELS)
def test_batch_moves_no_more_dram_per_image(name):
    """The intermediates stay in SRAM over the batch as for one image (the
    weights are loaded once for the batch)."""
    per_image = {}
    for batch in (1, 2):
        onnx_model = MODELS[name](batch)
        compiled, _ = compile_and_check(onnx_model, random_input(onnx_model, 0), None,
                                        rtol=1e-5, atol=1e-5)
        per_image[batch] = dram_bytes(compiled) / batch
    assert per_image[2] <= per_image[1], per_image
