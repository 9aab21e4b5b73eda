"""Transformer-shaped ONNX models for the tests and the benchmarks, built with
onnx.helper and seeded random weights:

    encoder_layer   a BERT-style post-LN encoder layer from plain ONNX ops
                    (MatMul, Add, Reshape, Transpose, Mul, Softmax,
                    LayerNormalization, Gelu), opset 20 for Gelu
    attention_op    one ONNX `Attention` node (opset 23) on 4-D q/k/v, with no
                    mask, a causal one, an additive float mask or a bool mask

Each returns (onnx.ModelProto, feeds); the model passes onnx.checker and runs
on onnxruntime's CPU provider (`reference` in onnx_models runs it)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

_ELEMENT_TYPES = {np.dtype(np.float32): TensorProto.FLOAT,
                  np.dtype(np.float16): TensorProto.FLOAT16,
                  np.dtype(np.bool_): TensorProto.BOOL}
# Opset 20 (Gelu) needs IR version 9, opset 23 (Attention) IR version 11.
_IR_VERSIONS = {17: 8, 20: 9, 23: 11}
MASKS = (None, "causal", "additive", "bool")


def _finished(nodes, name, inputs: dict, outputs: dict, initializers: list, opset: int,
              dtype) -> onnx.ModelProto:
    """inputs: name -> (shape, numpy dtype); outputs: name -> shape (of `dtype`)."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, _ELEMENT_TYPES[np.dtype(t)], s)
         for n, (s, t) in inputs.items()],
        [helper.make_tensor_value_info(n, _ELEMENT_TYPES[np.dtype(dtype)], s)
         for n, s in outputs.items()],
        initializers)
    made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=_IR_VERSIONS[opset],
                             producer_name="atvoss-mlir transformer_models")
    onnx.checker.check_model(made, full_check=True)
    return made


def encoder_layer(seq: int, d_model: int, heads: int, ffn: int, dtype=np.float32,
                  seed: int = 0) -> tuple[onnx.ModelProto, dict]:
    """A post-LN encoder layer on input [1, seq, d_model]:

        x1 = LayerNorm(x + out_proj(attention(x)))
        y  = LayerNorm(x1 + ffn2(Gelu(ffn1(x1))))

    multi-head attention as exporters write it: Q/K/V projections (MatMul +
    bias Add), Reshape to [1, seq, heads, d_head] and Transpose to heads
    (K to [1, heads, d_head, seq]), MatMul(Q, K^T) * 1/sqrt(d_head),
    Softmax(axis=-1), MatMul with V, Transpose + Reshape back."""
    if d_model % heads:
        raise ValueError(f"d_model={d_model} is not a multiple of heads={heads}")
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    d_head = d_model // heads
    nodes: list[onnx.NodeProto] = []
    initializers: list[onnx.TensorProto] = []

    def constant(name, value):
        initializers.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(name, *shape, scale):
        return constant(name, (rng.standard_normal(shape) * scale).astype(dtype))

    def node(op_type, inputs, name, **attributes):
        nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attributes))
        return name

    def linear(name, source, in_width, out_width):
        y = node("MatMul", [source, weight(f"{name}.weight", in_width, out_width,
                                           scale=1.0 / np.sqrt(in_width))], f"{name}.matmul")
        return node("Add", [y, weight(f"{name}.bias", out_width, scale=0.1)], f"{name}.add")

    split_shape = constant("attention.split_heads.shape",
                           np.asarray([1, seq, heads, d_head], np.int64))
    merge_shape = constant("attention.merge_heads.shape", np.asarray([1, seq, d_model], np.int64))

    def to_heads(name, source, perm):
        y = node("Reshape", [source, split_shape], f"{name}.split_heads")
        return node("Transpose", [y], f"{name}.transpose", perm=perm)

    def layer_norm(name, source, output=None):
        return node("LayerNormalization",
                    [source, constant(f"{name}.gamma",
                                      (1.0 + 0.2 * rng.standard_normal(d_model)).astype(dtype)),
                     weight(f"{name}.beta", d_model, scale=0.1)], output or name,
                    axis=-1, epsilon=1e-5)

    x = "input"
    q = to_heads("attention.query", linear("attention.query", x, d_model, d_model),
                 [0, 2, 1, 3])
    k = to_heads("attention.key", linear("attention.key", x, d_model, d_model), [0, 2, 3, 1])
    v = to_heads("attention.value", linear("attention.value", x, d_model, d_model),
                 [0, 2, 1, 3])
    scores = node("MatMul", [q, k], "attention.scores")
    scale = constant("attention.scale", np.asarray(1.0 / np.sqrt(d_head), dtype))
    scores = node("Mul", [scores, scale], "attention.scores.scaled")
    probabilities = node("Softmax", [scores], "attention.softmax", axis=-1)
    context = node("MatMul", [probabilities, v], "attention.context")
    context = node("Transpose", [context], "attention.merge_heads.transpose", perm=[0, 2, 1, 3])
    context = node("Reshape", [context, merge_shape], "attention.merge_heads")
    attended = linear("attention.output", context, d_model, d_model)
    x = layer_norm("attention.layer_norm", node("Add", [x, attended], "attention.residual"))
    y = linear("ffn.intermediate", x, d_model, ffn)
    y = node("Gelu", [y], "ffn.gelu", approximate="none")
    y = linear("ffn.output", y, ffn, d_model)
    layer_norm("ffn.layer_norm", node("Add", [x, y], "ffn.residual"), output="output")
    made = _finished(nodes, "encoder_layer", {"input": ([1, seq, d_model], dtype)},
                     {"output": [1, seq, d_model]}, initializers, 20, dtype)
    feeds = {"input": rng.standard_normal((1, seq, d_model)).astype(dtype)}
    return made, feeds


