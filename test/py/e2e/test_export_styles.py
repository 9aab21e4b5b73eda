"""Old and new exports, compiled and simulated against onnxruntime:
- opset 9, as old model-zoo CNNs were exported: Conv, Relu, LRN, MaxPool,
  Dropout with its (unused) mask output declared, Concat of two branches,
  Flatten, Gemm, Softmax;
- opset 18 and 23, as current PyTorch exports write a transformer block:
  LayerNormalization, MatMul attention with a causal mask built from Trilu,
  comparisons, Where and CastLike, Softmax, Gelu, and a Resize (nearest and
  linear) of a feature map;
- a conv's feature map cut into windows (Reshape, Transpose, Reshape) and
  layer-normalised over its channels, as MaxViT's and Swin's window
  attention is exported;
- ConvNeXt's classifier head as PyTorch's dynamo exporter writes it;
- the embeddings and masks of the transformers library's encoders (BERT,
  RoBERTa), and their attention mask as the dynamo exporter writes it;
- timm's sine position embedding (EdgeNeXt, XCiT) and weight-standardised convs
  (NF-ResNet), both made of constants."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from e2e_testing import DEFAULT_TARGET, SMALL_SRAM_TARGET, compile_and_check
from onnx_testing import randn

I64 = np.int64
F32 = np.float32


def _value_info(name, spec):
    """A graph input or output: `spec` is a float tensor's shape, or (type, shape)."""
    element, shape = spec if isinstance(spec, tuple) else (TensorProto.FLOAT, spec)
    return helper.make_tensor_value_info(name, element, shape)


def _model(nodes, inputs, outputs, initializers, opset):
    graph = helper.make_graph(
        nodes, "export", [_value_info(n, s) for n, s in inputs.items()],
        [_value_info(n, s) for n, s in outputs.items()],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in initializers.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=4 if opset <= 9 else 8)


