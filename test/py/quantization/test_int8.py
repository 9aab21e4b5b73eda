"""Quantised ONNX models against onnxruntime's own execution of the same
model: the operator forms (QLinearConv, QLinearMatMul, ConvInteger,
MatMulInteger) and QDQ graphs as onnxruntime's quantiser writes them,
per-tensor and per-channel, int8 and uint8 activations. int8 outputs: at
least 99.9% of the elements equal, none more than 1 LSB off."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)

import atvoss_mlir
from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.reference import reference_session

RNG = np.random.default_rng(7)


def reference(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    return reference_session(model).run(None, feeds)


def compiled_outputs(model: onnx.ModelProto, feeds: dict):
    compiled = atvoss_mlir.compile(model)
    return list(compiled.run(feeds).values()), compiled


def assert_within_one_lsb(ours: np.ndarray, theirs: np.ndarray, lsb: float = 1.0) -> None:
    """Integer outputs (lsb 1) or dequantised ones (lsb = the output scale)."""
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape
    steps = np.abs(ours.astype(np.float64) - theirs.astype(np.float64)) / lsb
    assert steps.max() <= 1.0 + 1e-3, f"{steps.max()} LSB off"
    assert np.mean(steps < 1e-3) >= 0.999, f"only {np.mean(steps < 1e-3):.4%} equal"


def integers(dtype, shape):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max + 1, shape).astype(dtype)


def elem(dtype) -> int:
    return TensorProto.UINT8 if np.dtype(dtype) == np.uint8 else TensorProto.INT8


def model_of(nodes, inputs, outputs, initializers, opset=13):
    graph = helper.make_graph(nodes, "g", inputs, outputs,
                              [numpy_helper.from_array(a, n) for n, a in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


# -- operator forms --------------------------------------------------------------------------

def weight_scales(per_channel: bool, count: int) -> np.ndarray:
    return (RNG.random(count if per_channel else ()) * 0.02 + 0.004).astype(np.float32)


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("group, filters", [(1, 16), (8, 8), (8, 16)])
def test_qlinearconv_matches_onnxruntime(dtype, per_channel, group, filters):
    """(8, 16): a depthwise conv with two filters per channel."""
    channels = 8
    x = integers(dtype, (1, channels, 11, 9))
    scales = weight_scales(per_channel, filters)
    zero = np.array(9 if dtype == np.uint8 else -3, dtype)
    initializers = {
        "xs": np.array(0.05, np.float32), "xz": zero,
        "w": integers(np.int8, (filters, channels // group, 3, 3)),
        "ws": scales, "wz": np.zeros(scales.shape, np.int8),
        "ys": np.array(0.7, np.float32), "yz": np.array(120 if dtype == np.uint8 else 4, dtype),
        "b": RNG.integers(-3000, 3000, filters).astype(np.int32)}
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                            ["y"], pads=[1, 0, 1, 2], strides=[2, 1], group=group)
    model = model_of([node], [helper.make_tensor_value_info("x", elem(dtype), x.shape)],
                     [helper.make_tensor_value_info("y", elem(dtype), None)], initializers)
    (ours,), compiled = compiled_outputs(model, {"x": x})
    assert_within_one_lsb(ours, reference(model, {"x": x})[0])
    program = compiled.program
    assert "xi8" in program and "npu.requantize" in program
    kind = "npu.conv2d" if group == 1 else "npu.depthwise_conv2d"
    assert any(op["op"] == kind for op in compiled.report["ops"])
    assert compiled.fallback_ops == []
    assert compiled.report["engines"]["fallback"]["busy_cycles"] == 0


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("per_column", [False, True])
def test_qlinearmatmul_matches_onnxruntime(dtype, per_column):
    a = integers(dtype, (2, 24, 40))
    scales = weight_scales(per_column, 33)
    initializers = {
        "as": np.array(0.04, np.float32), "az": np.array(3, dtype),
        "w": integers(np.int8, (40, 33)), "ws": scales, "wz": np.zeros(scales.shape, np.int8),
        "ys": np.array(0.6, np.float32), "yz": np.array(1, dtype)}
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "w", "ws", "wz", "ys", "yz"],
                            ["y"])
    model = model_of([node], [helper.make_tensor_value_info("a", elem(dtype), a.shape)],
                     [helper.make_tensor_value_info("y", elem(dtype), None)], initializers)
    (ours,), compiled = compiled_outputs(model, {"a": a})
    assert_within_one_lsb(ours, reference(model, {"a": a})[0])
    assert any(op["op"] == "npu.matmul" for op in compiled.report["ops"])
    assert compiled.fallback_ops == []
    assert compiled.report["engines"]["fallback"]["busy_cycles"] == 0


def test_matmulinteger_and_convinteger_give_onnxruntimes_int32():
    a = integers(np.int8, (16, 24))
    x = integers(np.int8, (1, 4, 7, 7))
    initializers = {"w": integers(np.int8, (24, 12)), "az": np.array(-5, np.int8),
                    "k": integers(np.int8, (6, 4, 3, 3)), "xz": np.array(2, np.int8)}
    nodes = [helper.make_node("MatMulInteger", ["a", "w", "az"], ["y"]),
             helper.make_node("ConvInteger", ["x", "k", "xz"], ["z"], pads=[1, 1, 1, 1])]
    model = model_of(nodes, [helper.make_tensor_value_info("a", TensorProto.INT8, a.shape),
                             helper.make_tensor_value_info("x", TensorProto.INT8, x.shape)],
                     [helper.make_tensor_value_info("y", TensorProto.INT32, None),
                      helper.make_tensor_value_info("z", TensorProto.INT32, None)],
                     initializers, opset=10)
    ours, _ = compiled_outputs(model, {"a": a, "x": x})
    for mine, theirs in zip(ours, reference(model, {"a": a, "x": x})):
        np.testing.assert_array_equal(mine, theirs)


# -- QDQ graphs from onnxruntime's quantiser -------------------------------------------------

def float_cnn() -> onnx.ModelProto:
    def weight(*shape, scale=0.3):
        return (RNG.standard_normal(shape) * scale).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["a"]),
        helper.make_node("MaxPool", ["a"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p", "w3"], ["c3"], group=8, pads=[1, 1, 1, 1]),
        helper.make_node("Concat", ["c3", "p"], ["cat"], axis=1),
        helper.make_node("AveragePool", ["cat"], ["ap"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Mul", ["ap", "s"], ["m"]),
        helper.make_node("Flatten", ["m"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["g"], transB=1),
        helper.make_node("MatMul", ["g", "wm"], ["y"])]
    initializers = {"w1": weight(8, 3, 3, 3), "b1": weight(8), "w2": weight(8, 8, 3, 3, scale=0.1),
                    "b2": weight(8), "w3": weight(8, 1, 3, 3), "s": weight(1, 16, 1, 1),
                    "wf": weight(12, 64, scale=0.1), "bf": weight(12), "wm": weight(12, 10)}
    return model_of(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)


class Samples(CalibrationDataReader):
    def __init__(self, samples):
        self.samples = iter(samples)

    def get_next(self):
        return next(self.samples, None)


def quantized(model, activation_type, per_channel, tmp_path) -> onnx.ModelProto:
    source, target = tmp_path / "f.onnx", tmp_path / "q.onnx"
    onnx.save(model, source)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    samples = [{"x": RNG.standard_normal(shape).astype(np.float32)} for _ in range(16)]
    quantize_static(str(source), str(target), Samples(samples), quant_format=QuantFormat.QDQ,
                    activation_type=activation_type, weight_type=QuantType.QInt8,
                    per_channel=per_channel)
    return onnx.load(target)


def output_scale(model: onnx.ModelProto) -> float:
    """The scale of the DequantizeLinear writing the graph's output."""
    initializers = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    producers = {output: n for n in model.graph.node for output in n.output}
    node = producers[model.graph.output[0].name]
    while node.op_type != "DequantizeLinear":   # ops left in float after it (a pool)
        node = producers[node.input[0]]
    assert node.op_type == "DequantizeLinear"
    return float(initializers[node.input[1]])