def attention_op(batch: int, q_seq: int, kv_seq: int, heads: int, d_head: int,
                 mask: str | None = None, dtype=np.float32,
                 seed: int = 0) -> tuple[onnx.ModelProto, dict]:
    """One `Attention` node (opset 23): q [batch, heads, q_seq, d_head], k and v
    [batch, heads, kv_seq, d_head] -> y [batch, heads, q_seq, d_head].

    mask: None; "causal" (is_causal=1); "additive" (a float attn_mask input of
    [q_seq, kv_seq], added to the scores, a quarter of it -1e4); "bool" (a
    bool attn_mask input of [batch, 1, q_seq, kv_seq], True takes part). Every
    row of a mask keeps at least one key, so no softmax row is all masked."""
    if mask not in MASKS:
        raise ValueError(f"mask={mask!r} is not one of {MASKS}")
    dtype = np.dtype(dtype)
    rng = np.random.default_rng(seed)
    inputs = {"q": ([batch, heads, q_seq, d_head], dtype),
              "k": ([batch, heads, kv_seq, d_head], dtype),
              "v": ([batch, heads, kv_seq, d_head], dtype)}
    feeds = {name: rng.standard_normal(shape).astype(dtype) for name, (shape, _) in inputs.items()}
    attributes = {}
    names = ["q", "k", "v"]
    if mask == "causal":
        attributes["is_causal"] = 1
    elif mask in ("additive", "bool"):
        shape = [q_seq, kv_seq] if mask == "additive" else [batch, 1, q_seq, kv_seq]
        keep = rng.random(shape) >= 0.25
        keep[..., np.arange(q_seq), np.arange(q_seq) % kv_seq] = True
        if mask == "additive":
            value = np.where(keep, rng.standard_normal(shape), -1e4).astype(dtype)
            inputs["attn_mask"] = (shape, dtype)
        else:
            value = keep
            inputs["attn_mask"] = (shape, np.bool_)
        feeds["attn_mask"] = value
        names.append("attn_mask")
    attention = helper.make_node("Attention", names, ["y"], name="attention", **attributes)
    made = _finished([attention], "attention", inputs, {"y": [batch, heads, q_seq, d_head]}, [],
                     23, dtype)
    return made, feeds
