"""`atvoss profile`: per-node roll-up of the simulator's timelines, the bound
of each node checked against hand calculations, advice whose estimate the
simulator confirms once followed, --compare, the JSON contract and bad input."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from atvoss_mlir.analysis.advice import with_option
from atvoss_mlir.analysis.collect import profile_file
from atvoss_mlir.target import DEFAULT_TARGET, parse_target

REPOSITORY = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                                          os.pardir))
SMALL_CNN = os.path.join(REPOSITORY, "examples", "small_cnn.onnx")
REPORT_KEYS = {"version", "entry", "target", "timing_only", "total_cycles", "macs",
               "roofline_cycles", "roofline_ratio", "dram_read_bytes", "dram_write_bytes",
               "compulsory_dram_bytes", "sram_peak_bytes", "sram_capacity_bytes",
               "sram_occupancy", "dram_wait_cycles", "engines", "ops", "numerics"}
NODE_KEYS = {"node", "loc", "cycles", "share", "macs", "matrix_utilization", "dram_read_bytes",
             "dram_write_bytes", "bytes_per_mac", "sram_peak_bytes", "transform_bytes",
             "roofline_cycles", "lost_cycles", "time", "dma_setup_cycles",
             "dma_transfer_cycles", "bound", "advice", "remarks", "ops"}


def atvoss(*args) -> subprocess.CompletedProcess:
    script = os.path.join(os.path.dirname(sys.executable), "atvoss")
    command = [script] if os.path.exists(script) else [sys.executable, "-m",
                                                        "atvoss_mlir.tools.atvoss"]
    environment = {key: value for key, value in os.environ.items() if key != "ATVOSS_DEBUG"}
    return subprocess.run(command + list(args), capture_output=True, text=True, env=environment,
                          timeout=600)


def save(graph, path) -> str:
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return str(path)


def add_model(path, shape) -> str:
    x, y, z = (helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name in "xyz")
    return save(helper.make_graph([helper.make_node("Add", ["x", "y"], ["z"], name="add")], "g",
                                  [x, y], [z]), path)


def matmul_model(path, m, k, n) -> str:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [m, n])
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((k, n))
                                .astype(np.float32), "w")
    return save(helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["z"], name="mm")],
                                  "g", [x], [z], [w]), path)


# ---------------------------------------------------------------------------
# A ResNet-50-sized CNN: the roll-up and three layers by hand
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def resnet50(tmp_path_factory):
    sys.path.insert(0, os.path.join(REPOSITORY, "bench"))
    try:
        import zoo
    finally:
        sys.path.pop(0)
    path = str(tmp_path_factory.mktemp("zoo") / "resnet50.onnx")
    onnx.save(zoo.MODELS["resnet50"](), path)
    return profile_file(path, DEFAULT_TARGET, with_advice=False).profile


def test_resnet50_nodes_sum_to_the_total(resnet50):
    nodes = resnet50["nodes"]
    assert len(nodes) > 50
    assert sum(node["cycles"] for node in nodes) == resnet50["total_cycles"]
    for node in nodes:  # each node's states account for each of its cycles
        assert sum(node["time"].values()) == node["cycles"]
    assert sum(node["macs"] for node in nodes) == resnet50["macs"]
    assert sum(node["dram_read_bytes"] for node in nodes) == resnet50["dram_read_bytes"]
    assert math.isclose(sum(node["share"] for node in nodes), 1.0, abs_tol=1e-3)
    assert len(resnet50["top_nodes"]) == 5


def hand_bound(macs: int, dram_bytes: int, target=DEFAULT_TARGET) -> str:
    """The layer's limit from its shape alone: MACs at the array's peak
    against its bytes at the DRAM bandwidth."""
    compute = macs / (target.array_rows * target.array_cols)
    transfer = dram_bytes / target.dram_bytes_per_cycle
    return "compute" if compute > transfer else "dma-bandwidth"


@pytest.mark.parametrize("name, macs, dram_bytes", [
    # 3x3 conv, 64 -> 64 channels at 56x56: weights, input and output once.
    ("layer1.0.conv2", 56 * 56 * 64 * 64 * 9, 4 * (64 * 64 * 9 + 2 * 56 * 56 * 64)),
    # 1x1 conv, 64 -> 256 at 56x56, the residual add folded in: the skip is
    # read and the output written, both 56x56x256.
    ("layer1.0.conv3", 56 * 56 * 64 * 256, 4 * (64 * 256 + 56 * 56 * 64 + 2 * 56 * 56 * 256)),
    # The classifier: 2048 -> 1000, its 8 MB of weights read once.
    ("logits", 2048 * 1000, 4 * (2048 * 1000 + 1000 + 2048 + 1000)),
])
def test_resnet50_bounds_match_a_hand_calculation(resnet50, name, macs, dram_bytes):
    node = next(node for node in resnet50["nodes"] if node["node"] == name)
    assert node["macs"] == macs
    assert node["bound"] == hand_bound(macs, dram_bytes)
    # Tiles re-read some bytes (halos, weights per tile): the same limit with them.
    moved = node["dram_read_bytes"] + node["dram_write_bytes"]
    assert moved >= 0.95 * dram_bytes
    assert hand_bound(macs, moved) == node["bound"]


# ---------------------------------------------------------------------------
# Bound, advice, and the advice followed
# ---------------------------------------------------------------------------

def follow(path, target_text, bound, knob_prefix):
    """Profile, check the bound and the first advice, then compile with its
    knob: the measured saving is within 20% of the cost model's estimate."""
    target = parse_target(target_text)
    node = profile_file(path, target).profile["nodes"][0]
    assert node["bound"] == bound
    advice = node["advice"][0]
    assert advice["knob"].startswith(knob_prefix), advice
    assert advice["knob"] in advice["text"]
    predicted_saving = node["cycles"] - advice["estimated_cycles"]
    assert predicted_saving > 0
    after = profile_file(path, with_option(target, advice["knob"]), with_advice=False)
    measured_saving = node["cycles"] - after.profile["nodes"][0]["cycles"]
    assert measured_saving == pytest.approx(predicted_saving, rel=0.2)
    return node, after.profile["nodes"][0]