def weight(*shape, scale=0.3):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


# One op each, as onnxruntime's quantiser wraps it in DequantizeLinear and
# QuantizeLinear: (nodes, weights) on x [1, 8, 8, 8].
PATTERNS = {
    "Conv": ([helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])],
             {"w": weight(12, 8, 3, 3, scale=0.1), "b": weight(12)}),
    "Conv+Relu": ([helper.make_node("Conv", ["x", "w"], ["c"], strides=[2, 2]),
                   helper.make_node("Relu", ["c"], ["y"])], {"w": weight(12, 8, 1, 1)}),
    "depthwise Conv": ([helper.make_node("Conv", ["x", "w", "b"], ["y"], group=8,
                                         pads=[1, 1, 1, 1])], {"w": weight(8, 1, 3, 3),
                                                               "b": weight(8)}),
    "depthwise Conv, multiplier 2": ([helper.make_node("Conv", ["x", "w"], ["y"], group=8,
                                                       strides=[2, 2], pads=[1, 1, 1, 1])],
                                     {"w": weight(16, 1, 3, 3)}),
    "MatMul": ([helper.make_node("MatMul", ["x", "w"], ["y"])], {"w": weight(8, 6)}),
    "Gemm": ([helper.make_node("Flatten", ["x"], ["f"]),
              helper.make_node("Gemm", ["f", "w", "b"], ["y"], transB=1)],
             {"w": weight(10, 512, scale=0.05), "b": weight(10)}),
    "Add": ([helper.make_node("Add", ["x", "c"], ["y"])], {"c": weight(1, 8, 8, 8)}),
    "Mul": ([helper.make_node("Mul", ["x", "c"], ["y"])], {"c": weight(1, 8, 1, 1)}),
    "MaxPool": ([helper.make_node("Conv", ["x", "w"], ["c"]),
                 helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2],
                                  strides=[2, 2])], {"w": weight(8, 8, 1, 1)}),
    "AveragePool": ([helper.make_node("Conv", ["x", "w"], ["c"]),
                     helper.make_node("AveragePool", ["c"], ["y"], kernel_shape=[2, 2],
                                      strides=[2, 2])], {"w": weight(8, 8, 1, 1)}),
    "GlobalAveragePool": ([helper.make_node("GlobalAveragePool", ["x"], ["y"])], {}),
    "Concat": ([helper.make_node("Relu", ["x"], ["r"]),
                helper.make_node("Concat", ["x", "r"], ["y"], axis=1)], {}),
    # The quantiser gives x, the conv's result and the concatenation each
    # their own scale: the inputs are requantised into the output's.
    "Concat of other scales": ([helper.make_node("Conv", ["x", "w"], ["c"]),
                                helper.make_node("Concat", ["x", "c"], ["y"], axis=1)],
                               {"w": weight(4, 8, 1, 1, scale=1.5)}),
    "Sigmoid": ([helper.make_node("Sigmoid", ["x"], ["y"])], {}),
    # Attention's products: onnxruntime's QLinearMatMul sums in int32, exactly.
    "MatMul of activations": ([helper.make_node("Relu", ["x"], ["r"]),
                               helper.make_node("Transpose", ["r"], ["t"], perm=[0, 1, 3, 2]),
                               helper.make_node("MatMul", ["x", "t"], ["y"])], {}),
    # onnxruntime fuses it into its QLinearSoftmax: scaled by floor(1 / y_scale).
    "Softmax": ([helper.make_node("Softmax", ["x"], ["y"], axis=1)], {}),
    "Reshape+Transpose": ([helper.make_node("Conv", ["x", "w"], ["c"]),
                           helper.make_node("Reshape", ["c", "shape"], ["t"]),
                           helper.make_node("Transpose", ["t"], ["y"], perm=[0, 2, 1, 3, 4])],
                          {"w": weight(8, 8, 1, 1), "shape": np.array([1, 2, 4, 8, 8], np.int64)}),
}


