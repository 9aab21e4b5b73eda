"""Malformed ONNX nodes found by the fuzzer get purpose-written located
diagnostics, not the text of a Python exception."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.frontend import import_onnx


def model(node, inputs, initializers=()):
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, n) for n, v in initializers])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("node,inputs,initializers,message", [
    (helper.make_node("Gemm", ["x"], ["y"], name="gemm"), [("x", [4, 8])], (),
     "node 'gemm' (Gemm, opset 17): has 1 inputs, the op takes 2 to 3"),
    (helper.make_node("Conv", ["x", ""], ["y"], name="conv", kernel_shape=[3, 3]),
     [("x", [1, 4, 8, 8])], (), "node 'conv' (Conv, opset 17): input 1 ('W') is required but "
     "empty"),
    (helper.make_node("Add", ["x", "b"], ["y"], name="add"), [("x", [2, 3])],
     [("b", np.ones(4, np.float32))], "node 'add' (Add, opset 17): shapes 2x3, 4 do not "
     "broadcast"),
    (helper.make_node("Conv", ["x", "w"], ["y"], name="conv", kernel_shape=[3, 3]),
     [("x", [1, 4, 8, 8])], [("w", np.ones(3, np.float32))],
     "node 'conv' (Conv, opset 17): input [1, 4, 8, 8] and weights [3] are not both of rank 4 "
     "(3 for a 1-D convolution)"),
    (helper.make_node("Conv", ["x", "w"], ["y"], name="conv", group=0), [("x", [1, 4, 8, 8])],
     [("w", np.ones((4, 4, 3, 3), np.float32))],
     "node 'conv' (Conv, opset 17): 4 input channels, 4 filters of 4 channels and group 0 do "
     "not match"),
    (helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn",
                      epsilon="SAME_UPPER"),
     [("x", [1, 4, 8, 8])], [(n, np.ones(4, np.float32)) for n in "sbmv"],
     "node 'bn' (BatchNormalization, opset 17): attribute 'epsilon' is STRING, "
     "BatchNormalization takes FLOAT"),
    (helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn"),
     [("x", [1, 3, 8, 8])], [(n, np.ones(8, np.float32)) for n in "sbmv"],
     "node 'bn' (BatchNormalization, opset 17): scale has shape [8], not [3] (one per "
     "channel of the [1, 3, 8, 8] input)"),
    (helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn"),
     [("x", [1, 4, 8, 8]), ("m", [4, 1])], [(n, np.ones(4, np.float32)) for n in "sbv"],
     "node 'bn' (BatchNormalization, opset 17): mean has shape [4, 1], not [4] (one per "
     "channel of the [1, 4, 8, 8] input)"),
    (helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], name="bn"),
     [("x", [4])], [(n, np.ones(4, np.float32)) for n in "sbmv"],
     "node 'bn' (BatchNormalization, opset 17): expects an input of rank 2 or more (N, C, "
     "...), not [4]"),
    (helper.make_node("MaxPool", ["x"], ["y"], name="pool"), [("x", [1, 4, 8, 8])], (),
     "node 'pool' (MaxPool, opset 17): expects an input of rank 4 (3 for 1-D pooling) and a "
     "kernel_shape of its spatial rank, got [1, 4, 8, 8] and None"),
    (helper.make_node("Gemm", ["x", "w"], ["y"], name="gemm"), [("x", [4])],
     [("w", np.ones((4, 3), np.float32))],
     "node 'gemm' (Gemm, opset 17): A (input 0) must be 2-d, not of shape [4]"),
    (helper.make_node("Gemm", ["x", "w"], ["y"], name="gemm", transB=1), [("x", [2, 4])],
     [("w", np.ones((4, 3), np.float32))],
     "node 'gemm' (Gemm, opset 17): cannot multiply [2, 4] by [3, 4]"),
    (helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul"), [("x", [])],
     [("w", np.ones(3, np.float32))],
     "node 'matmul' (MatMul, opset 17): cannot multiply [] by [3]: a scalar has no matrix "
     "product"),
    (helper.make_node("Range", ["s", "l", "d"], ["y"], name="range"), [],
     [("s", np.zeros(2, np.float32)), ("l", np.array(4, np.float32)),
      ("d", np.array(1, np.float32))],
     "node 'range' (Range, opset 17): start must be a scalar, not of shape [2]"),
    (helper.make_node("Range", ["s", "l", "d"], ["y"], name="range"), [],
     [("s", np.array(0, np.float32)), ("l", np.array(4, np.float32)),
      ("d", np.array(0, np.float32))],
     "node 'range' (Range, opset 17): delta is 0: the range never reaches its limit"),
    (helper.make_node("ConstantOfShape", ["s"], ["y"], name="fill"), [],
     [("s", np.array(3, np.int64))],
     "node 'fill' (ConstantOfShape, opset 17): the shape (input 0) must be 1-d and 'value' "
     "one element (have shapes [] and [1])"),
    (helper.make_node("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[3, 3],
                      strides=[0, 1]), [("x", [1, 4, 8, 8])], (),
     "node 'pool' (MaxPool, opset 17): strides [0, 1] and dilations [1, 1] must be 2 "
     "positive ints, pads [0, 0, 0, 0] 4 non-negative ones"),
    (helper.make_node("Cast", ["x"], ["y"], name="cast"), [("x", [2, 3])], (),
     "node 'cast' (Cast, opset 17): a Cast needs a 'to' attribute (the element type)"),
])
def test_malformed_node(node, inputs, initializers, message):
    with pytest.raises(DiagnosticError) as failure:
        import_onnx(model(node, inputs, initializers))
    assert failure.value.diagnostics[0].message == message


def test_malformed_node_without_a_check_of_its_own_gets_onnx_reason():
    """A node a handler fails on without a check of its own (a Concat missing
    its required axis) is described by ONNX's schema check and shape
    inference on the node's inputs, not by the Python exception met."""
    node = helper.make_node("Concat", ["x", "x"], ["y"], name="cat")
    with pytest.raises(DiagnosticError) as failure:
        import_onnx(model(node, [("x", [4])]))
    message = failure.value.diagnostics[0].message
    assert message.startswith("node 'cat' (Concat, opset 17): malformed for ONNX: "), message
    assert "'axis'" in message and "Error: " not in message, message


