"""Models and programs too large for memory or time are refused up front,
with the estimate, located where the size comes from."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from atvoss_mlir.compiler import compile as compile_model
from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.limits import GiB, format_bytes, parse_bytes
from atvoss_mlir.sim import simulate
from atvoss_mlir.tools.atvoss import main as atvoss_main

HUGE_MATMUL = """
func.func @main(%a: tensor<100000x100000xf32>, %b: tensor<100000x100000xf32>) -> tensor<100000x100000xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<100000x100000xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<100000x100000xf32>) -> tensor<100000x100000xf32>
  %r = linalg.matmul ins(%a, %b : tensor<100000x100000xf32>, tensor<100000x100000xf32>) outs(%f : tensor<100000x100000xf32>) -> tensor<100000x100000xf32>
  return %r : tensor<100000x100000xf32>
}
"""


def matmul_model(m, k, n):
    graph = helper.make_graph(
        [helper.make_node("Relu", ["a"], ["r"], name="relu"),
         helper.make_node("MatMul", ["r", "b"], ["y"], name="mm")], "g",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [m, k]),
         helper.make_tensor_value_info("b", TensorProto.FLOAT, [k, n])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_onnx_huge_matmul_refused_at_the_node(tmp_path, capsys):
    path = tmp_path / "huge.onnx"
    onnx.save(matmul_model(10**6, 100, 10**6), path)
    assert atvoss_main(["compile", str(path), "-q", "-o", str(tmp_path / "out.mlir")]) == 1
    err = capsys.readouterr().err
    # The MatMul is the graph's second node: line 2 of the model.
    assert f"{path}:2:1: error: node 'mm' (MatMul): output 'y' (1000000x1000000) needs " \
           "3.64 TiB" in err
    assert "above the memory limit" in err and "internal error" not in err


def test_onnx_huge_graph_input_refused(tmp_path):
    with pytest.raises(DiagnosticError, match=r"graph input 'a' \(1000000000x1000\) needs"):
        compile_model(matmul_model(10**9, 1000, 8))


def test_onnx_limit_is_configurable(monkeypatch):
    monkeypatch.setenv("ATVOSS_MEMORY_LIMIT", "64K")
    with pytest.raises(DiagnosticError, match=r"node 'relu' \(Relu\).*64 KiB"):
        compile_model(matmul_model(64, 128, 64))
    monkeypatch.setenv("ATVOSS_MEMORY_LIMIT", "1M")
    compile_model(matmul_model(64, 128, 64))


@pytest.fixture(scope="module")
def huge_program():
    return compile_model(HUGE_MATMUL).program


def test_simulator_refuses_numerics_above_the_memory_limit(huge_program, monkeypatch):
    monkeypatch.setenv("ATVOSS_MEMORY_LIMIT", "100G")
    with pytest.raises(DiagnosticError) as failure:
        simulate(huge_program)
    message = failure.value.diagnostics[0].message
    assert "needs 112 GiB of DRAM buffers (arguments 74.5 GiB, buffers 37.3 GiB)" in message
    assert "--timing-only runs without the data" in message


def test_simulator_refuses_too_many_ops(huge_program, monkeypatch):
    monkeypatch.setenv("ATVOSS_MEMORY_LIMIT", "1T")
    # The estimate counts the ops of one tile-loop iteration times its trip count.
    with pytest.raises(DiagnosticError, match=r"would execute about 3\.\d+e\+10 ops, above the "
                                              r"limit of 1e\+07"):
        simulate(huge_program, timing_only=True)


def test_simulator_limit_located_at_a_loop(huge_program, monkeypatch):
    monkeypatch.setenv("ATVOSS_MEMORY_LIMIT", "1T")
    with pytest.raises(DiagnosticError) as failure:
        simulate(huge_program, timing_only=True)
    line = failure.value.diagnostics[0].resolved_position().line
    assert "scf.for" in huge_program.splitlines()[line - 1] or line > 1


def test_byte_counts():
    assert parse_bytes("8G") == 8 * GiB and parse_bytes("1048576") == 1 << 20
    assert format_bytes(3 * GiB // 2) == "1.5 GiB"


def test_byte_counts_past_a_float_are_a_power_of_ten():
    """A tensor of 2x4x2x4... (a fuzzed ConstantOfShape, 10^330 bytes) was an
    internal OverflowError in the message refusing it."""
    assert format_bytes(10 ** 330 * (1 << 40)) == "about 10^330 TiB"
    assert format_bytes(10 ** 299 * (1 << 40)) == "1e+299 TiB"


def test_onnx_range_too_large_refused_before_shape_inference(tmp_path, capsys):
    """ONNX shape inference's data propagation would build the Range's 10^12 values."""
    graph = helper.make_graph(
        [helper.make_node("Range", ["start", "limit", "delta"], ["r"], name="range"),
         helper.make_node("Cast", ["r"], ["y"], name="cast", to=TensorProto.FLOAT)], "g", [],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None])],
        [onnx.numpy_helper.from_array(np.array(v, np.int64), n)
         for n, v in (("start", -10**12), ("limit", 8), ("delta", 1))])
    path = tmp_path / "range.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    assert atvoss_main(["import", str(path), "-o", str(tmp_path / "out.mlir")]) == 1
    assert f"{path}:1:1: error: node 'range' (Range): its output needs 7.28 TiB (from its " \
           "constant inputs), above the memory limit" in capsys.readouterr().err


def test_running_out_of_memory_is_a_located_error_not_an_internal_one(tmp_path, capsys):
    """Memory the estimate did not foresee (an address-space limit, other
    processes) runs out mid-work: an error at the input, with what to set."""
    from atvoss_mlir.tools.common import run_tool
    model = tmp_path / "model.onnx"
    model.write_bytes(b"")

    def exhausted(argv):
        raise MemoryError("Unable to allocate 1.0 GiB for an array")
    assert run_tool("atvoss", exhausted, ["run", str(model)]) == 1
    message = capsys.readouterr().err
    assert message.startswith(f"{model}:1:1: error: out of memory (Unable to allocate 1.0 GiB")
    assert "internal error" not in message
