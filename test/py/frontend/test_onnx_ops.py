"""Per-op numerics: single-node ONNX models imported, bufferized upstream and
run on the simulator, compared with onnxruntime (fp32, rtol 1e-4)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from onnx_testing import check, model, randn, single

I64 = np.int64


def conv_case(x_shape, w_shape, out_shape, bias=True, **attributes):
    initializers = {"w": randn(*w_shape, seed=1)}
    if bias:
        initializers["b"] = randn(w_shape[0], seed=2)
    return single("Conv", {"x": x_shape}, out_shape, attributes, initializers), \
        {"x": randn(*x_shape)}


CONV_CASES = {
    "stride2_pad1_batch2": conv_case([2, 3, 7, 9], [5, 3, 3, 3], [2, 5, 4, 5],
                                     strides=[2, 2], pads=[1, 1, 1, 1]),
    "no_bias_asymmetric_pads": conv_case([1, 5, 6, 5], [4, 5, 3, 2], [1, 4, 6, 6], bias=False,
                                         pads=[1, 0, 1, 2]),
    "dilation2": conv_case([1, 3, 9, 8], [2, 3, 3, 3], [1, 2, 5, 4], dilations=[2, 2]),
    "same_upper_stride2": conv_case([1, 3, 7, 6], [4, 3, 3, 3], [1, 4, 4, 3],
                                    auto_pad="SAME_UPPER", strides=[2, 2]),
    "same_lower_even_kernel": conv_case([1, 2, 5, 5], [3, 2, 2, 2], [1, 3, 5, 5],
                                        auto_pad="SAME_LOWER"),
    "valid": conv_case([1, 3, 6, 7], [2, 3, 3, 3], [1, 2, 4, 5], auto_pad="VALID"),
    "depthwise": conv_case([2, 5, 7, 6], [5, 1, 3, 3], [2, 5, 4, 3], group=5,
                           strides=[2, 2], pads=[1, 1, 1, 0]),
    "depthwise_multiplier2": conv_case([1, 3, 5, 5], [6, 1, 3, 3], [1, 6, 5, 5], group=3,
                                       pads=[1, 1, 1, 1]),
    "grouped": conv_case([1, 6, 5, 4], [4, 3, 3, 1], [1, 4, 3, 4], group=2),
    "pointwise": conv_case([1, 7, 3, 5], [9, 7, 1, 1], [1, 9, 3, 5]),
    "conv1d": conv_case([2, 3, 11], [4, 3, 3], [2, 4, 6], strides=[2], pads=[1, 1]),
}


@pytest.mark.parametrize("case", CONV_CASES.values(), ids=CONV_CASES.keys())
def test_conv(case):
    check(*case)


def test_conv_runtime_weight():
    onnx_model = single("Conv", {"x": [1, 3, 5, 5], "w": [4, 3, 3, 3]}, [1, 4, 3, 3])
    check(onnx_model, {"x": randn(1, 3, 5, 5), "w": randn(4, 3, 3, 3, seed=3)})


# -- matrix products -----------------------------------------------------------------------

GEMM_CASES = {
    "plain": ({}, [3, 5], [5, 4], [4]),
    "transB_alpha_beta": ({"transB": 1, "alpha": 0.5, "beta": 2.0}, [3, 5], [4, 5], [4]),
    "transA_bias_matrix": ({"transA": 1}, [5, 3], [5, 4], [3, 4]),
    "bias_column": ({"beta": 0.5}, [3, 5], [5, 4], [3, 1]),
    "no_bias": ({}, [2, 7], [7, 3], None),
}


@pytest.mark.parametrize("case", GEMM_CASES.values(), ids=GEMM_CASES.keys())
def test_gemm(case):
    attributes, a_shape, b_shape, c_shape = case
    initializers = {"b": randn(*b_shape, seed=1)}
    if c_shape:
        initializers["c"] = randn(*c_shape, seed=2)
    m = a_shape[1] if attributes.get("transA") else a_shape[0]
    n = b_shape[0] if attributes.get("transB") else b_shape[1]
    check(single("Gemm", {"a": a_shape}, [m, n], attributes, initializers), {"a": randn(*a_shape)})


def test_gemm_runtime_operands():
    onnx_model = single("Gemm", {"a": [3, 5], "b": [4, 5], "c": [4]}, [3, 4],
                        {"transB": 1, "alpha": 1.5, "beta": 0.5})
    check(onnx_model, {"a": randn(3, 5), "b": randn(4, 5, seed=1), "c": randn(4, seed=2)})


MATMUL_CASES = {
    "2d": ([3, 5], [5, 4], [3, 4]),
    "batched_weight_2d": ([2, 3, 5], [5, 4], [2, 3, 4]),
    "batched_both": ([2, 3, 5], [2, 5, 4], [2, 3, 4]),
    "broadcast_batch": ([2, 1, 3, 5], [3, 5, 2], [2, 3, 3, 2]),
    "vector_left": ([5], [2, 5, 3], [2, 3]),
    "vector_right": ([2, 3, 5], [5], [2, 3]),
}


@pytest.mark.parametrize("case", MATMUL_CASES.values(), ids=MATMUL_CASES.keys())
def test_matmul(case):
    a_shape, b_shape, out_shape = case
    check(single("MatMul", {"a": a_shape, "b": b_shape}, out_shape),
          {"a": randn(*a_shape), "b": randn(*b_shape, seed=1)})


# -- elementwise ---------------------------------------------------------------------------

@pytest.mark.parametrize("op_type", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
@pytest.mark.parametrize("shapes", [([2, 3, 4], [2, 3, 4]), ([2, 3, 4], [4]),
                                    ([2, 1, 4], [3, 1]), ([1], [2, 3])],
                         ids=["same", "trailing", "both_ways", "scalar_like"])
def test_binary(op_type, shapes):
    a_shape, b_shape = shapes
    out_shape = list(np.broadcast_shapes(a_shape, b_shape))
    b_value = randn(*b_shape, seed=1)
    if op_type == "Div":
        b_value = np.where(np.abs(b_value) < 0.1, 0.5, b_value).astype(np.float32)
    check(single(op_type, {"a": a_shape, "b": b_shape}, out_shape),
          {"a": randn(*a_shape), "b": b_value})


def test_binary_constant_operand():
    check(single("Add", {"a": [2, 3]}, [2, 3], initializers={"k": randn(3, seed=4)}),
          {"a": randn(2, 3)})


@pytest.mark.parametrize("op_type", ["Sum", "Max", "Min", "Mean"])
def test_variadic(op_type):
    onnx_model = single(op_type, {"a": [2, 3], "b": [3], "c": [2, 1]}, [2, 3])
    check(onnx_model, {"a": randn(2, 3), "b": randn(3, seed=1), "c": randn(2, 1, seed=2)})


UNARY_CASES = {
    "Relu": {}, "Sigmoid": {}, "Tanh": {}, "Erf": {}, "Exp": {}, "Neg": {}, "Abs": {},
    "LeakyRelu": {"alpha": 0.2}, "HardSigmoid": {"alpha": 0.3, "beta": 0.4}, "HardSwish": {},
    "Elu": {"alpha": 0.7}, "Softplus": {}, "Floor": {}, "Ceil": {},
}


@pytest.mark.parametrize("op_type", UNARY_CASES, ids=UNARY_CASES)
def test_unary(op_type):
    opset = 14 if op_type == "HardSwish" else 13
    check(single(op_type, {"x": [2, 3, 5]}, [2, 3, 5], UNARY_CASES[op_type], opset=opset),
          {"x": randn(2, 3, 5) * 3})


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    check(single("Gelu", {"x": [3, 7]}, [3, 7], {"approximate": approximate}, opset=20),
          {"x": randn(3, 7) * 2})


def test_sqrt_log_reciprocal():
    x = np.abs(randn(4, 5)) + 0.5
    for op_type in ("Sqrt", "Log", "Reciprocal"):
        check(single(op_type, {"x": [4, 5]}, [4, 5]), {"x": x})


def test_prelu():
    check(single("PRelu", {"x": [2, 3, 4, 4]}, [2, 3, 4, 4],
                 initializers={"slope": randn(3, 1, 1, seed=1)}), {"x": randn(2, 3, 4, 4)})


def test_clip_attributes_opset6_style():
    check(single("Clip", {"x": [3, 4]}, [3, 4], {"min": -0.5, "max": 0.7}, opset=9),
          {"x": randn(3, 4)})


@pytest.mark.parametrize("bounds", [(-0.5, 0.7), (None, 0.2), (-0.1, None)],
                         ids=["both", "max_only", "min_only"])
def test_clip_inputs(bounds):
    low, high = bounds
    initializers, extra = {}, []
    if low is not None:
        initializers["lo"] = np.asarray(low, np.float32)
    else:
        extra.append("")
    names = ["x"] + (["lo"] if low is not None else [""])
    if high is not None:
        initializers["hi"] = np.asarray(high, np.float32)
        names.append("hi")
    node = helper.make_node("Clip", names, ["y"], name="clip")
    check(model([node], {"x": [3, 4]}, {"y": [3, 4]}, initializers, opset=13), {"x": randn(3, 4)})


def test_cast_float_to_float16_and_back():
    nodes = [helper.make_node("Cast", ["x"], ["h"], to=10, name="down"),
             helper.make_node("Cast", ["h"], ["y"], to=1, name="up")]
    check(model(nodes, {"x": [3, 5]}, {"y": [3, 5]}), {"x": randn(3, 5)}, rtol=1e-3)


# -- normalization, pooling, softmax -------------------------------------------------------

def test_batch_normalization():
    c = 5
    initializers = {"scale": randn(c, seed=1), "bias": randn(c, seed=2),
                    "mean": randn(c, seed=3), "var": np.abs(randn(c, seed=4)) + 0.1}
    check(single("BatchNormalization", {"x": [2, c, 3, 4]}, [2, c, 3, 4], {"epsilon": 1e-3},
                 initializers), {"x": randn(2, c, 3, 4)})


def test_batch_normalization_opset9_runtime_parameters():
    c = 3
    onnx_model = single("BatchNormalization", {"x": [2, c, 4], "s": [c], "b": [c], "m": [c],
                                               "v": [c]}, [2, c, 4], opset=9)
    check(onnx_model, {"x": randn(2, c, 4), "s": randn(c, seed=1), "b": randn(c, seed=2),
                       "m": randn(c, seed=3), "v": np.abs(randn(c, seed=4)) + 0.1})


def test_lrn():
    check(single("LRN", {"x": [2, 7, 3, 4]}, [2, 7, 3, 4],
                 {"size": 5, "alpha": 0.01, "beta": 0.75, "bias": 2.0}), {"x": randn(2, 7, 3, 4)})


@pytest.mark.parametrize("beta", [0.5, 0.75, 1.0, 0.6])
def test_lrn_power(beta):
    """Each beta with a form of its own (rsqrt products, a division, exp and
    log) and the general one; a large alpha makes the power matter."""
    check(single("LRN", {"x": [1, 6, 3, 4]}, [1, 6, 3, 4],
                 {"size": 3, "alpha": 2.0, "beta": beta, "bias": 0.5}),
          {"x": randn(1, 6, 3, 4, seed=3)})


POOL_CASES = {
    "max_3x3_stride2_pad1": ("MaxPool", [2, 3, 9, 8], [2, 3, 5, 4],
                             {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "max_ceil_mode": ("MaxPool", [1, 2, 6, 7], [1, 2, 3, 4],
                      {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
    "max_same_upper": ("MaxPool", [1, 3, 5, 6], [1, 3, 3, 3],
                       {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    "max_dilated": ("MaxPool", [1, 2, 7, 7], [1, 2, 3, 3],
                    {"kernel_shape": [3, 3], "dilations": [2, 2]}),
    "avg_exclude_pad": ("AveragePool", [2, 3, 7, 6], [2, 3, 4, 3],
                        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 0]}),
    "avg_include_pad": ("AveragePool", [1, 3, 7, 6], [1, 3, 4, 3],
                        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 0],
                         "count_include_pad": 1}),
    "avg_ceil_include_pad": ("AveragePool", [1, 2, 6, 6], [1, 2, 4, 4],
                             {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                              "ceil_mode": 1, "count_include_pad": 1}),
    "avg_same_lower": ("AveragePool", [1, 2, 5, 5], [1, 2, 5, 5],
                       {"kernel_shape": [2, 2], "auto_pad": "SAME_LOWER"}),
    "max_1d": ("MaxPool", [2, 3, 9], [2, 3, 4], {"kernel_shape": [3], "strides": [2]}),
}


@pytest.mark.parametrize("case", POOL_CASES.values(), ids=POOL_CASES.keys())
def test_pool(case):
    op_type, x_shape, out_shape, attributes = case
    check(single(op_type, {"x": x_shape}, out_shape, attributes, opset=19), {"x": randn(*x_shape)})


@pytest.mark.parametrize("op_type", ["GlobalAveragePool", "GlobalMaxPool"])
def test_global_pool(op_type):
    check(single(op_type, {"x": [2, 5, 3, 7]}, [2, 5, 1, 1]), {"x": randn(2, 5, 3, 7)})


@pytest.mark.parametrize("op_type", ["Softmax", "LogSoftmax"])
@pytest.mark.parametrize("opset,axis", [(11, 1), (13, 1), (13, -1)])
def test_softmax(op_type, opset, axis):
    check(single(op_type, {"x": [2, 3, 5]}, [2, 3, 5], {"axis": axis}, opset=opset),
          {"x": randn(2, 3, 5) * 3})


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_normalization(axis):
    shape = [2, 3, 5]
    normalized = shape[axis % 3:]
    check(single("LayerNormalization", {"x": shape}, shape, {"axis": axis, "epsilon": 1e-4},
                 {"scale": randn(*normalized, seed=1), "bias": randn(*normalized, seed=2)}),
          {"x": randn(*shape)})


@pytest.mark.parametrize("opset,keepdims,axes", [(13, 1, [1]), (13, 0, [0, 2]), (18, 1, [-1]),
                                                 (18, 0, None)])
def test_reduce_mean(opset, keepdims, axes):
    shape = [2, 3, 5]
    reduced = range(3) if axes is None else [a % 3 for a in axes]
    out_shape = [1 if d in reduced else n for d, n in enumerate(shape)] if keepdims else \
        [n for d, n in enumerate(shape) if d not in reduced]
    attributes, initializers = {"keepdims": keepdims}, {}
    if axes is not None and opset < 18:
        attributes["axes"] = axes
    elif axes is not None:
        initializers["axes"] = np.asarray(axes, I64)
    check(single("ReduceMean", {"x": shape}, out_shape, attributes, initializers, opset=opset),
          {"x": randn(*shape)})


@pytest.mark.parametrize("op_type", ["ReduceSum", "ReduceMax", "ReduceMin"])
def test_other_reductions(op_type):
    initializers = {"axes": np.asarray([1], I64)} if op_type == "ReduceSum" else {}
    attributes = {} if op_type == "ReduceSum" else {"axes": [1]}
    check(single(op_type, {"x": [2, 4, 3]}, [2, 1, 3], attributes, initializers, opset=13),
          {"x": randn(2, 4, 3)})


# -- shapes and data movement --------------------------------------------------------------

def test_flatten():
    for axis, out_shape in [(1, [2, 60]), (2, [6, 20]), (0, [1, 120]), (-1, [24, 5])]:
        check(single("Flatten", {"x": [2, 3, 4, 5]}, out_shape, {"axis": axis}),
              {"x": randn(2, 3, 4, 5)})


@pytest.mark.parametrize("target,out_shape", [([0, -1], [2, 60]), ([6, 4, 5], [6, 4, 5]),
                                              ([2, 3, 20, 1], [2, 3, 20, 1]), ([4, 30], [4, 30])])
def test_reshape(target, out_shape):
    check(single("Reshape", {"x": [2, 3, 4, 5]}, out_shape,
                 initializers={"shape": np.asarray(target, I64)}), {"x": randn(2, 3, 4, 5)})


def test_transpose():
    check(single("Transpose", {"x": [2, 3, 4]}, [4, 2, 3], {"perm": [2, 0, 1]}),
          {"x": randn(2, 3, 4)})
    check(single("Transpose", {"x": [2, 3]}, [3, 2]), {"x": randn(2, 3)})


def test_concat():
    onnx_model = single("Concat", {"a": [2, 3, 4], "b": [2, 1, 4]}, [2, 7, 4], {"axis": -2},
                        {"k": randn(2, 3, 4, seed=5)})
    check(onnx_model, {"a": randn(2, 3, 4), "b": randn(2, 1, 4, seed=1)})


SPLIT_CASES = {  # opset, attributes, split input, input shape, output widths
    "attribute_opset11": (11, {"split": [2, 5]}, None, [2, 7], [2, 5]),
    "input_opset13": (13, {}, [2, 5], [2, 7], [2, 5]),
    "equal_parts": (13, {}, None, [2, 14], [7, 7]),
    "num_outputs_uneven_opset18": (18, {"num_outputs": 2}, None, [2, 7], [4, 3]),
}


@pytest.mark.parametrize("case", SPLIT_CASES.values(), ids=SPLIT_CASES.keys())
def test_split(case):
    opset, attributes, sizes, shape, widths = case
    initializers = {} if sizes is None else {"split": np.asarray(sizes, I64)}
    outputs = {f"y{i}": [2, w] for i, w in enumerate(widths)}
    node = helper.make_node("Split", ["x"] + list(initializers), list(outputs), name="split",
                            axis=1, **attributes)
    check(model([node], {"x": shape}, outputs, initializers, opset=opset), {"x": randn(*shape)})


@pytest.mark.parametrize("variant", ["opset9_attributes", "inputs", "negative_step",
                                     "clamped_ends", "axes_subset_steps"])
def test_slice(variant):
    shape = [4, 6, 5]
    x = randn(*shape)
    if variant == "opset9_attributes":
        onnx_model = single("Slice", {"x": shape}, [4, 3, 3],
                            {"starts": [1, 1], "ends": [4, -1], "axes": [1, 2]}, opset=9)
    else:
        starts, ends, axes, steps = {
            "inputs": ([1, 0], [3, 4], [0, 2], [1, 1]),
            "negative_step": ([-1, 4], [-5, 0], [1, 2], [-1, -2]),
            "clamped_ends": ([0], [1000], [1], [2]),
            "axes_subset_steps": ([1, -3], [4, 5], [0, 1], [2, 1]),
        }[variant]
        initializers = {"starts": np.asarray(starts, I64), "ends": np.asarray(ends, I64),
                        "axes": np.asarray(axes, I64), "steps": np.asarray(steps, I64)}
        from onnx_testing import reference
        probe = single("Slice", {"x": shape}, None, initializers=initializers)
        out_shape = list(reference(probe, {"x": x})[0].shape)
        onnx_model = single("Slice", {"x": shape}, out_shape, initializers=initializers)
    check(onnx_model, {"x": x})


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze(opset):
    if opset < 13:
        nodes = [helper.make_node("Squeeze", ["x"], ["s"], axes=[1], name="sq"),
                 helper.make_node("Unsqueeze", ["s"], ["y"], axes=[0, 3], name="unsq")]
        initializers = {}
    else:
        nodes = [helper.make_node("Squeeze", ["x", "sa"], ["s"], name="sq"),
                 helper.make_node("Unsqueeze", ["s", "ua"], ["y"], name="unsq")]
        initializers = {"sa": np.asarray([1], I64), "ua": np.asarray([0, -1], I64)}
    check(model(nodes, {"x": [3, 1, 4]}, {"y": [1, 3, 4, 1]}, initializers, opset=opset),
          {"x": randn(3, 1, 4)})


def test_squeeze_all_unit_dimensions():
    check(single("Squeeze", {"x": [1, 3, 1, 2]}, [3, 2]), {"x": randn(1, 3, 1, 2)})


@pytest.mark.parametrize("opset", [9, 13, 18])
def test_pad_constant(opset):
    pads = [0, 1, 2, 0, 2, 1]
    if opset < 11:
        onnx_model = single("Pad", {"x": [2, 3, 4]}, [2, 6, 7], {"pads": pads, "value": 0.5},
                            opset=opset)
    elif opset < 18:
        onnx_model = single("Pad", {"x": [2, 3, 4]}, [2, 6, 7],
                            initializers={"pads": np.asarray(pads, I64),
                                          "value": np.asarray(0.5, np.float32)}, opset=opset)
    else:
        onnx_model = single("Pad", {"x": [2, 3, 4]}, [2, 6, 4],
                            initializers={"pads": np.asarray([1, 2], I64),
                                          "value": np.asarray(0.5, np.float32),
                                          "axes": np.asarray([1], I64)}, opset=opset)
    check(onnx_model, {"x": randn(2, 3, 4)})


def test_expand_and_gather():
    nodes = [helper.make_node("Expand", ["x", "shape"], ["e"], name="expand"),
             helper.make_node("Gather", ["e", "idx"], ["y"], axis=1, name="gather")]
    onnx_model = model(nodes, {"x": [3, 1]}, {"y": [2, 2, 4]},
                       {"shape": np.asarray([2, 3, 4], I64), "idx": np.asarray([2, 0], I64)})
    check(onnx_model, {"x": randn(3, 1)})


CONV_TRANSPOSE_CASES = {  # x shape, weight shape, attributes
    "stride2_pads": ([1, 3, 4, 5], [3, 2, 3, 3], {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
    "output_padding_batch2": ([2, 2, 3, 3], [2, 4, 3, 3],
                              {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}),
    "output_shape": ([1, 2, 3, 4], [2, 3, 2, 2], {"strides": [2, 2], "output_shape": [6, 8]}),
    "same_upper": ([1, 2, 3, 3], [2, 2, 3, 3], {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    "grouped_dilated": ([1, 4, 3, 3], [4, 1, 2, 2], {"group": 2, "dilations": [2, 2]}),
    "kernel_4_stride_2": ([1, 3, 5, 4], [3, 2, 4, 4], {"strides": [2, 2], "pads": [1, 1, 1, 1]}),
}


@pytest.mark.parametrize("case", CONV_TRANSPOSE_CASES.values(), ids=CONV_TRANSPOSE_CASES.keys())
def test_conv_transpose(case):
    x_shape, w_shape, attributes = case
    from onnx_testing import reference
    x = randn(*x_shape)
    initializers = {"w": randn(*w_shape, seed=1), "b": randn(w_shape[1] * attributes.get("group", 1),
                                                             seed=2)}
    probe = single("ConvTranspose", {"x": x_shape}, None, attributes, initializers)
    out_shape = list(reference(probe, {"x": x})[0].shape)
    check(single("ConvTranspose", {"x": x_shape}, out_shape, attributes, initializers), {"x": x})


def test_reshape_to_and_from_rank_0():
    nodes = [helper.make_node("Reshape", ["x", "scalar"], ["s"], name="to_scalar"),
             helper.make_node("Reshape", ["s", "shape"], ["y"], name="from_scalar")]
    check(model(nodes, {"x": [1, 1]}, {"y": [1, 1, 1]},
                {"scalar": np.asarray([], I64), "shape": np.asarray([1, 1, 1], I64)}),
          {"x": randn(1, 1)})