def test_tiny_tiles_are_dma_setup_bound(tmp_path):
    # 4 KB of SRAM: tiles of 5x32 floats, 100 setup cycles for 640 B each.
    node, after = follow(add_model(tmp_path / "add.onnx", [256, 256]),
                         "npu -max-sram-bytes=4096", "dma-setup", "-max-sram-bytes=8192")
    assert node["dma_setup_cycles"] > node["dma_transfer_cycles"]
    assert "DMAs of" in node["advice"][0]["text"]
    assert after["dma_setup_cycles"] < node["dma_setup_cycles"]


def test_a_streaming_add_is_bandwidth_bound(tmp_path):
    # 12 MB through DRAM for 1 M additions on a 64-lane vector unit.
    node, after = follow(add_model(tmp_path / "add.onnx", [1024, 1024]), "npu",
                         "dma-bandwidth", "-dram-bytes-per-cycle=128")
    assert node["dma_transfer_cycles"] > node["dma_setup_cycles"]
    assert after["cycles"] < node["cycles"]


def test_a_large_matmul_is_compute_bound(tmp_path):
    node, after = follow(matmul_model(tmp_path / "mm.onnx", 512, 512, 512), "npu",
                         "compute", "-array-rows=64 -array-cols=64")
    assert node["macs"] == 512 ** 3
    assert node["time"]["compute"] + node["time"]["overlap"] > 0.9 * node["cycles"]


def test_one_stage_is_pipeline_bound(tmp_path):
    node, after = follow(matmul_model(tmp_path / "mm.onnx", 256, 256, 256),
                         "npu -pipeline-stages=1", "pipeline", "-pipeline-stages=2")
    assert node["time"]["overlap"] < 0.05 * node["cycles"]
    assert after["time"]["overlap"] > node["time"]["overlap"]


def test_a_model_on_the_fallback_engine_says_so(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [64, 64])
    path = save(helper.make_graph([helper.make_node("Sin", ["x"], ["z"], name="sine")], "g",
                                  [x], [z]), tmp_path / "sin.onnx")
    profile = profile_file(path, DEFAULT_TARGET).profile
    node = profile["nodes"][0]
    assert node["bound"] == "fallback"
    assert profile["fallback_cycles"] == node["time"]["fallback"] > 0
    assert node["advice"][-1]["knob"] is None
    assert "fallback" in node["advice"][-1]["text"]