def pattern_model(name: str) -> onnx.ModelProto:
    nodes, initializers = PATTERNS[name]
    return model_of(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                    dict(initializers))


@pytest.mark.parametrize("name", list(PATTERNS))
@pytest.mark.parametrize("activation_type", [QuantType.QUInt8, QuantType.QInt8])
@pytest.mark.parametrize("per_channel", [False, True])
def test_qdq_pattern_matches_onnxruntime(name, activation_type, per_channel, tmp_path):
    model = quantized(pattern_model(name), activation_type, per_channel, tmp_path)
    x = RNG.standard_normal((1, 8, 8, 8)).astype(np.float32)
    (ours,), compiled = compiled_outputs(model, {"x": x})
    assert_within_one_lsb(ours, reference(model, {"x": x})[0], output_scale(model))
    assert compiled.fallback_ops == []
    assert compiled.report["engines"]["fallback"]["busy_cycles"] == 0
    remarks = [r.message for r in compiled.remarks]
    if name.split()[-1] in ("Conv", "MatMul", "Gemm") or name == "Conv+Relu":
        matrix = [op for op in compiled.report["ops"] if op["op"] in ("npu.conv2d", "npu.matmul")]
        assert name == "depthwise Conv" or matrix
        assert not any("is computed in float" in m for m in remarks)
        assert "xi8" in compiled.program
    if name == "MatMul of activations":   # onnxruntime's int32 sum, exact in f32
        assert not any("(MatMul) is computed in float" in m for m in remarks)
    if name == "Concat of other scales":   # int8 in and out, no f32 tensor
        assert not any("is computed in float" in m for m in remarks)
    if name == "Add":   # int8 in and out: one npu.quantized_add on SRAM tiles
        assert not any("is computed in float" in m for m in remarks)
        assert compiled.program.count('"npu.quantized_add"') == 1
        # only the model's output DequantizeLinear
        assert compiled.program.count('"npu.dequantize"') == 1


def test_qdq_average_pool_is_onnxruntimes_qlinearaveragepool(tmp_path):
    """DQ -> AveragePool -> Q, as onnxruntime runs it, with a remark: the
    pool is computed in float between the two."""
    model = quantized(pattern_model("AveragePool"), QuantType.QUInt8, False, tmp_path)
    x = RNG.standard_normal((1, 8, 8, 8)).astype(np.float32)
    (ours,), compiled = compiled_outputs(model, {"x": x})
    assert_within_one_lsb(ours, reference(model, {"x": x})[0], output_scale(model))
    assert any("(AveragePool) is computed in float" in r.message and
               "QLinearAveragePool" in r.message for r in compiled.remarks)


