"""Opsets: one model on each side of every boundary where a handled op
changed (attributes that became inputs, new attributes, new semantics),
imported, run on the simulator and compared with onnxruntime; the oldest
and newest opsets the importer reads, and located errors outside them."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from atvoss_mlir.diagnostics import DiagnosticError
from atvoss_mlir.frontend import import_onnx
from onnx_testing import check, randn

I64 = np.int64
F32 = np.float32
_TYPES = {np.dtype(F32): TensorProto.FLOAT, np.dtype(I64): TensorProto.INT64,
          np.dtype(np.bool_): TensorProto.BOOL}


def one_node(op_type, opset, x, initializers=None, extra_inputs=(), outputs=("y",),
             out_types=(F32,), **attributes):
    initializers = initializers or {}
    node = helper.make_node(op_type, ["x"] + list(initializers) + list(extra_inputs),
                            list(outputs), name="node0", **attributes)
    graph = helper.make_graph(
        [node], "opset", [helper.make_tensor_value_info("x", _TYPES[x.dtype], list(x.shape))],
        [helper.make_tensor_value_info(n, _TYPES[np.dtype(t)], None)
         for n, t in zip(outputs, out_types)],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=7)


X = randn(2, 3, 4)
AXES = {"axes": np.asarray([1], I64)}
# (test id, op type, opset, initializers, attributes): the two sides of each boundary
BOUNDARIES = [
    # Reduce*: axes an attribute, then an input (13 for ReduceSum, 18 for the others)
    ("reducesum_attribute_12", "ReduceSum", 12, {}, {"axes": [1]}),
    ("reducesum_input_13", "ReduceSum", 13, AXES, {}),
    ("reducemean_attribute_17", "ReduceMean", 17, {}, {"axes": [1]}),
    ("reducemean_input_18", "ReduceMean", 18, AXES, {}),
    ("reducel2_attribute_17", "ReduceL2", 17, {}, {"axes": [1]}),
    ("reducel2_input_18", "ReduceL2", 18, AXES, {}),
    ("reducelogsumexp_attribute_17", "ReduceLogSumExp", 17, {}, {"axes": [2]}),
    ("reducelogsumexp_input_18", "ReduceLogSumExp", 18, {"axes": np.asarray([2], I64)}, {}),
    ("reducemax_noop_empty_axes_18", "ReduceMax", 18, {}, {"noop_with_empty_axes": 1}),
    # Squeeze/Unsqueeze: axes an attribute until 12, an input from 13
    ("unsqueeze_attribute_12", "Unsqueeze", 12, {}, {"axes": [0, 3]}),
    ("unsqueeze_input_13", "Unsqueeze", 13, {"axes": np.asarray([0, 3], I64)}, {}),
    # Clip: bounds attributes until 10, inputs from 11
    ("clip_attributes_10", "Clip", 10, {}, {"min": -0.3, "max": 0.5}),
    ("clip_inputs_11", "Clip", 11, {"lo": np.asarray(-0.3, F32), "hi": np.asarray(0.5, F32)},
     {}),
    # Pad: attributes until 10, inputs from 11, axes from 18
    ("pad_attributes_10", "Pad", 10, {}, {"pads": [0, 1, 0, 0, 2, 1], "value": 0.5}),
    ("pad_inputs_11", "Pad", 11, {"pads": np.asarray([0, 1, 0, 0, 2, 1], I64),
                                  "value": np.asarray(0.5, F32)}, {}),
    ("pad_axes_18", "Pad", 18, {"pads": np.asarray([1, 2], I64),
                                "value": np.asarray(0.5, F32), "axes": np.asarray([2], I64)},
     {}),
    # Softmax and Hardmax: a 2-D view at `axis` until 12, one axis from 13
    ("softmax_coerced_2d_12", "Softmax", 12, {}, {"axis": 1}),
    ("softmax_one_axis_13", "Softmax", 13, {}, {"axis": 1}),
    ("hardmax_coerced_2d_12", "Hardmax", 12, {}, {"axis": 1}),
    ("hardmax_one_axis_13", "Hardmax", 13, {}, {"axis": 1}),
    # ArgMax: select_last_index from 12
    ("argmax_11", "ArgMax", 11, {}, {"axis": 1}),
    ("argmax_select_last_12", "ArgMax", 12, {}, {"axis": 1, "select_last_index": 1}),
    # Slice: attributes until 9, inputs from 10 (steps from 10 too)
    ("slice_attributes_9", "Slice", 9, {}, {"starts": [1], "ends": [3], "axes": [2]}),
    ("slice_inputs_10", "Slice", 10, {"starts": np.asarray([1], I64),
                                      "ends": np.asarray([3], I64),
                                      "axes": np.asarray([2], I64)}, {}),
    # Resize: scales only at 10 (asymmetric), roi/scales/sizes from 11, axes from 18
    ("resize_10", "Resize", 10, {"scales": np.asarray([1, 1, 2, 2], F32)}, {"mode": "linear"}),
    ("resize_11", "Resize", 11, {"roi": np.zeros(0, F32),
                                 "scales": np.asarray([1, 1, 2, 2], F32)},
     {"mode": "linear"}),
    ("resize_13_optional_roi", "Resize", 13, {"scales": np.asarray([1, 1, 2, 3], F32)},
     {"mode": "nearest"}),
    ("resize_18_axes", "Resize", 18, {"scales": np.asarray([2, 3], F32)},
     {"mode": "nearest", "axes": [2, 3]}),
    ("resize_19_half_pixel_symmetric", "Resize", 19, {"scales": np.asarray([1, 1, 2, 1.5], F32)},
     {"mode": "linear", "coordinate_transformation_mode": "half_pixel_symmetric"}),
    # Upsample: scales an attribute at 7, an input at 9
    ("upsample_attribute_7", "Upsample", 7, {}, {"scales": [1.0, 1.0, 2.0, 2.0]}),
    ("upsample_input_9", "Upsample", 9, {"scales": np.asarray([1, 1, 2, 2], F32)}, {}),
    # GroupNormalization: one scale per group at 18, per channel at 21
    ("groupnormalization_per_group_18", "GroupNormalization", 18,
     {"scale": randn(2, seed=1), "bias": randn(2, seed=2)}, {"num_groups": 2}),
    ("groupnormalization_per_channel_21", "GroupNormalization", 21,
     {"scale": randn(4, seed=1), "bias": randn(4, seed=2)}, {"num_groups": 2}),
]
NCHW_OPS = ("Resize", "Upsample", "GroupNormalization")


@pytest.mark.parametrize("name,op_type,opset,initializers,attributes", BOUNDARIES,
                         ids=[b[0] for b in BOUNDARIES])
def test_opset_boundary(name, op_type, opset, initializers, attributes):
    x = randn(1, 4, 3, 5) if op_type in NCHW_OPS else X
    onnx_model = one_node(op_type, opset, x, initializers, **attributes)
    if op_type == "Resize" and opset >= 13 and "roi" not in initializers:
        node = onnx_model.graph.node[0]  # roi is optional from 13: left empty
        node.input[:] = ["x", "", "scales"]
    out_types = (I64,) if op_type == "ArgMax" else (F32,)
    onnx_model.graph.output[0].type.tensor_type.elem_type = _TYPES[np.dtype(out_types[0])]
    check(onnx_model, {"x": x})


@pytest.mark.parametrize("opset,outputs", [(12, 2), (13, 3), (18, 3)])
def test_split_boundaries(opset, outputs):
    """Split: sizes an attribute until 12, an input from 13; num_outputs from 18
    (the last part smaller)."""
    x = randn(2, 7, 3)
    if opset == 12:
        node = helper.make_node("Split", ["x"], ["a", "b"], axis=1, split=[3, 4])
        initializers = []
    elif opset == 13:
        node = helper.make_node("Split", ["x", "sizes"], ["a", "b", "c"], axis=1)
        initializers = [numpy_helper.from_array(np.asarray([1, 2, 4], I64), "sizes")]
    else:
        node = helper.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)
        initializers = []
    names = list(node.output)
    graph = helper.make_graph([node], "split", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2, 7, 3])], [helper.make_tensor_value_info(
            n, TensorProto.FLOAT, None) for n in names], initializers)
    check(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                            ir_version=7), {"x": x})
    assert len(names) == outputs


@pytest.mark.parametrize("opset", [7, 10, 12])
def test_dropout_boundaries(opset):
    """Dropout: `ratio` an attribute until 11, an input from 12; its mask is
    the data's type until 9, bool from 10. A declared mask no node reads is fine."""
    inputs = ["x"] if opset < 12 else ["x", "ratio"]
    attributes = {"ratio": 0.4} if opset < 12 else {}
    dropout = helper.make_node("Dropout", inputs, ["d", "mask"], name="dropout", **attributes)
    relu = helper.make_node("Relu", ["d"], ["y"], name="relu")
    initializers = [numpy_helper.from_array(np.asarray(0.4, F32), "ratio")] if opset >= 12 \
        else []
    graph = helper.make_graph([dropout, relu], "dropout", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [3, 4])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, [3, 4])], initializers)
    check(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                            ir_version=7), {"x": randn(3, 4)})