def test_a_program_profiles_without_estimates(tmp_path):
    program = str(tmp_path / "mm.mlirbc")
    assert atvoss("compile", matmul_model(tmp_path / "mm.onnx", 256, 256, 256), "-q",
                  "--target", "npu -pipeline-stages=1", "-o", program).returncode == 0
    node = profile_file(program, None).profile["nodes"][0]
    assert node["bound"] == "pipeline"  # the program's own target
    assert node["advice"][0]["knob"] == "-pipeline-stages=2"
    assert node["advice"][0]["estimated_cycles"] is None


# ---------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------

def test_json_is_the_report_with_nodes():
    result = atvoss("profile", SMALL_CNN, "--json", "-q")
    assert result.returncode == 0, result.stderr
    profile = json.loads(result.stdout)
    assert REPORT_KEYS <= set(profile)
    assert {"nodes", "top_nodes", "segments", "fallback_cycles"} <= set(profile)
    stem = next(node for node in profile["nodes"] if node["node"] == "stem")
    assert set(stem) == NODE_KEYS
    assert stem["loc"].endswith("small_cnn.onnx:1:1")
    assert any("conv strategy" in remark for remark in stem["remarks"])
    assert stem["transform_bytes"] == 3 * 32 * 32 * 4  # the input, transposed to NHWC
    assert {op["op"] for op in stem["ops"]} >= {"npu.conv2d", "npu.dma_load"}
    assert sum(node["cycles"] for node in profile["nodes"]) == profile["total_cycles"]


def test_table_html_and_trace(tmp_path):
    html, trace = tmp_path / "report.html", tmp_path / "trace.json"
    result = atvoss("profile", SMALL_CNN, "--html", str(html), "--trace", str(trace), "-q",
                    "--expand")
    assert result.returncode == 0, result.stderr
    assert "top nodes by cycles lost" in result.stdout
    assert "block1.conv1" in result.stdout and "remark:" in result.stdout
    assert "<svg" in html.read_text()
    assert json.loads(trace.read_text())["traceEvents"]


def test_compare_pipeline_stages_shows_the_overlap_gain(tmp_path):
    path = matmul_model(tmp_path / "mm.onnx", 256, 256, 256)
    result = atvoss("profile", "--compare", "npu -pipeline-stages=1", "npu -pipeline-stages=2",
                    path, "--json", "-q")
    assert result.returncode == 0, result.stderr
    comparison = json.loads(result.stdout)
    row = comparison["nodes"][0]
    assert row["node"] == "mm"
    assert row["delta"]["cycles"] < 0 and row["delta"]["overlap"] > 0
    assert comparison["total"]["cycles"]["delta"] == row["delta"]["cycles"]
    text = atvoss("profile", "--compare", "npu -pipeline-stages=1", "npu -pipeline-stages=2",
                  path, "-q").stdout
    assert "overlap A" in text and "mm" in text


def test_compare_sorts_nodes_by_impact(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [256, 256])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [256, 64])
    rng = np.random.default_rng(0)
    weights = [numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
               for name, shape in (("w1", (256, 64)), ("w2", (64, 64)), ("w3", (64, 64)))]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h1"], name="small1"),
             helper.make_node("MatMul", ["h1", "w2"], ["h2"], name="small2"),
             helper.make_node("MatMul", ["h2", "w3"], ["z"], name="small3")]
    path = save(helper.make_graph(nodes, "g", [x], [z], weights), tmp_path / "chain.onnx")
    result = atvoss("profile", "--compare", "npu -pipeline-stages=1 -max-sram-bytes=65536",
                    "npu -pipeline-stages=2 -max-sram-bytes=65536", path, "--json", "-q")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["nodes"]
    assert {row["node"] for row in rows} == {"small1", "small2", "small3"}
    deltas = [abs(row["delta"]["cycles"]) for row in rows]
    assert deltas == sorted(deltas, reverse=True) and deltas[0] > deltas[-1] > 0


def expect_error(result, *fragments):
    assert result.returncode == 1, result.stdout
    assert "Traceback" not in result.stderr
    assert "error:" in result.stderr
    for fragment in fragments:
        assert fragment in result.stderr