def test_qdq_network_stays_close_to_onnxruntime(tmp_path):
    """Layer after layer, onnxruntime's own int8 kernels (QLinearAdd, ...)
    and this backend's float between DQ and Q may round one element apart,
    and a difference moves on: the whole network agrees to a few LSB."""
    model = quantized(float_cnn(), QuantType.QUInt8, True, tmp_path)
    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    (ours,), compiled = compiled_outputs(model, {"x": x})
    theirs = reference(model, {"x": x})[0]
    steps = np.abs(ours - theirs) / output_scale(model)
    assert steps.max() <= 3.0 + 1e-3
    cosine = float(np.dot(ours.ravel(), theirs.ravel()) /
                   (np.linalg.norm(ours) * np.linalg.norm(theirs)))
    assert cosine > 0.99
    assert compiled.fallback_ops == []
    # The residual Add runs on the int8 tensors (npu.quantized_add on SRAM
    # tiles), nothing in f32 through DRAM.
    assert not any("(Add) is computed in float" in r.message for r in compiled.remarks)
    assert '"npu.quantized_add"' in compiled.program


@pytest.mark.parametrize("activation_type", [QuantType.QUInt8, QuantType.QInt8])
def test_qdq_residual_block_is_bit_exact_and_its_add_runs_in_the_conv(activation_type,
                                                                      tmp_path):
    """A ResNet block (conv, relu, conv, + skip, relu) in QDQ: the Add's
    fused multiply-adds round as onnxruntime's, so every output element is
    equal; at -fusion=2 the Add runs in the second conv's tile program (the
    conv's int8 result is never stored)."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
             helper.make_node("Add", ["c2", "x"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["y"])]
    model = model_of(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 14, 14])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                     {"w1": weight(16, 16, 3, 3, scale=0.1), "w2": weight(16, 16, 3, 3, scale=0.1)})
    model = quantized(model, activation_type, True, tmp_path)
    for _ in range(3):
        x = RNG.standard_normal((1, 16, 14, 14)).astype(np.float32)
        (ours,), compiled = compiled_outputs(model, {"x": x})
        np.testing.assert_array_equal(ours, reference(model, {"x": x})[0])
    adds = [op for op in compiled.report["ops"] if op["op"] == "npu.quantized_add"]
    assert adds and all(op["node"] == "conv2" for op in adds)
    assert not any(op["node"] == "add" for op in compiled.report["ops"])


def batch_norm(name: str, channels: int) -> dict:
    return {f"{name}.s": (1 + 0.1 * RNG.standard_normal(channels)).astype(np.float32),
            f"{name}.b": weight(channels, scale=0.1), f"{name}.m": weight(channels, scale=0.1),
            f"{name}.v": (1 + 0.1 * RNG.random(channels)).astype(np.float32)}


def batch_norm_node(name: str, x: str, y: str):
    return helper.make_node("BatchNormalization",
                            [x, f"{name}.s", f"{name}.b", f"{name}.m", f"{name}.v"], [y])


def dense_layer() -> onnx.ModelProto:
    """DenseNet's layer: batch norm and ReLU before each conv (the first batch
    norm folds into no conv: onnxruntime's quantiser gives its bias an int32
    DequantizeLinear with a one-element scale), a 1x1 bottleneck, a 3x3
    conv, the input concatenated."""
    nodes = [batch_norm_node("bn1", "x", "n1"), helper.make_node("Relu", ["n1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w1"], ["c1"]),
             batch_norm_node("bn2", "c1", "n2"), helper.make_node("Relu", ["n2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Concat", ["x", "c2"], ["y"], axis=1)]
    return model_of(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 14, 14])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                    {**batch_norm("bn1", 32), **batch_norm("bn2", 64),
                     "w1": weight(64, 32, 1, 1, scale=0.2), "w2": weight(16, 64, 3, 3, scale=0.05)})


def shuffle_unit() -> onnx.ModelProto:
    """ShuffleNet's stride-2 unit: grouped 1x1, channel shuffle, 3x3
    depthwise stride 2, grouped 1x1; an average-pooled shortcut concatenated."""
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], group=3),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Reshape", ["r1", "s1"], ["t1"]),
             helper.make_node("Transpose", ["t1"], ["t2"], perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["t2", "s2"], ["shuffled"]),
             helper.make_node("Conv", ["shuffled", "wd"], ["dw"], group=48, strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["dw", "w2"], ["c2"], group=3),
             helper.make_node("AveragePool", ["x"], ["p"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1]),
             helper.make_node("Concat", ["p", "c2"], ["cat"], axis=1),
             helper.make_node("Relu", ["cat"], ["y"])]
    return model_of(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 24, 28, 28])],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                    {"w1": weight(48, 8, 1, 1), "s1": np.array([1, 3, 16, 28, 28], np.int64),
                     "s2": np.array([1, 48, 28, 28], np.int64), "wd": weight(48, 1, 3, 3),
                     "w2": weight(48, 16, 1, 1)})


@pytest.mark.parametrize("block", [dense_layer, shuffle_unit])
@pytest.mark.parametrize("target", ["npu", "npu -max-sram-bytes=262144"])
def test_quantised_zoo_blocks_match_onnxruntime(block, target, tmp_path):
    """Blocks of the zoo's networks as onnxruntime's quantiser writes them
    compile (at the default SRAM and a smaller one) and give onnxruntime's
    outputs."""
    model = quantized(block(), QuantType.QUInt8, True, tmp_path)
    shape = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
    x = RNG.standard_normal(shape).astype(np.float32)
    compiled = atvoss_mlir.compile(model, target)
    (ours,) = compiled.run({"x": x}).values()
    assert_within_one_lsb(ours, reference(model, {"x": x})[0], output_scale(model))
    assert compiled.fallback_ops == []
    if block is dense_layer:   # the batch norm that folds into no conv, with its remark
        assert any("(BatchNormalization) is computed in float" in r.message
                   for r in compiled.remarks)


def run_quantised(nodes, shape, initializers, tmp_path):
    """The float graph x -> y quantised by onnxruntime's quantiser (uint8, per
    channel), run on the NPU and by onnxruntime on one random input:
    (ours, onnxruntime's, the compiled model, the quantised model)."""
    model = model_of(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)
    model = quantized(model, QuantType.QUInt8, True, tmp_path)
    x = RNG.standard_normal(shape).astype(np.float32)
    (ours,), compiled = compiled_outputs(model, {"x": x})
    return ours, reference(model, {"x": x})[0], compiled, model


def test_int8_result_kept_in_sram_is_written_tile_by_tile(tmp_path):
    """A 1x1 conv's 200 KB int8 result read by two convs stays in SRAM: the
    conv writes it tile by tile from a tile-sized int32 accumulator (a
    whole-tensor one, 800 KB, would not fit beside it), and the outputs stay
    within one step of onnxruntime."""
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="expand"),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["p"], name="project"),
             helper.make_node("Conv", ["r1", "w3", "b3"], ["s"], name="side"),
             helper.make_node("Add", ["p", "s"], ["y"], name="add")]
    ours, theirs, compiled, model = run_quantised(
        nodes, [1, 64, 28, 28],
        {"w1": weight(256, 64, 1, 1, scale=0.1), "b1": weight(256),
         "w2": weight(64, 256, 1, 1, scale=0.05), "b2": weight(64),
         "w3": weight(64, 256, 1, 1, scale=0.05), "b3": weight(64)}, tmp_path)
    assert_within_one_lsb(ours, theirs, output_scale(model))
    assert any("kept 'linalg.conv_2d_nhwc_hwcf' output in SRAM for 'project', 'side' (200704 B"
               in r.message for r in compiled.remarks)
    tiles = [op["count"] for op in compiled.report["ops"]
             if op["op"] == "npu.matmul" and op["node"] == "expand"]
    assert tiles and tiles[0] > 1


