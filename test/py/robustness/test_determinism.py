"""The same model and options give byte-identical programs and reports: twice
in one process, and in two processes with different hash seeds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "frontend"))

import atvoss_mlir  # noqa: E402
import onnx_testing  # noqa: E402

TARGET = "npu -pipeline-stages=2 -dataflow=auto"


def small_resnet() -> onnx.ModelProto:
    return onnx_testing.resnet50(width=4, image=16, classes=10)


def test_twice_in_one_process():
    results = []
    for _ in range(2):
        compiled = atvoss_mlir.compile(small_resnet(), TARGET)
        compiled.run(seed=3)
        results.append((compiled.program, json.dumps(compiled.report, sort_keys=True)))
    assert results[0][0] == results[1][0]
    assert results[0][1] == results[1][1]


def test_two_processes_with_different_hash_seeds(tmp_path):
    path = tmp_path / "model.onnx"
    onnx.save(onnx_testing.resnet50(width=4, image=16, classes=10), path)
    tool = os.path.join(os.path.dirname(sys.executable), "atvoss")
    outputs = []
    for hash_seed in ("1", "271828"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        program = tmp_path / f"program-{hash_seed}.mlir"
        subprocess.run([tool, "compile", str(path), "-q", f"--target={TARGET}", "-o",
                        str(program)], check=True, env=env)
        report = subprocess.run([tool, "run", str(path), "-q", f"--target={TARGET}",
                                 "--report=json", "--seed=5"],
                                check=True, env=env, capture_output=True, text=True).stdout
        outputs.append((program.read_bytes(), report))
    assert outputs[0][0] == outputs[1][0]
    assert outputs[0][1] == outputs[1][1]
    assert json.loads(outputs[0][1])["total_cycles"] > 0
