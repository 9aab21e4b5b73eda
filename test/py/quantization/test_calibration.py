"""`atvoss quantize` and quantization.calibration: QDQ models from small conv
and MLP models with each calibration method, checked by onnx.checker and run
by onnxruntime against the fp32 model; per-channel weight scales; minmax
ranges against numpy; entropy clipping an outlier; every bad calibration file
an `error:` line with exit status 1 and no output; --calibration reaching
compile()."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import atvoss_mlir.compiler
from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.quantization.calibration import load_calibration, quantize_model
from atvoss_mlir.tools.atvoss import main as atvoss_main
from atvoss_mlir.reference import reference_session

CONV_INPUT = (1, 3, 16, 16)
MLP_INPUT = (4, 32)     # a batch of 4 rows: samples are 4 stacked rows
SAMPLES = 32


def atvoss(*args, cwd=None) -> subprocess.CompletedProcess:
    script = os.path.join(os.path.dirname(sys.executable), "atvoss")
    environment = {key: value for key, value in os.environ.items() if key != "ATVOSS_DEBUG"}
    return subprocess.run([script] + [str(arg) for arg in args], capture_output=True, text=True,
                          cwd=cwd, env=environment, timeout=300)


def _weight(rng, name, shape, scale):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def conv_model() -> onnx.ModelProto:
    """Conv -> BatchNormalization -> Relu -> Conv (stride 2)."""
    rng = np.random.default_rng(1)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, CONV_INPUT)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])
    initializers = [
        _weight(rng, "w1", (8, 3, 3, 3), 0.3), _weight(rng, "b1", (8,), 0.1),
        numpy_helper.from_array(rng.uniform(0.5, 1.5, 8).astype(np.float32), "gamma"),
        _weight(rng, "beta", (8,), 0.1), _weight(rng, "mean", (8,), 0.1),
        numpy_helper.from_array(rng.uniform(0.5, 2.0, 8).astype(np.float32), "var"),
        _weight(rng, "w2", (8, 8, 3, 3), 0.2), _weight(rng, "b2", (8,), 0.1)]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("BatchNormalization", ["c1", "gamma", "beta", "mean", "var"],
                              ["n1"], name="bn1"),
             helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["y"], pads=[1, 1, 1, 1],
                              strides=[2, 2], name="conv2")]
    graph = helper.make_graph(nodes, "conv", [x], [y], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def mlp_model(batch=MLP_INPUT[0]) -> onnx.ModelProto:
    """MatMul + Add -> Relu -> MatMul."""
    rng = np.random.default_rng(2)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 32])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 10])
    initializers = [_weight(rng, "w1", (32, 64), 32 ** -0.5), _weight(rng, "b1", (64,), 0.1),
                    _weight(rng, "w2", (64, 10), 64 ** -0.5)]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
             helper.make_node("Add", ["h", "b1"], ["hb"], name="bias1"),
             helper.make_node("Relu", ["hb"], ["r"], name="relu"),
             helper.make_node("MatMul", ["r", "w2"], ["y"], name="fc2")]
    graph = helper.make_graph(nodes, "mlp", [x], [y], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


MODELS = {"conv": (conv_model, CONV_INPUT), "mlp": (mlp_model, MLP_INPUT)}


def stacked(shape, count, seed):
    """`count` samples of an input of `shape`, stacked on its batch axis."""
    rows = (shape[0] * count,) + tuple(shape[1:])
    return np.random.default_rng(seed).standard_normal(rows).astype(np.float32)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Each model and its calibration .npz, by model name."""
    directory = tmp_path_factory.mktemp("models")
    paths = {}
    for name, (build, shape) in MODELS.items():
        model_path, data_path = directory / f"{name}.onnx", directory / f"{name}.npz"
        onnx.save(build(), model_path)
        np.savez(data_path, x=stacked(shape, SAMPLES, seed=10))
        paths[name] = (model_path, data_path)
    return paths


def session(model) -> onnxruntime.InferenceSession:
    return reference_session(model if isinstance(model, onnx.ModelProto) else str(model))


