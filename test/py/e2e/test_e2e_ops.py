"""Every op the ONNX importer supports, as a single-node model with awkward
shapes (odd channels, non-square, stride 2 with padding, batch > 1), through
the whole compiler (atvoss_mlir.compile) and the simulator, against
onnxruntime: fp32 within rtol 1e-4, fp16 within rtol 2e-2. Each model runs on
the default machine and on one with a small SRAM (many tiles, partial tiles).

`npu`: True when every op must run on the NPU, False when part of the model
must stay on the fallback engine and be reported, None when either is fine."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from onnx import helper

import atvoss_mlir

from e2e_testing import DEFAULT_TARGET, FP16, FP32, SMALL_SRAM_TARGET, compile_and_check
from onnx_testing import model, randn, reference, single

I64 = np.int64
F16 = np.float16


@dataclass
class Case:
    model: object
    feeds: dict
    npu: bool | None = None
    tolerance: dict = field(default_factory=lambda: FP32)


TARGETS = (DEFAULT_TARGET, SMALL_SRAM_TARGET)
CASES: dict[str, Case] = {}
RUNS = []  # (case name, target)


def case(name, onnx_model, feeds, npu=None, tolerance=FP32, targets=TARGETS):
    CASES[name] = Case(onnx_model, feeds, npu, tolerance)
    RUNS.extend((name, target) for target in targets)


def conv(name, x_shape, w_shape, out_shape, bias=True, npu=None, dtype=np.float32,
         targets=TARGETS, **attributes):
    initializers = {"w": randn(*w_shape, seed=1).astype(dtype)}
    if bias:
        initializers["b"] = randn(w_shape[0], seed=2).astype(dtype)
    case(name, single("Conv", {"x": x_shape}, out_shape, attributes, initializers, dtype=dtype),
         {"x": randn(*x_shape).astype(dtype)}, npu, FP16 if dtype == F16 else FP32, targets)


# -- convolutions --------------------------------------------------------------------------
conv("conv$odd_channels_stride2_pad1_batch2", [2, 5, 13, 11], [7, 5, 3, 3], [2, 7, 7, 6],
     strides=[2, 2], pads=[1, 1, 1, 1], npu=True)
conv("conv$non_square_kernel_asymmetric_pads", [1, 3, 10, 7], [6, 3, 3, 2], [1, 6, 11, 7],
     bias=False, pads=[1, 0, 2, 1], npu=True)
conv("conv$dilation2_stride2", [1, 4, 15, 12], [5, 4, 3, 3], [1, 5, 8, 6], dilations=[2, 2],
     strides=[2, 2], pads=[2, 2, 2, 2], npu=True)
conv("conv$7x7_stride2_pad3", [1, 3, 17, 15], [8, 3, 7, 7], [1, 8, 9, 8], strides=[2, 2],
     pads=[3, 3, 3, 3], npu=True, targets=(DEFAULT_TARGET,))  # its halo needs > 8 KiB
conv("conv$grouped3", [2, 6, 8, 7], [9, 2, 3, 3], [2, 9, 8, 7], group=3, pads=[1, 1, 1, 1],
     npu=True)
conv("conv$depthwise_bias_stride2", [2, 6, 9, 8], [6, 1, 3, 3], [2, 6, 5, 4], group=6,
     strides=[2, 2], pads=[1, 1, 1, 1], npu=True)
conv("conv$depthwise_no_bias", [1, 5, 7, 6], [5, 1, 3, 3], [1, 5, 7, 6], bias=False, group=5,
     pads=[1, 1, 1, 1], npu=True)
conv("conv$depthwise_multiplier2", [1, 3, 6, 5], [6, 1, 3, 3], [1, 6, 6, 5], group=3,
     pads=[1, 1, 1, 1], npu=True)
conv("conv$depthwise_multiplier3_stride2_dilation2_batch2", [2, 4, 11, 9], [12, 1, 3, 3],
     [2, 12, 6, 5], group=4, strides=[2, 2], dilations=[2, 2], pads=[2, 2, 2, 2], npu=True)
conv("conv$depthwise_multiplier4_unpadded_no_bias", [1, 2, 7, 8], [8, 1, 2, 3], [1, 8, 6, 6],
     bias=False, group=2, npu=True)
conv("conv$pointwise_37_to_45", [1, 37, 9, 10], [45, 37, 1, 1], [1, 45, 9, 10], npu=True)
conv("conv$same_upper", [1, 3, 7, 6], [4, 3, 3, 3], [1, 4, 4, 3], auto_pad="SAME_UPPER",
     strides=[2, 2], npu=True)
conv("conv$fp16_stride2_pad1_batch2", [2, 5, 11, 9], [7, 5, 3, 3], [2, 7, 6, 5],
     strides=[2, 2], pads=[1, 1, 1, 1], npu=True, dtype=F16)

# -- matrix products -----------------------------------------------------------------------
for name, attributes, a_shape, b_shape, c_shape, out_shape in [
        ("plain_bias_row", {}, [33, 20], [20, 17], [17], [33, 17]),
        ("transA_transB_alpha_beta", {"transA": 1, "transB": 1, "alpha": 1.5, "beta": 0.5},
         [7, 5], [9, 7], [9], [5, 9]),
        ("bias_matrix", {"beta": 2.0}, [6, 11], [11, 13], [6, 13], [6, 13]),
        ("bias_column", {}, [6, 11], [11, 13], [6, 1], [6, 13]),
        ("no_bias", {"transB": 1}, [3, 70], [45, 70], None, [3, 45])]:
    initializers = {"b": randn(*b_shape, seed=1)}
    if c_shape:
        initializers["c"] = randn(*c_shape, seed=2)
    case(f"gemm${name}", single("Gemm", {"a": a_shape}, out_shape, attributes, initializers),
         {"a": randn(*a_shape)}, npu=True)
case("gemm$runtime_operands", single("Gemm", {"a": [5, 7], "b": [6, 7], "c": [6]}, [5, 6],
                                     {"transB": 1, "alpha": 0.5}),
     {"a": randn(5, 7), "b": randn(6, 7, seed=1), "c": randn(6, seed=2)})
case("gemm$fp16", single("Gemm", {"a": [9, 21]}, [9, 10], {"transB": 1},
                         {"b": randn(10, 21, seed=1).astype(F16), "c": randn(10, seed=2).astype(F16)},
                         dtype=F16), {"a": randn(9, 21).astype(F16)}, npu=True, tolerance=FP16)

for name, a_shape, b_shape, out_shape in [
        ("2d_37x70x45", [37, 70], [70, 45], [37, 45]),
        ("batched", [3, 5, 7], [3, 7, 6], [3, 5, 6]),
        ("broadcast_batch", [2, 1, 4, 6], [3, 6, 5], [2, 3, 4, 5]),
        ("batched_times_2d", [2, 9, 11], [11, 13], [2, 9, 13])]:
    case(f"matmul${name}", single("MatMul", {"a": a_shape, "b": b_shape}, out_shape),
         {"a": randn(*a_shape), "b": randn(*b_shape, seed=1)}, npu=True)
case("matmul$weight_initializer", single("MatMul", {"a": [2, 9, 11]}, [2, 9, 13],
                                         initializers={"w": randn(11, 13, seed=1)}),
     {"a": randn(2, 9, 11)}, npu=True)
case("matmul$fp16", single("MatMul", {"a": [37, 70], "b": [70, 45]}, [37, 45], dtype=F16),
     {"a": randn(37, 70).astype(F16), "b": randn(70, 45, seed=1).astype(F16)}, npu=True,
     tolerance=FP16)

# -- elementwise with broadcasting ------------------------------------------------------------
BROADCASTS = {"same": ([2, 3, 5, 7], [2, 3, 5, 7]), "trailing": ([2, 3, 5, 7], [7]),
              "per_channel": ([2, 3, 5, 7], [3, 1, 1]), "both_ways": ([2, 1, 5], [3, 1]),
              "left_operand": ([5], [2, 3, 5])}
for op_type in ("Add", "Sub", "Mul", "Div", "Max", "Min"):
    for name, (a_shape, b_shape) in BROADCASTS.items():
        b_value = randn(*b_shape, seed=1)
        if op_type == "Div":
            b_value = np.where(np.abs(b_value) < 0.1, 0.5, b_value).astype(np.float32)
        # A broadcast left operand: swapped when the op commutes, b - a as (-a) + b.
        on_npu = None if name == "both_ways" or (op_type == "Div" and name == "left_operand") \
            else True
        out_shape = list(np.broadcast_shapes(a_shape, b_shape))
        case(f"{op_type.lower()}${name}", single(op_type, {"a": a_shape, "b": b_shape}, out_shape),
             {"a": randn(*a_shape), "b": b_value}, npu=on_npu)
case("sub$scalar_constant_left",   # 1 - x, as masks and gates write it
     model([helper.make_node("Sub", ["one", "x"], ["y"], name="node0")], {"x": [2, 3, 5, 7]},
           {"y": [2, 3, 5, 7]}, {"one": np.asarray(1.0, np.float32)}),
     {"x": randn(2, 3, 5, 7)}, npu=True)
case("sum$three_inputs", single("Sum", {"a": [2, 3, 5], "b": [5], "c": [2, 3, 5]}, [2, 3, 5]),
     {"a": randn(2, 3, 5), "b": randn(5, seed=1), "c": randn(2, 3, 5, seed=2)}, npu=True)
case("add$fp16_per_channel", single("Add", {"a": [2, 3, 5, 7], "b": [3, 1, 1]}, [2, 3, 5, 7],
                                    dtype=F16),
     {"a": randn(2, 3, 5, 7).astype(F16), "b": randn(3, 1, 1, seed=1).astype(F16)}, npu=True,
     tolerance=FP16)

# -- activations -----------------------------------------------------------------------------
for op_type, attributes, opset, on_npu in [
        ("Relu", {}, 13, True), ("LeakyRelu", {"alpha": 0.1}, 13, True),
        ("Clip", {"min": -0.5, "max": 0.7}, 9, True), ("Sigmoid", {}, 13, True),
        ("Tanh", {}, 13, True), ("Erf", {}, 13, True),
        ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}, 13, True), ("HardSwish", {}, 14, True)]:
    case(f"{op_type.lower()}", single(op_type, {"x": [2, 3, 5, 7]}, [2, 3, 5, 7], attributes,
                                      opset=opset), {"x": randn(2, 3, 5, 7) * 3}, npu=on_npu)
# LeakyRelu and PRelu are select-free on the vector unit: alpha above one takes the
# smaller of x and alpha * x, alpha zero and PRelu's slopes max(x, 0) + slope * min(x, 0).
for alpha in (1.5, 0.0):
    case(f"leakyrelu$alpha_{alpha}", single("LeakyRelu", {"x": [2, 3, 5, 7]}, [2, 3, 5, 7],
                                            {"alpha": alpha}), {"x": randn(2, 3, 5, 7) * 3},
         npu=True)
case("prelu$per_channel", single("PRelu", {"x": [2, 3, 5, 7]}, [2, 3, 5, 7],
                                 initializers={"slope": randn(3, 1, 1, seed=1)}),
     {"x": randn(2, 3, 5, 7) * 3}, npu=True)
case("prelu$runtime_slope", single("PRelu", {"x": [2, 3, 5, 7], "slope": [5, 7]}, [2, 3, 5, 7]),
     {"x": randn(2, 3, 5, 7) * 3, "slope": randn(5, 7, seed=1)}, npu=True)
# Swish (SiLU) as exporters write it: one merged op reading x once, its sigmoid one
# vector-unit activation.
for name, operands in (("x_first", ["x", "s"]), ("sigmoid_first", ["s", "x"])):
    case(f"swish${name}",
         model([helper.make_node("Sigmoid", ["x"], ["s"], name="node0"),
                helper.make_node("Mul", operands, ["y"], name="node1")],
               {"x": [2, 3, 5, 7]}, {"y": [2, 3, 5, 7]}),
         {"x": randn(2, 3, 5, 7) * 3}, npu=True)
case("clip$inputs_opset13", single("Clip", {"x": [3, 17]}, [3, 17],
                                   initializers={"lo": np.asarray(-0.2, np.float32),
                                                 "hi": np.asarray(0.4, np.float32)}, opset=13),
     {"x": randn(3, 17)}, npu=True)
# The exact gelu is one npu.activation; the tanh approximation a chain with a tanh.
for approximate, on_npu in (("none", True), ("tanh", True)):
    case(f"gelu${approximate}", single("Gelu", {"x": [3, 5, 7]}, [3, 5, 7],
                                       {"approximate": approximate}, opset=20),
         {"x": randn(3, 5, 7) * 2}, npu=on_npu)
for op_type, opset in (("Gelu", 20), ("Sigmoid", 13), ("Tanh", 13)):
    case(f"{op_type.lower()}$fp16", single(op_type, {"x": [3, 17]}, [3, 17], opset=opset,
                                           dtype=F16),
         {"x": (randn(3, 17) * 3).astype(F16)}, npu=True, tolerance=FP16)
case("gelu$matmul_epilogue",
     model([helper.make_node("MatMul", ["a", "w"], ["m"], name="matmul"),
            helper.make_node("Gelu", ["m"], ["y"], name="node0")],
           {"a": [7, 9]}, {"y": [7, 5]}, {"w": randn(9, 5, seed=1)}, opset=20),
     {"a": randn(7, 9)}, npu=True)
case("relu$fp16", single("Relu", {"x": [3, 5, 7]}, [3, 5, 7], dtype=F16),
     {"x": randn(3, 5, 7).astype(F16)}, npu=True, tolerance=FP16)

# -- normalization, pooling, softmax, reductions ---------------------------------------------


def batch_norm(name, shape, dtype=np.float32, npu=True):
    c = shape[1]
    initializers = {"scale": randn(c, seed=1), "bias": randn(c, seed=2), "mean": randn(c, seed=3),
                    "var": np.abs(randn(c, seed=4)) + 0.1}
    initializers = {k: v.astype(dtype) for k, v in initializers.items()}
    case(name, single("BatchNormalization", {"x": shape}, shape, {"epsilon": 1e-3},
                      initializers, dtype=dtype),
         {"x": randn(*shape).astype(dtype)}, npu, FP16 if dtype == F16 else FP32)


batch_norm("batch_normalization", [2, 5, 7, 9])
batch_norm("batch_normalization$fp16", [2, 3, 4, 5], F16)
case("lrn", single("LRN", {"x": [1, 5, 6, 7]}, [1, 5, 6, 7],
                   {"size": 3, "alpha": 0.02, "beta": 0.75, "bias": 1.5}),
     {"x": randn(1, 5, 6, 7)}, npu=True)

for name, op_type, x_shape, out_shape, attributes, on_npu in [
        ("maxpool$3x3_stride2_pad1_batch2", "MaxPool", [2, 3, 11, 9], [2, 3, 6, 5],
         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, True),
        ("maxpool$non_square_ceil", "MaxPool", [1, 5, 7, 10], [1, 5, 4, 4],
         {"kernel_shape": [2, 3], "strides": [2, 3], "ceil_mode": 1}, True),
        ("averagepool$exclude_pad_stride2", "AveragePool", [2, 3, 9, 8], [2, 3, 5, 4],
         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, None),
        ("averagepool$count_include_pad", "AveragePool", [1, 5, 7, 6], [1, 5, 4, 3],
         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 0],
          "count_include_pad": 1}, None)]:
    case(name, single(op_type, {"x": x_shape}, out_shape, attributes, opset=19),
         {"x": randn(*x_shape)}, npu=on_npu)
case("maxpool$fp16", single("MaxPool", {"x": [1, 3, 9, 8]}, [1, 3, 5, 4],
                            {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
                            dtype=F16), {"x": randn(1, 3, 9, 8).astype(F16)}, npu=True,
     tolerance=FP16)
case("averagepool$fp16_count_include_pad",
     single("AveragePool", {"x": [1, 3, 9, 8]}, [1, 3, 5, 4],
            {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
             "count_include_pad": 1}, dtype=F16), {"x": randn(1, 3, 9, 8).astype(F16)},
     tolerance=FP16)
case("globalaveragepool", single("GlobalAveragePool", {"x": [2, 7, 5, 9]}, [2, 7, 1, 1]),
     {"x": randn(2, 7, 5, 9)})
case("globalaveragepool$fp16", single("GlobalAveragePool", {"x": [2, 3, 4, 5]}, [2, 3, 1, 1],
                                      dtype=F16), {"x": randn(2, 3, 4, 5).astype(F16)},
     tolerance=FP16)

for axis in (-1, 1):
    case(f"softmax$axis{axis}", single("Softmax", {"x": [2, 3, 5, 7]}, [2, 3, 5, 7],
                                       {"axis": axis}, opset=13), {"x": randn(2, 3, 5, 7) * 3})
case("softmax$leading_unit_dim", single("Softmax", {"x": [1, 4, 6, 6]}, [1, 4, 6, 6],
                                        {"axis": -1}, opset=13), {"x": randn(1, 4, 6, 6)})
case("softmax$fp16", single("Softmax", {"x": [3, 17]}, [3, 17], {"axis": -1}, dtype=F16),
     {"x": randn(3, 17).astype(F16)}, tolerance=FP16)
# LogSoftmax: the log of each row's sum once, on the reduced tensor, then subtracted.
for opset, axis in ((13, -1), (13, 1), (11, 1)):
    case(f"logsoftmax$opset{opset}_axis{axis}",
         single("LogSoftmax", {"x": [2, 3, 5, 7]}, [2, 3, 5, 7], {"axis": axis}, opset=opset),
         {"x": randn(2, 3, 5, 7) * 3}, npu=True)
for axis in (-1, -2):
    shape = [2, 3, 5, 7]
    normalized = shape[axis:]
    case(f"layer_normalization$axis{axis}",
         single("LayerNormalization", {"x": shape}, shape, {"axis": axis, "epsilon": 1e-5},
                {"scale": randn(*normalized, seed=1), "bias": randn(*normalized, seed=2)}),
         {"x": randn(*shape)})
case("layer_normalization$fp16",
     single("LayerNormalization", {"x": [3, 17]}, [3, 17], {"axis": -1},
            {"scale": randn(17, seed=1).astype(F16), "bias": randn(17, seed=2).astype(F16)},
            dtype=F16), {"x": randn(3, 17).astype(F16)}, tolerance=FP16)
case("reduce_mean$axes12", single("ReduceMean", {"x": [2, 3, 5, 7]}, [2, 7],
                                  {"axes": [1, 2], "keepdims": 0}, opset=13),
     {"x": randn(2, 3, 5, 7)})
case("reduce_mean$last_keepdims_opset18",
     single("ReduceMean", {"x": [2, 3, 5]}, [2, 3, 1], {"keepdims": 1},
            {"axes": np.asarray([-1], I64)}, opset=18), {"x": randn(2, 3, 5)})

# -- shapes and data movement ----------------------------------------------------------------
case("flatten$axis2", single("Flatten", {"x": [2, 3, 5, 7]}, [6, 35], {"axis": 2}),
     {"x": randn(2, 3, 5, 7)}, npu=True)
case("reshape$infer_dim", single("Reshape", {"x": [2, 3, 5, 7]}, [6, 5, 7],
                                 initializers={"shape": np.asarray([-1, 5, 7], I64)}),
     {"x": randn(2, 3, 5, 7)}, npu=True)
case("transpose$nchw_to_nhwc", single("Transpose", {"x": [2, 3, 5, 7]}, [2, 5, 7, 3],
                                      {"perm": [0, 2, 3, 1]}), {"x": randn(2, 3, 5, 7)})
case("transpose$heads", single("Transpose", {"x": [1, 6, 4, 5]}, [1, 4, 6, 5],
                               {"perm": [0, 2, 1, 3]}), {"x": randn(1, 6, 4, 5)})
case("concat$three_inputs_axis1",
     single("Concat", {"a": [2, 3, 5], "b": [2, 1, 5]}, [2, 8, 5], {"axis": 1},
            {"k": randn(2, 4, 5, seed=5)}), {"a": randn(2, 3, 5), "b": randn(2, 1, 5, seed=1)},
     npu=True)
case("split$uneven_three_outputs",
     model([helper.make_node("Split", ["x", "split"], ["y0", "y1", "y2"], name="split", axis=1)],
           {"x": [2, 9, 3]}, {"y0": [2, 2, 3], "y1": [2, 3, 3], "y2": [2, 4, 3]},
           {"split": np.asarray([2, 3, 4], I64)}, opset=13), {"x": randn(2, 9, 3)}, npu=True)
case("slice$steps", single("Slice", {"x": [4, 7, 6]}, [2, 7, 2],
                           initializers={"starts": np.asarray([1, 1], I64),
                                         "ends": np.asarray([4, 6], I64),
                                         "axes": np.asarray([0, 2], I64),
                                         "steps": np.asarray([2, 3], I64)}),
     {"x": randn(4, 7, 6)})
case("slice$negative_step", single("Slice", {"x": [4, 6, 5]}, [4, 4, 2],
                                   initializers={"starts": np.asarray([-1, 4], I64),
                                                 "ends": np.asarray([-5, 0], I64),
                                                 "axes": np.asarray([1, 2], I64),
                                                 "steps": np.asarray([-1, -2], I64)}),
     {"x": randn(4, 6, 5)})
case("squeeze_unsqueeze",
     model([helper.make_node("Squeeze", ["x", "sa"], ["s"], name="squeeze"),
            helper.make_node("Unsqueeze", ["s", "ua"], ["y"], name="unsqueeze")],
           {"x": [3, 1, 5]}, {"y": [1, 3, 5, 1]},
           {"sa": np.asarray([1], I64), "ua": np.asarray([0, -1], I64)}, opset=13),
     {"x": randn(3, 1, 5)}, npu=True)
case("pad$constant_value", single("Pad", {"x": [2, 3, 5]}, [2, 6, 8],
                                  initializers={"pads": np.asarray([0, 1, 2, 0, 2, 1], I64),
                                                "value": np.asarray(0.5, np.float32)}),
     {"x": randn(2, 3, 5)})


@pytest.mark.parametrize("name,target", RUNS, ids=[
    f"{name}-{'default' if target is None else 'small_sram'}" for name, target in RUNS])
def test_op(name, target):
    test_case = CASES[name]
    compiled, _ = compile_and_check(test_case.model, test_case.feeds, target,
                                    **test_case.tolerance)
    if test_case.npu is True:
        assert compiled.fallback_ops == []
    elif test_case.npu is False:
        # What the NPU cannot run stays on linalg and is reported at its node.
        assert compiled.fallback_ops
        assert all("fallback" in line and "'node0'" in line for line in compiled.fallback_ops)


SPECIAL_VALUES = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3e38, -3e38, -1.5,
                           2.5, -7.0], np.float32)


@pytest.mark.parametrize("op_type,attributes,slope", [
    ("LeakyRelu", {"alpha": 0.01}, None), ("LeakyRelu", {"alpha": 0.0}, None),
    ("LeakyRelu", {"alpha": -0.3}, None), ("LeakyRelu", {"alpha": 5.0}, None),
    ("PRelu", {}, np.array([0.25, -0.5, 0.0, 2.0], np.float32).reshape(4, 1))],
    ids=["leakyrelu", "leakyrelu_alpha0", "leakyrelu_negative_alpha", "leakyrelu_alpha5",
         "prelu"])
def test_select_free_activations_are_exact(op_type, attributes, slope):
    """Without a compare, the vector unit still gives onnxruntime's values bit for bit
    on zeros of both signs, infinities, NaN, subnormals and overflowing products."""
    x = np.tile(SPECIAL_VALUES, 4).reshape(4, 12)
    initializers = {} if slope is None else {"slope": slope}
    onnx_model = single(op_type, {"x": [4, 12]}, [4, 12], attributes, initializers)
    compiled = atvoss_mlir.compile(onnx_model)
    got = compiled.run({"x": x})["y"]
    want = reference(onnx_model, {"x": x})[0]
    assert compiled.fallback_ops == []
    np.testing.assert_array_equal(got, want)