def test_int8_skip_tensor_kept_in_sram_is_read_tile_by_tile(tmp_path):
    """A bottleneck block's 200 KB int8 input, read by its first conv and by
    the residual add in its last conv's epilogue, stays in SRAM: the last conv
    computes in tiles, each adding its view of the kept tensor in place (read
    whole, the conv's whole-tensor accumulator would not fit beside it), and
    every output element equals onnxruntime's."""
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], name="widen"),
             helper.make_node("Conv", ["c0", "w1", "b1"], ["c1"], name="reduce"),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], name="expand"),
             helper.make_node("Add", ["c3", "c0"], ["a"], name="add"),
             helper.make_node("Relu", ["a"], ["y"])]
    ours, theirs, compiled, _ = run_quantised(
        nodes, [1, 64, 14, 14],
        {"w0": weight(1024, 64, 1, 1, scale=0.1), "b0": weight(1024),
         "w1": weight(256, 1024, 1, 1, scale=0.03), "b1": weight(256),
         "w2": weight(256, 256, 3, 3, scale=0.02), "b2": weight(256),
         "w3": weight(1024, 256, 1, 1, scale=0.05), "b3": weight(1024)}, tmp_path)
    np.testing.assert_array_equal(ours, theirs)
    assert any("kept 'linalg.conv_2d_nhwc_hwcf' output in SRAM for 'reduce', 'expand' (200704 B"
               in r.message for r in compiled.remarks)
    adds = [op["count"] for op in compiled.report["ops"]
            if op["op"] == "npu.quantized_add" and op["node"] == "expand"]
    assert adds and adds[0] > 1