def test_compare_of_different_graphs_is_an_error(tmp_path):
    a = str(tmp_path / "a.mlirbc")
    b = str(tmp_path / "b.mlirbc")
    assert atvoss("compile", matmul_model(tmp_path / "a.onnx", 64, 64, 64), "-q",
                  "-o", a).returncode == 0
    assert atvoss("compile", add_model(tmp_path / "b.onnx", [64, 64]), "-q",
                  "-o", b).returncode == 0
    expect_error(atvoss("profile", "--compare", a, b, "-q"), "different graphs")


def test_a_program_without_entry_function_is_an_error(tmp_path):
    path = tmp_path / "empty.mlir"
    path.write_text('module attributes {npu.target = "npu"} {\n}\n')
    expect_error(atvoss("profile", str(path), "-q"), "entry function")


def test_a_model_that_fails_to_compile_is_an_error(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, [4, 4])
    path = save(helper.make_graph([helper.make_node("NoSuchOp", ["x"], ["z"], name="bad")],
                                  "g", [x], [z]), tmp_path / "bad.onnx")
    expect_error(atvoss("profile", path, "-q"), "NoSuchOp")


def test_bad_target_and_missing_model_are_errors(tmp_path):
    expect_error(atvoss("profile", SMALL_CNN, "--target", "npu -pipeline-stages=9", "-q"),
                 "pipeline-stages")
    expect_error(atvoss("profile", str(tmp_path / "none.onnx"), "-q"), "none.onnx")
    expect_error(atvoss("profile", "--compare", "npu", "npu -fusion=1", "-q"), "model")


# ---------------------------------------------------------------------------
# The attribution rule and the bounds on hand-made timelines
# ---------------------------------------------------------------------------

def event(engine, node, start, finish, setup_end=None):
    from atvoss_mlir.sim.machine import TraceEvent
    setup_end = start if setup_end is None else setup_end
    return TraceEvent(engine, "op", "-", start, finish, node, setup_end, setup_end)


def test_each_cycle_goes_to_the_earliest_node_running():
    from atvoss_mlir.analysis.timeline import attribute
    events = [event("matrix", "a", 0, 100),
              event("dma0", "b", 50, 150, setup_end=100),   # b's load hidden under a's compute
              event("vector", "c", 120, 130),                # c runs under b: hidden
              event("dma1", "d", 200, 260, setup_end=260)]  # after a gap the sequencer waited
    nodes = attribute(events, 300, [[0, 0], [10, 64], [140, 32], [210, 128]])
    assert {name: node.cycles for name, node in nodes.items()} == \
        {"a": 100, "b": 50, "c": 0, "d": 150}
    assert nodes["a"].states["compute"] == 100
    assert nodes["b"].states["dma_transfer"] == 50
    # d: the 50-cycle gap before it, its 60 setup cycles, then the 40-cycle tail.
    assert nodes["d"].states == {"compute": 0, "overlap": 0, "dma_transfer": 0,
                                 "dma_setup": 60, "fallback": 0, "idle": 90}
    assert (nodes["b"].dma_setup_cycles, nodes["b"].dma_transfer_cycles) == (50, 50)
    assert nodes["a"].sram_peak_bytes == 64 and nodes["b"].sram_peak_bytes == 64
    assert nodes["d"].sram_peak_bytes == 128


@pytest.mark.parametrize("time, setup, transfer, bound", [
    ({"compute": 90, "overlap": 0, "dma_transfer": 10, "dma_setup": 0}, 0, 10, "compute"),
    ({"compute": 10, "overlap": 30, "dma_transfer": 60, "dma_setup": 0}, 5, 95, "dma-bandwidth"),
    ({"compute": 10, "overlap": 30, "dma_transfer": 10, "dma_setup": 50}, 90, 40, "dma-setup"),
    ({"compute": 50, "overlap": 0, "dma_transfer": 50, "dma_setup": 0}, 10, 50, "pipeline"),
    ({"compute": 0, "overlap": 0, "dma_transfer": 0, "dma_setup": 0}, 0, 0, "hidden"),
])
def test_bound_of_engine_states(time, setup, transfer, bound):
    from atvoss_mlir.analysis.profile import bound_of
    time = dict(time, fallback=0, idle=0)
    assert bound_of(time, sum(time.values()), setup, transfer) == bound


def test_fallback_bound():
    from atvoss_mlir.analysis.profile import bound_of
    time = {"compute": 10, "overlap": 0, "dma_transfer": 30, "dma_setup": 0, "fallback": 60,
            "idle": 0}
    assert bound_of(time, 100, 0, 30) == "fallback"
