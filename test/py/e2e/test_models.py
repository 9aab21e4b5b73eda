"""Whole models compiled and simulated against onnxruntime: the bundled
examples (a ResNet-style CNN and a transformer encoder layer), a small
ResNet-50, and the check that examples/make_examples.py rebuilds the
committed example files."""

from __future__ import annotations

import importlib.util
import os

import numpy as np
import onnx
import pytest

from e2e_testing import EXAMPLES, FP32, compile_and_check
from onnx_testing import randn, resnet50


def make_examples_module():
    spec = importlib.util.spec_from_file_location(
        "make_examples", os.path.join(EXAMPLES, "make_examples.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("filename", ["small_cnn.onnx", "transformer_block.onnx"])
def test_make_examples_rebuilds_the_committed_file(filename, tmp_path):
    make_examples_module().main([str(tmp_path)])
    committed = os.path.join(EXAMPLES, filename)
    with open(committed, "rb") as stream:
        committed_bytes = stream.read()
    rebuilt_bytes = (tmp_path / filename).read_bytes()
    if committed_bytes != rebuilt_bytes:
        # Another onnx release may serialise differently: the graph and the
        # weights must still be the same.
        assert onnx.load_from_string(committed_bytes).graph == \
            onnx.load_from_string(rebuilt_bytes).graph, f"{filename} is stale: rerun " \
                                                        f"examples/make_examples.py"
    assert len(committed_bytes) < 4 * 2 ** 20


def test_small_cnn_example():
    path = os.path.join(EXAMPLES, "small_cnn.onnx")
    op_types = {node.op_type for node in onnx.load(path).graph.node}
    assert {"Conv", "BatchNormalization", "Relu", "Add", "MaxPool", "GlobalAveragePool",
            "Gemm"} <= op_types
    feeds = {"input": randn(1, 3, 32, 32, seed=3)}
    compiled, _ = compile_and_check(onnx.load(path), feeds, **FP32)
    # Convolutions, pooling, residual adds and the classifier run on the NPU;
    # only the global average pool's reduction and division stay behind.
    assert compiled.fallback_ops and all("[node 'gap']" in line
                                         for line in compiled.fallback_ops)
    assert compiled.report["total_cycles"] > compiled.report["roofline_cycles"] > 0


def test_transformer_block_example():
    path = os.path.join(EXAMPLES, "transformer_block.onnx")
    op_types = {node.op_type for node in onnx.load(path).graph.node}
    assert {"MatMul", "Add", "Softmax", "LayerNormalization", "Gelu", "Reshape",
            "Transpose"} <= op_types
    feeds = {"input": randn(1, 16, 64, seed=3)}
    compiled, _ = compile_and_check(onnx.load(path), feeds, **FP32)
    assert compiled.report["macs"] > 0


def test_small_resnet50():
    onnx_model = resnet50(width=8, image=64, classes=10, batch=2)
    compile_and_check(onnx_model, {"input": randn(2, 3, 64, 64, seed=4)}, **FP32)


def test_examples_on_a_small_sram_single_buffered_machine():
    path = os.path.join(EXAMPLES, "small_cnn.onnx")
    compile_and_check(onnx.load(path), {"input": randn(1, 3, 32, 32, seed=5)},
                      "npu -max-sram-bytes=65536 -pipeline-stages=1", **FP32)
    path = os.path.join(EXAMPLES, "transformer_block.onnx")
    compile_and_check(onnx.load(path), {"input": randn(1, 16, 64, seed=5)},
                      "npu -max-sram-bytes=16384 -pipeline-stages=3", **FP32)