def test_int8_conv_input_kept_padded_is_read_in_row_windows(tmp_path):
    """A 1x1 conv's int8 result that a 3x3 conv reads stays in SRAM padded:
    the 1x1 conv's requantisation writes the padded buffer's interior (its
    matrix results go to the int32 accumulator), and the 3x3 conv, computing
    in row tiles, reads each tile's window of rows in place; every output
    element equals onnxruntime's."""
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="reduce"),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c2"], ["y"])]
    ours, theirs, compiled, _ = run_quantised(
        nodes, [1, 64, 56, 56],
        {"w1": weight(64, 64, 1, 1, scale=0.1), "b1": weight(64),
         "w2": weight(64, 64, 3, 3, scale=0.03), "b2": weight(64)}, tmp_path)
    np.testing.assert_array_equal(ours, theirs)
    assert any("kept 'linalg.conv_2d_nhwc_hwcf' output in SRAM for 'conv' (215296 B"
               in r.message for r in compiled.remarks)   # 1x58x58x64 int8: padded
    ops = compiled.report["ops"]
    assert not any(op["op"] == "npu.activation" for op in ops), "no copy of the kept tensor"
    convs = [op["count"] for op in ops if op["op"] == "npu.conv2d" and op["node"] == "conv"]
    assert convs and convs[0] > 1


def test_quantised_inception_at_a_small_sram_matches_onnxruntime():
    """Inception-v1 (bench/zoo.py, 112x112) in int8 at 448 KiB of SRAM: a
    conv whose requantised result is kept in SRAM tiles below that result
    (it is allocated after the conv), and the program gives onnxruntime's
    outputs."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                                    os.pardir, "bench"))
    try:
        import zoo
    finally:
        sys.path.pop(0)
    from atvoss_mlir.quantization.precision import apply_precision
    from atvoss_mlir.target import parse_target
    model = zoo.inception_v1(image=112, classes=10)
    x = RNG.standard_normal((1, 3, 112, 112)).astype(np.float32)
    name = model.graph.input[0].name
    model = apply_precision(model, parse_target("npu -precision=int8"), {name: x})
    compiled = atvoss_mlir.compile(model, "npu -max-sram-bytes=458752")
    (ours,) = compiled.run({name: x}).values()
    assert_within_one_lsb(ours, reference(model, {name: x})[0], output_scale(model))


def test_qdq_weights_that_leave_int8_are_computed_in_float_with_a_remark(tmp_path):
    """uint8 weights with a zero point of 0 reach 255 once centred: the Conv
    runs in float between its DequantizeLinear and QuantizeLinear."""
    w = RNG.integers(0, 256, (4, 3, 3, 3)).astype(np.uint8)
    initializers = {"xs": np.array(0.02, np.float32), "xz": np.array(0, np.int8),
                    "w": w, "ws": np.array(0.01, np.float32), "wz": np.array(0, np.uint8),
                    "ys": np.array(0.5, np.float32), "yz": np.array(0, np.int8)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"]),
             helper.make_node("Conv", ["xd", "wd"], ["c"], name="conv"),
             helper.make_node("QuantizeLinear", ["c", "ys", "yz"], ["y"])]
    model = model_of(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                     [helper.make_tensor_value_info("y", TensorProto.INT8, None)], initializers)
    x = RNG.standard_normal((1, 3, 6, 6)).astype(np.float32)
    (ours,), compiled = compiled_outputs(model, {"x": x})
    assert_within_one_lsb(ours, reference(model, {"x": x})[0])
    assert any("node 'conv' (Conv) is computed in float" in r.message and "leave int8" in r.message
               for r in compiled.remarks)


@pytest.mark.parametrize("zero_point", [np.array(0, np.uint8), np.array(0, np.int8),
                                        np.array(3, np.uint8)])
def test_quantisation_by_a_scale_of_one_runs_on_the_vector_unit(zero_point):
    """onnxruntime's quantiser gives a tensor that was constant in calibration
    (an attention mask's bias of zeros) a scale of 1: its x / 1 folds away,
    and the QuantizeLinear is still npu.requantize, not a loop on the fallback
    engine."""
    initializers = {"s": np.array(1.0, np.float32), "z": zero_point}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="quantize"),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dequantize")]
    model = model_of(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)
    x = (RNG.standard_normal((4, 64)) * 100).astype(np.float32)
    (ours,), compiled = compiled_outputs(model, {"x": x})
    np.testing.assert_array_equal(ours, reference(model, {"x": x})[0])
    assert compiled.fallback_ops == []


def test_quantisation_of_an_expanded_tensor_before_a_conv():
    """MobileViTv2's attention as onnxruntime quantises it: a row expanded over
    the row (Expand), quantised with its own scale, times the input, quantised
    again and read by a conv. Merged, the first QuantizeLinear would read a
    broadcast operand, which npu.requantize cannot (its tile is its input's
    shape): the merge is refused, and the result equals onnxruntime's."""
    initializers = {"es": np.array(0.05, np.float32), "ez": np.array(128, np.uint8),
                    "ms": np.array(0.1, np.float32), "mz": np.array(128, np.uint8),
                    "shape": np.array([1, 16, 4, 36], np.int64), "w": weight(16, 16, 1, 1)}
    nodes = [helper.make_node("Expand", ["r", "shape"], ["e"], name="expand"),
             helper.make_node("QuantizeLinear", ["e", "es", "ez"], ["eq"], name="quantize_e"),
             helper.make_node("DequantizeLinear", ["eq", "es", "ez"], ["ed"]),
             helper.make_node("Mul", ["a", "ed"], ["m"], name="mul"),
             helper.make_node("QuantizeLinear", ["m", "ms", "mz"], ["mq"], name="quantize_m"),
             helper.make_node("DequantizeLinear", ["mq", "ms", "mz"], ["md"]),
             helper.make_node("Conv", ["md", "w"], ["y"], name="conv")]
    model = model_of(nodes, [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 16, 4, 36]),
                             helper.make_tensor_value_info("r", TensorProto.FLOAT, [1, 16, 4, 1])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializers)
    feeds = {"a": RNG.standard_normal((1, 16, 4, 36)).astype(np.float32),
             "r": RNG.standard_normal((1, 16, 4, 1)).astype(np.float32)}
    (ours,), compiled = compiled_outputs(model, feeds)
    np.testing.assert_allclose(ours, reference(model, feeds)[0], rtol=1e-5, atol=1e-5)
    assert compiled.fallback_ops == []


