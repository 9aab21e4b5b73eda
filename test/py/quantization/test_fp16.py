"""-precision=fp16 (quantization/fp16.to_fp16 and the compile around it): the
converted model is valid ONNX with fp32 inputs and outputs, weights rounded
(and saturated) at compile time, ints and float32-only inputs left alone;
small_cnn and a transformer encoder layer against onnxruntime on the fp32
model and, more tightly, on the converted model; a long-K MatMul against
numpy's fp16 operands with fp32 accumulation to an fp16 ulp; the program's
matrix ops on f16 tiles and its DRAM bytes; the f16 import fixes
(LayerNormalization statistics, GlobalAveragePool) on values whose f16 sums
and squares overflow; refusals; `atvoss run --check`'s fp16 tolerance."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import atvoss_mlir
from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.quantization.fp16 import to_fp16
from atvoss_mlir.testing.transformer_models import encoder_layer
from atvoss_mlir.reference import reference_session

REPOSITORY = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, os.pardir)
SMALL_CNN = os.path.join(REPOSITORY, "examples", "small_cnn.onnx")
FP16 = "npu -precision=fp16"
# fp16 keeps 11 significant bits: each rounding errs by at most u = 2^-11
# (4.9e-4) of the value. Against the fp32 model, weights, inputs and every
# activation on the way are rounded: a dozen layers leave a few u of the
# output's magnitude, and 1e-2 of it is the bound (atvoss run --check takes
# 2e-2, for deeper models). Against the converted model run by onnxruntime, weights and inputs
# are rounded alike and only where activations round differs (one rounding
# per op there, once per fused op here): at most about one u per layer on the
# way, 4e-3 for these models of at most eight.
FP32_BOUND = 1e-2
FP16_MODEL_BOUND = 4e-3
ULP = 2.0 ** -10    # fp16's spacing relative to a value's power of two


def onnxruntime_outputs(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    session = reference_session(model)
    return session.run(None, feeds)


def random_feeds(model: onnx.ModelProto, seed: int = 0, scale: float = 1.0) -> dict:
    rng = np.random.default_rng(seed)
    return {i.name: (rng.standard_normal([d.dim_value for d in i.type.tensor_type.shape.dim])
                     * scale).astype(np.float32) for i in model.graph.input}


def relative_error(actual, expected) -> float:
    """The largest error as a fraction of the largest expected magnitude."""
    expected = np.asarray(expected, np.float64)
    return float(np.abs(np.asarray(actual, np.float64) - expected).max()
                 / np.abs(expected).max())


def compiled_outputs(model, feeds, target=FP16):
    compiled = atvoss_mlir.compile(model, target=target)
    return compiled, list(compiled.run(feeds).values())


def float_value_types(model: onnx.ModelProto) -> dict[str, int]:
    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    graph = inferred.graph
    return {info.name: info.type.tensor_type.elem_type
            for info in list(graph.value_info) + list(graph.input) + list(graph.output)
            if info.type.tensor_type.elem_type in (TensorProto.FLOAT, TensorProto.FLOAT16)}


def encoder():
    return encoder_layer(seq=16, d_model=64, heads=4, ffn=128)


# -- the converted model -----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["small_cnn", "encoder_layer"])
def test_converted_model_is_valid_fp16_with_fp32_io(name):
    model = onnx.load(SMALL_CNN) if name == "small_cnn" else encoder()[0]
    original = model.SerializeToString()
    converted = to_fp16(model)
    assert model.SerializeToString() == original, "the fp32 model was changed"
    onnx.checker.check_model(converted, full_check=True)
    types = float_value_types(converted)
    io = {v.name for v in list(converted.graph.input) + list(converted.graph.output)}
    assert {types[n] for n in io} == {TensorProto.FLOAT}
    # Everything in between is fp16 except the float32 statistics of
    # LayerNormalization, cast at once.
    inside = {n: t for n, t in types.items() if n not in io}
    assert inside and all(t == TensorProto.FLOAT16 or n.endswith(".fp32")
                          for n, t in inside.items()), inside
    weights = {t.name: t for t in converted.graph.initializer}
    for tensor in model.graph.initializer:
        kept = weights[tensor.name]
        if tensor.data_type == TensorProto.FLOAT:
            assert kept.data_type == TensorProto.FLOAT16
            np.testing.assert_array_equal(numpy_helper.to_array(kept),
                                          numpy_helper.to_array(tensor).astype(np.float16))
        else:  # shapes and indices stay as they are
            assert kept.SerializeToString() == tensor.SerializeToString()
    feeds = random_feeds(model)
    outputs = onnxruntime_outputs(converted, feeds)
    assert all(o.dtype == np.float32 for o in outputs)
    for output, expected in zip(outputs, onnxruntime_outputs(model, feeds)):
        assert relative_error(output, expected) < FP32_BOUND


def test_constants_rounded_saturated_and_float32_only_inputs_kept():
    """Constant attributes (tensor and value_floats), ConstantOfShape's
    default fill, a weight beyond fp16's range, an int64 shape and Resize's
    float32-only scales."""
    big = np.array([1e9, -1e9, 70000.0, np.inf, 1e-9, 0.1], np.float32)
    nodes = [
        helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(
            np.array([0.1, 3.0], np.float32))),
        helper.make_node("Constant", [], ["f"], value_floats=[0.3, 0.7]),
        helper.make_node("Constant", [], ["shape"], value=numpy_helper.from_array(
            np.array([2], np.int64))),
        helper.make_node("ConstantOfShape", ["shape"], ["zeros"]),
        helper.make_node("Mul", ["x", "c"], ["scaled"]),
        helper.make_node("Add", ["scaled", "f"], ["shifted"]),
        helper.make_node("Add", ["shifted", "zeros"], ["y"]),
        helper.make_node("Unsqueeze", ["y", "axes"], ["y4"]),
        helper.make_node("Resize", ["y4", "", "scales"], ["resized"], mode="nearest"),
        helper.make_node("Mul", ["big", "x6"], ["big_out"]),
    ]
    graph = helper.make_graph(
        nodes, "constants",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
         helper.make_tensor_value_info("x6", TensorProto.FLOAT, [6])],
        [helper.make_tensor_value_info("resized", TensorProto.FLOAT, [1, 1, 1, 4]),
         helper.make_tensor_value_info("big_out", TensorProto.FLOAT, [6])],
        [numpy_helper.from_array(np.array([0, 1, 2], np.int64), "axes"),
         numpy_helper.from_array(np.array([1, 1, 1, 2], np.float32), "scales"),
         numpy_helper.from_array(big, "big")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    converted = to_fp16(model)
    onnx.checker.check_model(converted, full_check=True)
    weights = {t.name: numpy_helper.to_array(t) for t in converted.graph.initializer}
    assert weights["scales"].dtype == np.float32 and weights["axes"].dtype == np.int64
    np.testing.assert_array_equal(weights["big"], np.array(
        [65504, -65504, 65504, np.inf, 0, 0.1], np.float16))
    nodes = {n.output[0]: n for n in converted.graph.node}
    constants = {name: numpy_helper.to_array(next(
        a.t for a in nodes[name].attribute if a.name == "value"))
        for name in ("c", "f", "zeros", "shape")}
    np.testing.assert_array_equal(constants["c"], np.float16([0.1, 3.0]))
    np.testing.assert_array_equal(constants["f"], np.float16([0.3, 0.7]))
    np.testing.assert_array_equal(constants["zeros"], np.zeros(1, np.float16))
    assert constants["shape"].dtype == np.int64
    x = np.array([1.5, -2.0], np.float32)
    x6 = np.ones(6, np.float32)
    resized, big_out = onnxruntime_outputs(converted, {"x": x, "x6": x6})
    expected = x.astype(np.float16) * np.float16([0.1, 3.0]) + np.float16([0.3, 0.7])
    np.testing.assert_allclose(resized, np.repeat(expected, 2).reshape(1, 1, 1, 4),
                               rtol=2 * 2.0 ** -11)
    assert big_out.dtype == np.float32 and big_out[0] == 65504.0 and np.isinf(big_out[3])


def test_resize_scales_from_an_input_and_computed_stay_float32():
    """Scales given as a graph input are read as given; scales computed from
    float values (fp16 after the rewrite) are cast back to float32."""
    graph = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "s"], ["given"], mode="nearest"),
         helper.make_node("Mul", ["s", "one"], ["computed"]),
         helper.make_node("Resize", ["x", "", "computed"], ["from_computed"], mode="nearest")],
        "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2]),
                   helper.make_tensor_value_info("s", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("given", TensorProto.FLOAT, [1, 1, 4, 4]),
         helper.make_tensor_value_info("from_computed", TensorProto.FLOAT, [1, 1, 4, 4])],
        [numpy_helper.from_array(np.ones(4, np.float32), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    converted = to_fp16(model)
    onnx.checker.check_model(converted, full_check=True)
    resizes = [n for n in converted.graph.node if n.op_type == "Resize"]
    assert resizes[0].input[2] == "s"
    cast = next(n for n in converted.graph.node if n.output[0] == resizes[1].input[2])
    assert cast.op_type == "Cast" and cast.attribute[0].i == TensorProto.FLOAT
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    given, computed = onnxruntime_outputs(converted, {"x": x, "s": np.float32([1, 1, 2, 2])})
    expected = x.repeat(2, 2).repeat(2, 3)
    np.testing.assert_array_equal(given, expected)
    np.testing.assert_array_equal(computed, expected)


# -- numerics through the compiler ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["small_cnn", "encoder_layer"])
def test_fp16_compile_matches_onnxruntime(name):
    if name == "small_cnn":
        model = onnx.load(SMALL_CNN)
        feeds = random_feeds(model)
    else:
        model, feeds = encoder()
    compiled, outputs = compiled_outputs(model, feeds)
    assert [s.dtype for s in compiled.input_specs] == [np.float32] * len(feeds)
    fp32 = onnxruntime_outputs(model, feeds)
    fp16_model = onnxruntime_outputs(to_fp16(model), feeds)
    for actual, expected, rounded in zip(outputs, fp32, fp16_model):
        assert actual.dtype == np.float32
        assert relative_error(actual, expected) < FP32_BOUND
        assert relative_error(actual, rounded) < FP16_MODEL_BOUND
        # Not the fp32 computation: the result is rounded.
        assert relative_error(actual, expected) > 1e-5


def test_matmul_takes_fp16_operands_and_accumulates_in_fp32():
    """[16, 4096] x [4096, 32] of positive values: numpy on the fp16-rounded
    operands summing in fp32 and rounding once gives the result to one fp16
    ulp; summing in fp16 would be off by hundreds of ulps (the sums reach
    ~1000, where fp16's spacing is 0.5)."""
    rng = np.random.default_rng(3)
    k = 4096
    a = rng.uniform(0, 1, (16, k)).astype(np.float32)
    w = rng.uniform(0, 1, (k, 32)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "w"], ["y"])], "matmul",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [16, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 32])],
        [numpy_helper.from_array(w, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    compiled, (y,) = compiled_outputs(model, {"a": a})
    a16, w16 = a.astype(np.float16), w.astype(np.float16)
    exact = a16.astype(np.float64) @ w16.astype(np.float64)
    expected = exact.astype(np.float32).astype(np.float16).astype(np.float64)
    ulps = np.abs(y - expected) / (ULP * 2.0 ** np.floor(np.log2(np.abs(expected))))
    assert ulps.max() <= 1, ulps.max()
    half_sums = np.zeros((16, 32), np.float16)
    for i in range(k):  # an fp16 accumulator, for the contrast
        half_sums = (half_sums + np.outer(a16[:, i], w16[i]).astype(np.float16)).astype(
            np.float16)
    assert (np.abs(half_sums - expected) / (ULP * 2.0 ** np.floor(np.log2(expected)))).max() \
        > 50
    matrix_ops = re.findall(r'"npu\.matmul"\(.*?\) \{.*?\} : \((memref<[^>]*>), '
                            r'(memref<[^>]*>)', compiled.program)
    assert matrix_ops and all("xf16" in lhs and "xf16" in rhs for lhs, rhs in matrix_ops)


def test_small_cnn_program_moves_fp16_and_halves_dram_bytes():
    """Weights and activations move as f16; the fp32 input (12 KiB) is read
    as given and converted on chip, so the whole program reads ~0.57x of
    fp32's bytes and everything but the input and output exactly half."""
    model = onnx.load(SMALL_CNN)
    feeds = random_feeds(model)
    fp32, _ = compiled_outputs(model, feeds, "npu")
    fp16, _ = compiled_outputs(model, feeds)
    program = fp16.program
    for op in ("npu.conv2d", "npu.matmul"):
        operands = re.findall(rf'"{op}"\(.*?\) \{{.*?\}} : \((memref<[^>]*>), (memref<[^>]*>)',
                              program)
        assert operands, op
        assert all("xf16" in x and "xf16" in w for x, w in operands), (op, operands)
    loads = re.findall(r'"npu\.dma_load"\(.*?\) \{.*?\} : \((memref<[^>]*>)', program)
    assert sum("xf32" in m for m in loads) == 1  # the input alone
    wide, half = (c.report["dram_read_bytes"] + c.report["dram_write_bytes"]
                  for c in (fp32, fp16))
    boundary = sum(v.nbytes for v in feeds.values()) + 10 * 4  # input + fp32 logits
    assert half <= 0.57 * wide
    assert half - boundary <= 0.5 * (wide - boundary)


# -- f16 import: sums and squares that overflow f16 -----------------------------------------------

def test_layer_normalization_of_large_activations():
    """Rows around 300 with a spread of 100: the squares of the centred
    values (up to ~1e5) and their sums overflow f16 (65504); the statistics
    in f32 (stash_type 1) keep the result to fp16 rounding."""
    d = 256
    rng = np.random.default_rng(4)
    graph = helper.make_graph(
        [helper.make_node("LayerNormalization", ["x", "gamma", "beta"], ["y"], axis=-1)],
        "layer_norm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, d])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, d])],
        [numpy_helper.from_array((1 + 0.1 * rng.standard_normal(d)).astype(np.float32),
                                 "gamma"),
         numpy_helper.from_array((0.1 * rng.standard_normal(d)).astype(np.float32), "beta")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = (300 + 100 * rng.standard_normal((8, d))).astype(np.float32)
    compiled, (y,) = compiled_outputs(model, {"x": x})
    (expected,) = onnxruntime_outputs(model, {"x": x})
    assert np.isfinite(y).all()
    assert relative_error(y, expected) < 4 * 2.0 ** -11 * 8  # inputs of ~2^9 rounded
    assert compiled.fallback_ops == []


def test_global_average_pool_of_large_activations():
    """A 7x7 plane of values around 3000: its sum (~1.5e5) overflows f16, its
    mean does not."""
    rng = np.random.default_rng(5)
    graph = helper.make_graph(
        [helper.make_node("GlobalAveragePool", ["x"], ["y"])], "gap",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64, 7, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64, 1, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    x = (3000 + 500 * rng.standard_normal((1, 64, 7, 7))).astype(np.float32)
    _, (y,) = compiled_outputs(model, {"x": x})
    (expected,) = onnxruntime_outputs(model, {"x": x})
    assert np.isfinite(y).all()
    # The divide is a multiply by 1/49 rounded to fp16 (u/2 of bias), each
    # product and the mean round once more: within 2u of the mean.
    assert np.abs(y - expected).max() <= 2 * 2.0 ** -11 * np.abs(expected).max()


# -- refusals ------------------------------------------------------------------------------------

def test_fp16_refuses_mlir_input():
    with pytest.raises(DiagnosticError, match="rewrites ONNX models; this input is MLIR"):
        atvoss_mlir.compile("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                            "  return %a : tensor<4xf32>\n}", target=FP16)


def test_fp16_refuses_a_quantized_model():
    graph = helper.make_graph(
        [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
         helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])], "qdq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
        [numpy_helper.from_array(np.array(0.1, np.float32), "s"),
         numpy_helper.from_array(np.array(0, np.int8), "z")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(DiagnosticError, match="-precision=fp16 applies to fp32 models; this "
                                              "model is already quantised"):
        atvoss_mlir.compile(model, target=FP16)


def test_fp16_refuses_subgraphs():
    branch = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["b"])], "branch", [],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, [4])])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], name="choose", then_branch=branch,
                          else_branch=branch)], "if",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(DiagnosticError, match="node 'choose' \\(If\\) holds a subgraph"):
        to_fp16(model)


# -- atvoss run --check ---------------------------------------------------------------------------

def test_atvoss_run_check_uses_an_fp16_tolerance():
    script = os.path.join(os.path.dirname(sys.executable), "atvoss")
    environment = {key: value for key, value in os.environ.items() if key != "ATVOSS_DEBUG"}

    def run(*extra):
        return subprocess.run([script, "run", SMALL_CNN, "--target", FP16, "--check", "-q",
                               *extra], capture_output=True, text=True, env=environment,
                              timeout=300)
    passed = run()
    assert passed.returncode == 0, passed.stderr
    assert re.search(r"check logits: .* \(ok\)", passed.stderr)
    # fp32's tolerance does not hold for an fp16 computation.
    failed = run("--rtol", "1e-4", "--atol", "1e-5")
    assert failed.returncode == 1
    assert "outputs differ from onnxruntime beyond the tolerance" in failed.stderr
