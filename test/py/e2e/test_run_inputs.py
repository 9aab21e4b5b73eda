"""Inputs as a user gives them: `atvoss run --inputs x.npz` and
`CompiledModel.run(dict)`. Every mistake is an error naming the input, its
expected shape and element type and what was given, with exit status 1, no
traceback and no simulation (nothing runs on made-up data); random inputs
only without --inputs, and the run says so."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest

import atvoss_mlir
from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.tools.atvoss import main as atvoss_main
from onnx_testing import randn, single

EXPECTED_A = "input 'a' expects float32 of shape [3, 5]"


@pytest.fixture(scope="module")
def matmul_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("inputs") / "matmul.onnx"
    onnx.save(single("MatMul", {"a": [3, 5], "b": [5, 4]}, [3, 4]), path)
    return str(path)


@pytest.fixture(scope="module")
def compiled(matmul_path):
    return atvoss_mlir.compile(matmul_path)


def run_with(matmul_path, tmp_path, capsys, arrays: dict, *extra) -> tuple[int, str, str]:
    npz = tmp_path / "in.npz"
    np.savez(npz, **arrays)
    status = atvoss_main(["run", matmul_path, "--inputs", str(npz), *extra])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def refused(status: int, out: str, err: str, *wanted: str) -> None:
    """Exit 1, the messages, no traceback, and the program was not simulated."""
    assert status == 1, err
    for text in wanted:
        assert text in err, err
    assert "Traceback" not in err and "internal error" not in err
    assert "[simulate]" not in err and "total cycles" not in out


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_another_element_type_is_an_error(matmul_path, tmp_path, capsys, dtype):
    status, out, err = run_with(matmul_path, tmp_path, capsys,
                                {"a": np.ones((3, 5), dtype), "b": randn(5, 4)})
    article = "an" if dtype is np.int32 else "a"
    refused(status, out, err, f"in.npz:1:1: error: {EXPECTED_A}, given {article} "
            f"{np.dtype(dtype).name} array of shape [3, 5]")


def test_an_npz_without_arrays_is_an_error(matmul_path, tmp_path, capsys):
    status, out, err = run_with(matmul_path, tmp_path, capsys, {}, "--check")
    refused(status, out, err, "holds no arrays; the model takes 'a' (float32 of shape [3, 5]), "
            "'b' (float32 of shape [5, 4])")
    assert "random inputs" not in err


def test_a_string_array_is_an_error(matmul_path, tmp_path, capsys):
    status, out, err = run_with(matmul_path, tmp_path, capsys,
                                {"a": np.full((3, 5), "x"), "b": randn(5, 4)})
    refused(status, out, err, f"{EXPECTED_A}, given an array of strings (<U1) of shape [3, 5]")


def test_an_object_array_is_an_error_naming_the_input(matmul_path, tmp_path, capsys):
    objects = np.empty((3, 5), object)
    status, out, err = run_with(matmul_path, tmp_path, capsys, {"a": objects, "b": randn(5, 4)})
    refused(status, out, err, "input 'a' in ", "cannot be read")


def test_a_wrong_shape_is_an_error_naming_the_input(matmul_path, tmp_path, capsys):
    status, out, err = run_with(matmul_path, tmp_path, capsys,
                                {"a": randn(5, 3), "arg1": randn(5, 4)})
    refused(status, out, err, f"{EXPECTED_A}, given a float32 array of shape [5, 3]")


def test_missing_and_unknown_inputs_are_errors(matmul_path, tmp_path, capsys):
    status, out, err = run_with(matmul_path, tmp_path, capsys, {"a": randn(3, 5)})
    refused(status, out, err, "missing input(s) 'b' (float32 of shape [5, 4])")
    status, out, err = run_with(matmul_path, tmp_path, capsys,
                                {"a": randn(3, 5), "b": randn(5, 4), "c": randn(2)})
    refused(status, out, err, "unknown input(s) 'c': the model takes 'a'")


def test_a_narrower_float_is_widened_with_a_note(matmul_path, tmp_path, capsys):
    a, b = randn(3, 5).astype(np.float16), randn(5, 4)
    output = tmp_path / "out.npz"
    status, _, err = run_with(matmul_path, tmp_path, capsys, {"a": a, "b": b}, "--check",
                              "--outputs", str(output))
    assert status == 0, err
    assert "note: input 'a': float16 widened to float32 (exact)" in err
    assert "random inputs" not in err
    with np.load(output) as outputs:
        np.testing.assert_allclose(outputs["y"], a.astype(np.float32) @ b, rtol=1e-5, atol=1e-6)


def test_random_inputs_only_without_inputs_and_said(matmul_path, capsys):
    assert atvoss_main(["run", matmul_path, "--seed", "4"]) == 0
    assert "note: no --inputs: running on random inputs (seed 4)" in capsys.readouterr().err


def test_check_with_timing_only_is_refused_before_compiling(matmul_path, capsys):
    assert atvoss_main(["run", matmul_path, "--check", "--timing-only"]) == 1
    err = capsys.readouterr().err
    assert "--check needs numerics: drop --timing-only" in err
    assert "[compile]" not in err and "[simulate]" not in err


def test_the_process_exits_1_without_a_traceback(matmul_path, tmp_path):
    np.savez(tmp_path / "in.npz", a=np.ones((3, 5), np.float64), b=randn(5, 4))
    script = os.path.join(os.path.dirname(sys.executable), "atvoss")
    environment = {k: v for k, v in os.environ.items() if k != "ATVOSS_DEBUG"}
    result = subprocess.run([script, "run", matmul_path, "--inputs", str(tmp_path / "in.npz")],
                            capture_output=True, text=True, env=environment, timeout=300)
    assert result.returncode == 1
    assert f"{EXPECTED_A}, given a float64 array of shape [3, 5]" in result.stderr
    assert "Traceback" not in result.stderr and "total cycles" not in result.stdout


# -- CompiledModel.run(dict) ------------------------------------------------------------------

@pytest.mark.parametrize("given, wanted", [
    ({"a": np.ones((3, 5), np.float64)}, f"{EXPECTED_A}, given a float64 array"),
    ({"a": np.ones((3, 5), np.int32)}, f"{EXPECTED_A}, given an int32 array"),
    ({"a": np.full((3, 5), "s")}, f"{EXPECTED_A}, given an array of strings"),
    ({"a": randn(3, 4)}, f"{EXPECTED_A}, given a float32 array of shape [3, 4]"),
    ({"a": [[0.1] * 5] * 3}, f"{EXPECTED_A}, given a list of float64 values that float32 cannot"),
])
def test_compiled_model_run_names_the_input(compiled, given, wanted):
    with pytest.raises(DiagnosticError) as caught:
        compiled.run({**given, "b": randn(5, 4)})
    assert wanted in str(caught.value)


def test_compiled_model_run_of_an_empty_dict_does_not_make_up_inputs(compiled):
    with pytest.raises(DiagnosticError, match=r"missing input\(s\) 'a' \(float32 of shape "
                       r"\[3, 5\]\), 'b' \(float32 of shape \[5, 4\]\)"):
        compiled.run({})


def test_compiled_model_run_accepts_exact_conversions(compiled):
    a = np.arange(15, dtype=np.float16).reshape(3, 5)
    b = [[1.0, 0.0, 0.5, 2.0]] * 5  # a list of exactly representable values
    outputs = compiled.run({"a": a, "b": b})
    assert [n.message for n in compiled.input_notes] == [
        "input 'a': float16 widened to float32 (exact)"]
    np.testing.assert_allclose(outputs["y"], a.astype(np.float32) @ np.asarray(b, np.float32),
                               rtol=1e-6)
    compiled.run(None)
    assert "random inputs (seed 0)" in compiled.input_notes[0].message


def test_the_program_never_writes_its_inputs():
    """A slice inserted into an input tensor: the program writes a copy of the
    input (and returns it), never the input's own buffer."""
    from mlir import ir

    from atvoss_mlir.passes import ops_where
    from atvoss_mlir.passes.npu_verify_tokens import root_buffer
    text = """
func.func @main(%a: tensor<4x8xf32>, %b: tensor<2x8xf32>) -> tensor<4x8xf32> {
  %r = tensor.insert_slice %b into %a[1, 0] [2, 8] [1, 1] : tensor<2x8xf32> into tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}"""
    compiled = atvoss_mlir.compile(text)
    a = np.arange(32, dtype=np.float32).reshape(4, 8)
    b = -np.ones((2, 8), np.float32)
    expected = a.copy()
    expected[1:3] = b
    np.testing.assert_array_equal(compiled.run([a, b])["result0"], expected)
    with compiled.module.context:
        stores = ops_where(compiled.module.operation, lambda op: op.name == "npu.dma_store")
        assert stores
        for store in stores:
            assert not isinstance(root_buffer(store.operands[1]), ir.BlockArgument)


