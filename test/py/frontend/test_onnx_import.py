"""The importer as a whole: locations, errors, old-opset models, folding of
shape subgraphs, dead code, weight storage, the text API and import time."""

from __future__ import annotations

import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from atvoss_mlir.context import make_context
from atvoss_mlir.diagnostics import DiagnosticError, location_label, source_position
from atvoss_mlir.frontend import import_onnx, import_onnx_text
from onnx_testing import check, model, randn, resnet50, single

I64 = np.int64


def conv_relu_model():
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu1")]
    return model(nodes, {"x": [1, 2, 5, 5]}, {"y": [1, 3, 5, 5]}, {"w": randn(3, 2, 3, 3)})


def error_of(call) -> DiagnosticError:
    with pytest.raises(DiagnosticError) as caught:
        call()
    return caught.value


# -- locations -----------------------------------------------------------------------------

def test_every_op_is_located_at_its_node():
    module = import_onnx(conv_relu_model())
    text = module.operation.get_asm(enable_debug_info=True, large_elements_limit=4)
    assert 'loc("conv1")' in text and 'loc("relu1")' in text
    func = module.body.operations[0]
    labels = {location_label(op.location) for op in func.regions[0].blocks[0].operations
              if op.name != "func.return"}
    assert labels == {"conv1", "relu1"}


def test_located_in_the_model_file(tmp_path):
    path = tmp_path / "net.onnx"
    onnx.save(conv_relu_model(), path)
    module = import_onnx(str(path))
    ops = module.body.operations[0].regions[0].blocks[0].operations
    positions = {location_label(op.location): str(source_position(op.location))
                 for op in ops if op.name != "func.return"}
    assert positions == {"conv1": f"{path}:1:1", "relu1": f"{path}:2:1"}  # line N: node N
    text = module.operation.get_asm(enable_debug_info=True, large_elements_limit=4)
    assert f'loc("{path}":1:1)' in text and 'loc("conv1"(#loc' in text


def test_unnamed_nodes_get_a_name_from_type_and_index():
    node = helper.make_node("Relu", ["x"], ["y"])
    text = import_onnx_text(model([node], {"x": [2]}, {"y": [2]}), debug_info=True)
    assert 'loc("Relu_0")' in text


# -- errors --------------------------------------------------------------------------------

def test_unsupported_op_is_a_located_error_naming_node_type_and_opset(tmp_path):
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("NonMaxSuppression", ["r", "s"], ["y"], name="nms7")]
    onnx_model = model(nodes, {"x": [1, 4, 4], "s": [1, 1, 4]}, {"y": [1, 3]}, opset=15)
    error = error_of(lambda: import_onnx(onnx_model))
    (diagnostic,) = error.diagnostics
    assert location_label(diagnostic.location) == "nms7"
    assert "'nms7'" in diagnostic.message and "NonMaxSuppression" in diagnostic.message
    assert "opset 15" in diagnostic.message
    path = tmp_path / "nms.onnx"
    onnx.save(onnx_model, path)
    error = error_of(lambda: import_onnx(str(path)))
    assert error.diagnostics[0].format().startswith(f"{path}:2:1: error: node 'nms7'")


def test_unsupported_variant_is_a_located_error():
    onnx_model = single("Pad", {"x": [2, 3]}, [2, 9], initializers={
        "pads": np.asarray([0, 3, 0, 3], I64)}, attributes={"mode": "reflect"}, name="pad7")
    error = error_of(lambda: import_onnx(onnx_model))
    assert location_label(error.diagnostics[0].location) == "pad7"
    assert "reflect padding of 3 on an axis of 3 elements" in str(error)


