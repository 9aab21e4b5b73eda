"""BatchNormalization folded into the Conv before it (from -fusion=1): the same
outputs as onnxruntime, fewer ops and DRAM bytes, a remark per fold, and no
fold where the Conv's result has another use."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import atvoss_mlir
from atvoss_mlir.testing.onnx_models import model, reference


def conv_bn_relu(extra_use: bool = False, ir3: bool = False, conv_bias: bool = True):
    rng = np.random.default_rng(3)
    initializers = {
        "w": rng.standard_normal((8, 4, 3, 3)).astype(np.float32),
        "scale": rng.uniform(0.5, 1.5, 8).astype(np.float32),
        "shift": rng.standard_normal(8).astype(np.float32),
        "mean": rng.standard_normal(8).astype(np.float32),
        "var": rng.uniform(0.5, 2.0, 8).astype(np.float32),
    }
    conv_inputs = ["x", "w"]
    if conv_bias:
        initializers["b"] = rng.standard_normal(8).astype(np.float32)
        conv_inputs.append("b")
    nodes = [helper.make_node("Conv", conv_inputs, ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "scale", "shift", "mean", "var"],
                              ["n"], name="bn", epsilon=1e-3),
             helper.make_node("Relu", ["n"], ["y"], name="relu")]
    outputs = {"y": [1, 8, 6, 6]}
    if extra_use:
        outputs["c"] = [1, 8, 6, 6]
    return model(nodes, {"x": [1, 4, 6, 6]}, outputs, initializers, opset=13 if not ir3 else 9,
                 initializers_as_inputs=ir3)


def compiled_run(onnx_model, fusion: int):
    compiled = atvoss_mlir.compile(onnx_model, f"npu -fusion={fusion}")
    x = np.random.default_rng(0).standard_normal((1, 4, 6, 6)).astype(np.float32)
    outputs = compiled.run({"x": x})
    return compiled, x, outputs


@pytest.mark.parametrize("ir3", [False, True])
@pytest.mark.parametrize("conv_bias", [False, True])
def test_folded_batchnorm_matches_onnxruntime(ir3, conv_bias):
    onnx_model = conv_bn_relu(ir3=ir3, conv_bias=conv_bias)
    for fusion in (0, 1):
        compiled, x, outputs = compiled_run(onnx_model, fusion)
        [expected] = reference(onnx_model, {"x": x})
        np.testing.assert_allclose(outputs["y"], expected, rtol=1e-5, atol=1e-5)
        folds = [r for r in compiled.remarks if "folded into the weights" in r.message]
        assert len(folds) == (1 if fusion else 0)
    assert "BatchNormalization 'bn' folded into the weights and bias of Conv 'conv'" \
        in folds[0].message
    assert folds[0].resolved_position().line == 2   # the BatchNormalization node


def test_folding_removes_the_normalisation_pass():
    onnx_model = conv_bn_relu()
    unfused, _, _ = compiled_run(onnx_model, 0)
    fused, _, _ = compiled_run(onnx_model, 1)
    bytes_of = lambda c: c.report["dram_read_bytes"] + c.report["dram_write_bytes"]  # noqa: E731
    assert bytes_of(fused) < bytes_of(unfused)
    assert str(fused.module).count("npu.elementwise") < str(unfused.module).count("npu.elementwise")


def test_conv_result_with_another_use_is_not_folded():
    onnx_model = conv_bn_relu(extra_use=True)
    compiled, x, outputs = compiled_run(onnx_model, 1)
    assert not [r for r in compiled.remarks if "folded into the weights" in r.message]
    expected = dict(zip(["y", "c"], reference(onnx_model, {"x": x})))
    for name in ("y", "c"):
        np.testing.assert_allclose(outputs[name], expected[name], rtol=1e-5, atol=1e-5)


def test_the_given_model_is_not_changed():
    onnx_model = conv_bn_relu()
    before = onnx_model.SerializeToString()
    compiled_run(onnx_model, 2)
    assert onnx_model.SerializeToString() == before
