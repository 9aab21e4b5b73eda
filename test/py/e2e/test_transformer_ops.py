"""The ops of transformer models (Softmax, LayerNormalization,
RMSNormalization, Gelu, ReduceMean/Sum/Max/Min, GlobalAveragePool, the ONNX
Attention op) and a whole encoder layer, through atvoss_mlir.compile and the
simulator, against onnxruntime: fp32 within FP32, fp16 within FP16.

Every case must also run entirely on the NPU's vector and matrix units:
`compiled.fallback_ops == []` and no busy cycle on the scalar fallback engine.

Each case runs on the default machine (1 MiB of SRAM: a row fits whole, the
compiler may keep it in one pass) and on ROW_SPLIT_TARGET, whose SRAM cannot
hold one softmax / normalization / reduction row with double buffering, so
the row must be split into tiles and reduced in two passes (or online)."""

from __future__ import annotations

import numpy as np
import pytest

from e2e_testing import DEFAULT_TARGET, FP16, FP32, compile_and_check
from onnx_testing import randn, single

from atvoss_mlir.testing.transformer_models import MASKS, attention_op, encoder_layer

I64 = np.int64
F16 = np.float16

# The long axis of the per-op shapes (the softmax / normalization / reduction
# axis) has ROW elements. With 8 KiB of SRAM:
#   fp32: one row is 2048 * 4 B = 8 KiB, the whole SRAM; double buffering needs
#         2 input + 2 output row buffers = 32 KiB > 8 KiB.
#   fp16: one row is 2048 * 2 B = 4 KiB; double buffered in + out = 16 KiB > 8 KiB.
# So no row fits whole with double buffering: rows are split, two-pass forms forced.
ROW = 2048
ROW_SPLIT_TARGET = "npu -max-sram-bytes=8192"
TARGETS = {"default": DEFAULT_TARGET, "small_sram": ROW_SPLIT_TARGET}
DTYPES = {"fp32": (np.float32, FP32), "fp16": (F16, FP16)}

# onnx.checker and onnxruntime want IR version 9 for opset 20, 11 for opset 23.
IR_VERSIONS = {13: 8, 17: 8, 18: 8, 20: 9, 23: 11}

target_params = pytest.mark.parametrize("target", list(TARGETS.values()), ids=list(TARGETS))
dtype_params = pytest.mark.parametrize("dtype,tolerance", list(DTYPES.values()), ids=list(DTYPES))


def op_model(op_type, x_shape, out_shape, attributes=None, initializers=None, opset=17,
             dtype=np.float32):
    made = single(op_type, {"x": x_shape}, out_shape, attributes, initializers, opset,
                  dtype=dtype)
    made.ir_version = IR_VERSIONS[opset]
    return made


def check_on_npu(onnx_model, feeds, target, tolerance):
    """Numerics against onnxruntime, then nothing left on the fallback engine."""
    compiled, _ = compile_and_check(onnx_model, feeds, target, **tolerance)
    assert compiled.fallback_ops == [], \
        "ops left on the fallback engine:\n" + "\n".join(compiled.fallback_ops)
    busy = compiled.report["engines"]["fallback"]["busy_cycles"]
    assert busy == 0, f"{busy} busy cycles on the fallback engine"
    return compiled


def long_axis_shape(small: list[int], axis: int) -> list[int]:
    """`small` with ROW inserted at `axis`: [3, 5], 1 -> [3, 2048, 5]."""
    shape = list(small)
    shape.insert(axis, ROW)
    return shape


# -- softmax (opset 13: along one axis) ------------------------------------------------------
SOFTMAX_CASES = [(rank, axis) for rank in (3, 4) for axis in range(rank)] + [(4, -1)]


@target_params
@dtype_params
@pytest.mark.parametrize("rank,axis", SOFTMAX_CASES,
                         ids=[f"rank{r}_axis{a}" for r, a in SOFTMAX_CASES])
def test_softmax(rank, axis, dtype, tolerance, target):
    small = [3, 5] if rank == 3 else [2, 3, 2]
    shape = long_axis_shape(small, axis % rank)
    check_on_npu(op_model("Softmax", shape, shape, {"axis": axis}, opset=13, dtype=dtype),
                 {"x": (randn(*shape) * 3).astype(dtype)}, target, tolerance)


