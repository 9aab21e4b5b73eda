"""Random chains of convolutions, each followed by an activation the matrix
unit does not apply as an epilogue (swish, hard swish, leaky relu, tanh,
sigmoid, a per-channel scale, a constant add), end to end against
onnxruntime. Such activations are elementwise ops of their own: between two
convs they run in the strips of a row cascade (npu-cascade-rows), and their
scalar constants live in one-element SRAM buffers, freed without waiting for
the vector unit."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from e2e_testing import compile_and_check
from onnx_testing import model

ACTIVATIONS = ("swish", "leaky", "hswish", "tanh", "scale", "addc", "sig")


def weight(rng, *shape):
    return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[1:]))).astype(np.float32)


def activation(kind: str, source: str, name: str, channels: int, rng, initializers) -> list:
    if kind == "swish":
        return [helper.make_node("Sigmoid", [source], [name + "s"]),
                helper.make_node("Mul", [source, name + "s"], [name])]
    if kind == "hswish":
        return [helper.make_node("HardSigmoid", [source], [name + "s"], alpha=1 / 6, beta=0.5),
                helper.make_node("Mul", [source, name + "s"], [name])]
    if kind == "leaky":
        return [helper.make_node("LeakyRelu", [source], [name], alpha=0.1)]
    if kind in ("tanh", "sig"):
        return [helper.make_node("Tanh" if kind == "tanh" else "Sigmoid", [source], [name])]
    if kind == "scale":
        initializers[name + "k"] = rng.standard_normal((1, channels, 1, 1)).astype(np.float32)
        return [helper.make_node("Mul", [source, name + "k"], [name])]
    initializers[name + "k"] = np.array(0.5, np.float32)
    return [helper.make_node("Add", [source, name + "k"], [name])]


def activation_chain(seed: int):
    """2 to 4 convs (1x1, 3x3 or depthwise 3x3, stride 1 or 2), each followed
    by a random activation; batch 1 or 2, 40 to 56 pixels square."""
    rng = np.random.default_rng(seed)
    batch, size, channels = int(rng.choice([1, 2])), int(rng.choice([40, 48, 56])), 16
    nodes, initializers, source, height = [], {}, "x", size
    for i in range(int(rng.integers(2, 5))):
        kind = str(rng.choice(["conv", "dw", "conv1"]))
        kernel = 1 if kind == "conv1" else 3
        stride = int(rng.choice([1, 1, 2]))
        filters = int(rng.choice([32, 64, 96])) if kind != "dw" else channels
        group = channels if kind == "dw" else 1
        initializers[f"w{i}"] = weight(rng, filters, channels // group, kernel, kernel)
        nodes.append(helper.make_node("Conv", [source, f"w{i}"], [f"c{i}"], group=group,
                                      kernel_shape=[kernel, kernel], strides=[stride, stride],
                                      pads=[kernel // 2] * 4))
        height = (height + 2 * (kernel // 2) - kernel) // stride + 1
        channels = filters
        nodes += activation(str(rng.choice(ACTIVATIONS)), f"c{i}", f"a{i}", channels, rng,
                            initializers)
        source = f"a{i}"
    nodes.append(helper.make_node("Identity", [source], ["y"]))
    return (model(nodes, {"x": [batch, 16, size, size]},
                  {"y": [batch, channels, height, height]}, initializers),
            {"x": np.random.default_rng(seed + 7).standard_normal((batch, 16, size, size))
             .astype(np.float32)})


@pytest.mark.parametrize("seed", [6, 47, 49])
def test_constants_freed_before_a_prefetched_load(seed):
    """A hard sigmoid's or leaky relu's constants (one-element SRAM buffers,
    filled on the vector unit) are freed while the fill may still be queued
    behind a depthwise conv. The next conv's weight load, issued ahead of the
    barrier ending the op before (npu-prefetch-weights), was placed in their
    space: the simulator stopped on the write-after-write hazard. The load now
    goes elsewhere (or waits for the compute engines), and the chain computes
    the model."""
    onnx_model, feeds = activation_chain(seed)
    compile_and_check(onnx_model, feeds, "npu", rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("target", ["npu", "npu -max-sram-bytes=262144 -dram-bytes-per-cycle=16"])
def test_random_activation_chains_match_onnxruntime(target):
    """Ten random chains per target; on the DRAM-bound one most run in strips
    with their activations as members of the cascade."""
    cascaded = 0
    for seed in range(10):
        onnx_model, feeds = activation_chain(seed)
        compiled, _ = compile_and_check(onnx_model, feeds, target, rtol=1e-4, atol=1e-4)
        cascaded += any(r.message.startswith("cascaded") for r in compiled.remarks)
    if target != "npu":
        assert cascaded >= 5, cascaded
