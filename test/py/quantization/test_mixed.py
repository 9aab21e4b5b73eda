"""-precision=mixed (quantization.mixed) on a small CNN of four convolutions
of different sizes, calibrated on samples with a saturated pixel (which
makes the early layers' int8 ranges coarse, so they are the sensitive
ones): the result's cosine vs fp32 against the budget; budgets 0 and 1
(every layer int8, none); the cycles/error frontier against -precision=fp32,
fp16 and int8 (cycles and outputs from the simulator, the reference from
onnxruntime); the compiled mixed model against onnxruntime running it;
--explain listing every layer; the missing --calibration error."""

from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import atvoss_mlir
from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.quantization.mixed import choose_precision
from atvoss_mlir.target import parse_target
from atvoss_mlir.tools.atvoss import main as atvoss_main
from atvoss_mlir.reference import reference_session

LAYERS = ["conv1", "conv2", "conv3", "conv4"]
SAMPLES = 8


def cnn() -> onnx.ModelProto:
    """Four Convs (3->16 at 32x32, 16->32 stride 2, 32->32 with a residual
    Add, 32->64 stride 2), Relus, global average pool: y [1, 64]."""
    rng = np.random.default_rng(0)

    def weight(name, shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32),
                                       name)
    initializers = [weight("w1", (16, 3, 3, 3), 0.4), weight("b1", (16,), 0.1),
                    weight("w2", (32, 16, 3, 3), 0.12), weight("b2", (32,), 0.1),
                    weight("w3", (32, 32, 3, 3), 0.08), weight("b3", (32,), 0.1),
                    weight("w4", (64, 32, 3, 3), 0.08), weight("b4", (64,), 0.1)]
    pads = [1, 1, 1, 1]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=pads, name="conv1"),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=pads, strides=[2, 2],
                              name="conv2"),
             helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], pads=pads, name="conv3"),
             helper.make_node("Add", ["c3", "r2"], ["a3"], name="add3"),
             helper.make_node("Relu", ["a3"], ["r3"], name="relu3"),
             helper.make_node("Conv", ["r3", "w4", "b4"], ["c4"], pads=pads, strides=[2, 2],
                              name="conv4"),
             helper.make_node("Relu", ["c4"], ["r4"], name="relu4"),
             helper.make_node("GlobalAveragePool", ["r4"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["y"], name="flatten")]
    graph = helper.make_graph(
        nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def calibration() -> dict[str, np.ndarray]:
    x = np.random.default_rng(1).standard_normal((SAMPLES, 3, 32, 32)).astype(np.float32)
    x[:, 0, 0, 0] = 1000.0   # a saturated pixel: the input's range is 300x its spread
    return {"x": x}


def target(budget: float | None = None) -> str:
    return "npu -precision=mixed" + (f" -accuracy-budget={budget}" if budget is not None else "")


def cosine(a, b) -> float:
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def onnxruntime_outputs(model: onnx.ModelProto) -> list[np.ndarray]:
    session = reference_session(model)
    return [session.run(None, {"x": x[None]})[0] for x in calibration()["x"]]


def worst_cosine(outputs) -> float:
    return min(cosine(a, b) for a, b in zip(onnxruntime_outputs(cnn()), outputs))


def int8_convs(model: onnx.ModelProto) -> dict[str, bool]:
    """Whether each Conv computes on dequantised operands, checked against
    the other form: fp16 weights."""
    producers = {out: node for node in model.graph.node for out in node.output}
    weights = {t.name: t for t in model.graph.initializer}
    found = {}
    for node in model.graph.node:
        if node.op_type != "Conv":
            continue
        w = producers.get(node.input[1])
        found[node.name] = w is not None and w.op_type == "DequantizeLinear"
        if not found[node.name]:
            assert weights[node.input[1]].data_type == TensorProto.FLOAT16
    return found


def reads_dequantized(model: onnx.ModelProto, name: str) -> list[bool]:
    producers = {out: node.op_type for node in model.graph.node for out in node.output}
    node = next(node for node in model.graph.node if node.name == name)
    return [producers.get(value) == "DequantizeLinear" for value in node.input]


@pytest.fixture(scope="module")
def choice():
    return choose_precision(cnn(), calibration(), parse_target(target()), "cnn.onnx")


def test_default_budget_mixes_and_keeps_the_cosine(choice):
    measured = worst_cosine(onnxruntime_outputs(choice.model))
    assert measured >= 0.999
    assert choice.cosine == pytest.approx(measured, abs=1e-9)
    # The saturated pixel makes conv1 and conv2 too sensitive; conv3 and
    # conv4 fit the budget.
    assert {layer.name: layer.int8 for layer in choice.layers} == \
        {"conv1": False, "conv2": False, "conv3": True, "conv4": True}
    assert int8_convs(choice.model) == {"conv1": False, "conv2": False, "conv3": True,
                                        "conv4": True}
    # The residual Add reads conv2's fp16 output: it stays fp16 (a Cast from
    # conv3's DequantizeLinear); the pool after conv4 is int8.
    assert reads_dequantized(choice.model, "add3") == [False, False]
    assert reads_dequantized(choice.model, "gap") == [True]
    errors = {layer.name: layer.error for layer in choice.layers}
    assert min(errors["conv1"], errors["conv2"]) > max(errors["conv3"], errors["conv4"])
    # conv1 and conv2 were tried and refused: each would break the budget.
    for layer in choice.layers[:2]:
        assert layer.tried_cosine < 0.999
    onnx.checker.check_model(choice.model)


@pytest.mark.parametrize("budget", [0.0, 1.0])
def test_budget_zero_takes_every_layer_one_takes_none(budget):
    result = choose_precision(cnn(), calibration(), parse_target(target(budget)))
    every = budget == 0.0
    assert [layer.int8 for layer in result.layers] == [every] * 4
    assert int8_convs(result.model) == {name: every for name in LAYERS}
    # int8 makes every layer's node faster here, so the greedy takes them
    # all at budget 0; the residual Add and the pool, all of whose inputs
    # are then int8, are quantised with them.
    assert all(layer.saved > 0 for layer in result.layers)
    assert all(layer.taken == every for layer in result.layers)
    if every:
        greedy = next(c for c in result.candidates if c.name == "per layer").model
        assert reads_dequantized(greedy, "add3") == [True, True]
        assert reads_dequantized(greedy, "gap") == [True]
    if not every:
        assert not any(node.op_type == "QuantizeLinear" for node in result.model.graph.node)


def test_mixed_is_on_the_cycles_error_frontier(choice):
    samples = calibration()["x"]
    reference = onnxruntime_outputs(cnn())
    figures = {}
    for precision in ("fp32", "fp16", "int8", "mixed"):
        compiled = atvoss_mlir.compile(cnn(), f"npu -precision={precision}",
                                       calibration=calibration())
        outputs = [compiled.run({"x": x[None]})["y"] for x in samples]
        compiled.run(None, timing_only=True)
        error = 1 - min(cosine(a, b) for a, b in zip(reference, outputs))
        figures[precision] = (compiled.report["total_cycles"], error)
    cycles, error = figures["mixed"]
    for precision in ("fp32", "fp16", "int8"):
        other_cycles, other_error = figures[precision]
        assert not (other_cycles < cycles and other_error < error), figures
    # Neither end is the answer here: faster than fp16, more accurate than int8.
    assert cycles < figures["fp16"][0] and error < figures["int8"][1], figures


def test_compiled_mixed_model_matches_onnxruntime(choice):
    compiled = atvoss_mlir.compile(choice.model)
    # The int8 layers reach the matrix unit as int8 ops, not in float.
    floats = [r.message for r in compiled.remarks if "computed in float" in r.message]
    assert not any(f"'{name}'" in message for message in floats for name in ("conv3", "conv4"))
    expected = onnxruntime_outputs(choice.model)
    for x, want in zip(calibration()["x"], expected):
        got = compiled.run({"x": x[None]})["y"]
        # fp16 rounding differs in the last bits, which may move an int8
        # value by one step; one step of conv4's output, averaged over the
        # pool's 64 pixels, is ~4e-3 of the output's largest value.
        assert np.abs(got - want).max() <= 1e-2 * np.abs(want).max()


def test_explain_lists_every_layer(tmp_path, capsys):
    path, data = tmp_path / "cnn.onnx", tmp_path / "calibration.npz"
    onnx.save(cnn(), path)
    np.savez(data, **calibration())
    assert atvoss_main(["compile", str(path), "-q", "--target", target(), "--calibration",
                        str(data), "--explain", "-o", str(tmp_path / "cnn.mlirbc")]) == 0
    lines = capsys.readouterr().err.splitlines()
    for index, name in enumerate(LAYERS):
        line = [1, 3, 5, 8][index]
        header = lines.index(f"'{name}' ({path}:{line}:1)")
        group = []
        for text in lines[header + 1:]:
            if not text.startswith("  "):
                break
            group.append(text)
        mixed = [text for text in group if "-precision=mixed" in text]
        assert len(mixed) == 1, group
        assert re.fullmatch(r"  -precision=mixed: (int8|fp16)( \(.*\))?; error \S+ with this "
                            r"layer alone in int8; \d+ cycles in int8, \d+ in fp16", mixed[0])
        assert mixed[0].startswith(f"  -precision=mixed: {'int8' if index >= 2 else 'fp16'}")
    summary = [text for text in lines if "layers in int8" in text]
    assert len(summary) == 1
    assert re.search(r"2 of 4 layers in int8 \(chosen per layer\); \d+ cycles; output cosine vs "
                     r"fp32 0\.999\d+ .*budget 0\.999", summary[0])


def test_layers_onnxruntime_fuses_keep_their_place():
    """onnxruntime's preparation fuses MatMul + Add into a Gemm named
    'fc1/MatMulAddFusion': that layer is quantised alone when measured, and
    its remark points at the MatMul's line."""
    rng = np.random.default_rng(2)
    weights = {"w1": rng.standard_normal((32, 64)) * 0.2, "b1": rng.standard_normal(64) * 0.1,
               "w2": rng.standard_normal((64, 10)) * 0.1, "b2": rng.standard_normal(10) * 0.1}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
             helper.make_node("Relu", ["hb"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "w2"], ["o"], name="fc2"),
             helper.make_node("Add", ["o", "b2"], ["y"], name="bias2")]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 10])],
        [numpy_helper.from_array(value.astype(np.float32), name)
         for name, value in weights.items()])
    mlp = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    samples = {"x": np.random.default_rng(3).standard_normal((16, 32)).astype(np.float32)}
    result = choose_precision(mlp, samples, parse_target(target(0.0)), "mlp.onnx")
    assert [(layer.name, layer.index) for layer in result.layers] == \
        [("fc1/MatMulAddFusion", 0), ("fc2/MatMulAddFusion", 3)]
    assert all(layer.quantizable and layer.error > 0 for layer in result.layers)
    # Each alone in int8 errs differently: each was quantised, not neither.
    assert result.layers[0].error != result.layers[1].error
    assert [r.position.line for r in result.remarks("mlp.onnx")[:2]] == [1, 4]


def test_mixed_without_calibration_is_an_error(tmp_path, capsys):
    path = tmp_path / "cnn.onnx"
    onnx.save(cnn(), path)
    for command in ("compile", "run"):
        assert atvoss_main([command, str(path), "-q", "--target", target()]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err
        assert "error: -precision=mixed needs calibration data: --calibration" in err
    with pytest.raises(DiagnosticError, match="needs calibration data"):
        atvoss_mlir.compile(cnn(), target())