@pytest.mark.parametrize("target", list(TARGETS.values()), ids=list(TARGETS))
def test_softmax_reads_its_input_once_when_a_row_fits(target):
    """Rows of 2048 fp32 fit the default SRAM: one pass reads the input once
    and writes the output once. With 8 KiB they do not: the max, exp, sum and
    divide passes read the input, the exponentials and the row sums again."""
    shape = [3, 5, ROW]
    x = (randn(*shape) * 3).astype(np.float32)
    compiled = check_on_npu(op_model("Softmax", shape, shape, {"axis": -1}, opset=13),
                            {"x": x}, target, FP32)
    read, written = (compiled.report[f"dram_{way}_bytes"] for way in ("read", "write"))
    if target == DEFAULT_TARGET:
        assert (read, written) == (x.nbytes, x.nbytes)
    else:
        assert read > 3 * x.nbytes and written > 2 * x.nbytes


# -- normalizations over the last axis -------------------------------------------------------
NORM_SHAPE = [3, 5, ROW]


@target_params
@dtype_params
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
def test_layer_normalization(bias, dtype, tolerance, target):
    initializers = {"scale": (1 + 0.2 * randn(ROW, seed=1)).astype(dtype)}
    if bias:
        initializers["bias"] = (0.1 * randn(ROW, seed=2)).astype(dtype)
    onnx_model = op_model("LayerNormalization", NORM_SHAPE, NORM_SHAPE,
                          {"axis": -1, "epsilon": 1e-5}, initializers, dtype=dtype)
    # An offset mean: the variance must not be taken as E[x^2] - E[x]^2 carelessly.
    check_on_npu(onnx_model, {"x": (randn(*NORM_SHAPE) * 2 + 3).astype(dtype)}, target,
                 tolerance)


@target_params
@dtype_params
def test_rms_normalization(dtype, tolerance, target):
    onnx_model = op_model("RMSNormalization", NORM_SHAPE, NORM_SHAPE,
                          {"axis": -1, "epsilon": 1e-5},
                          {"scale": (1 + 0.2 * randn(ROW, seed=1)).astype(dtype)}, opset=23,
                          dtype=dtype)
    check_on_npu(onnx_model, {"x": (randn(*NORM_SHAPE) * 2).astype(dtype)}, target, tolerance)


# -- Gelu (opset 20) ---------------------------------------------------------------------------
@target_params
@dtype_params
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate, dtype, tolerance, target):
    shape = [3, ROW]
    check_on_npu(op_model("Gelu", shape, shape, {"approximate": approximate}, opset=20,
                          dtype=dtype), {"x": (randn(*shape) * 3).astype(dtype)}, target,
                 tolerance)


# -- linear layers as exporters write them ---------------------------------------------------

