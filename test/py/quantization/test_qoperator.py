"""onnxruntime's QOperator forms (frontend/ops_qoperator.py) against
onnxruntime itself, and whole models quantised in the QOperator format."""

from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, quantize_static

import atvoss_mlir
from atvoss_mlir.diagnostics import DiagnosticError

from test_int8 import (assert_within_one_lsb, atvoss_cli, compiled_outputs, elem, integers,
                       model_of, reference)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def microsoft_model(node, inputs: dict, initializers: dict, out_dtype) -> onnx.ModelProto:
    model = model_of([node], [helper.make_tensor_value_info(name, elem(x.dtype), x.shape)
                              for name, x in inputs.items()],
                     [helper.make_tensor_value_info("y", elem(out_dtype), None)], initializers)
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model


def assert_matches_onnxruntime(model: onnx.ModelProto, inputs: dict) -> None:
    (ours,), compiled = compiled_outputs(model, inputs)
    assert_within_one_lsb(ours, reference(model, inputs)[0])
    assert compiled.fallback_ops == []


def params(dtype, scale: float, zero_point: int, prefix: str) -> dict:
    return {f"{prefix}s": np.array(scale, np.float32), f"{prefix}z": np.array(zero_point, dtype)}


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("window", [
    {"kernel_shape": [2, 2], "strides": [2, 2]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
    {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1},
    {"kernel_shape": [3, 2], "strides": [1, 2], "ceil_mode": 1}])
def test_qlinearaveragepool_matches_onnxruntime(dtype, window):
    """QLinearAveragePool adds the zero point before rounding (in f32, so a
    mean near a tie rounds as onnxruntime rounds it)."""
    x = integers(dtype, (1, 8, 15, 15))
    node = helper.make_node("QLinearAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"],
                            domain="com.microsoft", **window)
    assert_matches_onnxruntime(
        microsoft_model(node, {"x": x}, {**params(dtype, 0.05, 7, "x"),
                                         **params(dtype, 0.05, -3 if dtype == np.int8 else 120,
                                                  "y")}, dtype), {"x": x})


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("channels_last,shape", [(0, (1, 24, 7, 7)), (0, (2, 8, 14, 14)),
                                                 (1, (1, 7, 7, 24))])
def test_qlinearglobalaveragepool_matches_onnxruntime(dtype, channels_last, shape):
    """The int32 sum of the centred image, requantised by sx / (sy * size)."""
    x = integers(dtype, shape)
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "xs", "xz", "ys", "yz"], ["y"],
                            domain="com.microsoft", channels_last=channels_last)
    assert_matches_onnxruntime(
        microsoft_model(node, {"x": x}, {**params(dtype, 0.07, 5, "x"),
                                         **params(dtype, 0.011, 2, "y")}, dtype), {"x": x})


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("same", [True, False])
def test_qlinearconcat_matches_onnxruntime(dtype, same):
    """Inputs of the output's scale and zero point are copied; others are
    requantised to it."""
    a, c = integers(dtype, (1, 8, 6, 6)), integers(dtype, (1, 5, 6, 6))
    initializers = {**params(dtype, 0.05, 3, "y"), **params(dtype, 0.05, 3, "a"),
                    **params(dtype, 0.05 if same else 0.09, 3 if same else 11, "c")}
    node = helper.make_node("QLinearConcat", ["ys", "yz", "a", "as", "az", "c", "cs", "cz"],
                            ["y"], domain="com.microsoft", axis=1)
    assert_matches_onnxruntime(microsoft_model(node, {"a": a, "c": c}, initializers, dtype),
                               {"a": a, "c": c})


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("scales", [(0.05, 0.03, 0.07), (0.02, 0.02, 0.04), (0.1, 0.3, 0.2)])
def test_qlinearadd_matches_onnxruntime(dtype, scales):
    """Scale ratios such as 1/2 put many sums on a tie: they round as
    onnxruntime's fused multiply-adds round them."""
    a, c = integers(dtype, (1, 16, 28, 28)), integers(dtype, (1, 16, 28, 28))
    zero_points = (5, 9, 2) if dtype == np.uint8 else (-7, 3, -2)
    initializers = {**params(dtype, scales[0], zero_points[0], "a"),
                    **params(dtype, scales[1], zero_points[1], "c"),
                    **params(dtype, scales[2], zero_points[2], "y")}
    node = helper.make_node("QLinearAdd", ["a", "as", "az", "c", "cs", "cz", "ys", "yz"], ["y"],
                            domain="com.microsoft")
    assert_matches_onnxruntime(microsoft_model(node, {"a": a, "c": c}, initializers, dtype),
                               {"a": a, "c": c})


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("scales", [(0.04, 0.02, 0.1), (0.1, 0.3, 0.2)])
def test_qlinearmul_matches_onnxruntime(dtype, scales):
    """The exact product of the centred inputs times sa * sb / sy, plus zy,
    rounded once (at 0.1 * 0.3 / 0.2 many products land near a tie)."""
    a, c = integers(dtype, (1, 16, 28, 28)), integers(dtype, (1, 16, 28, 28))
    initializers = {**params(dtype, scales[0], 3, "a"), **params(dtype, scales[1], 9, "c"),
                    **params(dtype, scales[2], 1, "y")}
    node = helper.make_node("QLinearMul", ["a", "as", "az", "c", "cs", "cz", "ys", "yz"], ["y"],
                            domain="com.microsoft")
    assert_matches_onnxruntime(microsoft_model(node, {"a": a, "c": c}, initializers, dtype),
                               {"a": a, "c": c})


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("op,attributes", [("QLinearSigmoid", {}),
                                           ("QLinearLeakyRelu", {"alpha": 0.1})])
