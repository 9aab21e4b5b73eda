"""The ops of the wider ONNX coverage (comparisons and logic, Where, Mod,
CastLike, the Reduce* family, ArgMax/ArgMin, TopK, Hardmax, Resize and
Upsample, Trilu, Tile, Einsum, DepthToSpace/SpaceToDepth, the
normalizations, more activations, LpPool, Dropout's outputs, and ops imported
as their ONNX function body), each as a small model through
atvoss_mlir.compile and the simulator, against onnxruntime. Integer and
bool results must be equal; float ones within rtol 1e-4."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from e2e_testing import DEFAULT_TARGET, SMALL_SRAM_TARGET, compile_and_check
from onnx_testing import randn

I64 = np.int64
F32 = np.float32
_ONNX_TYPES = {np.dtype(F32): TensorProto.FLOAT, np.dtype(I64): TensorProto.INT64,
               np.dtype(np.int32): TensorProto.INT32, np.dtype(np.bool_): TensorProto.BOOL,
               np.dtype(np.float16): TensorProto.FLOAT16}

CASES = {}


def graph(nodes, feeds: dict, outputs: dict, initializers=None, opset=17):
    """A model over `feeds` (name -> sample array); outputs: name -> numpy dtype."""
    initializers = initializers or {}
    inputs = [helper.make_tensor_value_info(n, _ONNX_TYPES[np.asarray(v).dtype],
                                            list(np.shape(v))) for n, v in feeds.items()]
    results = [helper.make_tensor_value_info(n, _ONNX_TYPES[np.dtype(t)], None)
               for n, t in outputs.items()]
    made = helper.make_graph(nodes, "test", inputs, results,
                             [numpy_helper.from_array(np.asarray(v), n)
                              for n, v in initializers.items()])
    return helper.make_model(made, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def case(name, op_type, feeds, out_dtype=F32, initializers=None, opset=17, outputs=("y",),
         extra_inputs=(), targets=(DEFAULT_TARGET,), **attributes):
    inputs = list(feeds) + list(initializers or {}) + list(extra_inputs)
    node = helper.make_node(op_type, inputs, list(outputs), name="node0", **attributes)
    dtypes = out_dtype if isinstance(out_dtype, tuple) else (out_dtype,) * len(outputs)
    model = graph([node], feeds, dict(zip(outputs, dtypes)), initializers, opset)
    for target in targets:
        CASES[f"{name}-{'default' if target is None else 'small_sram'}"] = (model, feeds, target)


def ints(*shape, low=-5, high=6, seed=0):
    return np.random.default_rng(seed).integers(low, high, shape).astype(I64)


def bools(*shape, seed=0):
    return np.random.default_rng(seed).integers(0, 2, shape).astype(np.bool_)


# -- comparisons, logic, Where, Mod, casts -----------------------------------------------------
for op_type in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"):
    a = np.round(randn(2, 3, 5)).astype(F32)  # rounded: equal elements occur
    case(f"{op_type.lower()}$broadcast", op_type, {"a": a, "b": np.round(randn(3, 1, seed=1))},
         np.bool_)
    case(f"{op_type.lower()}$int64", op_type, {"a": ints(4, 5), "b": ints(5, seed=1)}, np.bool_)
for op_type in ("And", "Or", "Xor"):
    case(op_type.lower(), op_type, {"a": bools(3, 4), "b": bools(4, seed=1)}, np.bool_)
case("and$opset7", "And", {"a": bools(3, 4), "b": bools(3, 4, seed=1)}, np.bool_, opset=7)
case("not", "Not", {"a": bools(3, 4)}, np.bool_)
case("where$broadcast", "Where", {"c": bools(3, 1, 5), "a": randn(4, 5), "b": randn(3, 4, 1)})
case("mod$fmod_float", "Mod", {"a": randn(3, 7) * 4, "b": randn(7, seed=1) + 3}, fmod=1)
case("mod$int_sign_of_divisor", "Mod", {"a": ints(4, 6, low=-20, high=21),
                                        "b": np.asarray([3, -3, 7, -7, 2, 5], I64)}, I64)
case("mod$int_fmod", "Mod", {"a": ints(4, 6, low=-20, high=21),
                             "b": np.asarray([3, -3, 7, -7, 2, 5], I64)}, I64, fmod=1)
case("mod$float_sign_of_divisor", "Mod", {"a": randn(3, 7) * 4,
                                         "b": np.asarray([3, -3, 2.5, -2.5, 1, -1, 7], F32)},
     opset=28)
case("castlike$float_to_int64", "CastLike", {"a": randn(3, 4) * 5, "b": ints(2)}, I64)
case("cast$float_to_bool", "Cast", {"a": np.asarray([[0.0, -0.5, 2.0], [0.0, 3.0, 1e-3]], F32)},
     np.bool_, to=TensorProto.BOOL)
case("cast$bool_to_float", "Cast", {"a": bools(3, 4)}, F32, to=TensorProto.FLOAT)
case("cast$int_to_bool", "Cast", {"a": ints(3, 4)}, np.bool_, to=TensorProto.BOOL)
case("cast$bool_to_int32", "Cast", {"a": bools(3, 4)}, np.int32, to=TensorProto.INT32)
case("isnan", "IsNaN", {"a": np.asarray([1.0, np.nan, -np.inf, 0.0], F32)}, np.bool_)
case("isinf$positive_only", "IsInf", {"a": np.asarray([1.0, np.inf, -np.inf, np.nan], F32)},
     np.bool_, detect_negative=0)
case("sign", "Sign", {"a": np.asarray([[-2.5, 0.0, 3.0]], F32)})
case("bitwise_and", "BitwiseAnd", {"a": ints(3, 4, low=-64, high=64).astype(np.int32),
                                   "b": ints(4, low=-64, high=64, seed=1).astype(np.int32)},
     np.int32, opset=18)

case("pow$float_base_int_exponent", "Pow", {"a": randn(3, 4), "e": ints(4, low=-2, high=4)},
     opset=15)
case("pow$int_base", "Pow", {"a": ints(3, 4), "e": ints(4, low=0, high=4, seed=1)}, I64,
     opset=15)
for exponent in (2.0, 3.0, 0.5, 1.7):
    case(f"pow$constant_{exponent}", "Pow", {"a": np.abs(randn(3, 4)) + 0.1},
         initializers={"e": np.asarray(exponent, F32)}, opset=15)
case("pow$constant_square_broadcast_to_a_higher_rank", "Pow", {"a": randn(4)},
     initializers={"e": np.asarray([[2.0]], F32)}, opset=15)
for direction in ("LEFT", "RIGHT"):
    case(f"bitshift${direction.lower()}_signed", "BitShift",
         {"a": ints(3, 4, low=-100, high=100).astype(np.int32),
          "s": np.asarray([0, 3, 31, 40], np.int32)}, np.int32, opset=28, direction=direction)

# -- reductions, ArgMax/ArgMin, TopK, Hardmax --------------------------------------------------
for op_type in ("ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceProd",
                "ReduceSumSquare"):
    x = np.abs(randn(2, 3, 5)) + 0.5
    case(f"{op_type.lower()}$axes_attribute_opset13", op_type, {"x": x}, opset=13, axes=[1],
         keepdims=0)
    case(f"{op_type.lower()}$axes_input_opset18", op_type, {"x": x},
         initializers={"axes": np.asarray([0, -1], I64)}, opset=18)
case("reducemax$bool", "ReduceMax", {"x": bools(3, 4)}, np.bool_, opset=20, keepdims=0,
     initializers={"axes": np.asarray([1], I64)})
case("reducemin$bool", "ReduceMin", {"x": bools(3, 4)}, np.bool_, opset=20, keepdims=0,
     initializers={"axes": np.asarray([1], I64)})
case("reducelogsumexp$large_values", "ReduceLogSumExp", {"x": randn(3, 6) * 100}, opset=13,
     axes=[1])
x_ties = np.asarray([[1, 3, 3, 0], [2, 2, -1, 2], [0, 0, 0, 0]], F32)
for op_type in ("ArgMax", "ArgMin"):
    case(f"{op_type.lower()}$first_of_ties", op_type, {"x": x_ties}, I64, axis=1, keepdims=0)
    case(f"{op_type.lower()}$last_of_ties", op_type, {"x": x_ties}, I64, axis=1,
         select_last_index=1)
    case(f"{op_type.lower()}$axis0_int64", op_type, {"x": ints(4, 3)}, I64, axis=0)
case("topk$largest", "TopK", {"x": np.round(randn(3, 7) * 2)}, (F32, I64),
     initializers={"k": np.asarray([3], I64)}, outputs=("values", "indices"), axis=1)
case("topk$smallest_axis0", "TopK", {"x": randn(6, 4)}, (F32, I64),
     initializers={"k": np.asarray([2], I64)}, outputs=("values", "indices"), axis=0,
     largest=0)
case("hardmax", "Hardmax", {"x": x_ties}, opset=13)
for exclusive in (0, 1):
    for reverse in (0, 1):
        case(f"cumsum$exclusive{exclusive}_reverse{reverse}", "CumSum", {"x": randn(3, 5)},
             initializers={"axis": np.asarray(1, I64)}, exclusive=exclusive, reverse=reverse)
case("cumprod$axis0", "CumProd", {"x": randn(4, 3)}, opset=26,
     initializers={"axis": np.asarray(0, I64)})
# Axes longer than a power of two: the scan's last step combines a partial slice.
for exclusive in (0, 1):
    for reverse in (0, 1):
        for dtype in (F32, np.int32, I64):
            x = randn(2, 37, 3) if dtype is F32 else ints(2, 37, 3).astype(dtype)
            case(f"cumsum$long_{np.dtype(dtype).name}_exclusive{exclusive}_reverse{reverse}",
                 "CumSum", {"x": x}, out_dtype=dtype, exclusive=exclusive, reverse=reverse,
                 initializers={"axis": np.asarray(-2, I64)})
case("cumprod$long_reverse", "CumProd", {"x": (1 + randn(3, 19) / 8).astype(F32)}, opset=26,
     initializers={"axis": np.asarray(1, np.int32)}, reverse=1)

# -- Resize, Upsample --------------------------------------------------------------------------
image = randn(1, 2, 4, 5)
for transform in ("half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel"):
    for mode in ("nearest", "linear"):
        case(f"resize${mode}_{transform}_up", "Resize", {"x": image}, opset=19,
             initializers={"roi": np.zeros(0, F32),
                           "scales": np.asarray([1, 1, 2, 1.6], F32)},  # 5 x 1.6 = 8
             mode=mode, coordinate_transformation_mode=transform)
    case(f"resize$linear_{transform}_down_sizes", "Resize", {"x": image}, opset=19,
         initializers={"roi": np.zeros(0, F32), "scales": np.zeros(0, F32),
                       "sizes": np.asarray([1, 2, 3, 3], I64)},
         mode="linear", coordinate_transformation_mode=transform)
case("resize$nearest_floor_opset13", "Resize", {"x": image}, opset=13,
     initializers={"roi": np.zeros(0, F32), "scales": np.asarray([1, 1, 3, 2], F32)},
     mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor",
     targets=(DEFAULT_TARGET, SMALL_SRAM_TARGET))
case("resize$cubic", "Resize", {"x": image}, opset=19,
     initializers={"roi": np.zeros(0, F32), "scales": np.asarray([1, 1, 2, 2], F32)},
     mode="cubic")
case("resize$opset10_nearest", "Resize", {"x": image}, opset=10,
     initializers={"scales": np.asarray([1, 1, 2, 2], F32)}, mode="nearest")
case("upsample$opset9_nearest", "Upsample", {"x": image}, opset=9,
     initializers={"scales": np.asarray([1, 1, 2, 3], F32)}, mode="nearest")
case("upsample$opset9_linear", "Upsample", {"x": image}, opset=9,
     initializers={"scales": np.asarray([1, 1, 2, 2], F32)}, mode="linear")
case("upsample$opset7_attribute", "Upsample", {"x": image}, opset=7, mode="nearest",
     scales=[1.0, 1.0, 2.0, 2.0])

# -- layout ------------------------------------------------------------------------------------
for upper in (0, 1):
    for k in (-1, 0, 2):
        case(f"trilu$upper{upper}_k{k}", "Trilu", {"x": randn(2, 4, 5)}, opset=14,
             initializers={"k": np.asarray(k, I64)}, upper=upper)
case("tile", "Tile", {"x": randn(2, 3)}, initializers={"repeats": np.asarray([2, 3], I64)})
for mode in ("DCR", "CRD"):
    case(f"depthtospace${mode}", "DepthToSpace", {"x": randn(1, 8, 2, 3)}, blocksize=2,
         mode=mode)
case("spacetodepth", "SpaceToDepth", {"x": randn(1, 2, 4, 6)}, blocksize=2)
for name, equation, shapes in (
        ("matmul", "ij,jk->ik", [(5, 7), (7, 3)]),
        ("batch_matmul", "bij,bjk->bik", [(2, 5, 7), (2, 7, 3)]),
        ("transpose", "ij->ji", [(4, 6)]),
        ("row_sums", "ij->i", [(4, 6)]),
        ("ellipsis_implicit_output", "...ij,...jk", [(2, 3, 4), (2, 4, 5)]),
        ("outer_product", "i,j->ij", [(3,), (4,)]),
        ("attention_scores", "bhid,bhjd->bhij", [(2, 3, 6, 8), (2, 3, 5, 8)]),
        ("spaced_batch_and_groups", "B G H I J, B G H J D -> B G H I D",
         [(1, 2, 3, 4, 5), (1, 2, 3, 5, 6)])):
    case(f"einsum${name}", "Einsum", {f"x{i}": randn(*s, seed=i) for i, s in enumerate(shapes)},
         opset=12, equation=equation, targets=(DEFAULT_TARGET, SMALL_SRAM_TARGET))

data = randn(4, 5)
case("gatherelements$axis1_negative_indices", "GatherElements", {"x": data},
     initializers={"i": np.asarray([[0, -1, 2], [4, 4, 0], [1, 2, -5], [3, 0, 1]], I64)}, axis=1)
case("gatherelements$runtime_indices", "GatherElements",
     {"x": data, "i": np.asarray([[3, 0, 1, 2, 0], [1, 1, 3, 0, 2]], I64)}, axis=0)
case("gather$2d_indices_axis1", "Gather", {"x": data},
     initializers={"i": np.asarray([[0, 4], [-1, 2], [3, 3]], I64)}, axis=1)
case("gather$runtime_scalar_index", "Gather", {"x": data, "i": np.asarray(2, I64)}, axis=0)
cube = randn(3, 4, 5)
for name, indices, batch_dims in (
        ("elements", [[0, 1, 2], [2, -1, 0], [1, 3, -5]], 0),       # k = rank: one element each
        ("rows", [[[1], [0]], [[2], [2]]], 0),                     # k = 1: a 4x5 slice each
        ("pairs_batch1", [[[1], [3]], [[0], [0]], [[-1], [2]]], 1),  # a 5-row each, per batch
        ("evenly", [[0, 0], [0, 1], [0, 2], [0, 3]], 0)):        # consecutive rows: one slice
    index_array = np.asarray(indices, I64)
    case(f"gathernd${name}", "GatherND", {"x": cube}, initializers={"i": index_array},
         opset=13, batch_dims=batch_dims)
    case(f"gathernd${name}_runtime", "GatherND", {"x": cube, "i": index_array}, opset=13,
         batch_dims=batch_dims)

case("slice$start_past_the_end", "Slice", {"x": data},
     initializers={"starts": np.asarray([7], I64), "ends": np.asarray([9], I64),
                   "axes": np.asarray([1], I64)})

for mode in ("edge", "reflect", "wrap"):
    case(f"pad${mode}", "Pad", {"x": randn(1, 2, 4, 5)}, opset=19, mode=mode,
         initializers={"pads": np.asarray([0, 0, 2, 1, 0, 0, 1, 3], I64)})

# -- normalization ------------------------------------------------------------------------------
x_nchw = randn(2, 4, 3, 5)
case("instancenormalization", "InstanceNormalization", {"x": x_nchw}, epsilon=1e-3,
     initializers={"scale": randn(4, seed=1), "bias": randn(4, seed=2)})
case("groupnormalization$opset21", "GroupNormalization", {"x": x_nchw}, opset=21,
     num_groups=2, initializers={"scale": randn(4, seed=1), "bias": randn(4, seed=2)})
case("groupnormalization$opset18_per_group", "GroupNormalization", {"x": x_nchw}, opset=18,
     num_groups=2, initializers={"scale": randn(2, seed=1), "bias": randn(2, seed=2)})
case("rmsnormalization", "RMSNormalization", {"x": randn(2, 3, 8)}, opset=23, axis=-1,
     initializers={"scale": randn(8, seed=1)})
for p in (1, 2):
    case(f"lpnormalization$p{p}", "LpNormalization", {"x": randn(3, 5)}, p=p, axis=1)
case("meanvariancenormalization", "MeanVarianceNormalization", {"x": x_nchw})

# -- activations ---------------------------------------------------------------------------------
for op_type, attributes, opset in (
        ("Elu", {"alpha": 0.7}, 17), ("Selu", {"alpha": 1.5, "gamma": 1.1}, 17),
        ("Celu", {"alpha": 0.7}, 17),
        ("Mish", {}, 18), ("Softsign", {}, 17), ("Shrink", {"lambd": 0.6, "bias": 0.2}, 17),
        ("ThresholdedRelu", {"alpha": 0.3}, 17), ("Sin", {}, 17), ("Cos", {}, 17),
        ("Tan", {}, 17), ("Atan", {}, 17), ("Sinh", {}, 17), ("Cosh", {}, 17),
        ("Asinh", {}, 17)):
    case(op_type.lower(), op_type, {"x": randn(3, 7) * 2}, opset=opset, **attributes)
for op_type in ("Asin", "Acos", "Atanh"):
    case(op_type.lower(), op_type, {"x": np.tanh(randn(3, 7))}, opset=17)
case("acosh", "Acosh", {"x": np.abs(randn(3, 7)) + 1.0})
case("round$halves_to_even", "Round", {"x": np.asarray([-2.5, -1.5, -0.5, 0.5, 1.5, 2.4], F32)})

# -- pooling, Dropout ----------------------------------------------------------------------------
for p in (2, 3):
    case(f"lppool$p{p}_stride2_pad1", "LpPool", {"x": randn(1, 3, 7, 6)}, opset=18, p=p,
         kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
case("globallppool", "GlobalLpPool", {"x": randn(2, 3, 4, 5)}, p=2)
dropout9 = helper.make_node("Dropout", ["x"], ["d", "mask"], name="dropout", ratio=0.3)
relu = helper.make_node("Relu", ["d"], ["y"], name="relu")
CASES["dropout$opset9_mask_declared-default"] = (
    graph([dropout9, relu], {"x": randn(3, 4)}, {"y": F32}, opset=9), {"x": randn(3, 4)}, None)
case("dropout$opset12_inference_mask", "Dropout", {"x": randn(3, 4)}, (F32, np.bool_),
     opset=12, outputs=("y", "mask"),
     initializers={"ratio": np.asarray(0.5, F32), "training": np.asarray(False)})

# -- ops imported as their ONNX function body ---------------------------------------------------
case("attention$function_body_causal", "Attention",
     {"q": randn(1, 2, 4, 8), "k": randn(1, 2, 6, 8, seed=1), "v": randn(1, 2, 6, 8, seed=2)},
     opset=23, is_causal=1)


@pytest.mark.parametrize("name", list(CASES))
def test_op(name):
    onnx_model, feeds, target = CASES[name]
    compile_and_check(onnx_model, feeds, target)


@pytest.mark.parametrize("name", ["cumsum$long_int32_exclusive0_reverse0-default",
                                  "cumsum$long_float32_exclusive1_reverse1-default"])
def test_cumsum_runs_on_the_vector_unit(name):
    """A scan of log2(n) elementwise steps, not an n x n reduction on the fallback engine."""
    onnx_model, feeds, target = CASES[name]
    compiled, _ = compile_and_check(onnx_model, feeds, target)
    assert compiled.fallback_ops == []


@pytest.mark.parametrize("name", ["and-default", "or-default", "not-default",
                                  "and$opset7-default", "cast$bool_to_float-default",
                                  "cast$bool_to_int32-default"])
def test_mask_logic_runs_on_the_vector_unit(name):
    """And, Or and Not of masks, and a mask's 0 and 1 as numbers, are npu.select;
    Xor of two masks is not (a select reads its condition from an input)."""
    onnx_model, feeds, target = CASES[name]
    compiled, _ = compile_and_check(onnx_model, feeds, target)
    assert compiled.fallback_ops == []
    assert '"npu.select"' in str(compiled.module)


def test_a_mask_combined_then_cast_runs_on_the_vector_unit():
    """And, then a Cast of the mask to float: too large for the buffer plan,
    the two merge only where the select's condition stays an input of the op;
    otherwise both stay on the vector unit, one after the other."""
    a, b = bools(320, 1024), bools(320, 1024, seed=1)
    nodes = [helper.make_node("And", ["a", "b"], ["m"], name="and"),
             helper.make_node("Cast", ["m"], ["y"], name="cast", to=TensorProto.FLOAT)]
    model = graph(nodes, {"a": a, "b": b}, {"y": F32})
    compiled, _ = compile_and_check(model, {"a": a, "b": b})
    assert compiled.fallback_ops == []


def test_isnan_runs_on_the_vector_unit():
    """x != x (npu.compare "ne"), true for NaN alone: infinities and zero are not."""
    onnx_model, feeds, target = CASES["isnan-default"]
    compiled, _ = compile_and_check(onnx_model, feeds, target)
    assert compiled.fallback_ops == []


def test_trilu_with_a_constant_mask_runs_on_the_vector_unit():
    """Trilu selects by a mask known when compiling: npu.select, nothing falls back."""
    onnx_model, feeds, target = CASES["trilu$upper1_k0-default"]
    compiled, _ = compile_and_check(onnx_model, feeds, target)
    assert compiled.fallback_ops == []
    assert '"npu.select"' in str(compiled.module)


@pytest.mark.parametrize("name", ["einsum$attention_scores-default",
                                  "einsum$spaced_batch_and_groups-small_sram"])
def test_einsum_with_several_batch_dims_runs_on_the_matrix_unit(name):
    """An attention einsum (batch and heads; MaxViT's as exported by PyTorch's
    dynamo exporter, with three) is one batch_matmul, not a fallback loop."""
    onnx_model, feeds, target = CASES[name]
    compiled, _ = compile_and_check(onnx_model, feeds, target)
    assert compiled.fallback_ops == []
    assert '"npu.matmul"' in str(compiled.module)


@pytest.mark.parametrize("name", ["resize$nearest_floor_opset13-default",
                                  "resize$opset10_nearest-default",
                                  "upsample$opset9_nearest-default",
                                  "upsample$opset7_attribute-default"])
def test_nearest_resize_by_whole_factors_is_a_copy(name):
    """Nearest with whole scales repeats each input: a broadcast, copied on the
    vector unit, with no matrix product of interpolation weights."""
    onnx_model, feeds, target = CASES[name]
    compiled, _ = compile_and_check(onnx_model, feeds, target)
    assert compiled.fallback_ops == []
    assert '"npu.matmul"' not in str(compiled.module)


def test_nearest_resize_by_a_fractional_factor_interpolates_that_axis_alone():
    """Scales 2 and 1.6 (half_pixel): the rows repeat (a copy), the columns
    take a matrix product of their weights."""
    onnx_model, feeds, target = CASES["resize$nearest_half_pixel_up-default"]
    compiled, _ = compile_and_check(onnx_model, feeds, target)
    assert str(compiled.module).count('"npu.matmul"') == 1


@pytest.mark.parametrize("name", ["elu-default", "selu-default", "celu-default"])
def test_exponential_linear_units_run_on_the_vector_unit(name):
    """max(x, 0) + alpha * (exp(min(x, 0)) - 1), as the ONNX reference writes ELU:
    no compare, no expm1."""
    onnx_model, feeds, target = CASES[name]
    compiled, _ = compile_and_check(onnx_model, feeds, target)
    assert compiled.fallback_ops == []


@pytest.mark.parametrize("exponent", ["2.0", "3.0", "0.5"])
def test_pow_by_a_constant_square_cube_or_root_runs_on_the_vector_unit(exponent):
    """x ** 2 (the variance of a layer norm as exported before opset 17), x ** 3
    (the tanh form of gelu), x ** 0.5: products and a square root on the
    vector unit, where a pow of any other exponent falls back."""
    onnx_model, feeds, target = CASES[f"pow$constant_{exponent}-default"]
    compiled, _ = compile_and_check(onnx_model, feeds, target)
    assert compiled.fallback_ops == []
    onnx_model, feeds, target = CASES["pow$constant_1.7-default"]
    other, _ = compile_and_check(onnx_model, feeds, target)
    assert other.fallback_ops


@pytest.mark.parametrize("name", ["topk$largest-default", "argmax$first_of_ties-default",
                                  "gatherelements$axis1_negative_indices-default"])
def test_ops_without_an_npu_form_are_reported_on_the_fallback_engine(name):
    onnx_model, feeds, target = CASES[name]
    compiled, _ = compile_and_check(onnx_model, feeds, target)
    assert compiled.fallback_ops
    assert all("fallback" in line and "'node0'" in line for line in compiled.fallback_ops)
