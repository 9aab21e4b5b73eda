"""`atvoss tune`: op programs, the search space, strategies against an
exhaustive search, the tuning database (reuse, resume after a kill, two
writers, corrupt files, other targets, JSON lines), compile picking tuned
schedules up, and the Ray executor on a local instance."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import sqlite3
import subprocess
import sys
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import atvoss_mlir
from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.target import DEFAULT_TARGET, parse_target
from atvoss_mlir.tuning.database import TuningDatabase
from atvoss_mlir.tuning.executors import InlineExecutor
from atvoss_mlir.tuning.op_program import measure, op_program, pre_tile_module
from atvoss_mlir.tuning.space import REFUSED_BUDGET, build_space
from atvoss_mlir.tuning.strategies import run_strategy
from atvoss_mlir.tuning.tuner import cost_model_error, spearman, tileable_ops, tune_model

SMALL_TARGET = "npu -tile-min=32"


def atvoss(*args, env=None, **kwargs) -> subprocess.CompletedProcess:
    script = os.path.join(os.path.dirname(sys.executable), "atvoss")
    environment = {key: value for key, value in os.environ.items() if key != "ATVOSS_DEBUG"}
    environment.update(env or {})
    return subprocess.run([script] + list(args), capture_output=True, text=True,
                          env=environment, timeout=600, **kwargs)


def matmul_model(path, m, k, n, relu=False) -> str:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [m, n])
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((k, n))
                                .astype(np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h" if relu else "z"], name="mm")]
    if relu:
        nodes.append(helper.make_node("Relu", ["h"], ["z"], name="relu"))
    graph = helper.make_graph(nodes, "g", [x], [z], [w])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def op_space(path, target=DEFAULT_TARGET):
    module, _ = pre_tile_module(path, target)
    with module.context:
        (op, problem, budget), = [entry for entry in tileable_ops(module, target)
                                  if entry[0].name == "linalg.matmul"]
        return build_space(op, problem, budget, "mm"), op_program(op, problem), module


def tune(path, db, *extra):
    result = atvoss("tune", path, "--db", str(db), "--executor", "inline", "-q", *extra)
    assert result.returncode == 0, result.stderr
    return result


def rows(db) -> list:
    with sqlite3.connect(db) as connection:
        return sorted(connection.execute(
            "SELECT op_key, target_hash, candidate, measured_cycles FROM trials").fetchall())


# ---------------------------------------------------------------------------
# The space, the op's own program, the strategies
# ---------------------------------------------------------------------------

def test_space_counts_what_it_refuses(tmp_path):
    path = matmul_model(tmp_path / "mm.onnx", 256, 256, 256)
    space, _, _ = op_space(path, parse_target("npu -max-sram-bytes=131072"))
    assert space.refused[REFUSED_BUDGET] > 0
    assert space.size == len(space.valid) + sum(space.refused.values())
    assert space.heuristic in space.valid
    assert {c.dataflow for c in space.valid} == {"ws", "os"}
    assert {c.stages for c in space.valid} == {1, 2, 3}


def test_the_heuristic_schedule_measures_as_the_whole_model(tmp_path):
    """A one-op model: its op program with npu-tile's own choice runs as the model does."""
    path = matmul_model(tmp_path / "mm.onnx", 256, 256, 256)
    space, program, _ = op_space(path)
    c = space.heuristic
    measured = measure(program, DEFAULT_TARGET, c.tiles, c.order, c.stages, c.dataflow)
    compiled = atvoss_mlir.compile(path)
    compiled.run(None, timing_only=True)
    assert measured.cycles == compiled.report["total_cycles"]
    assert measured.estimated_cycles == space.valid[c]


@pytest.mark.parametrize("strategy", ["coordinate", "tpe"])
def test_strategies_near_the_exhaustive_optimum(tmp_path, strategy):
    path = matmul_model(tmp_path / "mm.onnx", 64, 64, 64)
    target = parse_target(SMALL_TARGET)
    space, program, _ = op_space(path, target)
    measured = {c: measure(program, target, c.tiles, c.order, c.stages, c.dataflow).cycles
                for c in space.valid}
    optimum = min(measured.values())
    tried = []

    def evaluate(candidates):
        tried.extend(candidates)
        return {c: measured[c] for c in candidates}
    budget = len(space.valid) // 10
    run_strategy(strategy, space, evaluate, budget - 1)  # the heuristic's trial is the 10th
    assert len(set(tried)) <= budget
    assert min(measured[c] for c in tried) <= 1.03 * optimum