def initializers(model) -> dict[str, np.ndarray]:
    return {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}


def weight_dequantizers(model):
    """(consumer node, DequantizeLinear node) of each quantised weight: a DQ of
    an initializer feeding input 1 of a Conv, MatMul or Gemm."""
    values = initializers(model)
    producers = {out: node for node in model.graph.node for out in node.output}
    found = []
    for node in model.graph.node:
        if node.op_type in ("Conv", "MatMul", "Gemm"):
            producer = producers.get(node.input[1])
            if producer is not None and producer.op_type == "DequantizeLinear" \
                    and producer.input[0] in values:
                found.append((node, producer))
    return found


def out_channels(node, weight: np.ndarray) -> int:
    if node.op_type == "Conv":
        return weight.shape[0]
    trans_b = any(a.name == "transB" and a.i for a in node.attribute)
    return weight.shape[0] if trans_b else weight.shape[1]


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


@pytest.mark.parametrize("per_channel", [False, True], ids=["per-tensor", "per-channel"])
@pytest.mark.parametrize("method", ["minmax", "entropy", "percentile"])
@pytest.mark.parametrize("name", ["conv", "mlp"])
def test_quantize_gives_a_valid_qdq_model_close_to_fp32(files, tmp_path, name, method,
                                                        per_channel):
    model_path, data_path = files[name]
    output = tmp_path / "model.qdq.onnx"
    result = atvoss("quantize", model_path, "--calibration", data_path, "-o", output,
                    "--method", method, *(["--per-channel"] if per_channel else []))
    assert result.returncode == 0, result.stderr
    # One summary line; nothing of onnxruntime's own output.
    (line,) = result.stderr.splitlines()
    weights = "per-channel" if per_channel else "per-tensor"
    assert re.fullmatch(rf"quantised 2 of 2 nodes to int8 \({method}, {weights} weights\) "
                        rf"into {re.escape(str(output))}", line), line
    assert result.stdout == ""

    quantized = onnx.load(output)
    onnx.checker.check_model(quantized, full_check=True)
    ops = [node.op_type for node in quantized.graph.node]
    assert "QuantizeLinear" in ops and "DequantizeLinear" in ops
    # The BatchNormalization is folded into the first Conv before quantisation.
    assert "BatchNormalization" not in ops
    assert {opset.domain for opset in quantized.opset_import} <= {"", "ai.onnx"}

    values = initializers(quantized)
    dequantizers = weight_dequantizers(quantized)
    assert len(dequantizers) == 2
    for node, dequantize in dequantizers:
        weight = values[dequantize.input[0]]
        scale = values[dequantize.input[1]]
        assert weight.dtype == np.int8
        assert not values[dequantize.input[2]].any()   # symmetric: zero points are 0
        if per_channel:
            assert scale.shape == (out_channels(node, weight),)
        else:
            assert scale.size == 1
    for node in quantized.graph.node:   # activations: uint8, asymmetric
        if node.op_type == "QuantizeLinear":
            assert values[node.input[2]].dtype == np.uint8

    fp32, int8 = session(model_path), session(output)
    shape = MODELS[name][1]
    held_out = stacked(shape, 8, seed=99)
    for start in range(0, len(held_out), shape[0]):
        sample = {"x": held_out[start:start + shape[0]]}
        (expected,), (actual,) = fp32.run(None, sample), int8.run(None, sample)
        assert actual.shape == expected.shape
        assert cosine(actual, expected) > 0.99


def _input_quantizer(model):
    values = initializers(model)
    (node,) = [n for n in model.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "x"]
    return float(values[node.input[1]]), int(values[node.input[2]])


