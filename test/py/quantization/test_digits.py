"""Real data: two classifiers of scikit-learn's digits (an MLP trained by
scikit-learn and exported by skl2onnx, a small CNN trained in numpy; see
atvoss_mlir.testing.digits_models), quantised with `atvoss quantize` on a
calibration part of the data, compiled at fp32, fp16, int8 and mixed and
run on the simulator over the 500 held-out images. The reference is
onnxruntime on the fp32 model: the NPU program at fp32 gives every image
onnxruntime's class, and the other precisions lose at most 1 point of top-1
accuracy."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("skl2onnx")

import atvoss_mlir  # noqa: E402
from atvoss_mlir.testing import digits_models  # noqa: E402
from atvoss_mlir.reference import reference_session  # noqa: E402

BATCH = 100          # the models' fixed batch: 5 runs over the held-out images
MODELS = ["mlp", "cnn"]
INPUT = {"mlp": "input", "cnn": "image"}


def atvoss(*args) -> subprocess.CompletedProcess:
    script = os.path.join(os.path.dirname(sys.executable), "atvoss")
    return subprocess.run([script] + [str(arg) for arg in args], capture_output=True, text=True,
                          timeout=300)


def inputs_of(kind: str, rows: np.ndarray) -> np.ndarray:
    return digits_models.as_images(rows) if kind == "cnn" else rows


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """Per model: the fp32 and `atvoss quantize`d ONNX paths, the calibration
    file, the held-out inputs, labels and onnxruntime's fp32 outputs."""
    directory = tmp_path_factory.mktemp("digits")
    split = digits_models.digits_split()
    built = {"mlp": digits_models.mlp_model, "cnn": digits_models.cnn_model}
    cases = {}
    for kind in MODELS:
        model = built[kind](split.train_x, split.train_y, BATCH)
        fp32_path = directory / f"{kind}.onnx"
        onnx.save(model, fp32_path)
        calibration = directory / f"{kind}.calibration.npz"
        # 200 rows: two samples of the model's batch of 100.
        np.savez(calibration, **{INPUT[kind]: inputs_of(kind, split.calibration_x)})
        int8_path = directory / f"{kind}.qdq.onnx"
        done = atvoss("quantize", fp32_path, "--calibration", calibration, "-o", int8_path)
        assert done.returncode == 0, done.stderr
        x = inputs_of(kind, split.held_out_x)
        cases[kind] = {"fp32": fp32_path, "int8": int8_path, "calibration": calibration,
                       "x": x, "y": split.held_out_y,
                       "reference": run_onnxruntime(fp32_path, INPUT[kind], x)}
    return cases


def batches(x: np.ndarray):
    for start in range(0, len(x), BATCH):
        yield x[start:start + BATCH]


def run_onnxruntime(path, name: str, x: np.ndarray) -> np.ndarray:
    session = reference_session(str(path))
    return np.concatenate([session.run(None, {name: chunk})[0] for chunk in batches(x)])


def run_npu(compiled, name: str, x: np.ndarray) -> np.ndarray:
    outputs = []
    for chunk in batches(x):
        (output,) = compiled.run({name: chunk}).values()
        outputs.append(output)
    return np.concatenate(outputs)


def top1(outputs: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(outputs.argmax(axis=1) == labels))


def compiled_at(case: dict, precision: str):
    """int8 is the `atvoss quantize`d model (it keeps its own precision); the
    others rewrite the fp32 model."""
    if precision == "int8":
        return atvoss_mlir.compile(str(case["int8"]))
    return atvoss_mlir.compile(str(case["fp32"]), f"npu -precision={precision}",
                               calibration=str(case["calibration"]))


@pytest.mark.parametrize("kind", MODELS)
def test_fp32_program_gives_onnxruntimes_class_for_every_image(digits, kind):
    case = digits[kind]
    reference = case["reference"]
    # A classifier worth the name: the comparisons below mean something.
    assert top1(reference, case["y"]) >= 0.95
    compiled = atvoss_mlir.compile(str(case["fp32"]))
    ours = run_npu(compiled, INPUT[kind], case["x"])
    assert ours.shape == reference.shape == (500, 10)
    mismatched = np.flatnonzero(ours.argmax(axis=1) != reference.argmax(axis=1))
    assert mismatched.size == 0, f"images {mismatched.tolist()} classified differently"
    np.testing.assert_allclose(ours, reference, rtol=1e-4,
                               atol=1e-5 * float(np.abs(reference).max()))


@pytest.mark.parametrize("kind,precision", [
    ("mlp", "fp16"), ("mlp", "int8"),
    ("mlp", "mixed"),
    ("cnn", "fp16"), ("cnn", "int8"), ("cnn", "mixed")])
def test_top1_within_one_point_of_fp32(digits, kind, precision):
    case = digits[kind]
    expected = top1(case["reference"], case["y"])
    ours = run_npu(compiled_at(case, precision), INPUT[kind], case["x"])
    accuracy = top1(ours, case["y"])
    assert abs(accuracy - expected) <= 0.01, \
        f"{precision} top-1 {accuracy:.3f}, onnxruntime fp32 {expected:.3f}"


@pytest.mark.parametrize("kind", MODELS)
def test_int8_program_within_one_step_of_onnxruntime(digits, kind):
    """The quantised model as onnxruntime runs it: every output within one
    step of its uint8 output quantisation, nearly all equal. onnxruntime fuses
    the MLP's DQ -> Softmax -> Q into its QLinearSoftmax, which scales by
    floor(1 / scale) = 254 where the graph as written divides by 1/255; the
    compiler does the same."""
    case = digits[kind]
    model = onnx.load(case["int8"])
    final = next(n for n in model.graph.node if model.graph.output[0].name in n.output)
    assert final.op_type == "DequantizeLinear"
    scale = next(onnx.numpy_helper.to_array(i) for i in model.graph.initializer
                 if i.name == final.input[1])
    theirs = run_onnxruntime(case["int8"], INPUT[kind], case["x"])
    ours = run_npu(atvoss_mlir.compile(str(case["int8"])), INPUT[kind], case["x"])
    steps = np.abs(ours - theirs) / float(scale)
    assert steps.max() <= 1.0 + 1e-3, f"{steps.max():.2f} steps off"
    assert np.mean(steps < 1e-3) >= 0.999


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_precision_int8_target_quantises_per_channel(digits, kind):
    """-precision=int8 quantises the fp32 model itself (per-channel weights)
    from the same calibration file."""
    case = digits[kind]
    expected = top1(case["reference"], case["y"])
    compiled = atvoss_mlir.compile(str(case["fp32"]), "npu -precision=int8",
                                   calibration=str(case["calibration"]))
    accuracy = top1(run_npu(compiled, INPUT[kind], case["x"]), case["y"])
    assert abs(accuracy - expected) <= 0.01