def test_old_dropout_mask_read_is_a_located_error():
    dropout = helper.make_node("Dropout", ["x"], ["y", "mask"], name="dropout", ratio=0.4)
    graph = helper.make_graph([dropout], "dropout", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [3, 4])], [helper.make_tensor_value_info(
            n, TensorProto.FLOAT, [3, 4]) for n in ("y", "mask")])
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 9)])
    with pytest.raises(DiagnosticError) as caught:
        import_onnx(onnx_model)
    assert "graph output 'mask' is not computed" in str(caught.value)


@pytest.mark.parametrize("opset", [7, 8, 9, onnx.defs.onnx_opset_version()])
def test_every_opset_from_7_to_the_installed_newest(opset):
    x = randn(3, 4)
    if opset <= 23:  # the newest opset onnxruntime runs here
        check(one_node("Relu", opset, x), {"x": x})
    else:
        import_onnx(one_node("Relu", opset, x))


def test_logical_ops_at_opset_7():
    a = np.random.default_rng(0).integers(0, 2, (3, 4)).astype(np.bool_)
    node = helper.make_node("Xor", ["x", "x"], ["y"], name="xor")
    graph = helper.make_graph([node], "xor", [helper.make_tensor_value_info(
        "x", TensorProto.BOOL, [3, 4])], [helper.make_tensor_value_info(
            "y", TensorProto.BOOL, [3, 4])])
    check(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)], ir_version=7),
          {"x": a})


def test_model_without_default_domain_ops_needs_no_default_opset():
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [2])], [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                     [2])])
    onnx_model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx.ml", 3)])
    with pytest.raises(DiagnosticError) as caught:
        import_onnx(onnx_model)
    assert "imports no default-domain (ai.onnx) opset" in str(caught.value)