def test_minmax_takes_the_observed_range_and_entropy_clips_an_outlier():
    data = stacked(CONV_INPUT, 16, seed=3)
    data[5, 1, 2, 3] = 40.0   # one outlier among ~12k values near N(0, 1)
    low, high = min(float(data.min()), 0.0), max(float(data.max()), 0.0)
    ranges = {}
    for method in ("minmax", "entropy", "percentile"):
        scale, zero_point = _input_quantizer(quantize_model(conv_model(), {"x": data},
                                                            method=method))
        ranges[method] = scale * 255
        if method == "minmax":   # uint8 asymmetric over [min, max] (numpy's)
            assert scale == pytest.approx((high - low) / 255, rel=1e-6)
            assert zero_point == round(-low / scale)
    assert ranges["entropy"] < 0.5 * ranges["minmax"]
    assert ranges["percentile"] <= ranges["minmax"] * (1 + 1e-6)


def test_samples_are_stacked_on_the_batch_axis():
    model = mlp_model(batch=4)
    data = np.arange(12 * 32, dtype=np.float32).reshape(12, 32)
    samples = load_calibration({"x": data}, model)
    assert len(samples) == 3
    np.testing.assert_array_equal(samples[1]["x"], data[4:8])
    # A symbolic batch: each row is one sample.
    symbolic = mlp_model(batch="batch")
    samples = load_calibration({"x": data}, symbolic)
    assert len(samples) == 12 and samples[0]["x"].shape == (1, 32)
    # A rank-0 input: one value per sample.
    scalar = helper.make_model(helper.make_graph(
        [helper.make_node("Neg", ["s"], ["t"])], "neg",
        [helper.make_tensor_value_info("s", TensorProto.FLOAT, [])],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, [])]))
    samples = load_calibration({"s": np.array([1.5, 2.5], np.float32)}, scalar)
    assert [float(sample["s"]) for sample in samples] == [1.5, 2.5]
    assert samples[0]["s"].shape == ()
    with pytest.raises(DiagnosticError, match=r"^<calibration>:1:1: error: calibration array "
                       r"'x' has shape \[10, 32\]; .* 10 rows are not a whole number of "
                       r"samples of batch 4"):
        load_calibration({"x": data[:10]}, model)


