"""atvoss-sim: reports, files, exit codes and error output."""

import json
import subprocess
import sys

import numpy as np

from atvoss_mlir.sim import simulate
from atvoss_mlir.sim.cli import main
from sim_programs import tiled_matmul


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_json_report_outputs_and_trace(tmp_path, capsys):
    prog = write(tmp_path, "mm.mlir", tiled_matmul(40, 24, 32, 16, 16, 16))
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (40, 32)).astype(np.float16)
    b = rng.uniform(-1, 1, (32, 24)).astype(np.float16)
    np.savez(tmp_path / "in.npz", arg0=a, arg1=b)
    status = main([prog, "--target=npu -dataflow=os", "--inputs", str(tmp_path / "in.npz"),
                   "--outputs", str(tmp_path / "out.npz"), "--trace", str(tmp_path / "t.json"),
                   "--report", "json"])
    assert status == 0
    report = json.loads(capsys.readouterr().out)
    assert report["version"] == 1 and "-dataflow=os" in report["target"]
    assert all(op["loc"].startswith(prog + ":") for op in report["ops"])
    with np.load(tmp_path / "out.npz") as outputs:
        np.testing.assert_allclose(outputs["result0"], a.astype(np.float64) @ b, rtol=1e-5,
                                   atol=1e-5)
    trace = json.loads((tmp_path / "t.json").read_text())
    assert any(e.get("ph") == "X" and e["name"] == "npu.matmul" for e in trace["traceEvents"])


def test_table_report_random_inputs_and_timing_only(tmp_path, capsys):
    prog = write(tmp_path, "mm.mlir", tiled_matmul(40, 24, 32, 16, 16, 16))
    assert main([prog, "--seed", "3"]) == 0
    table = capsys.readouterr().out
    assert "total cycles" in table and "npu.matmul" in table
    assert main([prog, "--timing-only", "--report", "json"]) == 0
    fast = json.loads(capsys.readouterr().out)
    assert fast["total_cycles"] == simulate(tiled_matmul(40, 24, 32, 16, 16, 16)).total_cycles


def test_errors_are_located_and_exit_1(tmp_path, capsys):
    prog = write(tmp_path, "bad.mlir", "func.func @main() {\n  %x = \"npu.alloc\"() {offset = 3 : i64}"
                 " : () -> memref<8xf16, 1>\n  return\n}\n")
    assert main([prog]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{prog}:2:8: error: npu.alloc: offset 3 is not aligned")
    syntax = write(tmp_path, "syntax.mlir", "func.func @main( {\n")
    assert main([syntax]) == 1
    assert capsys.readouterr().err.startswith(f"{syntax}:1:")
    assert main([str(tmp_path / "missing.mlir")]) == 1
    assert "cannot read" in capsys.readouterr().err
    assert main([prog, "--target=npu -bogus=1"]) == 1
    assert "unknown target option '-bogus'" in capsys.readouterr().err


def test_console_script_never_prints_a_traceback(tmp_path):
    bad_inputs = tmp_path / "in.npz"
    bad_inputs.write_bytes(b"not an archive")
    prog = write(tmp_path, "mm.mlir", tiled_matmul(16, 16, 16, 16, 16, 16))
    for argv in ([prog, "--inputs", str(bad_inputs)], [prog, "--entry", "nothere"],
                 [write(tmp_path, "empty.mlir", "")]):
        run = subprocess.run([sys.executable, "-m", "atvoss_mlir.sim.cli", *argv],
                             capture_output=True, text=True)
        assert run.returncode == 1, run.stderr
        assert "Traceback" not in run.stderr and "error" in run.stderr


def test_inputs_are_checked_against_the_arguments(tmp_path, capsys):
    prog = write(tmp_path, "mm.mlir", tiled_matmul(40, 24, 32, 16, 16, 16))
    archive = tmp_path / "in.npz"
    b = np.zeros((32, 24), np.float16)
    for arrays, wanted in (
            ({"arg0": np.zeros((40, 32), np.float32), "arg1": b},
             "input 'arg0' expects float16 of shape [40, 32], given a float32 array"),
            ({"arg0": np.zeros((32, 40), np.float16), "arg1": b},
             "input 'arg0' expects float16 of shape [40, 32], given a float16 array of shape "
             "[32, 40]"),
            ({"arg0": np.full((40, 32), "text"), "arg1": b},
             "input 'arg0' expects float16 of shape [40, 32], given an array of strings"),
            ({}, "the archive holds no arrays; the program takes 'arg0' (float16 of shape "
                 "[40, 32])")):
        np.savez(archive, **arrays)
        assert main([prog, "--inputs", str(archive)]) == 1
        captured = capsys.readouterr()
        assert f"{archive}:1:1: error: {wanted}" in captured.err
        assert "total cycles" not in captured.out and "Traceback" not in captured.err
    assert main([prog, "--seed", "2"]) == 0
    assert "note: no --inputs: ran on random inputs (seed 2)" in capsys.readouterr().err
