"""What the new op handlers cannot import is a located error naming the node,
its op type and opset and the reason, never a traceback or a silently wrong
result; ops ONNX defines as functions import through their body, and a
refusal inside the body names the model's node."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.frontend import import_onnx

I64 = np.int64
F32 = np.float32


def one_node(op_type, x_type, x_shape, initializers=None, inputs=None, opset=19,
             out_type=TensorProto.FLOAT, **attributes):
    initializers = initializers or {}
    names = inputs if inputs is not None else ["x"] + list(initializers)
    node = helper.make_node(op_type, names, ["y"], name="node0", **attributes)
    graph = helper.make_graph(
        [node], "refusal", [helper.make_tensor_value_info("x", x_type, x_shape)],
        [helper.make_tensor_value_info("y", out_type, None)],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def error_of(onnx_model) -> str:
    with pytest.raises(DiagnosticError) as caught:
        import_onnx(onnx_model)
    return str(caught.value)


def test_unsigned_graph_input_is_refused_not_computed_as_signed():
    message = error_of(one_node("Max", TensorProto.UINT8, [4], inputs=["x", "x"],
                                out_type=TensorProto.UINT8))
    assert "graph input 'x': the tensor is uint8: unsigned integer tensors are not " \
        "supported" in message


def test_cast_to_unsigned_is_refused_at_the_node():
    message = error_of(one_node("Cast", TensorProto.FLOAT, [4], to=TensorProto.UINT8,
                                out_type=TensorProto.UINT8))
    assert "node 'node0' (Cast, opset 19): Cast to the unsigned type uint8 is not " \
        "supported" in message


@pytest.mark.parametrize("op_type,initializers,attributes,expected", [
    ("Resize", {}, {"mode": "nearest"}, "exactly one of scales and sizes must be given"),
    ("Resize", {"roi": np.zeros(0, F32), "scales": np.asarray([1, 1, 2], F32)},
     {"mode": "nearest"}, "3 scales for 4 axes"),
    ("Resize", {"roi": np.zeros(0, F32), "scales": np.asarray([1, 1, 2, 2], F32)},
     {"mode": "linear", "coordinate_transformation_mode": "sideways"},
     "coordinate_transformation_mode 'sideways' is not supported"),
    ("Mod", {"d": np.asarray(2.0, F32)}, {}, "Mod of floating-point tensors needs fmod=1 "
     "before opset 28"),
    ("DepthToSpace", {}, {"blocksize": 2}, "3 channels are not a multiple of blocksize^2 = 4"),
    ("Einsum", {}, {"equation": "ii->i"}, "subscripts 'ii' do not fit"),
    ("GroupNormalization", {"s": np.ones(3, F32), "b": np.ones(3, F32)}, {"num_groups": 2},
     "num_groups=2 does not divide the 3 channels"),
    ("ReduceL2", {"axes": np.asarray([7], I64)}, {}, "axes [7] out of range for rank 4"),
    ("Pad", {"pads": np.asarray([1, 1, 1], I64)}, {},
     "3 pads for 4 axes: Pad takes a start and an end per axis"),
    ("Pad", {"pads": np.asarray([1, 1], I64), "value": np.asarray(0, F32),
             "axes": np.asarray([1, 2], I64)}, {},
     "2 pads for 2 axes: Pad takes a start and an end per axis"),
    # An axis past the rank was taken modulo it: the wrong axis sliced,
    # normalised, concatenated, split, squeezed...
    ("Slice", {"starts": np.asarray([1], I64), "ends": np.asarray([3], I64),
               "axes": np.asarray([6], I64)}, {}, "axis 6 out of range for rank 4"),
    ("Softmax", {}, {"axis": 5}, "axis 5 out of range for rank 4"),
    ("LogSoftmax", {}, {"axis": -5}, "axis -5 out of range for rank 4"),
    ("Hardmax", {}, {"axis": 4}, "axis 4 out of range for rank 4"),
    ("LayerNormalization", {"s": np.ones(5, F32)}, {"axis": 6},
     "axis 6 out of range for rank 4"),
    ("LpNormalization", {}, {"axis": 4}, "axis 4 out of range for rank 4"),
    ("Concat", {"other": np.ones((1, 3, 4, 5), F32)}, {"axis": 7},
     "axis 7 out of range for rank 4"),
    ("Split", {}, {"axis": 4}, "axis 4 out of range for rank 4"),
    ("Flatten", {}, {"axis": 5}, "axis 5 out of range for rank 4 (Flatten takes -rank to rank)"),
    ("Squeeze", {"axes": np.asarray([4], I64)}, {}, "axis 4 out of range for rank 4"),
    ("Unsqueeze", {"axes": np.asarray([5], I64)}, {}, "axis 5 out of range for rank 5"),
    ("Gather", {"i": np.zeros((2, 0), I64)}, {"axis": 1},
     "a Gather of no indices (an empty result) is not supported"),
    ("GatherND", {"i": np.zeros((0, 2), I64)}, {},
     "a GatherND of no index tuples (an empty result) is not supported"),
    ("GatherND", {"i": np.zeros((2, 5), I64)}, {},
     "index tuples of 5 elements into data of rank 4 after 0 batch dims"),
    ("GatherND", {"i": np.asarray([[0, 9]], I64)}, {},
     "an index tuple out of range for dims [1, 3]"),
])
def test_bad_parameters_are_located_errors(op_type, initializers, attributes, expected):
    message = error_of(one_node(op_type, TensorProto.FLOAT, [1, 3, 4, 5], initializers,
                                **attributes))
    assert f"node 'node0' ({op_type}, opset 19): {expected}" in message


def test_resize_axes_out_of_range_are_a_located_error():
    message = error_of(one_node("Resize", TensorProto.FLOAT, [1, 3, 4, 5],
                                {"sizes": np.asarray([8, 10], I64)}, inputs=["x", "", "", "sizes"],
                                mode="nearest", axes=[2, 4]))
    assert "node 'node0' (Resize, opset 19): axis 4 out of range for rank 4" in message


def test_concat_of_no_input_is_a_located_error():
    message = error_of(one_node("Concat", TensorProto.FLOAT, [2], inputs=["", ""], axis=0))
    assert "node 'node0' (Concat, opset 19): a Concat needs at least one input" in message


def test_slice_of_a_scalar_is_a_located_error():
    """Its axis was taken modulo the rank 0: a ZeroDivisionError."""
    message = error_of(one_node("Slice", TensorProto.FLOAT, [], {
        "starts": np.asarray([0], I64), "ends": np.asarray([1], I64)}))
    assert "node 'node0' (Slice, opset 19): axis 0 out of range for rank 0" in message


def test_average_pool_divisors_over_the_memory_limit_are_refused(monkeypatch):
    """An average pool whose divisor per output (the padding not counted)
    would not fit the memory limit while importing is refused at its node, not
    a MemoryError: the divisors come from the count of counted pixels along
    the rows times that along the columns, never a table of the padded input."""
    monkeypatch.setenv("ATVOSS_MEMORY_LIMIT", "600M")
    message = error_of(one_node("AveragePool", TensorProto.FLOAT16, [1, 1, 1, 100_000_000],
                                out_type=TensorProto.FLOAT16, kernel_shape=[1, 3],
                                pads=[0, 1, 0, 1]))
    assert "node 'node0' (AveragePool, opset 19): the divisors of its 1x100000000 outputs " \
        "would take 763 MiB while importing, above the memory limit of 600 MiB" in message


def test_runtime_scales_of_resize_must_be_constants():
    node = helper.make_node("Resize", ["x", "", "s"], ["y"], name="node0", mode="nearest")
    graph = helper.make_graph([node], "g", [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2]),
        helper.make_tensor_value_info("s", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    message = error_of(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]))
    assert "node 'node0' (Resize, opset 19): the scales (input 2) must be a constant" in message


def test_refusal_inside_a_function_body_names_the_models_node():
    """Bernoulli is an ONNX function of RandomUniformLike, which has no tensor
    meaning here: the error names the node the body came from."""
    message = error_of(one_node("Bernoulli", TensorProto.FLOAT, [3, 4], opset=19))
    assert "node 'node0/" in message
    assert "RandomUniformLike" in message


def test_function_body_at_its_own_opset_imports():
    """CenterCropPad has no handler: it imports as its ONNX function body."""
    onnx_model = one_node("CenterCropPad", TensorProto.FLOAT, [4, 6],
                          {"shape": np.asarray([3, 8], I64)}, opset=18)
    assert "func.func @main" in str(import_onnx(onnx_model))


def test_cli_refusal_exits_1_without_traceback(tmp_path):
    path = tmp_path / "diagonal.onnx"
    path.write_bytes(one_node("Einsum", TensorProto.FLOAT, [3, 3], equation="ii->i")
                     .SerializeToString())
    result = subprocess.run([sys.executable, "-m", "atvoss_mlir.tools.atvoss", "compile",
                             str(path)], capture_output=True, text=True)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{path}:1:1" in result.stderr
    assert "node 'node0' (Einsum, opset 19): Einsum with a repeated subscript in one " \
        "operand (a diagonal) is not supported" in result.stderr


def test_range_with_other_than_three_inputs_is_a_located_error():
    """A Range of one input (the fuzzer's, at an opset before Range's): refused
    at the node, not raised as a ValueError."""
    onnx_model = one_node("Range", TensorProto.FLOAT, [], {"start": np.asarray(1.0, F32)},
                          inputs=["start"], opset=8)
    assert "node 'node0' (Range, opset 8): Range takes start, limit and delta: got 1 " \
        "inputs" in error_of(onnx_model)


def test_reshape_copying_a_dim_the_input_lacks_is_a_located_error():
    """A 0 in Reshape's target shape copies the input's dim at its place: past
    the input's rank there is none (the fuzzer's, seed 9191: an IndexError)."""
    onnx_model = one_node("Reshape", TensorProto.FLOAT, [6], {"shape": np.asarray([2, 0], I64)},
                          opset=17)
    assert "node 'node0' (Reshape, opset 17): target shape [2, 0] copies dim 1 (a 0) of an " \
        "input of rank 1" in error_of(onnx_model)