def test_check_tolerance_of_an_fp32_output_scales_with_its_largest_value():
    """fp32 rounding differs from onnxruntime's by amounts that scale with the
    output's magnitude: a logit near zero beside one of 4.5e4 may be off by a
    few millionths of 4.5e4, not by more; a small output keeps atol 1e-5."""
    import argparse
    from atvoss_mlir.tools.check import compare
    args = argparse.Namespace(rtol=None, atol=None)
    want = np.array([4.5e4, 1e-3, -2.0], np.float32)
    near = want.astype(np.float64) + [0.0, 0.2, 0.0]    # 4.4e-6 of the largest
    far = want.astype(np.float64) + [0.0, 0.0, 5.0]     # 1.1e-4 of the largest
    assert compare(args, {"y": near}, {"y": want})["y"]["ok"]
    assert not compare(args, {"y": far}, {"y": want})["y"]["ok"]
    small = np.array([1.0, 1e-3], np.float32)
    assert not compare(args, {"y": small + [0.0, 2e-5]}, {"y": small})["y"]["ok"]
    assert compare(args, {"y": small + [0.0, 5e-6]}, {"y": small})["y"]["ok"]


def test_check_of_a_dequantized_output_allows_one_step_and_its_float_rounding():
    """A quantised model's float output (a DequantizeLinear's, scale s) may be
    one step off onnxruntime's where a value computed in float before the
    last QuantizeLinear rounds the other way (LR-ASPP's final bilinear
    Resize: 332 of 344,064 elements). Two float32 values one step apart
    differ by s up to their rounding; two steps are a mismatch."""
    import argparse
    from atvoss_mlir.tools.check import compare
    args = argparse.Namespace(rtol=None, atol=None)
    scale = np.float32(0.0012930724)
    want = (np.array([62, -5, 0], np.float32) * scale).astype(np.float32)
    one_step = (np.array([61, -5, 0], np.float32) * scale).astype(np.float32)
    two_steps = (np.array([60, -5, 0], np.float32) * scale).astype(np.float32)
    assert abs(float(want[0]) - float(one_step[0])) > float(scale) * (1 + 1e-6)
    steps = {"y": float(scale)}
    assert compare(args, {"y": one_step}, {"y": want}, steps=steps)["y"]["ok"]
    assert not compare(args, {"y": two_steps}, {"y": want}, steps=steps)["y"]["ok"]