def test_qlinear_activations_match_onnxruntime(dtype, op, attributes):
    x = integers(dtype, (1, 16, 12, 12))
    node = helper.make_node(op, ["x", "xs", "xz", "ys", "yz"], ["y"], domain="com.microsoft",
                            **attributes)
    assert_matches_onnxruntime(
        microsoft_model(node, {"x": x}, {**params(dtype, 0.06, 4, "x"),
                                         **params(dtype, 1 / 250, -100 if dtype == np.int8
                                                  else 20, "y")}, dtype), {"x": x})


class Samples(CalibrationDataReader):
    def __init__(self, name: str, shape: list[int]):
        rng = np.random.default_rng(3)
        self.samples = iter([{name: rng.standard_normal(shape).astype(np.float32)}
                             for _ in range(4)])

    def get_next(self):
        return next(self.samples, None)


def test_qoperator_model_runs_and_checks_against_onnxruntime(tmp_path):
    """The bundled CNN quantised in the QOperator format (QLinearConv, QGemm,
    QLinearAdd, QLinearGlobalAveragePool) compiles, and `atvoss run --check`
    passes against onnxruntime running it."""
    source = os.path.join(ROOT, "examples", "small_cnn.onnx")
    target = tmp_path / "small_cnn.qop.onnx"
    graph_input = onnx.load(source).graph.input[0]
    shape = [d.dim_value for d in graph_input.type.tensor_type.shape.dim]
    quantize_static(source, str(target), Samples(graph_input.name, shape),
                    quant_format=QuantFormat.QOperator)
    ops = {n.op_type for n in onnx.load(target).graph.node}
    assert {"QLinearConv", "QLinearGlobalAveragePool"} <= ops
    result = atvoss_cli("run", str(target), "--check")
    assert result.returncode == 0, result.stderr
    assert "(ok)" in result.stderr and "FAIL" not in result.stderr


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
@pytest.mark.parametrize("opset,axis,scale", [(13, -1, 1 / 255), (13, 1, 1 / 255),
                                              (13, 2, 1 / 256), (11, 2, 1 / 255)])