def test_sixteen_bit_quantisation_is_a_located_error():
    initializers = {"s": np.array(0.1, np.float32), "z": np.array(0, np.int16)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="q16")]
    model = model_of(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                     [helper.make_tensor_value_info("y", TensorProto.INT16, None)],
                     initializers, opset=21)
    with pytest.raises(DiagnosticError) as failure:
        atvoss_mlir.compile(model)
    message = str(failure.value)
    assert "q16" in message and "int16 quantisation is not supported" in message


@pytest.mark.parametrize("target", ["npu", "npu -tile-max=32", "npu -pipeline-stages=1"])
def test_requantisation_is_the_tile_programs_epilogue(target):
    """The int32 accumulator stays in SRAM (split reduction included) and only
    the int8 result is written to DRAM."""
    a = integers(np.int8, (64, 96))
    scales = weight_scales(True, 80)
    initializers = {
        "as": np.array(0.03, np.float32), "az": np.array(-2, np.int8),
        "w": integers(np.int8, (96, 80)), "ws": scales, "wz": np.zeros(80, np.int8),
        "ys": np.array(0.9, np.float32), "yz": np.array(3, np.int8)}
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "w", "ws", "wz", "ys", "yz"],
                            ["y"])
    model = model_of([node], [helper.make_tensor_value_info("a", TensorProto.INT8, a.shape)],
                     [helper.make_tensor_value_info("y", TensorProto.INT8, None)], initializers)
    compiled = atvoss_mlir.compile(model, target)
    (ours,) = compiled.run({"a": a}).values()
    assert_within_one_lsb(ours, reference(model, {"a": a})[0])
    assert compiled.report["dram_write_bytes"] == 64 * 80
    assert "xi32>) -> !npu.token" not in compiled.program   # no int32 DMA


def test_requantisation_overlaps_the_next_tiles_matmul():
    """An int8 matmul tiled along its rows (one reduction step per tile): the
    vector unit requantises tile t-1 while the matrix unit computes tile t,
    and the result stays within one step of onnxruntime."""
    a = integers(np.int8, (512, 64))
    initializers = {
        "as": np.array(0.03, np.float32), "az": np.array(-2, np.int8),
        "w": integers(np.int8, (64, 80)), "ws": weight_scales(True, 80),
        "wz": np.zeros(80, np.int8), "ys": np.array(0.9, np.float32),
        "yz": np.array(3, np.int8)}
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "w", "ws", "wz", "ys", "yz"],
                            ["y"])
    model = model_of([node], [helper.make_tensor_value_info("a", TensorProto.INT8, a.shape)],
                     [helper.make_tensor_value_info("y", TensorProto.INT8, None)], initializers)
    compiled = atvoss_mlir.compile(model, "npu -tile-max=64")
    (ours,) = compiled.run({"a": a}).values()
    assert_within_one_lsb(ours, reference(model, {"a": a})[0])
    compiled.run({"a": a}, timing_only=True, trace=True)
    events = compiled.last_result.trace_events
    matmuls = [e for e in events if e.name == "npu.matmul"]
    requantizations = [e for e in events if e.name == "npu.requantize"]
    assert len(matmuls) == len(requantizations) > 2
    overlapping = [r for r in requantizations
                   if any(m.start < r.finish and r.start < m.finish for m in matmuls)]
    assert len(overlapping) >= len(requantizations) - 2


def atvoss_cli(*args) -> subprocess.CompletedProcess:
    script = os.path.join(os.path.dirname(sys.executable), "atvoss")
    return subprocess.run([script, *args], capture_output=True, text=True, timeout=300)