def test_grid_visits_every_valid_point(tmp_path):
    path = matmul_model(tmp_path / "mm.onnx", 64, 64, 64)
    space, _, _ = op_space(path, parse_target(SMALL_TARGET))
    tried = set()

    def evaluate(candidates):
        tried.update(candidates)
        return {c: space.valid[c] for c in candidates}
    run_strategy("grid", space, evaluate, len(space.valid) + 10)
    assert tried == set(space.valid)


def test_spearman_and_error():
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)
    assert spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert cost_model_error([(100, 110), (200, 180), (50, 50)]) == (pytest.approx(0.1),
                                                                    pytest.approx(0.1))


# ---------------------------------------------------------------------------
# Compile with the database
# ---------------------------------------------------------------------------

def test_tuned_compile_is_correct_reproducible_and_searches_nothing(tmp_path, monkeypatch):
    path = matmul_model(tmp_path / "mm.onnx", 128, 256, 128, relu=True)
    db = tmp_path / "tune.db"
    first = tune(path, db, "--trials", "12")
    assert "simulated" in first.stdout
    second = tune(path, db, "--trials", "12")  # everything is recorded: nothing simulated
    line = next(line for line in second.stdout.splitlines() if line.startswith("matmul"))
    assert line.split()[4] == "0", second.stdout

    from atvoss_mlir.passes import tile_search

    def no_search(*args, **kwargs):
        raise AssertionError("a tuned op was searched")
    monkeypatch.setattr(tile_search, "_search", no_search)
    tile_search._MEMO.clear()
    compiled = atvoss_mlir.compile(path, tuning_db=str(db))
    tiled = [r for r in compiled.remarks if "schedule" in r.facts]
    assert tiled and all(r.facts["schedule"] == "tuned" for r in tiled)
    again = atvoss_mlir.compile(path, tuning_db=str(db))
    assert compiled.program == again.program

    x = np.random.default_rng(1).standard_normal((128, 256)).astype(np.float32)
    w = numpy_helper.to_array(onnx.load(path).graph.initializer[0])
    out = compiled.run({"x": x})["z"]
    np.testing.assert_allclose(out, np.maximum(x @ w, 0), rtol=1e-4, atol=1e-4)


def test_explain_says_where_each_schedule_came_from(tmp_path):
    path = matmul_model(tmp_path / "mm.onnx", 128, 128, 128)
    db = tmp_path / "tune.db"
    tune(path, db, "--trials", "4")
    tuned = atvoss("compile", path, "--db", str(db), "--explain", "-q", "-o", os.devnull)
    assert "tuned: measured" in tuned.stderr, tuned.stderr
    other = atvoss("compile", path, "--db", str(db), "--explain", "-q", "-o", os.devnull,
                   "--target", "npu -pipeline-stages=1")
    assert "schedule from the heuristic" in other.stderr  # records of another target
    assert "tuned: measured" not in other.stderr


def test_compile_reads_the_default_database(tmp_path):
    path = matmul_model(tmp_path / "mm.onnx", 128, 128, 128)
    db = tmp_path / "default.db"
    tune(path, db, "--trials", "4")
    result = atvoss("compile", path, "--explain", "-q", "-o", os.devnull,
                    env={"ATVOSS_TUNING_DB": str(db)})
    assert "tuned: measured" in result.stderr
    missing = atvoss("compile", path, "-q", "-o", os.devnull, "--db", str(tmp_path / "no.db"))
    assert missing.returncode == 1 and "does not exist" in missing.stderr


# ---------------------------------------------------------------------------
# The database
# ---------------------------------------------------------------------------

