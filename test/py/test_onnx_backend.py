"""atvoss_mlir.onnx_backend: the ONNX backend interface, and the binding of
inputs that decide shapes from the first run (docs/onnx-backend.md)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from atvoss_mlir import onnx_backend
from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.reference import reference_session


def graph_model(nodes, inputs, outputs, opset=17):
    """inputs/outputs: (name, element type, shape) triples."""
    graph = helper.make_graph(nodes, "backend", [helper.make_tensor_value_info(*i) for i in inputs],
                              [helper.make_tensor_value_info(*o) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def onnxruntime_outputs(model, feeds):
    session = reference_session(model)
    return session.run(None, feeds)


RESHAPE = graph_model([helper.make_node("Reshape", ["x", "shape"], ["y"])],
                      [("x", TensorProto.FLOAT, [2, 3, 4]), ("shape", TensorProto.INT64, [2])],
                      [("y", TensorProto.FLOAT, ["rows", "cols"])])
ADD_INT = graph_model([helper.make_node("Add", ["a", "b"], ["y"])],
                      [("a", TensorProto.INT64, [3]), ("b", TensorProto.INT64, [3])],
                      [("y", TensorProto.INT64, [3])])


def test_devices():
    assert onnx_backend.supports_device("CPU") and onnx_backend.supports_device("NPU")
    assert not onnx_backend.supports_device("CUDA")
    with pytest.raises(DiagnosticError, match="device 'CUDA' is not supported"):
        onnx_backend.prepare(ADD_INT, "CUDA")


def test_prepare_compiles_at_once_without_shape_deciding_inputs():
    rep = onnx_backend.prepare(ADD_INT)
    assert rep.bound_names == [] and rep.compiled is not None
    a, b = np.array([1, -2, 3], np.int64), np.array([10, 20, -30], np.int64)
    outputs = rep.run([a, b])
    assert outputs.y.dtype == np.int64
    np.testing.assert_array_equal(outputs["y"], onnxruntime_outputs(ADD_INT, {"a": a, "b": b})[0])
    # The data inputs stayed inputs: other values give other results.
    np.testing.assert_array_equal(rep.run({"a": b, "b": b})[0], b + b)


def test_shape_inputs_are_bound_at_the_first_run():
    rep = onnx_backend.prepare(RESHAPE)
    assert rep.bound_names == ["shape"] and rep.compiled is None
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    shape = np.array([4, -1], np.int64)
    (y,) = rep.run([x, shape])
    np.testing.assert_array_equal(y, onnxruntime_outputs(RESHAPE, {"x": x, "shape": shape})[0])
    assert rep.compiled.input_names == ["x"]
    np.testing.assert_array_equal(rep.run([2 * x, shape])[0], (2 * x).reshape(4, 6))
    with pytest.raises(DiagnosticError, match=r"input 'shape' decides shapes and was bound to "
                       r"\[4, -1\] .* this run gives \[6, -1\]"):
        rep.run([x, np.array([6, -1], np.int64)])


def test_run_model_and_input_mistakes():
    x = np.ones((2, 3, 4), np.float32)
    (y,) = onnx_backend.run_model(RESHAPE, [x, np.array([6, 4], np.int64)])
    np.testing.assert_array_equal(y, x.reshape(6, 4))
    with pytest.raises(DiagnosticError, match=r"takes 2 input\(s\) \(x, shape\), 1 were given"):
        onnx_backend.run_model(RESHAPE, [x])
    with pytest.raises(DiagnosticError, match=r"input 'shape' expects int64 of shape \[2\], "
                       r"given a float64 array"):
        onnx_backend.run_model(RESHAPE, [x, np.array([4.0, 6.0])])
    with pytest.raises(DiagnosticError, match=r"unknown input\(s\) 'z': the model takes x, shape"):
        onnx_backend.run_model(RESHAPE, {"x": x, "shape": np.array([6, 4], np.int64), "z": x})
    with pytest.raises(DiagnosticError, match=r"missing input\(s\) 'x' \(float32 of shape "
                       r"\[2, 3, 4\]\)"):
        onnx_backend.run_model(RESHAPE, {"shape": np.array([6, 4], np.int64)})


def test_which_inputs_decide_shapes():
    nodes = [helper.make_node("Cast", ["repeats32"], ["repeats"], to=TensorProto.INT64),
             helper.make_node("Tile", ["x", "repeats"], ["tiled"]),
             helper.make_node("Shape", ["indices"], ["indices_shape"]),
             helper.make_node("Expand", ["tiled", "indices_shape"], ["y"]),
             helper.make_node("Add", ["data", "data"], ["z"]),
             helper.make_node("Gather", ["x", "ids"], ["gathered"], axis=1)]
    model = graph_model(nodes, [("x", TensorProto.FLOAT, [1, 2]),
                                ("repeats32", TensorProto.INT32, [2]),
                                ("indices", TensorProto.INT64, [3, 1, 2]),
                                ("data", TensorProto.INT64, [2]),
                                ("ids", TensorProto.INT64, [3])],
                        [("y", TensorProto.FLOAT, ["a", "b", "c"]), ("z", TensorProto.INT64, [2]),
                         ("gathered", TensorProto.FLOAT, [1, 3])])
    # repeats32 reaches Tile's repeats through a Cast; only the shape of
    # `indices` matters; `data` is data, and so are Gather's indices `ids`.
    assert onnx_backend.shape_deciding_inputs(model) == ["repeats32"]


def test_float_scales_of_resize_are_bound():
    model = graph_model([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")],
                        [("x", TensorProto.FLOAT, [1, 1, 2, 2]),
                         ("scales", TensorProto.FLOAT, [4])],
                        [("y", TensorProto.FLOAT, ["n", "c", "h", "w"])])
    assert onnx_backend.shape_deciding_inputs(model) == ["scales"]


def test_a_refusal_is_a_located_error():
    model = graph_model([helper.make_node("Relu", ["x"], ["r"], name="first"),
                         helper.make_node("Det", ["r"], ["y"], name="determinant")],
                        [("x", TensorProto.FLOAT, [3, 3])], [("y", TensorProto.FLOAT, [])])
    with pytest.raises(DiagnosticError) as caught:
        onnx_backend.prepare(model)
    (diagnostic,) = caught.value.diagnostics
    assert "determinant" in diagnostic.format() and "Det" in diagnostic.message