def test_qlinearsoftmax_matches_onnxruntime(dtype, opset, axis, scale):
    """onnxruntime scales by floor(1 / y_scale): 254 for a scale of 1/255,
    which its quantiser writes; before opset 13 the normalised axes are all
    from `axis` on."""
    x = integers(dtype, (2, 6, 10, 12))
    zero = -128 if dtype == np.int8 else 0
    node = helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"],
                            domain="com.microsoft", axis=axis, opset=opset)
    assert_matches_onnxruntime(
        microsoft_model(node, {"x": x}, {**params(dtype, 0.05, 3, "x"),
                                         **params(dtype, scale, zero, "y")}, dtype), {"x": x})


@pytest.mark.parametrize("dtype", [np.uint8, np.int8])
def test_qlinearmatmul_of_two_runtime_tensors_matches_onnxruntime(dtype):
    """Attention's products: both operands computed at run time. onnxruntime
    sums (a - za) * (b - zb) in int32; the centred values and their sums are
    exact integers in f32 too, below 2^24."""
    a, w = integers(dtype, (2, 3, 10, 40)), integers(dtype, (2, 3, 40, 12))
    zero = 100 if dtype == np.uint8 else -7
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    model = model_of([node], [helper.make_tensor_value_info(name, elem(dtype), x.shape)
                              for name, x in (("a", a), ("b", w))],
                     [helper.make_tensor_value_info("y", elem(dtype), None)],
                     {**params(dtype, 0.05, zero, "a"), **params(dtype, 0.04, zero, "b"),
                      **params(dtype, 7.0, zero, "y")})
    assert_matches_onnxruntime(model, {"a": a, "b": w})


def test_qlinearmatmul_of_runtime_tensors_too_deep_for_f32_is_refused():
    a, w = integers(np.uint8, (1, 4, 300)), integers(np.uint8, (1, 300, 4))
    node = helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])
    model = model_of([node], [helper.make_tensor_value_info(name, elem(np.uint8), x.shape)
                              for name, x in (("a", a), ("b", w))],
                     [helper.make_tensor_value_info("y", elem(np.uint8), None)],
                     {**params(np.uint8, 0.05, 0, "a"), **params(np.uint8, 0.04, 0, "b"),
                      **params(np.uint8, 7.0, 0, "y")})
    with pytest.raises(DiagnosticError) as failure:
        compiled_outputs(model, {"a": a, "b": w})
    assert "its sums would leave f32's exact integers" in str(failure.value)


@pytest.mark.parametrize("op_type,inputs,attributes,expected", [
    ("QLinearConcat", ["ys", "yz", "a", "as", "az"], {"axis": "channels"},
     "attribute 'axis' is STRING, QLinearConcat takes INT"),
    ("QLinearAveragePool", ["a", "as", "az", "ys", "yz"], {"kernel_shape": 2},
     "attribute 'kernel_shape' is INT, QLinearAveragePool takes INTS"),
    # Not in its schema, so not checked; the window it shares with AveragePool
    # reads it (the fuzzer's, seed 9191, raised a TypeError).
    ("QLinearAveragePool", ["a", "as", "az", "ys", "yz"],
     {"kernel_shape": [2, 2], "dilations": 2},
     "strides [1, 1] and dilations [2] must be 2 positive ints"),
])
def test_com_microsoft_attribute_of_another_type_is_a_located_error(op_type, inputs,
                                                                     attributes, expected):
    """No ONNX schema checks a com.microsoft op: its attributes are checked
    against onnxruntime's schema of it, refused at the node, not raised as a
    TypeError by its handler."""
    dtype = np.uint8
    a = integers(dtype, (1, 8, 6, 6))
    node = helper.make_node(op_type, inputs, ["y"], domain="com.microsoft", **attributes)
    onnx_model = microsoft_model(node, {"a": a}, {**params(dtype, 0.05, 3, "y"),
                                                  **params(dtype, 0.05, 3, "a")}, dtype)
    with pytest.raises(DiagnosticError) as error:
        atvoss_mlir.compile(onnx_model)
    assert f"({op_type}, opset 13): {expected}" in str(error.value)