def exported_linear(activation: str, rows=(2, 48), k=32, n=64):
    """MatMul of a 3-d input, Add of a bias[N], then the activation as
    PyTorch exports it before opset 20 (gelu: Div by sqrt(2), Erf, Add 1, Mul
    by x, Mul by 0.5)."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(3)
    constants = {"w": rng.standard_normal((k, n)) * k ** -0.5, "b": rng.standard_normal(n),
                 "sqrt2": np.sqrt(2.0), "one": 1.0, "half": 0.5}
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]),
             helper.make_node("Add", ["mm", "b"], ["y"])]
    if activation == "gelu":
        nodes += [helper.make_node("Div", ["y", "sqrt2"], ["d"]),
                  helper.make_node("Erf", ["d"], ["e"]),
                  helper.make_node("Add", ["e", "one"], ["a"]),
                  helper.make_node("Mul", ["y", "a"], ["p"]),
                  helper.make_node("Mul", ["p", "half"], ["out"])]
    else:
        nodes += [helper.make_node("Relu", ["y"], ["out"])]
    graph = helper.make_graph(
        nodes, "linear", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [*rows, k])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [*rows, n])],
        [numpy_helper.from_array(np.asarray(v, np.float32), name)
         for name, v in constants.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.mark.parametrize("activation", ["gelu", "relu"])
def test_exported_linear_layer_is_one_matmul(activation):
    """The bias is the matmul's (the matrix unit adds it) and the activation
    its epilogue, through the reshape of its rows: one npu.matmul per tile and
    no vector op, numerics as onnxruntime's. (The gelu chain is merged first:
    its tensors exceed a quarter of the 32 KiB SRAM.)"""
    compiled = check_on_npu(exported_linear(activation),
                            {"x": (randn(2, 48, 32) * 2).astype(np.float32)},
                            "npu -max-sram-bytes=32768", FP32)
    engines = {op["op"]: op["engine"] for op in compiled.report["ops"]}
    assert engines.get("npu.matmul") == "matrix"
    assert not [op for op, engine in engines.items() if engine == "vector"], engines
    assert f'activation = "{activation}"' in str(compiled.module)


# -- reductions (opset 18: axes as an initializer input) --------------------------------------
REDUCE_SHAPE = [3, ROW, 4]
REDUCE_AXES = {"axis1": [1], "axes0_2": [0, 2], "axes_last2": [-2, -1]}


@target_params
@dtype_params
@pytest.mark.parametrize("keepdims", [0, 1], ids=["keepdims0", "keepdims1"])
@pytest.mark.parametrize("axes", list(REDUCE_AXES.values()), ids=list(REDUCE_AXES))
@pytest.mark.parametrize("op_type", ["ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"])
def test_reduce(op_type, axes, keepdims, dtype, tolerance, target):
    rank = len(REDUCE_SHAPE)
    reduced = {a % rank for a in axes}
    out_shape = [1 if i in reduced else n for i, n in enumerate(REDUCE_SHAPE)
                 if keepdims or i not in reduced]
    onnx_model = op_model(op_type, REDUCE_SHAPE, out_shape, {"keepdims": keepdims},
                          {"axes": np.asarray(axes, I64)}, opset=18, dtype=dtype)
    check_on_npu(onnx_model, {"x": randn(*REDUCE_SHAPE).astype(dtype)}, target, tolerance)


@target_params
@dtype_params
def test_global_average_pool(dtype, tolerance, target):
    shape = [2, 3, 32, ROW // 32]   # a 2048-element plane per channel
    check_on_npu(op_model("GlobalAveragePool", shape, shape[:2] + [1, 1], dtype=dtype),
                 {"x": randn(*shape).astype(dtype)}, target, tolerance)


# -- the Attention op (opset 23) -----------------------------------------------------------------
# q [2, heads, 8, 16]; k, v [2, heads, ROW, 16]: a score row has ROW keys.
@target_params
@dtype_params
@pytest.mark.parametrize("heads", [1, 4], ids=["1head", "4heads"])
@pytest.mark.parametrize("mask", MASKS, ids=[str(m).lower() for m in MASKS])
def test_attention(mask, heads, dtype, tolerance, target):
    onnx_model, feeds = attention_op(2, 8, ROW, heads, 16, mask, dtype=dtype)
    check_on_npu(onnx_model, feeds, target, tolerance)


# -- a whole encoder layer ---------------------------------------------------------------------
@target_params
@dtype_params
def test_encoder_layer(dtype, tolerance, target):
    onnx_model, feeds = encoder_layer(seq=16, d_model=64, heads=4, ffn=128, dtype=dtype)
    check_on_npu(onnx_model, feeds, target, tolerance)


# -- embedding lookup (Gather of a table's rows by runtime token ids) -----------------------

def embedding_model(vocabulary: int, width: int, tokens: list[int], dtype=np.float32):
    """Gather(table, ids) + positions, then LayerNormalization: a BERT-style input layer."""
    from onnx import TensorProto, helper, numpy_helper
    table = (np.random.default_rng(1).standard_normal((vocabulary, width)) * 0.5).astype(dtype)
    positions = (np.random.default_rng(2).standard_normal((tokens[-1], width)) * 0.5).astype(dtype)
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e"], axis=0, name="embed"),
             helper.make_node("Add", ["e", "positions"], ["s"], name="add"),
             helper.make_node("LayerNormalization", ["s", "gamma", "beta"], ["y"], axis=-1,
                              name="norm")]
    element = TensorProto.FLOAT if dtype == np.float32 else TensorProto.FLOAT16
    graph = helper.make_graph(
        nodes, "embedding", [helper.make_tensor_value_info("ids", TensorProto.INT64, tokens)],
        [helper.make_tensor_value_info("y", element, tokens + [width])],
        [numpy_helper.from_array(table, "table"), numpy_helper.from_array(positions, "positions"),
         numpy_helper.from_array(np.ones(width, dtype), "gamma"),
         numpy_helper.from_array(np.zeros(width, dtype), "beta")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@target_params
@pytest.mark.parametrize("tokens", [[2, 9], [13]], ids=["batch2", "one_sequence"])
def test_embedding_lookup(tokens, target):
    """One table row copied per token (negative ids count from the end), on the NPU."""
    vocabulary = 1000
    ids = np.random.default_rng(3).integers(-vocabulary, vocabulary, tokens).astype(I64)
    compiled = check_on_npu(embedding_model(vocabulary, 48, tokens), {"ids": ids}, target, FP32)
    # The tokens' rows are read, not the table (192,000 B).
    assert compiled.report["dram_read_bytes"] < vocabulary * 48 * 4 // 4


def test_embedding_id_out_of_range_is_a_located_error():
    from atvoss_mlir.diagnostics import DiagnosticError
    import atvoss_mlir
    compiled = atvoss_mlir.compile(embedding_model(100, 16, [4]))
    with pytest.raises(DiagnosticError, match=r"out of bounds.*\[node 'embed'\]"):
        compiled.run({"ids": np.array([3, 100, 0, 1], I64)})