def _two_input_model() -> onnx.ModelProto:
    a = helper.make_tensor_value_info("a", TensorProto.FLOAT, [1, 8])
    b = helper.make_tensor_value_info("b", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    graph = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"])], "add", [a, b], [y])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _write_bad(directory, case):
    """A bad calibration file for the conv model (the MLP's or a two-input
    model's where named); returns (model, data path)."""
    path = directory / f"{case}.npz"
    good = stacked(CONV_INPUT, 2, seed=4)
    model = "conv"
    if case == "missing-file":
        pass
    elif case == "not-npz":
        path.write_text("x = 1, 2, 3\n")
    elif case == "single-array":
        path = directory / "single.npy"
        np.save(path, good)
    elif case == "damaged":
        np.savez(path, x=good)
        path.write_bytes(path.read_bytes()[:300])
    elif case == "object-array":
        objects = np.empty(2, dtype=object)
        objects[:] = ["text", 1]
        np.savez(path, x=objects)
    elif case == "no-arrays":
        np.savez(path)
    elif case == "missing-input":
        np.savez(path, image=good)
    elif case == "extra-array":
        np.savez(path, x=good, labels=np.zeros(2, np.int64))
    elif case == "rank":
        np.savez(path, x=good[0])
    elif case == "shape":
        np.savez(path, x=good[..., :15])
    elif case == "dtype":
        np.savez(path, x=good.astype(np.float64))
    elif case == "zero-samples":
        np.savez(path, x=good[:0])
    elif case == "nan":
        good[1, 2, 3, 4] = np.nan
        np.savez(path, x=good)
    elif case == "infinity":
        good[0, 0, 0, 0] = -np.inf
        np.savez(path, x=good)
    elif case == "partial-batch":
        model = "mlp"
        np.savez(path, x=stacked(MLP_INPUT, 2, seed=4)[:6])
    elif case == "sample-counts":
        model = "two-inputs"
        np.savez(path, a=np.zeros((3, 8), np.float32), b=np.zeros((2, 8), np.float32))
    return model, path


BAD_FILES = {
    "missing-file": "cannot read calibration data: no such file",
    "not-npz": "cannot read calibration data: not an .npz archive",
    "single-array": "calibration data is a single array, not an .npz of arrays named after "
                    "the model's inputs",
    "damaged": "cannot read calibration data: a damaged .npz archive",
    "object-array": "calibration array 'x' cannot be read: ",
    "no-arrays": "calibration data holds no arrays; the model takes 'x' (float32 "
                 "[N, 3, 16, 16])",
    "missing-input": "calibration data has no array for input 'x' (it holds 'image'); the "
                     "model takes 'x' (float32 [N, 3, 16, 16])",
    "extra-array": "calibration array 'labels' names no input of the model; the model takes "
                   "'x' (float32 [N, 3, 16, 16])",
    "rank": "calibration array 'x' has shape [3, 16, 16] (rank 3); input 'x' (float32 "
            "[1, 3, 16, 16]) takes [N, 3, 16, 16] (rank 4)",
    "shape": "calibration array 'x' has shape [2, 3, 16, 15]; input 'x' (float32 "
             "[1, 3, 16, 16]) takes [N, 3, 16, 16]: dimension 3 is 15, expected 16",
    "dtype": "calibration array 'x' is float64; input 'x' is float32",
    "zero-samples": "calibration array 'x' has shape [0, 3, 16, 16]: it holds no samples",
    "nan": "calibration array 'x' holds 1 non-finite value(s) (NaN or infinity), the first "
           "at index [1, 2, 3, 4]",
    "infinity": "calibration array 'x' holds 1 non-finite value(s) (NaN or infinity), the "
                "first at index [0, 0, 0, 0]",
    "partial-batch": "calibration array 'x' has shape [6, 32]; input 'x' (float32 [4, 32]) "
                     "takes [N*4, 32]: 6 rows are not a whole number of samples of batch 4",
    "sample-counts": "calibration arrays hold different numbers of samples: 'a' 3, 'b' 2",
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_calibration_file_is_one_error_and_no_output(files, tmp_path, case):
    model, data_path = _write_bad(tmp_path, case)
    if model == "two-inputs":
        model_path = tmp_path / "add.onnx"
        onnx.save(_two_input_model(), model_path)
    else:
        model_path = files[model][0]
    output = tmp_path / "out.onnx"
    result = atvoss("quantize", model_path, "--calibration", data_path, "-o", output)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"{data_path}:1:1: error: {BAD_FILES[case]}"), line
    assert not output.exists()


def test_model_errors(files, tmp_path):
    model_path, data_path = files["conv"]
    quantized = tmp_path / "q.onnx"
    assert atvoss("quantize", model_path, "--calibration", data_path, "-o",
                  quantized).returncode == 0
    for args, message in (
            ([quantized, "--calibration", data_path],
             f"{quantized}:1:1: error: the model is already quantised"),
            ([tmp_path / "none.onnx", "--calibration", data_path],
             f"{tmp_path / 'none.onnx'}:1:1: error: cannot read ONNX model: no such file"),
            ([model_path, "--calibration", data_path, "--method", "kl"],
             "error: argument --method: invalid choice: 'kl'"),
            ([model_path], "error: the following arguments are required: --calibration")):
        output = tmp_path / "out.onnx"
        result = atvoss("quantize", *args, "-o", output)
        assert result.returncode == 1 and "Traceback" not in result.stderr
        (line,) = result.stderr.splitlines()
        assert message in line, line
        assert not output.exists()


def test_compile_and_run_pass_calibration_to_compile(files, tmp_path, monkeypatch, capsys):
    model_path, data_path = files["conv"]
    # A bad file fails the int8 compile at the calibration file.
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros((2, 3, 16, 16)))
    for command in (["compile", "-o", str(tmp_path / "out.mlir")], ["run"]):
        result = atvoss(command[0], model_path, "--target", "npu -precision=int8",
                        "--calibration", bad, *command[1:])
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert f"{bad}:1:1: error: calibration array 'x' is float64; input 'x' is float32" \
            in result.stderr
    # The option reaches compile() as given.
    seen = []

    def compile_stub(model, target, tuning_db=None, calibration=None, input_shapes=None):
        assert input_shapes is None   # no --input-shape given
        seen.append(calibration)
        raise DiagnosticError([])

    monkeypatch.setattr(atvoss_mlir.compiler, "compile", compile_stub)
    assert atvoss_main(["compile", str(model_path), "-q", "--target", "npu -precision=int8",
                        "--calibration", str(data_path)]) == 1
    assert atvoss_main(["run", str(model_path), "-q", "--target", "npu -precision=mixed",
                        "--calibration", str(data_path)]) == 1
    assert atvoss_main(["run", str(model_path), "-q"]) == 1
    assert seen == [str(data_path), str(data_path), None]
    # At fp32 the data is unused, and the user is told.
    assert atvoss_main(["compile", str(model_path), "-q", "--calibration", str(data_path)]) == 1
    assert f"{data_path}: note: --calibration is unused at -precision=fp32" \
        in capsys.readouterr().err