def test_other_domain_is_a_located_error():
    node = helper.make_node("FusedConv", ["x"], ["y"], name="fused", domain="com.microsoft")
    onnx_model = helper.make_model(
        helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    error = error_of(lambda: import_onnx(onnx_model))
    assert location_label(error.diagnostics[0].location) == "fused"
    assert "com.microsoft.FusedConv" in str(error)


def test_corrupt_file_is_a_clear_error(tmp_path):
    path = tmp_path / "broken.onnx"
    path.write_bytes(b"\x08\x07\x12\xff\xff\xff not a protobuf")
    error = error_of(lambda: import_onnx(str(path)))
    assert str(error).startswith(f"{path}:1:1: error: cannot read ONNX model")
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(conv_relu_model().SerializeToString()[:100])
    assert "cannot read ONNX model" in str(error_of(lambda: import_onnx(str(truncated))))


def test_missing_and_empty_files_are_clear_errors(tmp_path):
    assert "no such file" in str(error_of(lambda: import_onnx(str(tmp_path / "none.onnx"))))
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    assert "holds no graph" in str(error_of(lambda: import_onnx(str(empty))))


def test_too_old_opset_is_an_error():
    onnx_model = single("Relu", {"x": [2]}, [2], opset=6)
    assert "opset 6 is not supported (opsets 7 to" in str(error_of(lambda: import_onnx(onnx_model)))


def test_opset_newer_than_installed_onnx_names_the_version(tmp_path):
    newest = onnx.defs.onnx_opset_version()
    onnx_model = single("Relu", {"x": [2]}, [2], opset=newest)
    import_onnx(onnx_model)  # the newest one the installed onnx knows is read
    onnx_model.opset_import[0].version = newest + 1
    path = tmp_path / "future.onnx"
    path.write_bytes(onnx_model.SerializeToString())
    message = str(error_of(lambda: import_onnx(str(path))))
    assert f"future.onnx:1:1: error: ONNX opset {newest + 1} is newer than the installed " \
        f"onnx {onnx.__version__}" in message


def test_dynamic_dimension_takes_input_shapes_else_1():
    from atvoss_mlir.frontend.onnx_importer import import_onnx_model
    onnx_model = single("Relu", {"x": ["N", 3]}, ["N", 3])
    imported = import_onnx_model(onnx_model)
    assert "tensor<1x3xf32>" in str(imported.module)
    assert [r.message for r in imported.remarks] == [
        "input 'x' has the dynamic dimension(s) 'N': compiled for 1 (x=1,3; --input-shape or "
        "input_shapes= for another size)"]
    module = import_onnx(onnx_model, input_shapes={"x": [2, 3]})
    assert "tensor<2x3xf32>" in str(module)
    assert "has rank 2, the shape given [2] rank 1" in str(
        error_of(lambda: import_onnx(onnx_model, input_shapes={"x": [2]})))


# -- models --------------------------------------------------------------------------------

def test_old_opset_model_with_initializers_as_graph_inputs():
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    onnx_model = model(nodes, {"x": [1, 3, 6, 5]}, {"y": [1, 4, 6, 5]},
                       {"w": randn(4, 3, 3, 3, seed=1), "b": randn(4, seed=2)}, opset=9,
                       initializers_as_inputs=True)
    assert [i.name for i in onnx_model.graph.input] == ["x", "w", "b"]
    module = import_onnx(onnx_model)
    assert "func.func @main(%arg0: tensor<1x3x6x5xf32>) -> tensor<1x4x6x5xf32>" in str(module)
    check(onnx_model, {"x": randn(1, 3, 6, 5)})


def test_shape_subgraph_folds_to_a_constant_reshape():
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"], name="shape"),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0, name="gather"),
        helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"], name="unsqueeze"),
        helper.make_node("Concat", ["batch1", "minus_one"], ["target"], axis=0, name="concat"),
        helper.make_node("Cast", ["target"], ["target64"], to=TensorProto.INT64, name="cast"),
        helper.make_node("Reshape", ["x", "target64"], ["y"], name="reshape"),
    ]
    onnx_model = model(nodes, {"x": [2, 3, 4, 5]}, {"y": [2, 60]},
                       {"zero": np.asarray(0, I64), "axes": np.asarray([0], I64),
                        "minus_one": np.asarray([-1], I64)}, opset=13)
    text = import_onnx_text(onnx_model, debug_info=True)
    body = text.split("func.func")[1]
    assert "tensor.collapse_shape" in body and "i64" not in body
    for folded in ("shape", "gather", "unsqueeze", "concat", "cast"):
        assert f'loc("{folded}")' not in text
    check(onnx_model, {"x": randn(2, 3, 4, 5)})