def zoo_cnn_opset9():
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3],
             pads=[1, 1, 1, 1]),
        node("Relu", ["c1"], ["r1"], name="relu1"),
        node("LRN", ["r1"], ["n1"], name="norm1", size=3, alpha=1e-3, beta=0.75, bias=1.0),
        node("MaxPool", ["n1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
        node("Conv", ["p1", "w2a"], ["c2a"], name="branch_a", kernel_shape=[1, 1]),
        node("Conv", ["p1", "w2b"], ["c2b"], name="branch_b", kernel_shape=[3, 3],
             pads=[1, 1, 1, 1]),
        node("Concat", ["c2a", "c2b"], ["cat"], name="concat", axis=1),
        node("Relu", ["cat"], ["r2"], name="relu2"),
        node("Flatten", ["r2"], ["flat"], name="flatten", axis=1),
        node("Dropout", ["flat"], ["drop", "drop_mask"], name="dropout", ratio=0.5),
        node("Gemm", ["drop", "fc_w", "fc_b"], ["logits"], name="fc", transB=1),
        node("Softmax", ["logits"], ["prob"], name="softmax", axis=1),
    ]
    initializers = {"w1": randn(6, 3, 3, 3, seed=1) * 0.3, "b1": randn(6, seed=2) * 0.1,
                    "w2a": randn(4, 6, 1, 1, seed=3) * 0.3, "w2b": randn(4, 6, 3, 3, seed=4) * 0.2,
                    "fc_w": randn(10, 8 * 4 * 4, seed=5) * 0.1, "fc_b": randn(10, seed=6) * 0.1}
    return _model(nodes, {"x": [2, 3, 8, 8]}, {"prob": [2, 10]}, initializers, 9)


def transformer_block(opset):
    """One pre-norm decoder block over (1, 6, 16), two heads, causal."""
    node = helper.make_node
    d, heads, length = 16, 2, 6
    nodes = [
        node("LayerNormalization", ["x", "ln_scale", "ln_bias"], ["h"], name="ln", axis=-1),
        node("MatMul", ["h", "w_q"], ["q2"], name="q"),
        node("MatMul", ["h", "w_k"], ["k2"], name="k"),
        node("MatMul", ["h", "w_v"], ["v2"], name="v"),
        node("Reshape", ["q2", "heads_shape"], ["q3"], name="q_heads"),
        node("Reshape", ["k2", "heads_shape"], ["k3"], name="k_heads"),
        node("Reshape", ["v2", "heads_shape"], ["v3"], name="v_heads"),
        node("Transpose", ["q3"], ["q4"], name="q_t", perm=[0, 2, 1, 3]),
        node("Transpose", ["k3"], ["k4"], name="k_t", perm=[0, 2, 3, 1]),
        node("Transpose", ["v3"], ["v4"], name="v_t", perm=[0, 2, 1, 3]),
        node("MatMul", ["q4", "k4"], ["scores_raw"], name="scores"),
        node("Mul", ["scores_raw", "scale"], ["scores_scaled"], name="scale_scores"),
        # the causal mask as exporters write it: Trilu of ones, == 0, Where -inf
        node("Trilu", ["ones", "zero_k"], ["lower"], name="tril", upper=0),
        node("Equal", ["lower", "zero_f"], ["masked"], name="is_masked"),
        node("CastLike", ["neg_inf64", "scores_scaled"], ["neg_inf"], name="castlike"),
        node("Where", ["masked", "neg_inf", "scores_scaled"], ["scores_masked"], name="mask"),
        node("Softmax", ["scores_masked"], ["attn"], name="softmax", axis=-1),
        node("MatMul", ["attn", "v4"], ["ctx4"], name="context"),
        node("Transpose", ["ctx4"], ["ctx3"], name="ctx_t", perm=[0, 2, 1, 3]),
        node("Reshape", ["ctx3", "model_shape"], ["ctx"], name="merge_heads"),
        node("MatMul", ["ctx", "w_o"], ["attn_out"], name="o"),
        node("Add", ["x", "attn_out"], ["res1"], name="residual1"),
        node("MatMul", ["res1", "w_up"], ["up"], name="up"),
        node("Gelu" if opset >= 20 else "Relu", ["up"], ["act"], name="act"),
        node("MatMul", ["act", "w_down"], ["down"], name="down"),
        # a clamp as exporters write it: comparisons and Where instead of Clip
        node("Greater", ["down", "limit"], ["too_big"], name="gt"),
        node("Where", ["too_big", "limit", "down"], ["clamped"], name="clamp"),
        node("Add", ["res1", "clamped"], ["y"], name="residual2"),
    ]
    initializers = {
        "ln_scale": 1 + randn(d, seed=1) * 0.1, "ln_bias": randn(d, seed=2) * 0.1,
        "w_q": randn(d, d, seed=3) * 0.2, "w_k": randn(d, d, seed=4) * 0.2,
        "w_v": randn(d, d, seed=5) * 0.2, "w_o": randn(d, d, seed=6) * 0.2,
        "w_up": randn(d, 32, seed=7) * 0.2, "w_down": randn(32, d, seed=8) * 0.2,
        "heads_shape": np.asarray([1, length, heads, d // heads], I64),
        "model_shape": np.asarray([1, length, d], I64),
        "scale": np.asarray(1 / np.sqrt(d // heads), F32),
        "ones": np.ones((length, length), F32), "zero_k": np.asarray(0, I64),
        "zero_f": np.asarray(0, F32), "neg_inf64": np.asarray(-np.inf, np.float64),
        "limit": np.asarray(0.8, F32)}
    return _model(nodes, {"x": [1, length, d]}, {"y": [1, length, d]}, initializers, opset)


def upsampling_head(opset):
    node = helper.make_node
    nodes = [
        node("Resize", ["x", "", "scales"], ["near"], name="up_nearest", mode="nearest"),
        node("Resize", ["x", "", "", "sizes"], ["lin"], name="up_linear", mode="linear",
             coordinate_transformation_mode="half_pixel"),
        node("Add", ["near", "lin"], ["y"], name="merge"),
    ]
    initializers = {"scales": np.asarray([1, 1, 2, 2], F32),
                    "sizes": np.asarray([1, 4, 10, 12], I64)}
    return _model(nodes, {"x": [1, 4, 5, 6]}, {"y": [1, 4, 10, 12]}, initializers, opset)


def windowed_layer_norm(channels=16, size=8, window=4):
    node = helper.make_node
    count = size // window
    nodes = [
        node("Conv", ["x", "w"], ["features"], name="conv"),
        node("Reshape", ["features", "split"], ["split_windows"], name="view"),
        node("Transpose", ["split_windows"], ["windows"], name="permute",
             perm=[0, 2, 4, 3, 5, 1]),
        node("Reshape", ["windows", "merge"], ["tokens"], name="unsafe_view"),
        node("LayerNormalization", ["tokens", "gamma", "beta"], ["normed"], name="norm",
             axis=-1, epsilon=1e-5),
        node("MatMul", ["normed", "projection"], ["y"], name="project"),
    ]
    initializers = {
        "w": randn(channels, channels, 1, 1, seed=1),
        "split": np.asarray([1, channels, count, window, count, window], I64),
        "merge": np.asarray([1, count * count, window * window, channels], I64),
        "gamma": randn(channels, seed=2), "beta": randn(channels, seed=3),
        "projection": randn(channels, channels, seed=4)}
    return _model(nodes, {"x": [1, channels, size, size]},
                  {"y": [1, count * count, window * window, channels]}, initializers, 18)


def test_layer_norm_of_windows_runs_on_the_vector_unit():
    """The tensor is NHWC underneath; the layer norm over its channels keeps
    them last instead of following the NHWC conv's layout with its sums
    coming out of order, which only the fallback engine could write."""
    compiled, _ = compile_and_check(windowed_layer_norm(), {"x": randn(1, 16, 8, 8)},
                                    DEFAULT_TARGET, rtol=1e-4, atol=1e-5)
    assert compiled.fallback_ops == []


def convnext_head(channels=256, classes=256):
    """Global mean, a Gather of every channel (an as_strided view), the
    channels-last layer norm between permutes, a Gemm."""
    node = helper.make_node
    nodes = [
        node("ReduceMean", ["x", "axes"], ["mean"], name="mean", keepdims=1),
        node("Reshape", ["mean", "flat"], ["flattened"], name="reshape"),
        node("Gather", ["flattened", "every_channel"], ["strided"], name="as_strided", axis=0),
        node("Transpose", ["strided"], ["last"], name="permute", perm=[0, 2, 3, 1]),
        node("LayerNormalization", ["last", "gamma", "beta"], ["normed"], name="norm",
             axis=-1, epsilon=1e-6),
        node("Transpose", ["normed"], ["first"], name="permute_back", perm=[0, 3, 1, 2]),
        node("Reshape", ["first", "rows"], ["features"], name="view"),
        node("Gemm", ["features", "w", "b"], ["y"], name="classifier", transB=1),
    ]
    initializers = {
        "axes": np.asarray([-1, -2], I64), "flat": np.asarray([-1], I64),
        "every_channel": np.arange(channels, dtype=I64).reshape(1, channels, 1, 1),
        "gamma": randn(channels, seed=1), "beta": randn(channels, seed=2),
        "rows": np.asarray([1, channels], I64),
        "w": randn(classes, channels, seed=3) * 0.05, "b": randn(classes, seed=4)}
    return _model(nodes, {"x": [1, channels, 2, 2]}, {"y": [1, classes]}, initializers, 18)


def test_convnext_head_in_a_small_sram():
    """With 16 KiB of SRAM the buffer planner looked for an op of the
    classifier inside the gather's tile loop, walked up to the module and
    stopped the process (an assertion in the MLIR bindings)."""
    compile_and_check(convnext_head(), {"x": randn(1, 256, 2, 2)},
                      "npu -max-sram-bytes=16384", rtol=1e-4, atol=1e-5)


def test_zoo_cnn_at_opset9_with_dropout_mask_declared():
    compile_and_check(zoo_cnn_opset9(), {"x": randn(2, 3, 8, 8)}, DEFAULT_TARGET, rtol=1e-4,
                      atol=1e-5)


@pytest.mark.parametrize("opset", [18, 23])
@pytest.mark.parametrize("target", [DEFAULT_TARGET, SMALL_SRAM_TARGET],
                         ids=["default", "small_sram"])
def test_transformer_block_export(opset, target):
    compile_and_check(transformer_block(opset), {"x": randn(1, 6, 16)}, target, rtol=1e-4,
                      atol=1e-5)


@pytest.mark.parametrize("opset", [18, 23])
def test_resize_head_export(opset):
    compile_and_check(upsampling_head(opset), {"x": randn(1, 4, 5, 6)}, DEFAULT_TARGET)


def transformers_embeddings(length=24, hidden=16, vocab=50, pad=1):
    """An encoder's embeddings and masks as the transformers library exports
    them: RoBERTa's position ids (a CumSum of the tokens that are not padding),
    token types gathered from a buffer of zeros (BERT: by constant positions,
    folded; RoBERTa: by the runtime position ids, whatever they are the zeros),
    the attention mask's rows gathered by constant indices, and the softmax's
    NaNs replaced (scaled-dot-product attention's decomposition)."""
    node = helper.make_node
    nodes = [
        node("Equal", ["ids", "pad"], ["is_pad"], name="is_pad"),
        node("Not", ["is_pad"], ["not_pad"], name="not_pad"),
        node("Cast", ["not_pad"], ["counted"], name="counted", to=TensorProto.INT32),
        node("CumSum", ["counted", "one"], ["running"], name="cumsum"),
        node("Mul", ["running", "counted"], ["kept"], name="kept"),
        node("Cast", ["kept"], ["kept64"], name="kept64", to=TensorProto.INT64),
        node("Add", ["kept64", "pad"], ["positions"], name="positions"),
        node("Expand", ["type_buffer", "buffer_shape"], ["types"], name="types"),
        node("GatherElements", ["types", "arange"], ["bert_types"], name="bert_types", axis=1),
        node("GatherElements", ["types", "positions"], ["roberta_types"], name="roberta_types",
             axis=1),
        node("Gather", ["words", "ids"], ["w"], name="word_rows"),
        node("Gather", ["places", "positions"], ["p"], name="position_rows"),
        node("Gather", ["type_rows", "bert_types"], ["t1"], name="bert_type_rows"),
        node("Gather", ["type_rows", "roberta_types"], ["t2"], name="roberta_type_rows"),
        node("Sum", ["w", "p", "t1", "t2"], ["e"], name="embeddings"),
        node("Softmax", ["e"], ["probs"], name="softmax", axis=-1),
        node("IsNaN", ["probs"], ["nan"], name="isnan"),
        node("Where", ["nan", "zero", "probs"], ["y"], name="where"),
        node("Cast", ["mask"], ["mask_f"], name="mask_f", to=TensorProto.FLOAT),
        node("Flatten", ["mask_f"], ["mask_rows"], name="flatten", axis=2),
        node("Gather", ["mask_rows", "every_row"], ["gathered"], name="mask_gather", axis=0),
        node("Reshape", ["gathered", "mask_shape"], ["mask_y"], name="mask_reshape"),
    ]
    initializers = {
        "pad": np.asarray(pad, I64), "one": np.asarray(1, I64),
        "type_buffer": np.zeros((1, 64), I64), "buffer_shape": np.asarray([1, 64], I64),
        "arange": np.arange(length, dtype=I64).reshape(1, length),
        "words": randn(vocab, hidden, seed=1), "places": randn(length + 2, hidden, seed=2),
        "type_rows": randn(2, hidden, seed=3), "zero": np.asarray(0.0, F32),
        "every_row": np.arange(length, dtype=I64).reshape(1, 1, 1, length),
        "mask_shape": np.asarray([1, 1, 1, length], I64),
    }
    return _model(nodes, {"ids": (TensorProto.INT64, [1, length]),
                          "mask": (TensorProto.INT64, [1, length])},
                  {"y": [1, length, hidden], "mask_y": [1, 1, 1, length]}, initializers, 17)


def test_transformers_embeddings_and_masks():
    """Equal to onnxruntime (padding tokens included); the CumSum, the gathers,
    the mask's Not and its Cast to numbers, the IsNaN and the Where run on the
    NPU's units or fold when compiling. RoBERTa's int64 comparison, addition
    and cast of 24 elements stay on the fallback (the vector unit has no i64)."""
    ids = np.random.default_rng(0).integers(0, 50, (1, 24)).astype(I64)
    ids[0, -5:] = 1
    mask = (ids != 1).astype(I64)
    compiled, _ = compile_and_check(transformers_embeddings(), {"ids": ids, "mask": mask},
                                    DEFAULT_TARGET)
    on_fallback = " ".join(compiled.fallback_ops)
    for name in ("not_pad", "counted", "cumsum", "kept", "types", "bert_types", "roberta_types",
                 "bert_type_rows", "roberta_type_rows", "softmax", "isnan", "where",
                 "mask_gather"):
        assert f"[node '{name}']" not in on_fallback, compiled.fallback_ops


def sinusoidal_position_embedding(exclusive=0, reverse=0, size=6, channels=8):
    """A DETR-style sine position embedding, as timm's EdgeNeXt and XCiT export
    it: a mask of ones counted along the rows (CumSum), column numbers repeated
    over the rows (Tile), normalised, divided by powers of a temperature, sin
    and cos of alternate channels; made of constants alone, added to the
    feature map."""
    node = helper.make_node
    nodes = [
        node("ConstantOfShape", ["mask_shape"], ["ones"], name="ones",
             value=numpy_helper.from_array(np.ones(1, F32))),
        node("CumSum", ["ones", "rows_axis"], ["rows"], name="cumsum_rows",
             exclusive=exclusive, reverse=reverse),
        node("Tile", ["col_index", "repeats"], ["cols"], name="tile_cols"),
        node("Div", ["rows", "scale"], ["rows_n"], name="norm_rows"),
        node("Mul", ["cols", "scale"], ["cols_n"], name="norm_cols"),
        node("Unsqueeze", ["rows_n", "last"], ["rows_u"], name="unsqueeze_rows"),
        node("Unsqueeze", ["cols_n", "last"], ["cols_u"], name="unsqueeze_cols"),
        node("Div", ["rows_u", "temperatures"], ["rows_t"], name="temper_rows"),
        node("Div", ["cols_u", "temperatures"], ["cols_t"], name="temper_cols"),
        node("Sin", ["rows_t"], ["rows_sin"], name="sin"),
        node("Cos", ["cols_t"], ["cols_cos"], name="cos"),
        node("Concat", ["rows_sin", "cols_cos"], ["embedding"], name="concat", axis=3),
        node("Transpose", ["embedding"], ["channels_first"], name="to_nchw", perm=[0, 3, 1, 2]),
        node("Add", ["x", "channels_first"], ["y"], name="add"),
    ]
    initializers = {
        "mask_shape": np.asarray([1, size, size], I64), "rows_axis": np.asarray(1, I64),
        "col_index": np.arange(1, size + 1, dtype=F32).reshape(1, 1, size),
        "repeats": np.asarray([1, size, 1], I64), "scale": np.asarray(2 * np.pi / size, F32),
        "last": np.asarray([3], I64),
        "temperatures": (10000.0 ** (np.arange(channels // 2) / (channels // 2))).astype(F32),
    }
    return _model(nodes, {"x": [1, channels, size, size]}, {"y": [1, channels, size, size]},
                  initializers, 17)


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_sinusoidal_position_embedding_folds(exclusive, reverse):
    """The embedding folds when compiling (CumSum, Tile, Sin and Cos of
    constants in numpy): one addition runs, nothing on the fallback engine."""
    compiled, _ = compile_and_check(sinusoidal_position_embedding(exclusive, reverse),
                                    {"x": randn(1, 8, 6, 6)}, DEFAULT_TARGET)
    assert compiled.fallback_ops == []


def weight_standardized_conv(channels=8):
    """NF-ResNet's weight-standardised conv, as timm exports it: the weights
    normalised by their own statistics (BatchNormalization in training mode
    on a constant, with ReduceMean for its running statistics)."""
    node = helper.make_node
    nodes = [
        node("Reshape", ["weight", "flat_shape"], ["flat"], name="flatten_weight"),
        node("ReduceMean", ["flat"], ["mean"], name="mean", axes=[0, 2], keepdims=0),
        node("ReduceMean", ["flat"], ["mean_kept"], name="mean_kept", axes=[0, 2]),
        node("Sub", ["flat", "mean_kept"], ["centred"], name="centre"),
        node("Mul", ["centred", "centred"], ["squares"], name="square"),
        node("ReduceMean", ["squares"], ["variance"], name="variance", axes=[0, 2], keepdims=0),
        node("BatchNormalization", ["flat", "gain", "zero", "mean", "variance"],
             ["standardized", "running_mean", "running_var"], name="standardize",
             epsilon=1e-5, momentum=0.25, training_mode=1),
        node("Reshape", ["standardized", "weight_shape"], ["w"], name="unflatten_weight"),
        node("Conv", ["x", "w"], ["conv"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        node("Add", ["running_mean", "running_var"], ["statistics"], name="statistics"),
    ]
    weight = randn(channels, 3, 3, 3, seed=4) * 3 + 1
    initializers = {
        "weight": weight, "flat_shape": np.asarray([1, channels, 27], I64),
        "weight_shape": np.asarray(weight.shape, I64),
        "gain": (randn(channels, seed=5) + 2).astype(F32), "zero": np.zeros(channels, F32),
    }
    return _model(nodes, {"x": [1, 3, 10, 10]},
                  {"conv": [1, channels, 10, 10], "statistics": [channels]}, initializers, 15)


def test_weight_standardized_conv_folds():
    """The standardised weights and the running statistics fold when compiling,
    equal to onnxruntime; only the conv runs."""
    compiled, _ = compile_and_check(weight_standardized_conv(), {"x": randn(1, 3, 10, 10)},
                                    DEFAULT_TARGET)
    assert compiled.fallback_ops == []


def dynamo_attention_mask(length=16):
    """The attention mask as PyTorch's dynamo exporter writes a transformers
    encoder's: the padding mask indexed by a constant (batch, key) pair per key
    (GatherND, from aten.index), combined with a mask of ones (And), and the
    scores' bias chosen by it (Where)."""
    node = helper.make_node
    pairs = np.stack([np.zeros(length, I64), np.arange(length, dtype=I64)], -1)
    nodes = [
        node("Cast", ["mask"], ["keep"], name="to_bool", to=TensorProto.BOOL),
        node("GatherND", ["keep", "pairs"], ["per_key"], name="index"),
        node("And", ["everywhere", "per_key"], ["allowed"], name="combine"),
        node("Where", ["allowed", "zero", "lowest"], ["bias"], name="bias"),
        node("Add", ["scores", "bias"], ["y"], name="masked"),
    ]
    initializers = {"pairs": pairs.reshape(1, 1, 1, length, 2),
                    "everywhere": np.ones((1, 1, length, length), np.bool_),
                    "zero": np.asarray(0.0, F32), "lowest": np.asarray(-3.0e38, F32)}
    return _model(nodes, {"scores": [1, 2, length, length],
                          "mask": (TensorProto.INT64, [1, length])},
                  {"y": [1, 2, length, length]}, initializers, 18)


def test_dynamo_attention_mask():
    """GatherND by constant pairs that step along the keys is one strided slice
    of the mask; the And, the Where and the Add run on the vector unit; equal to
    onnxruntime with padding keys."""
    mask = np.ones((1, 16), I64)
    mask[0, -4:] = 0
    compiled, _ = compile_and_check(dynamo_attention_mask(),
                                    {"scores": randn(1, 2, 16, 16), "mask": mask}, DEFAULT_TARGET)
    on_fallback = " ".join(compiled.fallback_ops)
    for name in ("index", "combine", "bias", "masked"):
        assert f"[node '{name}']" not in on_fallback, compiled.fallback_ops