def test_per_channel_quantisation_of_an_old_opset_model_is_valid_onnx():
    """Per-channel DequantizeLinear takes an axis from opset 13: an opset-9
    model is converted to 13 first, so onnx's checker and onnxruntime take it."""
    from onnx import helper, numpy_helper, TensorProto
    from atvoss_mlir.quantization.calibration import quantize_model
    rng = np.random.default_rng(0)
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        [numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w"),
         numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)], ir_version=4)
    quantized = quantize_model(model, {"x": rng.standard_normal((4, 3, 8, 8)).astype(np.float32)},
                               per_channel=True)
    onnx.checker.check_model(quantized)
    reference_session(quantized)


def masked_attention_scores(length=8):
    """Scores plus an attention mask's bias (0 where a key is kept, -inf where
    it is padding), softmaxed, times values: the transformers library's
    attention as exported."""
    rng = np.random.default_rng(0)
    node = helper.make_node
    nodes = [node("MatMul", ["q", "k"], ["scores"], name="scores"),
             node("Where", ["keep", "zero", "lowest"], ["bias"], name="bias"),
             node("Add", ["scores", "bias"], ["masked"], name="masked"),
             node("Softmax", ["masked"], ["probabilities"], name="softmax", axis=-1),
             node("MatMul", ["probabilities", "v"], ["y"], name="context")]
    graph = helper.make_graph(
        nodes, "attention",
        [helper.make_tensor_value_info("q", TensorProto.FLOAT, [1, length, 16]),
         helper.make_tensor_value_info("keep", TensorProto.BOOL, [1, 1, length])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, length, 16])],
        [numpy_helper.from_array(rng.standard_normal((16, length)).astype(np.float32), "k"),
         numpy_helper.from_array(rng.standard_normal((length, 16)).astype(np.float32), "v"),
         numpy_helper.from_array(np.asarray(0.0, np.float32), "zero"),
         numpy_helper.from_array(np.asarray(-np.inf, np.float32), "lowest")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def test_a_mask_bias_without_an_int8_step_stays_in_float():
    """onnxruntime's quantiser gives the mask's bias and the masked scores
    (ranges down to -inf) an infinite scale, which the compiler refuses; the
    quantiser is run again with the nodes reading and writing them excluded,
    and the compiled QDQ model equals onnxruntime's."""
    rng = np.random.default_rng(1)
    keep = np.ones((4, 1, 8), np.bool_)
    keep[1:, :, -3:] = False
    samples = {"q": rng.standard_normal((4, 8, 16)).astype(np.float32), "keep": keep}
    quantized = quantize_model(masked_attention_scores(), samples, per_channel=False)
    scales = [numpy_helper.to_array(t) for t in quantized.graph.initializer
              if t.name.endswith("_scale")]
    assert scales and all(np.isfinite(s).all() and (s > 0).all() for s in scales)
    assert any(n.op_type == "QuantizeLinear" for n in quantized.graph.node)
    feeds = {"q": samples["q"][1:2], "keep": keep[1:2]}
    got = atvoss_mlir.compiler.compile(quantized).run(feeds)["y"]
    want = reference_session(quantized).run(None, feeds)[0]
    np.testing.assert_allclose(got, want, rtol=0, atol=0.05)
