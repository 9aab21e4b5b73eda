"""The atvoss command line on ONNX models (subprocess for exit codes and
error output, in-process for the rest) and the compile API's errors:
located errors naming the node, corrupt files, --check verdicts, the JSON
report, --inputs/--outputs .npz files, and `import` output read back by
atvoss-opt."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper

import atvoss_mlir
from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.tools.atvoss import main as atvoss_main
from atvoss_mlir.tools.opt import main as opt_main
from e2e_testing import EXAMPLES, REPOSITORY
from onnx_testing import model, randn, single

# Keys of the simulator's JSON report (sim/report.py, version 1).
REPORT_KEYS = {"version", "entry", "target", "timing_only", "total_cycles", "macs",
               "roofline_cycles", "roofline_ratio", "dram_read_bytes", "dram_write_bytes",
               "compulsory_dram_bytes", "sram_peak_bytes", "sram_capacity_bytes",
               "sram_occupancy", "engines", "ops"}


def atvoss(*args, cwd=None) -> subprocess.CompletedProcess:
    script = os.path.join(os.path.dirname(sys.executable), "atvoss")
    command = [script] if os.path.exists(script) else [sys.executable, "-m",
                                                        "atvoss_mlir.tools.atvoss"]
    environment = {key: value for key, value in os.environ.items() if key != "ATVOSS_DEBUG"}
    return subprocess.run(command + list(args), capture_output=True, text=True, cwd=cwd,
                          env=environment, timeout=300)


@pytest.fixture
def models(tmp_path):
    """A few model files in tmp_path; returns name -> path."""
    unsupported = model([helper.make_node("Relu", ["x"], ["r"], name="first_relu"),
                         helper.make_node("RandomNormalLike", ["r"], ["y"], name="noise")],
                        {"x": [3, 5]}, {"y": [3, 5]})
    built = {
        "unsupported.onnx": unsupported,
        "softmax_fp16.onnx": single("Softmax", {"x": [3, 17]}, [3, 17], {"axis": -1},
                                    dtype=np.float16),
        "matmul.onnx": single("MatMul", {"a": [3, 5], "b": [5, 4]}, [3, 4]),
    }
    paths = {}
    for name, onnx_model in built.items():
        paths[name] = str(tmp_path / name)
        onnx.save(onnx_model, paths[name])
    paths["corrupt.onnx"] = str(tmp_path / "corrupt.onnx")
    with open(paths["corrupt.onnx"], "wb") as stream:
        stream.write(b"\x08\x07 this is not a protobuf \xff\xff")
    return paths


# -- errors ----------------------------------------------------------------------------------

def test_unsupported_op_is_a_located_error_naming_the_node(models, tmp_path):
    result = atvoss("run", "unsupported.onnx", "--check", cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert re.search(r"^unsupported\.onnx:2:1: error: node 'noise': op type 'RandomNormalLike'",
                     result.stderr, re.MULTILINE), result.stderr
    with pytest.raises(DiagnosticError) as caught:
        atvoss_mlir.compile(models["unsupported.onnx"])
    (diagnostic,) = caught.value.diagnostics
    assert "noise" in diagnostic.message and "RandomNormalLike" in diagnostic.message
    assert diagnostic.resolved_position().line == 2


def test_corrupt_and_missing_files_are_clear_errors(models, tmp_path):
    result = atvoss("run", "corrupt.onnx", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "corrupt.onnx:1:1: error: cannot read ONNX model: the file is not a valid ONNX " \
           "protobuf" in result.stderr
    result = atvoss("compile", "missing.onnx", cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "missing.onnx:1:1: error: cannot read ONNX model" in result.stderr
    with pytest.raises(DiagnosticError, match="not a valid ONNX protobuf"):
        atvoss_mlir.compile(models["corrupt.onnx"])


def test_inputs_of_the_wrong_shape_are_a_clear_error(models, tmp_path, capsys):
    np.savez(tmp_path / "wrong.npz", x=np.zeros((2, 2), np.float16))
    assert atvoss_main(["run", models["softmax_fp16.onnx"], "--check", "-q", "--inputs",
                        str(tmp_path / "wrong.npz")]) == 1
    assert "wrong.npz:1:1: error: input 'x' expects float16 of shape [3, 17], given a float16 " \
           "array of shape [2, 2]" in capsys.readouterr().err


def test_explain_groups_the_decisions_by_node(tmp_path):
    result = atvoss("compile", os.path.join("examples", "small_cnn.onnx"), "--explain",
                    "-o", str(tmp_path / "out.mlir"), cwd=REPOSITORY)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    header = lines.index("'block1.add' (examples/small_cnn.onnx:10:1)")
    block = []
    for line in lines[header + 1:]:
        if not line.startswith("  "):
            break
        block.append(line.strip())
    # The buffer plan's decision and the tile search's, under the node they concern.
    assert any(line.startswith("kept 'linalg.generic' output in SRAM for 'block1.out'")
               for line in block), block
    assert any(line.startswith("'linalg.generic': tiles ") for line in block), block
    assert sum(line == "'block1.add' (examples/small_cnn.onnx:10:1)" for line in lines) == 1



def test_explain_lists_the_nodes_in_model_order_and_each_message_once(tmp_path):
    # A grouped conv is one linalg conv per group: a decision said of each
    # group is printed once, with the number of times it was said. (Groups of
    # 32 channels fill the array: npu-pack-groups leaves them one conv each.)
    rng = np.random.default_rng(3)
    grouped = model(
        [helper.make_node("Conv", ["x", "w1"], ["g"], name="grouped", group=4),
         helper.make_node("Relu", ["g"], ["r"], name="act"),
         helper.make_node("Conv", ["r", "w2"], ["y"], name="mix")],
        {"x": [1, 128, 8, 8]}, {"y": [1, 16, 8, 8]},
        {"w1": rng.standard_normal((128, 32, 1, 1)).astype(np.float32),
         "w2": rng.standard_normal((16, 128, 1, 1)).astype(np.float32)})
    path = str(tmp_path / "grouped.onnx")
    onnx.save(grouped, path)
    result = atvoss("compile", path, "--explain", "-o", str(tmp_path / "out.mlir"))
    assert result.returncode == 0, result.stderr
    headers = [(match.group(1), int(match.group(2))) for match in re.finditer(
        r"^'([^']+)' \(.*:(\d+):1\)$", result.stderr, re.MULTILINE)]
    assert [line for _, line in headers] == sorted(line for _, line in headers), headers
    assert [name for name, _ in headers][:1] == ["grouped"], headers
    lines = result.stderr.splitlines()
    block = lines[lines.index(f"'grouped' ({path}:1:1)") + 1:]
    block = block[:next(i for i, line in enumerate(block) if not line.startswith("  "))]
    assert "  'linalg.conv_2d_nhwc_hwcf': relu folded into its epilogue (4 times)" in block, block
    assert len(block) == len(set(block)), block

# -- --check and the report ------------------------------------------------------------------

def test_run_check_on_the_bundled_example(tmp_path):
    result = atvoss("run", os.path.join("examples", "small_cnn.onnx"), "--check",
                    cwd=REPOSITORY)
    assert result.returncode == 0, result.stderr
    assert re.search(r"^check logits: .*\(ok\)$", result.stderr, re.MULTILINE)
    assert "total cycles" in result.stdout


def test_check_fails_outside_the_tolerance(models, capsys):
    # The fp32 model computed in fp16 rounds where onnxruntime does not: within
    # the fp16 tolerance, not exact.
    path, fp16 = models["matmul.onnx"], ["--target", "npu -precision=fp16"]
    assert atvoss_main(["run", path, *fp16, "--check", "-q", "--report", "json"]) == 0
    within = json.loads(capsys.readouterr().out)["check"]["y"]
    assert within["ok"] and 0 < within["max_abs_error"] < 1e-2
    assert atvoss_main(["run", path, *fp16, "--check", "-q", "--report", "json", "--rtol", "0",
                        "--atol", "0"]) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["check"]["y"]["ok"] is False
    assert "(MISMATCH)" in captured.err
    assert f"{path}: error: outputs differ from onnxruntime beyond the tolerance" in captured.err


def test_json_report_has_the_simulator_contract_and_the_check(capsys):
    path = os.path.join(EXAMPLES, "transformer_block.onnx")
    assert atvoss_main(["run", path, "--check", "-q", "--report", "json", "--seed", "3"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert REPORT_KEYS <= set(report)
    check = report["check"]["output"]
    assert {"max_abs_error", "max_rel_error", "ok"} <= set(check)
    assert check["ok"] is True and check["max_abs_error"] < 1e-4
    assert report["timing_only"] is False and report["total_cycles"] > 0


def test_inputs_and_outputs_npz_by_name_and_position(models, tmp_path, capsys):
    a, b = randn(3, 5), randn(5, 4, seed=1)
    np.savez(tmp_path / "in.npz", a=a, arg1=b)  # the first by name, the second by position
    assert atvoss_main(["run", models["matmul.onnx"], "-q", "--inputs", str(tmp_path / "in.npz"),
                        "--outputs", str(tmp_path / "out.npz"), "--check"]) == 0
    capsys.readouterr()
    with np.load(tmp_path / "out.npz") as outputs:
        assert outputs.files == ["y"]
        np.testing.assert_allclose(outputs["y"], a @ b, rtol=1e-5, atol=1e-6)


def test_timing_only_run_and_check_exclude_each_other(models, capsys):
    assert atvoss_main(["run", models["matmul.onnx"], "-q", "--timing-only", "--report",
                        "json"]) == 0
    assert json.loads(capsys.readouterr().out)["timing_only"] is True
    assert atvoss_main(["run", models["matmul.onnx"], "-q", "--timing-only", "--check"]) == 1
    assert "--check needs numerics" in capsys.readouterr().err


# -- import ----------------------------------------------------------------------------------

def test_import_output_parses_with_atvoss_opt(models, tmp_path, capsys):
    imported = str(tmp_path / "matmul.mlir")
    assert atvoss_main(["import", models["matmul.onnx"], "-o", imported]) == 0
    assert opt_main([imported]) == 0
    assert "linalg.matmul" in capsys.readouterr().out
    # The imported module compiles and runs like the ONNX model it came from.
    compiled = atvoss_mlir.compile(imported)
    a, b = randn(3, 5), randn(5, 4, seed=1)
    (result,) = compiled.run({"arg0": a, "arg1": b}).values()
    np.testing.assert_allclose(result, a @ b, rtol=1e-5, atol=1e-6)


def dynamic_batch_model(path) -> str:
    """A conv and relu whose batch is exported as the dynamic dimension 'N'."""
    from onnx import TensorProto, numpy_helper
    weights = numpy_helper.from_array(randn(8, 3, 3, 3, seed=1), "w")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
         helper.make_node("Relu", ["c"], ["y"], name="relu")], "dynamic",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8, 16, 16])], [weights])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                                ir_version=8), path)
    return str(path)


def test_dynamic_dimensions_take_the_shape_given_else_1(tmp_path, capsys):
    path = dynamic_batch_model(tmp_path / "dynamic.onnx")
    result = atvoss("run", "dynamic.onnx", "--check", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "dynamic.onnx:1:1: remark: input 'x' has the dynamic dimension(s) 'N': compiled " \
           "for 1 (x=1,3,16,16; --input-shape or input_shapes= for another size)" \
        in result.stderr
    result = atvoss("run", "dynamic.onnx", "--input-shape", "x=2,3,16,16", "--check",
                    cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert re.search(r"check y: .*\(ok\)", result.stdout + result.stderr), result.stderr
    compiled = atvoss_mlir.compile(path, input_shapes={"x": [3, 3, 16, 16]})
    assert compiled.input_specs[0].shape == (3, 3, 16, 16)
    outputs = compiled.run({"x": randn(3, 3, 16, 16)})
    assert outputs["y"].shape == (3, 8, 16, 16)
    assert atvoss_main(["profile", path, "--input-shape", "x=1,3,16,16", "--no-advice",
                        "-q"]) == 0
    assert "roofline cycles" in capsys.readouterr().out
    assert atvoss_mlir.compile(path).input_specs[0].shape == (1, 3, 16, 16)


def test_the_onnx_backend_compiles_dynamic_inputs_at_each_runs_shapes(tmp_path):
    from atvoss_mlir import onnx_backend
    from onnx_testing import reference
    onnx_model = onnx.load(dynamic_batch_model(tmp_path / "dynamic.onnx"))
    rep = onnx_backend.prepare(onnx_model)
    for batch in (2, 1, 2):
        x = randn(batch, 3, 16, 16, seed=batch)
        (got,) = rep.run([x])
        np.testing.assert_allclose(got, reference(onnx_model, {"x": x})[0], rtol=1e-4,
                                   atol=1e-5)
    assert len(rep.by_shapes) == 2


@pytest.mark.parametrize("shape,message", [
    ("x=2,4,16,16", "dynamic.onnx:1:1: error: input 'x': dimension 1 is 3 in the model, the "
                    "shape given says 4"),
    ("z=2,3,16,16", "dynamic.onnx:1:1: error: input shape for 'z', which is not an input of "
                    "the model (its inputs: x)"),
    ("x=2,3", "dynamic.onnx:1:1: error: input 'x' has rank 4, the shape given [2, 3] rank 2"),
    ("x=0,3,16,16", "dynamic.onnx:1:1: error: input 'x': dimension 0 must be positive, not 0"),
    ("x=two", "<command-line>:1:1: error: invalid --input-shape 'x=two': expected "
              "NAME=D0,D1,... (integers)")])
def test_input_shapes_that_do_not_fit_are_clear_errors(tmp_path, shape, message):
    dynamic_batch_model(tmp_path / "dynamic.onnx")
    result = atvoss("compile", "dynamic.onnx", "--input-shape", shape, cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert message in result.stderr, result.stderr