def test_constant_and_constant_of_shape_fold():
    nodes = [
        helper.make_node("Constant", [], ["shape"], name="const",
                         value=numpy_helper.from_array(np.asarray([2, 3], I64))),
        helper.make_node("ConstantOfShape", ["shape"], ["ones"], name="cos",
                         value=numpy_helper.from_array(np.asarray([1.5], np.float32))),
        helper.make_node("Mul", ["ones", "ones"], ["sq"], name="square"),
        helper.make_node("Add", ["x", "sq"], ["y"], name="add"),
    ]
    onnx_model = model(nodes, {"x": [2, 3]}, {"y": [2, 3]}, opset=13)
    text = import_onnx_text(onnx_model)
    assert text.count("linalg.generic") == 1 and "2.250000e+00" in text
    check(onnx_model, {"x": randn(2, 3)})


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_nd_of_constants_folds(reduction):
    """A mask built by ScatterND from constants (Swin's shifted-window
    attention) is a constant; negative indices count from the end."""
    nodes = [
        helper.make_node("ConstantOfShape", ["shape"], ["zeros"], name="zeros",
                         value=numpy_helper.from_array(np.asarray([0.5], np.float32))),
        helper.make_node("ScatterND", ["zeros", "indices", "updates"], ["mask"],
                         name="scatter", reduction=reduction),
        helper.make_node("Add", ["x", "mask"], ["y"], name="add"),
    ]
    indices = np.asarray([[[0, 1]], [[-1, 0]], [[1, 2]]], I64)
    updates = np.arange(12, dtype=np.float32).reshape(3, 1, 4) - 5
    onnx_model = model(nodes, {"x": [3, 3, 4]}, {"y": [3, 3, 4]},
                       {"shape": np.asarray([3, 3, 4], I64), "indices": indices,
                        "updates": updates}, opset=18)
    text = import_onnx_text(onnx_model, debug_info=True)
    assert 'loc("scatter")' not in text and text.count("linalg.generic") == 1
    check(onnx_model, {"x": randn(3, 3, 4)})


@pytest.mark.parametrize("reduction", ["none", "mul", "min"])
def test_scatter_nd_of_computed_tensors_with_constant_indices(reduction):
    """Each index tuple writes its slice of the updates into the data, in the
    order of the indices (rows 2 and 0 of x, then element [1, 3])."""
    nodes = [helper.make_node("Slice", ["x", "start", "end"], ["rows"], name="rows"),
             helper.make_node("Neg", ["rows"], ["updates"], name="neg"),
             helper.make_node("ScatterND", ["x", "row_indices", "updates"], ["scattered"],
                              name="scatter_rows", reduction=reduction),
             helper.make_node("ScatterND", ["scattered", "element_index", "value"], ["y"],
                              name="scatter_element", reduction=reduction)]
    onnx_model = model(nodes, {"x": [3, 4]}, {"y": [3, 4]},
                       {"row_indices": np.asarray([[2], [-3]], I64),
                        "start": np.asarray([1], I64), "end": np.asarray([3], I64),
                        "element_index": np.asarray([[1, 3]], I64),
                        "value": np.asarray([7.5], np.float32)}, opset=18)
    check(onnx_model, {"x": randn(3, 4)})


@pytest.mark.parametrize("indices,updates_shape", [
    (np.zeros((1, 0), I64), [1, 3, 4]),     # an empty tuple names the whole data
    (np.zeros((0, 1), I64), [0, 4])],       # no tuple: the data unchanged
    ids=["empty_tuples", "no_tuples"])
def test_scatter_nd_edge_shapes(indices, updates_shape):
    nodes = [helper.make_node("Identity", ["new"], ["updates"], name="updates"),
             helper.make_node("ScatterND", ["x", "indices", "updates"], ["y"], name="scatter")]
    onnx_model = model(nodes, {"x": [3, 4], "new": updates_shape}, {"y": [3, 4]},
                       {"indices": indices}, opset=18)
    check(onnx_model, {"x": randn(3, 4), "new": randn(*updates_shape, seed=1)})


