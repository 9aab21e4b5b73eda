"""Build the bundled example models with the onnx helper API and a fixed seed:

    small_cnn.onnx          a ResNet-style CNN: Conv, BatchNormalization, Relu,
                            MaxPool, residual Add, GlobalAveragePool, Flatten, Gemm
    transformer_block.onnx  one transformer encoder layer: multi-head attention
                            (MatMul, Reshape/Transpose into heads, Softmax), residual
                            Adds, LayerNormalization, a Gelu feed-forward (opset 20)

    python3 examples/make_examples.py [output directory]   (default: examples/)

Rerunning it rewrites the same files: the weights come from a seeded generator.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SEED = 2024
IR_VERSION = 9  # opset 20 (Gelu) needs IR version 9


class GraphBuilder:
    """Nodes and seeded random initializers of one graph."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def weight(self, name: str, *shape: int, scale: float | None = None) -> str:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        scale = np.sqrt(2.0 / fan_in) if scale is None else scale
        value = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        return self.constant(name, value)

    def constant(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

    def node(self, op_type: str, inputs: list[str], name: str, **attributes) -> str:
        self.nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attributes))
        return name

    def model(self, name: str, inputs: dict, outputs: dict, opset: int) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs.items()],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs.items()],
            self.initializers)
        made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                 ir_version=IR_VERSION, producer_name="atvoss-mlir examples")
        onnx.checker.check_model(made, full_check=True)
        return made


def small_cnn(image: int = 32, classes: int = 10) -> onnx.ModelProto:
    """Stem conv + max pool, one identity residual block, one strided block with a
    1x1 projection shortcut, global average pool, classifier."""
    g = GraphBuilder(SEED)

    def conv_bn(name, source, in_channels, out_channels, kernel, stride, relu=True):
        conv = g.node("Conv", [source, g.weight(f"{name}.w", out_channels, in_channels, kernel,
                                                kernel)], name, kernel_shape=[kernel, kernel],
                      strides=[stride, stride], pads=[kernel // 2] * 4)
        statistics = [g.weight(f"{name}.bn.gamma", out_channels, scale=0.2),
                      g.weight(f"{name}.bn.beta", out_channels, scale=0.1),
                      g.weight(f"{name}.bn.mean", out_channels, scale=0.1),
                      g.constant(f"{name}.bn.var",
                                 (g.rng.random(out_channels) + 0.5).astype(np.float32))]
        y = g.node("BatchNormalization", [conv] + statistics, f"{name}.bn", epsilon=1e-5)
        return g.node("Relu", [y], f"{name}.relu") if relu else y

    def block(name, source, in_channels, out_channels, stride):
        y = conv_bn(f"{name}.conv1", source, in_channels, out_channels, 3, stride)
        y = conv_bn(f"{name}.conv2", y, out_channels, out_channels, 3, 1, relu=False)
        shortcut = source
        if stride != 1 or in_channels != out_channels:
            shortcut = conv_bn(f"{name}.down", source, in_channels, out_channels, 1, stride,
                               relu=False)
        return g.node("Relu", [g.node("Add", [y, shortcut], f"{name}.add")], f"{name}.out")

    x = conv_bn("stem", "input", 3, 16, 3, 1)
    x = g.node("MaxPool", [x], "pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    x = block("block1", x, 16, 16, 1)
    x = block("block2", x, 16, 32, 2)
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x], "gap")], "flatten")
    g.node("Gemm", [x, g.weight("fc.w", classes, 32), g.weight("fc.b", classes, scale=0.1)],
           "logits", transB=1)
    return g.model("small_cnn", {"input": [1, 3, image, image]}, {"logits": [1, classes]},
                   opset=17)


def transformer_block(sequence: int = 16, model_width: int = 64, heads: int = 4,
                      hidden: int = 128) -> onnx.ModelProto:
    """A post-norm encoder layer: x + attention(x) -> LayerNorm -> + FFN -> LayerNorm."""
    g = GraphBuilder(SEED + 1)
    head_width = model_width // heads
    split_heads = g.constant("split_heads.shape",
                             np.asarray([1, sequence, heads, head_width], np.int64))
    merge_heads = g.constant("merge_heads.shape", np.asarray([1, sequence, model_width], np.int64))

    def linear(name, source, in_width, out_width):
        y = g.node("MatMul", [source, g.weight(f"{name}.w", in_width, out_width)], f"{name}.matmul")
        return g.node("Add", [y, g.weight(f"{name}.b", out_width, scale=0.1)], name)

    def heads_of(name, source, perm):
        """[1, S, D] -> [1, H, S, D/H] (or [1, H, D/H, S] for the transposed keys)."""
        y = g.node("Reshape", [source, split_heads], f"{name}.split")
        return g.node("Transpose", [y], f"{name}.heads", perm=perm)

    def layer_norm(name, source, output=None):
        return g.node("LayerNormalization",
                      [source, g.weight(f"{name}.gamma", model_width, scale=0.2),
                       g.weight(f"{name}.beta", model_width, scale=0.1)], output or name,
                      axis=-1, epsilon=1e-5)

    x = "input"
    q = heads_of("q", linear("q", x, model_width, model_width), [0, 2, 1, 3])
    k = heads_of("k", linear("k", x, model_width, model_width), [0, 2, 3, 1])
    v = heads_of("v", linear("v", x, model_width, model_width), [0, 2, 1, 3])
    scores = g.node("MatMul", [q, k], "scores")
    scale = g.constant("scale", np.asarray(1.0 / np.sqrt(head_width), np.float32))
    scaled = g.node("Mul", [scores, scale], "scores.scaled")
    attention = g.node("Softmax", [scaled], "attention", axis=-1)
    context = g.node("MatMul", [attention, v], "context")
    context = g.node("Transpose", [context], "context.merge", perm=[0, 2, 1, 3])
    context = g.node("Reshape", [context, merge_heads], "context.flat")
    x = layer_norm("norm1", g.node("Add", [x, linear("out", context, model_width, model_width)],
                                   "residual1"))
    y = g.node("Gelu", [linear("ffn1", x, model_width, hidden)], "ffn.gelu")
    y = linear("ffn2", y, hidden, model_width)
    layer_norm("norm2", g.node("Add", [x, y], "residual2"), output="output")
    return g.model("transformer_block", {"input": [1, sequence, model_width]},
                   {"output": [1, sequence, model_width]}, opset=20)


EXAMPLES = {"small_cnn.onnx": small_cnn, "transformer_block.onnx": transformer_block}


def main(argv: list[str]) -> int:
    directory = argv[0] if argv else os.path.dirname(os.path.abspath(__file__))
    for filename, build in EXAMPLES.items():
        path = os.path.join(directory, filename)
        onnx.save(build(), path)
        print(f"{path}: {os.path.getsize(path)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
