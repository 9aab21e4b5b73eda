"""fp16 overflow and underflow and int8 saturation are counted per op and
reported (located warnings, the report's `numerics` list), not passed on
silently as inf and zeros."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sim"))

import atvoss_mlir  # noqa: E402
from atvoss_mlir.sim import simulate  # noqa: E402
from atvoss_mlir.sim.cli import main as sim_main  # noqa: E402
from atvoss_mlir.tools.atvoss import main as atvoss_main  # noqa: E402
from sim_programs import single_tile  # noqa: E402


def fp16_model(weight: float, scale: float) -> onnx.ModelProto:
    """x @ w then * s, all fp16 (the activations overflow when w and s are large)."""
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
         helper.make_node("Mul", ["h", "s"], ["y"], name="scale")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [16, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [16, 32])],
        [numpy_helper.from_array(np.full((64, 32), weight, np.float16), "w"),
         numpy_helper.from_array(np.array(scale, np.float16), "s")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_fp16_overflow_reported_at_the_node(tmp_path, capsys):
    path = tmp_path / "overflow.onnx"
    onnx.save(fp16_model(500.0, 1000.0), path)
    x = np.random.default_rng(0).uniform(0.5, 1.0, (16, 64)).astype(np.float16)
    compiled = atvoss_mlir.compile(str(path))
    outputs = compiled.run({"x": x})
    assert np.isinf(outputs["y"]).all()  # every product is 16000..32000 before the scale
    assert compiled.report["numerics"] == [
        {"op": "npu.elementwise", "loc": f"{path}:2:1", "kind": "overflow",
         "dtype": "float16", "count": 16 * 32}]
    # The CLI prints it as a located warning.
    np.savez(tmp_path / "in.npz", x=x)
    assert atvoss_main(["run", str(path), "-q", "--inputs", str(tmp_path / "in.npz")]) == 0
    err = capsys.readouterr().err
    assert f"{path}:2:1: warning: npu.elementwise: 512 results overflowed float16 to " \
           "inf/nan from finite inputs" in err
    assert "RuntimeWarning" not in err


def test_fp16_underflow_counted():
    compiled = atvoss_mlir.compile(fp16_model(1e-7, 1e-3))
    x = np.full((16, 64), 0.5, np.float16)
    outputs = compiled.run({"x": x})
    assert not outputs["y"].any()
    (entry,) = compiled.report["numerics"]
    assert entry["kind"] == "underflow" and entry["count"] == 16 * 32


def test_clean_model_reports_nothing():
    compiled = atvoss_mlir.compile(fp16_model(0.01, 2.0))
    compiled.run()
    assert compiled.report["numerics"] == []


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_fp32_accumulator_overflow_counted():
    program = single_tile([((4, 8), np.float32), ((8, 4), np.float32)], [((4, 4), np.float32)],
                          '"npu.matmul"({in0}, {in1}, {out0}) {accumulate = false, '
                          'activation = "none"} : ({in0_t}, {in1_t}, {out0_t}) -> ()')
    big = np.full((4, 8), 3e38, np.float32)
    result = simulate(program, [big, np.ones((8, 4), np.float32), np.zeros((4, 4), np.float32)])
    (entry,) = result.report["numerics"]
    assert (entry["op"], entry["kind"], entry["count"]) == ("npu.matmul", "overflow", 16)


def test_int8_saturation_in_requantize(tmp_path, capsys):
    body = ('"npu.requantize"({in0}, {out0}) {scale = 0.5 : f64, zero_point = 0 : i64} '
            ': ({in0_t}, {out0_t}) -> ()')
    program = single_tile([((2, 4), np.int32)], [((2, 4), np.int8)], body)
    x = np.array([[0, 100, 254, 256], [-256, -258, 1000, -1000]], np.int32)
    result = simulate(program, [x, np.zeros((2, 4), np.int8)])
    (entry,) = result.report["numerics"]
    assert (entry["op"], entry["kind"], entry["count"]) == ("npu.requantize", "saturation", 4)
    np.testing.assert_array_equal(result.outputs[1],
                                  [[0, 50, 127, 127], [-128, -128, 127, -128]])
    path = tmp_path / "requantize.mlir"
    path.write_text(program)
    np.savez(tmp_path / "in.npz", arg0=x)
    assert sim_main([str(path), "--inputs", str(tmp_path / "in.npz")]) == 0
    captured = capsys.readouterr()
    assert "warning: npu.requantize: 4 requantised results saturated to the int8 range" \
           in captured.err
    assert "numerics:" in captured.out  # the table lists them too


def test_requantize_with_a_folded_relu_counts_only_the_top_end():
    """zero point -128: the lower clamp is a quantiser's folded ReLU, not a
    saturation; results above 127 still are."""
    body = ('"npu.requantize"({in0}, {out0}) {scale = 1.0 : f64, zero_point = -128 : i64} '
            ': ({in0_t}, {out0_t}) -> ()')
    program = single_tile([((1, 4), np.int32)], [((1, 4), np.int8)], body)
    x = np.array([[-50, 0, 255, 300]], np.int32)
    result = simulate(program, [x, np.zeros((1, 4), np.int8)])
    (entry,) = result.report["numerics"]
    assert (entry["kind"], entry["count"]) == ("saturation", 1)
    np.testing.assert_array_equal(result.outputs[1], [[-128, -128, 127, 127]])