def test_scatter_nd_into_a_scalar_is_a_located_error():
    nodes = [helper.make_node("ScatterND", ["x", "indices", "updates"], ["y"], name="scatter")]
    onnx_model = model(nodes, {"x": []}, {"y": []},
                       {"indices": np.zeros((1, 0), I64),
                        "updates": np.ones(1, np.float32)}, opset=18)
    message = str(error_of(lambda: import_onnx(onnx_model)))
    assert "node 'scatter' (ScatterND, opset 18): data is a scalar" in message


def test_scatter_nd_with_computed_indices_is_a_located_error():
    nodes = [helper.make_node("Cast", ["x"], ["indices"], to=TensorProto.INT64, name="cast"),
             helper.make_node("ScatterND", ["data", "indices", "updates"], ["y"],
                              name="scatter")]
    onnx_model = model(nodes, {"x": [2, 1]}, {"y": [3]},
                       {"data": np.zeros(3, np.float32),
                        "updates": np.ones(2, np.float32)}, opset=13)
    message = str(error_of(lambda: import_onnx(onnx_model)))
    assert "node 'scatter' (ScatterND, opset 13): ScatterND's indices (input 1) must be " \
        "constants" in message


def test_dead_nodes_dropout_and_identity_are_removed():
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Dropout", ["r"], ["d"], name="dropout"),
        helper.make_node("Identity", ["d"], ["y"], name="identity"),
        helper.make_node("Sigmoid", ["x"], ["unused"], name="dead"),
    ]
    onnx_model = model(nodes, {"x": [3, 4]}, {"y": [3, 4]}, opset=12)
    text = import_onnx_text(onnx_model, debug_info=True)
    assert 'loc("dead")' not in text and "math.exp" not in text
    assert 'loc("dropout")' not in text and 'loc("identity")' not in text
    check(onnx_model, {"x": randn(3, 4)})


def test_graph_output_that_is_an_input_or_a_constant():
    nodes = [helper.make_node("Identity", ["x"], ["y"], name="id"),
             helper.make_node("Constant", [], ["k"], name="k",
                              value=numpy_helper.from_array(np.ones(2, np.float32)))]
    onnx_model = model(nodes, {"x": [2]}, {"y": [2], "k": [2]})
    text = import_onnx_text(onnx_model)
    assert "return %arg0, %cst" in text


def test_weights_as_dense_resource_blobs():
    module = import_onnx(conv_relu_model(), weights="resource")
    text = str(module)
    assert "dense_resource<conv1.weight>" in text and "dialect_resources" in text
    assert "dense<" not in text.split("{-#")[0].replace("dense<1>", "").replace("dense<0>", "")


def test_text_api_elides_weights_on_request():
    text = import_onnx_text(conv_relu_model(), elide_weights=8)
    assert "dense_resource<__elided__>" in text
    assert "arith.constant dense<[[[[" in import_onnx_text(conv_relu_model())


def test_given_context_is_used():
    context = make_context()
    module = import_onnx(conv_relu_model(), context)
    assert module.context is context


def test_small_resnet_end_to_end():
    onnx_model = resnet50(width=8, image=64, classes=10, batch=2)
    check(onnx_model, {"input": randn(2, 3, 64, 64)})


def test_resnet50_import_time():
    """A ResNet-50-sized model (25.6M parameters) imports in seconds."""
    onnx_model = resnet50()
    parameters = sum(int(np.prod(i.dims)) for i in onnx_model.graph.initializer)
    timings = {}
    for weights in ("dense", "resource"):
        start = time.perf_counter()
        module = import_onnx(onnx_model, weights=weights)
        timings[weights] = time.perf_counter() - start
    text = module.operation.get_asm(large_elements_limit=16)
    print(f"\nResNet-50 ({parameters / 1e6:.1f}M parameters): import "
          + ", ".join(f"{w} weights {t:.2f} s" for w, t in timings.items()))
    assert parameters > 25_000_000
    assert text.count("linalg.conv_2d_nhwc_hwcf") == 53
    assert max(timings.values()) < 20.0