def test_a_killed_run_loses_no_trial_and_resumes(tmp_path):
    path = matmul_model(tmp_path / "mm.onnx", 512, 512, 512)
    db = tmp_path / "tune.db"
    script = os.path.join(os.path.dirname(sys.executable), "atvoss")
    process = subprocess.Popen([script, "tune", path, "--db", str(db), "--executor", "inline",
                                "--trials", "40", "-q"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.time() + 240
    while time.time() < deadline:
        time.sleep(0.5)
        if db.exists():
            try:
                if len(rows(db)) >= 4:
                    break
            except sqlite3.OperationalError:
                pass
    process.send_signal(signal.SIGKILL)
    process.wait()
    before = rows(db)
    assert 4 <= len(before) < 40
    result = tune(path, db, "--trials", "40")
    after = rows(db)
    assert set(before) <= set(after)  # every finished trial kept, unchanged
    line = next(line for line in result.stdout.splitlines() if line.startswith("matmul"))
    assert int(line.split()[4]) == len(after) - len(before)  # nothing measured twice


def test_two_runs_writing_one_database_lose_nothing(tmp_path):
    db = tmp_path / "tune.db"
    paths = [matmul_model(tmp_path / "a.onnx", 128, 256, 128),
             matmul_model(tmp_path / "b.onnx", 256, 128, 64)]
    script = os.path.join(os.path.dirname(sys.executable), "atvoss")
    runs = [subprocess.Popen([script, "tune", p, "--db", str(db), "--executor", "inline",
                              "--trials", "10", "-q"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for p in paths]
    outputs = [run.communicate(timeout=600) for run in runs]
    assert all(run.returncode == 0 for run in runs), outputs
    simulated = sum(int(next(line for line in out.splitlines() if line.startswith("matmul"))
                        .split()[4]) for out, _ in outputs)
    assert len(rows(db)) == simulated
    assert len({row[0] for row in rows(db)}) == 2


def test_a_corrupt_or_foreign_database_is_refused_and_kept(tmp_path):
    path = matmul_model(tmp_path / "mm.onnx", 64, 64, 64)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    result = atvoss("tune", path, "--db", str(garbage), "-q", "--executor", "inline")
    assert result.returncode == 1 and "not a tuning database" in result.stderr
    assert "Traceback" not in result.stderr
    assert garbage.read_bytes() == b"this is not a database" * 100

    future = tmp_path / "future.db"
    with sqlite3.connect(future) as connection:
        connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        connection.execute("INSERT INTO meta VALUES ('schema_version', '99')")
    content = future.read_bytes()
    result = atvoss("tune", path, "--db", str(future), "-q", "--executor", "inline")
    assert result.returncode == 1 and "schema version 99" in result.stderr
    assert future.read_bytes() == content
    compiled = atvoss("compile", path, "--db", str(future), "-q", "-o", os.devnull)
    assert compiled.returncode == 1 and "schema version 99" in compiled.stderr


def test_export_and_import_json_lines(tmp_path):
    path = matmul_model(tmp_path / "mm.onnx", 128, 128, 128)
    db, copy, lines = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "records.jsonl"
    tune(path, db, "--trials", "5")
    assert atvoss("tune", "--db", str(db), "--export", str(lines)).returncode == 0
    records = [json.loads(line) for line in lines.read_text().splitlines()]
    assert len(records) == len(rows(db)) and {"op_key", "target_hash", "candidate",
                                              "measured_cycles"} <= set(records[0])
    assert atvoss("tune", "--db", str(copy), "--import", str(lines)).returncode == 0
    assert rows(copy) == rows(db)
    a = TuningDatabase(str(db))
    b = TuningDatabase(str(copy))
    key, thash = rows(db)[0][:2]
    assert a.best(key, thash) == b.best(key, thash)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(lines.read_text().splitlines()[0] + "\n{\"op_key\": 1}\n")
    result = atvoss("tune", "--db", str(copy), "--import", str(bad))
    assert result.returncode == 1 and "bad.jsonl:2" in result.stderr


# ---------------------------------------------------------------------------
# Executors
# ---------------------------------------------------------------------------

def test_ray_executor_on_a_local_instance(tmp_path):
    pytest.importorskip("ray")
    path = matmul_model(tmp_path / "mm.onnx", 128, 128, 128)
    db = tmp_path / "tune.db"
    result = atvoss("tune", path, "--db", str(db), "--executor", "ray", "--workers", "2",
                    "--trials", "6", "-q")
    assert result.returncode == 0, result.stderr
    assert len(rows(db)) >= 6


def test_ray_missing_says_what_to_install(tmp_path):
    fake = tmp_path / "fake"
    (fake / "ray").mkdir(parents=True)
    (fake / "ray" / "__init__.py").write_text("raise ImportError('no ray here')\n")
    path = matmul_model(tmp_path / "mm.onnx", 64, 64, 64)
    result = atvoss("tune", path, "--db", str(tmp_path / "t.db"), "--executor", "ray", "-q",
                    env={"PYTHONPATH": str(fake)})
    assert result.returncode == 1
    assert "pip install 'atvoss-mlir[distributed]'" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_tune_arguments(tmp_path):
    path = matmul_model(tmp_path / "mm.onnx", 64, 64, 64)
    for args, fragment in ((["--executor", "spark"], "unknown executor"),
                           (["--trials", "0"], "--trials"),
                           (["--target", "npu -tile-min=0"], "tile-min"),
                           (["--db", str(tmp_path)], "is a directory")):
        result = atvoss("tune", path, "--db", str(tmp_path / "t.db"), "-q", *args)
        assert result.returncode == 1 and fragment in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
