"""Hypothesis strategies for mutated and structurally invalid ONNX models and
for random `--target` strings.

Seeds are small valid models (conv + batch-norm + relu, matmul, gemm,
broadcasting elementwise, pooling, depthwise conv, reshape/flatten, a small
residual block); each input is a seed with one to three structural
mutations: wrong shapes, missing initializers, cycles, unknown ops, opset
mismatches, huge and zero-size dimensions, NaN/Inf weights, bad attributes,
element types, dropped or duplicated nodes, undefined outputs, byte
corruption of the serialized file.
"""

from __future__ import annotations

import functools

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

from atvoss_mlir.target import NpuTarget
import dataclasses


def _model(nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(
        nodes, "fuzz",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
        [numpy_helper.from_array(v, n) for n, v in initializers])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def _w(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 0.2


@functools.lru_cache(maxsize=None)
def seeds() -> tuple[bytes, ...]:
    make = helper.make_node
    models = [
        _model([make("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3],
                     pads=[1, 1, 1, 1]),
                make("BatchNormalization", ["c", "g", "be", "m", "v"], ["n"], name="bn"),
                make("Relu", ["n"], ["y"], name="relu")],
               [("x", [1, 4, 8, 8])], [("y", [1, 8, 8, 8])],
               [("w", _w(8, 4, 3, 3)), ("b", _w(8)), ("g", _w(8) + 1), ("be", _w(8)),
                ("m", _w(8)), ("v", np.abs(_w(8)) + 0.5)]),
        _model([make("MatMul", ["x", "w"], ["y"], name="matmul")],
               [("x", [16, 32])], [("y", [16, 24])], [("w", _w(32, 24))]),
        _model([make("Gemm", ["x", "w", "b"], ["y"], name="gemm", transB=1)],
               [("x", [4, 32])], [("y", [4, 10])], [("w", _w(10, 32)), ("b", _w(10))]),
        _model([make("Add", ["x", "b"], ["s"], name="add"),
                make("Mul", ["s", "x"], ["p"], name="mul"),
                make("Sigmoid", ["p"], ["y"], name="sigmoid")],
               [("x", [2, 3, 8])], [("y", [2, 3, 8])], [("b", _w(8))]),
        _model([make("MaxPool", ["x"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
                make("GlobalAveragePool", ["p"], ["y"], name="gap")],
               [("x", [1, 4, 8, 8])], [("y", [1, 4, 1, 1])]),
        _model([make("Conv", ["x", "w"], ["y"], name="depthwise", kernel_shape=[3, 3],
                     group=4, pads=[1, 1, 1, 1])],
               [("x", [1, 4, 6, 6])], [("y", [1, 4, 6, 6])], [("w", _w(4, 1, 3, 3))]),
        # Two filters per channel: a depthwise conv over the channels repeated.
        _model([make("Conv", ["x", "w", "b"], ["y"], name="multiplier", kernel_shape=[3, 3],
                     group=4, strides=[2, 2], pads=[1, 1, 1, 1])],
               [("x", [1, 4, 7, 7])], [("y", [1, 8, 4, 4])], [("w", _w(8, 1, 3, 3)),
                                                              ("b", _w(8))]),
        _model([make("Flatten", ["x"], ["f"], name="flatten"),
                make("Reshape", ["f", "shape"], ["r"], name="reshape"),
                make("Transpose", ["r"], ["y"], name="transpose", perm=[1, 0])],
               [("x", [2, 3, 4])], [("y", [4, 6])],
               [("shape", np.array([6, 4], np.int64))]),
        _model([make("Conv", ["x", "w1"], ["a"], name="conv1", kernel_shape=[1, 1]),
                make("Relu", ["a"], ["r"], name="relu1"),
                make("Conv", ["r", "w2"], ["c"], name="conv2", kernel_shape=[3, 3],
                     pads=[1, 1, 1, 1]),
                make("Add", ["c", "x"], ["s"], name="add"),
                make("Relu", ["s"], ["y"], name="out")],
               [("x", [1, 8, 8, 8])], [("y", [1, 8, 8, 8])],
               [("w1", _w(8, 8, 1, 1)), ("w2", _w(8, 8, 3, 3, seed=1))]),
        # Shape computations the importer folds with numpy.
        _model([make("ConstantOfShape", ["shape"], ["c"], name="const_of_shape",
                     value=numpy_helper.from_array(np.array([0.5], np.float32))),
                make("Expand", ["x", "shape"], ["e"], name="expand"),
                make("Add", ["e", "c"], ["a"], name="add"),
                make("Concat", ["a", "a"], ["t"], name="concat", axis=1),
                make("Range", ["start", "limit", "delta"], ["r"], name="range"),
                make("Cast", ["r"], ["rf"], name="cast", to=TensorProto.FLOAT),
                make("Add", ["t", "rf"], ["y"], name="add_range")],
               [("x", [1, 4])], [("y", [2, 8])],
               [("shape", np.array([2, 4], np.int64)),
                ("start", np.array(0, np.int64)), ("limit", np.array(8, np.int64)),
                ("delta", np.array(1, np.int64))]),
    ]
    models += _quantized_seeds()
    return tuple(m.SerializeToString() for m in models)


def _quantized_seeds() -> list:
    """A QDQ residual block with an AveragePool, and the same in onnxruntime's
    QOperator format (com.microsoft ops)."""
    make = helper.make_node
    u8, i8, f32 = np.uint8, np.int8, np.float32
    params = [("xs", np.array(0.05, f32)), ("xz", np.array(128, u8)),
              ("ys", np.array(0.1, f32)), ("yz", np.array(120, u8)),
              ("wq", np.random.default_rng(2).integers(-60, 60, (8, 8, 1, 1)).astype(i8)),
              ("ws", np.array(0.02, f32)), ("wz", np.array(0, i8))]
    qdq = _model([make("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="qx"),
                  make("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], name="dqx"),
                  make("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], name="dqw"),
                  make("Conv", ["xd", "wd"], ["c"], name="conv"),
                  make("QuantizeLinear", ["c", "ys", "yz"], ["cq"], name="qc"),
                  make("DequantizeLinear", ["cq", "ys", "yz"], ["cd"], name="dqc"),
                  make("Add", ["cd", "xd"], ["a"], name="add"),
                  make("QuantizeLinear", ["a", "ys", "yz"], ["aq"], name="qa"),
                  make("DequantizeLinear", ["aq", "ys", "yz"], ["ad"], name="dqa"),
                  make("AveragePool", ["ad"], ["p"], name="pool", kernel_shape=[2, 2],
                       strides=[2, 2]),
                  make("QuantizeLinear", ["p", "ys", "yz"], ["pq"], name="qp"),
                  make("DequantizeLinear", ["pq", "ys", "yz"], ["y"], name="dqp")],
                 [("x", [1, 8, 8, 8])], [("y", [1, 8, 4, 4])], params, opset=13)
    ms = "com.microsoft"
    qop = _model([make("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="qx"),
                  make("QLinearConv", ["xq", "xs", "xz", "wq", "ws", "wz", "ys", "yz"], ["cq"],
                       name="conv"),
                  make("QLinearAdd", ["cq", "ys", "yz", "xq", "xs", "xz", "ys", "yz"], ["aq"],
                       name="add", domain=ms),
                  make("QLinearAveragePool", ["aq", "ys", "yz", "ys", "yz"], ["pq"],
                       name="pool", domain=ms, kernel_shape=[2, 2], strides=[2, 2]),
                  make("QLinearConcat", ["ys", "yz", "pq", "ys", "yz", "pq", "xs", "xz"],
                       ["tq"], name="concat", domain=ms, axis=1),
                  make("QLinearGlobalAveragePool", ["tq", "ys", "yz", "ys", "yz"], ["gq"],
                       name="gap", domain=ms, channels_last=0),
                  make("DequantizeLinear", ["gq", "ys", "yz"], ["y"], name="dqg")],
                 [("x", [1, 8, 8, 8])], [("y", [1, 16, 1, 1])], params, opset=13)
    qop.opset_import.append(helper.make_opsetid(ms, 1))
    return [qdq, qop]


OP_TYPES = ["Conv", "MatMul", "Gemm", "Relu", "Add", "Mul", "Softmax", "MaxPool",
            "AveragePool", "BatchNormalization", "Reshape", "Transpose", "Concat", "Gather",
            "Loop", "If", "NonZero", "Resize", "FooBar", "", "Identity", "Constant", "Split",
            "LSTM", "Einsum", "Pad", "Slice", "Squeeze", "Cast", "QuantizeLinear"]
DIMS = [0, 1, 2, 3, 7, 1000000, 10**9, 2**31, 2**40, -1, -5]
ELEM_TYPES = [TensorProto.FLOAT16, TensorProto.DOUBLE, TensorProto.INT64, TensorProto.INT8,
              TensorProto.BOOL, TensorProto.STRING, TensorProto.UINT8, TensorProto.BFLOAT16,
              TensorProto.COMPLEX64, 0, 99]
SPECIAL_FLOATS = [np.nan, np.inf, -np.inf, 65504.0, 1e30, 1e-30, -0.0]
MUTATIONS = ["wrong_shape", "missing_initializer", "cycle", "unknown_op", "opset",
             "huge_dim", "zero_size", "nan_inf", "attribute", "remove_attribute",
             "elem_type", "drop_node", "duplicate_node", "undefined_output", "drop_input",
             "extra_input", "domain", "initializer_shape", "corrupt_bytes", "int_values"]
HUGE_INTS = [0, -1, 1, 3, 2**31, 10**6, 10**12, -10**12]


def _pick(draw, items):
    return items[draw(st.integers(0, len(items) - 1))] if len(items) else None


@st.composite
def _mutate(draw, model: onnx.ModelProto) -> str:
    """Mutate `model` in place; returns the mutation's name."""
    graph = model.graph
    kind = draw(st.sampled_from(MUTATIONS))
    if kind in ("wrong_shape", "huge_dim", "zero_size"):
        infos = list(graph.input) + list(graph.output)
        info = _pick(draw, infos)
        dims = info.type.tensor_type.shape.dim
        if len(dims):
            value = {"wrong_shape": draw(st.sampled_from([1, 2, 3, 5, 9])),
                     "huge_dim": draw(st.sampled_from([10**6, 10**9, 2**40])),
                     "zero_size": 0}[kind]
            dims[draw(st.integers(0, len(dims) - 1))].dim_value = value
    elif kind == "missing_initializer" and len(graph.initializer):
        del graph.initializer[draw(st.integers(0, len(graph.initializer) - 1))]
    elif kind == "cycle" and len(graph.node):
        node = _pick(draw, graph.node)
        later = graph.node[draw(st.integers(0, len(graph.node) - 1))]
        if len(node.input):
            node.input[draw(st.integers(0, len(node.input) - 1))] = _pick(draw, later.output)
    elif kind == "unknown_op" and len(graph.node):
        _pick(draw, graph.node).op_type = draw(st.sampled_from(OP_TYPES))
    elif kind == "opset":
        model.opset_import[0].version = draw(st.integers(0, 30))
    elif kind == "nan_inf" and len(graph.initializer):
        index = draw(st.integers(0, len(graph.initializer) - 1))
        array = numpy_helper.to_array(graph.initializer[index]).copy()
        if array.size and array.dtype.kind == "f":
            array.flat[draw(st.integers(0, array.size - 1))] = draw(st.sampled_from(SPECIAL_FLOATS))
            if draw(st.booleans()):
                array[...] = draw(st.sampled_from(SPECIAL_FLOATS))
            graph.initializer[index].CopyFrom(numpy_helper.from_array(array, graph.initializer[index].name))
    elif kind == "attribute" and len(graph.node):
        node = _pick(draw, graph.node)
        name = draw(st.sampled_from(["kernel_shape", "strides", "pads", "dilations", "group",
                                     "axis", "perm", "transA", "transB", "epsilon",
                                     "auto_pad", "ceil_mode", "alpha"]))
        value = draw(st.one_of(
            st.lists(st.integers(-3, 9), min_size=1, max_size=5), st.integers(-3, 2**33),
            st.sampled_from([0.0, -1.0, float("nan"), 1e30]),
            st.sampled_from(["SAME_UPPER", "VALID", "NOTSET", "bogus"])))
        kept = [a for a in node.attribute if a.name != name]
        del node.attribute[:]
        node.attribute.extend(kept + [helper.make_attribute(name, value)])
        if draw(st.booleans()):  # an empty list, whose type make_attribute cannot infer
            node.attribute[-1].ClearField("ints")
    elif kind == "remove_attribute" and len(graph.node):
        node = _pick(draw, graph.node)
        if len(node.attribute):
            del node.attribute[draw(st.integers(0, len(node.attribute) - 1))]
    elif kind == "elem_type":
        infos = list(graph.input) + list(graph.output)
        _pick(draw, infos).type.tensor_type.elem_type = draw(st.sampled_from(ELEM_TYPES))
        if len(graph.initializer) and draw(st.booleans()):
            init = _pick(draw, graph.initializer)
            array = numpy_helper.to_array(init)
            dtype = draw(st.sampled_from([np.float16, np.float64, np.int64, np.int8, np.bool_]))
            init.CopyFrom(numpy_helper.from_array(array.astype(dtype), init.name))
    elif kind == "drop_node" and len(graph.node):
        del graph.node[draw(st.integers(0, len(graph.node) - 1))]
    elif kind == "duplicate_node" and len(graph.node):
        graph.node.insert(draw(st.integers(0, len(graph.node))), _pick(draw, graph.node))
    elif kind == "undefined_output" and len(graph.output):
        _pick(draw, graph.output).name = draw(st.sampled_from(["nowhere", "x", ""]))
    elif kind == "drop_input" and len(graph.node):
        node = _pick(draw, graph.node)
        if len(node.input):
            del node.input[draw(st.integers(0, len(node.input) - 1))]
    elif kind == "extra_input" and len(graph.node):
        _pick(draw, graph.node).input.append(draw(st.sampled_from(["x", "", "undefined"])))
    elif kind == "domain" and len(graph.node):
        _pick(draw, graph.node).domain = draw(st.sampled_from(["com.microsoft", "ai.onnx.ml",
                                                               "ai.onnx", "x"]))
    elif kind == "int_values" and len(graph.initializer):
        init = _pick(draw, graph.initializer)
        array = numpy_helper.to_array(init).copy()
        if array.size and array.dtype.kind == "i":
            info = np.iinfo(array.dtype)
            value = min(max(draw(st.sampled_from(HUGE_INTS)), info.min), info.max)
            array.flat[draw(st.integers(0, array.size - 1))] = value
            init.CopyFrom(numpy_helper.from_array(array, init.name))
    elif kind == "initializer_shape" and len(graph.initializer):
        init = _pick(draw, graph.initializer)
        array = numpy_helper.to_array(init)
        shape = draw(st.lists(st.sampled_from([0, 1, 2, 3, 8]), min_size=0, max_size=4))
        init.CopyFrom(numpy_helper.from_array(
            np.resize(array, shape).astype(array.dtype), init.name))
    return kind


@st.composite
def onnx_models(draw) -> tuple[list[str], bytes]:
    """(atvoss subcommand and flags, serialized model bytes)."""
    model = onnx.ModelProto.FromString(draw(st.sampled_from(seeds())))
    corrupt = False
    for _ in range(draw(st.integers(1, 3))):
        corrupt |= draw(_mutate(model)) == "corrupt_bytes"
    data = model.SerializeToString()
    if corrupt:
        data = bytearray(data)
        for _ in range(draw(st.integers(1, 8))):
            data[draw(st.integers(0, len(data) - 1))] = draw(st.integers(0, 255))
        data = bytes(data[:draw(st.integers(len(data) // 2, len(data)))])
    command = draw(st.sampled_from([["import"], ["compile"], ["compile"], ["run", "--report=json"],
                                    ["run", "--timing-only"]]))
    return command, data


# -- --target strings ------------------------------------------------------------------

OPTION_NAMES = [f.metadata["option"] for f in dataclasses.fields(NpuTarget)]


_OPTION_NAME = st.one_of(st.sampled_from(OPTION_NAMES),
                         st.text("abcdefghijklmnopqrstuvwxyz-_", min_size=0, max_size=12))
_OPTION_VALUE = st.one_of(
    st.integers(-2, 70).map(str),
    st.sampled_from(["0", "1", "2", "3", "4", "16", "1024", "1048576", "2147483647",
                     "9999999999999", "1e309", "nan", "inf", "-inf", "0.0", "1e-300",
                     "ws", "os", "auto", "NHWC", "NCHW", "", "=", " "]),
    st.text(min_size=0, max_size=6))
_HEAD = st.sampled_from(["npu", "npu", "npu", "gpu", "", "NPU", "npu-"])
_SEPARATOR = st.sampled_from(["=", "=", "=", "", "=="])
_DASH = st.sampled_from(["-", "-", "--", ""])


@st.composite
def target_strings(draw) -> str:
    words = [draw(_HEAD)]
    for _ in range(draw(st.integers(0, 5))):
        words.append(f"{draw(_DASH)}{draw(_OPTION_NAME)}{draw(_SEPARATOR)}{draw(_OPTION_VALUE)}")
    return " ".join(words)