def opset_model(opset: int):
    """One small network spelled the way opset `opset` spells it: Slice, Pad,
    Clip, Split, Unsqueeze/Squeeze and ReduceMean parameters move from
    attributes to inputs at opsets 10, 11, 11, 13, 13 and 18."""
    nodes, initializers = [], {"w": randn(6, 3, 3, 3, seed=1), "b": randn(6, seed=2),
                               "fc": randn(4, 4, seed=3), "fcb": randn(4, seed=4)}

    def constant(name, values, dtype=I64):
        initializers[name] = np.asarray(values, dtype)
        return name

    if opset < 10:
        nodes.append(helper.make_node("Slice", ["x"], ["s"], starts=[1], ends=[9], axes=[3]))
    else:
        nodes.append(helper.make_node("Slice", ["x", constant("st", [1]), constant("en", [9]),
                                               constant("ax", [3])], ["s"]))
    if opset < 11:
        nodes.append(helper.make_node("Pad", ["s"], ["p"], pads=[0, 0, 1, 0, 0, 0, 0, 1]))
        nodes.append(helper.make_node("Clip", ["c"], ["r"], min=-1.0, max=1.5))
    else:
        nodes.append(helper.make_node("Pad", ["s", constant("pads", [0, 0, 1, 0, 0, 0, 0, 1])],
                                      ["p"]))
        nodes.append(helper.make_node("Clip", ["c", constant("lo", -1.0, np.float32),
                                               constant("hi", 1.5, np.float32)], ["r"]))
    nodes.insert(2, helper.make_node("Conv", ["p", "w", "b"], ["c"], strides=[2, 2],
                                     pads=[1, 1, 1, 1]))
    if opset < 13:
        nodes.append(helper.make_node("Split", ["r"], ["h0", "h1"], axis=1, split=[2, 4]))
    else:
        nodes.append(helper.make_node("Split", ["r", constant("sp", [2, 4])], ["h0", "h1"],
                                      axis=1))
    if opset < 18:
        nodes.append(helper.make_node("ReduceMean", ["h1"], ["m"], axes=[2, 3], keepdims=0))
    else:
        nodes.append(helper.make_node("ReduceMean", ["h1", constant("rax", [2, 3])], ["m"],
                                      keepdims=0))
    if opset < 13:
        nodes.append(helper.make_node("Unsqueeze", ["m"], ["u"], axes=[0]))
        nodes.append(helper.make_node("Squeeze", ["u"], ["q"], axes=[0]))
    else:
        nodes.append(helper.make_node("Unsqueeze", ["m", constant("ua", [0])], ["u"]))
        nodes.append(helper.make_node("Squeeze", ["u", constant("sa", [0])], ["q"]))
    nodes.append(helper.make_node("Gemm", ["q", "fc", "fcb"], ["g"]))
    nodes.append(helper.make_node("Softmax", ["g"], ["y"], axis=1))
    for i, node in enumerate(nodes):
        node.name = f"n{i}_{node.op_type}"
    return model(nodes, {"x": [2, 3, 7, 10]}, {"y": [2, 4]}, initializers, opset=opset)


@pytest.mark.parametrize("opset", range(9, 22))
def test_every_opset_from_9_to_21(opset):
    check(opset_model(opset), {"x": randn(2, 3, 7, 10)})


def test_malformed_node_is_a_located_error_not_a_traceback():
    onnx_model = single("Gemm", {"a": [2, 5]}, [2, 4], initializers={"b": randn(3, 4)},
                        name="fc_bad")
    error = error_of(lambda: import_onnx(onnx_model))
    assert location_label(error.diagnostics[0].location) == "fc_bad"
    onnx_model = single("MatMul", {"a": [2, 5], "b": [3, 4]}, [2, 4], name="mm_bad")
    error = error_of(lambda: import_onnx(onnx_model))
    assert location_label(error.diagnostics[0].location) == "mm_bad"
    assert "cannot multiply [2, 5] by [3, 4]" in str(error)
