"""The IR the importer writes, checked FileCheck-style: which named linalg
ops each ONNX op becomes, in which layout."""

from __future__ import annotations

import re

import numpy as np
import pytest

from atvoss_mlir.frontend import import_onnx, import_onnx_text
from atvoss_mlir.sim import simulate
from onnx_testing import bufferize, randn, reference, single

I64 = np.int64


def filecheck(text: str, *patterns: str) -> None:
    """Each pattern (a regex) matches, in order."""
    position = 0
    for pattern in patterns:
        found = re.compile(pattern).search(text, position)
        assert found, f"'{pattern}' not found after:\n{text[position:position + 2000]}"
        position = found.end()


def test_conv_runs_in_nhwc_with_transposes_at_the_boundary():
    onnx_model = single("Conv", {"x": [2, 3, 7, 9]}, [2, 5, 4, 5],
                        {"strides": [2, 2], "pads": [1, 1, 1, 1]},
                        {"w": randn(5, 3, 3, 3), "b": randn(5)})
    filecheck(import_onnx_text(onnx_model),
              r"func.func @main\(%arg0: tensor<2x3x7x9xf32>\) -> tensor<2x5x4x5xf32>",
              r"linalg.transpose ins\(%arg0 : tensor<2x3x7x9xf32>\) .* permutation = \[0, 2, 3, 1\]",
              r"tensor.pad .* low\[0, 1, 1, 0\] high\[0, 1, 1, 0\]",
              r"tensor<2x7x9x3xf32> to tensor<2x9x11x3xf32>",
              r"linalg.broadcast ins\(%.* : tensor<5xf32>\) outs\(%.* : tensor<2x4x5x5xf32>\) "
              r"dimensions = \[0, 1, 2\]",
              r"linalg.conv_2d_nhwc_hwcf \{dilations = dense<1> : tensor<2xi64>, "
              r"strides = dense<2> : tensor<2xi64>\} "
              r"ins\(%padded, %.* : tensor<2x9x11x3xf32>, tensor<3x3x3x5xf32>\)",
              r"linalg.transpose .* permutation = \[0, 3, 1, 2\]",
              r"return .* : tensor<2x5x4x5xf32>")


def test_depthwise_conv_uses_the_depthwise_op():
    onnx_model = single("Conv", {"x": [1, 4, 5, 5]}, [1, 4, 5, 5],
                        {"group": 4, "pads": [1, 1, 1, 1]}, {"w": randn(4, 1, 3, 3)})
    text = import_onnx_text(onnx_model)
    filecheck(text, r"linalg.fill", r"linalg.depthwise_conv_2d_nhwc_hwc .* "
              r"tensor<1x7x7x4xf32>, tensor<3x3x4xf32>")
    assert "conv_2d_nhwc_hwcf" not in text


def test_grouped_conv_is_split_per_group():
    onnx_model = single("Conv", {"x": [1, 6, 5, 4]}, [1, 4, 3, 4], {"group": 2},
                        {"w": randn(4, 3, 3, 1)})
    text = import_onnx_text(onnx_model)
    assert text.count("linalg.conv_2d_nhwc_hwcf") == 2
    filecheck(text, r"tensor.extract_slice %transposed\[0, 0, 0, 3\] \[1, 5, 4, 3\]",
              r"tensor.insert_slice %.* into %.*\[0, 0, 0, 2\] \[1, 3, 4, 2\]")


def test_pools_use_the_named_pooling_ops():
    max_text = import_onnx_text(single("MaxPool", {"x": [1, 3, 8, 8]}, [1, 3, 4, 4],
                                       {"kernel_shape": [3, 3], "strides": [2, 2],
                                        "pads": [1, 1, 1, 1]}))
    filecheck(max_text, r"0xFF800000", r"tensor.pad", r"linalg.fill",
              r"linalg.pooling_nhwc_max \{dilations = dense<1> : tensor<2xi64>, "
              r"strides = dense<2> : tensor<2xi64>\}")
    avg_text = import_onnx_text(single("AveragePool", {"x": [1, 3, 8, 8]}, [1, 3, 4, 4],
                                       {"kernel_shape": [2, 2], "strides": [2, 2]}))
    filecheck(avg_text, r"linalg.pooling_nhwc_sum", r"arith.divf")


def test_matmul_and_gemm_use_named_ops():
    text = import_onnx_text(single("MatMul", {"a": [2, 3, 5], "b": [5, 4]}, [2, 3, 4]))
    filecheck(text, r"tensor.collapse_shape .* tensor<2x3x5xf32> into tensor<6x5xf32>",
              r"linalg.matmul ins\(.* : tensor<6x5xf32>, tensor<5x4xf32>\)",
              r"tensor.expand_shape .* into tensor<2x3x4xf32>")
    text = import_onnx_text(single("MatMul", {"a": [2, 3, 5], "b": [2, 5, 4]}, [2, 3, 4]))
    filecheck(text, r"linalg.batch_matmul ins\(%arg0, %arg1 : tensor<2x3x5xf32>, "
              r"tensor<2x5x4xf32>\)")
    text = import_onnx_text(single("Gemm", {"a": [3, 5]}, [3, 4], {"transB": 1, "alpha": 2.0},
                                   {"b": randn(4, 5), "c": randn(4)}))
    filecheck(text, r"linalg.broadcast ins\(.* : tensor<4xf32>\) outs\(.* : tensor<3x4xf32>\) "
              r"dimensions = \[0\]", r"linalg.matmul ins\(%arg0, .* : tensor<3x5xf32>, "
              r"tensor<5x4xf32>\)")