def test_run_check_compares_a_quantised_model_within_one_step(tmp_path):
    """`atvoss run --check` on a QDQ model and at -precision=int8: against
    onnxruntime running the quantised model, within one quantisation step
    (the output's DequantizeLinear scale), not fp32's 1e-4."""
    model = quantized(pattern_model("Conv"), QuantType.QInt8, True, tmp_path)
    path = tmp_path / "model.qdq.onnx"
    onnx.save(model, path)
    result = atvoss_cli("run", str(path), "--check")
    assert result.returncode == 0, result.stderr
    assert "check y:" in result.stderr and "(ok)" in result.stderr
    onnx.save(pattern_model("Conv"), tmp_path / "model.onnx")
    np.savez(tmp_path / "calibration.npz",
             x=RNG.standard_normal((4, 8, 8, 8)).astype(np.float32))
    result = atvoss_cli("run", str(tmp_path / "model.onnx"), "--target", "npu -precision=int8",
                        "--calibration", str(tmp_path / "calibration.npz"), "--check",
                        "--report", "json")
    assert result.returncode == 0, result.stderr
    check = json.loads(result.stdout)["check"]["y"]
    assert check["ok"] and check["rtol"] == 0.0
    assert 0 < check["atol"] < 0.1   # one step of the output's scale


@pytest.mark.parametrize("activation_type", [QuantType.QUInt8, QuantType.QInt8])
def test_qdq_swish_is_one_pass_of_the_vector_unit(activation_type, tmp_path):
    """EfficientNet's swish, x * sigmoid(x), after a conv, as onnxruntime's
    quantiser writes it: DequantizeLinear, Sigmoid, QuantizeLinear,
    DequantizeLinear, Mul, QuantizeLinear. At -fusion=2 the chain is one
    elementwise op (npu-fuse-elementwise): each tile is dequantised, its
    sigmoid, requantised and dequantised, multiplied and quantised in SRAM, so
    only int8 tensors cross DRAM. Each step was a pass over DRAM of its own (an
    MBConv's: 916,249 -> 397,764 cycles)."""
    shape, target = [1, 16, 24, 24], "npu -max-sram-bytes=262144"
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c"]),
             helper.make_node("Sigmoid", ["c"], ["s"]),
             helper.make_node("Mul", ["c", "s"], ["m"]),
             helper.make_node("Conv", ["m", "w2"], ["y"])]
    model = model_of(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                     {"w1": weight(32, 16, 1, 1), "w2": weight(8, 32, 1, 1)})
    model = quantized(model, activation_type, False, tmp_path)
    x = RNG.standard_normal(shape).astype(np.float32)
    compiled = atvoss_mlir.compile(model, target)
    ours = list(compiled.run({"x": x}).values())[0]
    assert_within_one_lsb(ours, reference(model, {"x": x})[0], output_scale(model))
    steps = [op["op"] for op in compiled.report["ops"] if op["engine"] == "vector"]
    assert {"npu.dequantize", "npu.activation", "npu.requantize"} <= set(steps)
    merged = [r.message for r in compiled.remarks if "producer merged" in r.message]
    assert len(merged) >= 4, merged
    unmerged = atvoss_mlir.compile(model, target + " -fusion=1")
    unmerged.run({"x": x})
    dram = [c.report["dram_read_bytes"] + c.report["dram_write_bytes"]
            for c in (compiled, unmerged)]
    # 24 * 24 * 32 int8 in and out, instead of f32 tensors between the steps.
    assert dram[0] < dram[1] / 3, dram


def test_reference_takes_the_default_kernels_where_exact_products_fail(monkeypatch):
    """onnxruntime failed to initialise a quantised torchvision DenseNet under
    its exact-products option alone ('Attempt to replace the existing
    tensor'): `atvoss run --check` stopped with an internal error. The
    reference is then the default kernels' session; a model that fails under
    both raises the first error."""
    import onnxruntime
    from atvoss_mlir.reference import EXACT_PRODUCTS
    real = onnxruntime.InferenceSession

    def exact(options) -> bool:
        try:
            return options.get_session_config_entry(EXACT_PRODUCTS) == "1"
        except RuntimeError:   # no such entry
            return False

    def failing_exact(model, options=None, **kwargs):
        if exact(options):
            raise RuntimeError("Attempt to replace the existing tensor")
        return real(model, options, **kwargs)
    model = pattern_model("Sigmoid")
    x = RNG.standard_normal((1, 8, 8, 8)).astype(np.float32)
    default = real(model.SerializeToString(), providers=["CPUExecutionProvider"])
    monkeypatch.setattr(onnxruntime, "InferenceSession", failing_exact)
    np.testing.assert_array_equal(reference(model, {"x": x})[0],
                                  default.run(None, {"x": x})[0])

    def failing(model, options=None, **kwargs):
        raise RuntimeError("exact" if exact(options) else "default")
    monkeypatch.setattr(onnxruntime, "InferenceSession", failing)
    with pytest.raises(RuntimeError, match="exact"):
        reference(model, {"x": x})