def test_folded_concat_without_axis_is_refused_not_flattened():
    """A Concat of constants with no axis: numpy's concatenate would flatten
    them into one vector, a result of another shape than any ONNX allows."""
    node = helper.make_node("Concat", ["a", "a"], ["y"], name="cat")
    with pytest.raises(DiagnosticError) as failure:
        import_onnx(model(node, [], [("a", np.ones((2, 3), np.float32))]))
    assert failure.value.diagnostics[0].message == \
        "node 'cat' (Concat, opset 17): a Concat needs an 'axis' attribute"


def test_window_attribute_of_another_type_on_a_contrib_op():
    """com.microsoft's QLinearAveragePool has no schema typing `dilations`: a
    STRING there is refused by name, not a Python error."""
    node = helper.make_node("QLinearAveragePool", ["x", "s", "z", "s", "z"], ["y"], name="pool",
                            domain="com.microsoft", kernel_shape=[2, 2], dilations="SAME_UPPER")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(np.array(0.5, np.float32), "s"),
         numpy_helper.from_array(np.array(128, np.uint8), "z")])
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                         helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(DiagnosticError) as failure:
        import_onnx(onnx_model)
    assert failure.value.diagnostics[0].message == (
        "node 'pool' (QLinearAveragePool, opset 17): attribute 'dilations' must be ints, not "
        "'SAME_UPPER'")


def test_qgemm_with_a_b_that_is_no_matrix():
    """com.microsoft's QGemm with a 3-d B (found by the fuzzer): refused by
    name, as MatMulInteger's, not the text of a Python unpacking error."""
    node = helper.make_node("QGemm", ["a", "s", "z", "b", "s", "z", "", "s", "z"], ["y"],
                            name="gemm", domain="com.microsoft")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("a", TensorProto.UINT8, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, None)],
        [numpy_helper.from_array(np.array(0.5, np.float32), "s"),
         numpy_helper.from_array(np.array(128, np.uint8), "z"),
         numpy_helper.from_array(np.ones((2, 4, 3), np.uint8), "b")])
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                         helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(DiagnosticError) as failure:
        import_onnx(onnx_model)
    assert failure.value.diagnostics[0].message == \
        "node 'gemm' (QGemm, opset 17): B must be a constant matrix"