def test_broadcasting_binary_op_is_one_generic_with_broadcast_maps():
    text = import_onnx_text(single("Add", {"a": [2, 1, 4], "b": [3, 1]}, [2, 3, 4]))
    filecheck(text, r"#map = affine_map<\(d0, d1, d2\) -> \(d0, d2\)>",
              r"#map1 = affine_map<\(d0, d1, d2\) -> \(d1\)>",
              r"tensor.collapse_shape %arg0 \[\[0\], \[1, 2\]\] : tensor<2x1x4xf32> into "
              r"tensor<2x4xf32>",
              r"tensor.collapse_shape %arg1 \[\[0, 1\]\] : tensor<3x1xf32> into tensor<3xf32>",
              r"linalg.generic .* iterator_types = \[\"parallel\", \"parallel\", \"parallel\"\]",
              r"arith.addf")
    assert text.count("linalg.generic") == 1


@pytest.mark.parametrize("op_type,body", [("Gelu", r"math.erf"), ("Tanh", r"math.tanh"),
                                          ("Sigmoid", r"math.exp"),
                                          ("LeakyRelu", r"arith.mulf[\s\S]*arith.maximumf")])
def test_activation_bodies(op_type, body):
    text = import_onnx_text(single(op_type, {"x": [2, 3]}, [2, 3], opset=20))
    filecheck(text, r"linalg.generic", body)


def test_reshapes_are_collapse_and_expand():
    text = import_onnx_text(single("Reshape", {"x": [2, 3, 4]}, [6, 2, 2],
                                   initializers={"s": np.asarray([6, 2, 2], I64)}))
    filecheck(text, r"tensor.collapse_shape %arg0 \[\[0, 1\], \[2\]\]",
              r"tensor.expand_shape .* \[\[0\], \[1, 2\]\]")


def test_softmax_is_max_exp_sum_divide():
    text = import_onnx_text(single("Softmax", {"x": [2, 5]}, [2, 5], {"axis": -1}, opset=13))
    filecheck(text, r"iterator_types = \[\"parallel\", \"reduction\"\]", r"arith.maximumf",
              r"math.exp", r"iterator_types = \[\"parallel\", \"reduction\"\]", r"arith.addf",
              r"arith.divf")


def test_batch_normalization_folds_to_scale_and_shift():
    c = 3
    initializers = {"s": randn(c), "b": randn(c), "m": randn(c), "v": np.ones(c, np.float32)}
    text = import_onnx_text(single("BatchNormalization", {"x": [1, c, 2, 2]}, [1, c, 2, 2],
                                   initializers=initializers))
    assert text.count("linalg.generic") == 1
    filecheck(text, r"affine_map<\(d0, d1, d2, d3\) -> \(d1\)>",
              r"tensor<3x1x1xf32> into tensor<3xf32>", r"arith.mulf", r"arith.addf")
    assert "math.sqrt" not in text


def test_dense_resource_weights_on_the_simulator():
    onnx_model = single("Gemm", {"a": [2, 3]}, [2, 4], initializers={"b": randn(3, 4),
                                                                      "c": randn(4)})
    a = randn(2, 3)
    module = bufferize(import_onnx(onnx_model, weights="resource"))
    assert "dense_resource<node0.weight>" in str(module)
    actual = simulate(module, [a]).outputs[0]
    np.testing.assert_allclose(actual, reference(onnx_model, {"a": a})[0], rtol=1e-4)


def test_gather_by_runtime_indices_copies_a_slice_per_index():
    """A loop over the indices: each reads its index, wraps a negative one, and
    copies that slice of the data (an embedding's row) into its place."""
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=1, name="node0")], "test",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 20, 4]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [2, 5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 2, 5, 4])])
    text = import_onnx_text(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                              ir_version=8))
    filecheck(text,
              r"tensor.collapse_shape %arg1 \[\[0, 1\]\] : tensor<2x5xi64> into tensor<10xi64>",
              r"scf.for %arg2 = %c0 to %c10 step %c1 iter_args",
              r"tensor.extract %collapsed\[%arg2\] : tensor<10xi64>",
              r"arith.cmpi slt", r"arith.addi .*c20", r"arith.select",
              r"tensor.extract_slice %arg0\[0, %\w+, 0\] \[3, 1, 4\] \[1, 1, 1\]",
              r"tensor.insert_slice %\w+ into %arg3\[0, %arg2, 0\] \[3, 1, 4\] \[1, 1, 1\]",
              r"tensor.expand_shape .* into tensor<3x2x5x4xf32>")
    assert "linalg.generic" not in text


def test_gather_by_evenly_stepping_constant_indices_is_one_strided_slice():
    """Constant indices 1, 3, 5, ... of any rank: one strided slice, reshaped to
    the indices' shape (an exporter's Gather of every mask row or channel)."""
    from onnx import TensorProto, helper, numpy_helper
    indices = numpy_helper.from_array(np.arange(1, 13, 2, dtype=np.int64).reshape(1, 2, 3), "i")
    graph = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=1, name="node0")], "test",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1, 2, 3])], [indices])
    text = import_onnx_text(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                              ir_version=8))
    filecheck(text, r"tensor.extract_slice %arg0\[0, 1\] \[2, 6\] \[1, 2\]",
              r"tensor.expand_shape .* into tensor<2x1x2x3xf32>")
    assert "linalg.generic" not in text and "scf.for" not in text


def test_gather_of_a_small_tensor_selects():
    """Slices too small to pay for their DMAs: a select over the axis."""
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=0, name="node0")], "test",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6]),
         helper.make_tensor_value_info("i", TensorProto.INT64, [3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])])
    text = import_onnx_text(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                                              ir_version=8))
    filecheck(text, r"linalg.generic", r"arith.cmpi eq", r"arith.select")
    assert "scf.for" not in text
