"""ONNX models for the benchmarks, built in memory with random weights.

The graphs are written as exporters write them (Conv, BatchNormalization, Relu,
pooling, Add or Concat, Gemm), at their real sizes, so compile and simulation
times are those of the real models. Tests do not import this module; they
build their own, smaller models.

    from zoo import MODELS
    onnx_model = MODELS["densenet121"]()
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# The ONNX model zoo's ResNet-50 v1 and DenseNet-121 are opset 9 graphs.
OPSET = 9


class Graph:
    """Nodes and initializers of one model, with random He-initialised weights."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []

    def weight(self, name: str, *shape: int, scale: float | None = None,
               offset: float = 0.0) -> str:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        std = scale if scale is not None else np.sqrt(2.0 / fan_in)
        value = self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std)
        self.initializers.append(numpy_helper.from_array(value + np.float32(offset), name))
        return name

    def node(self, op_type: str, inputs: list[str], name: str, **attributes) -> str:
        self.nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attributes))
        return name

    def conv(self, name: str, source: str, in_channels: int, out_channels: int, kernel: int,
             stride: int = 1) -> str:
        return self.node("Conv", [source, self.weight(f"{name}.w", out_channels, in_channels,
                                                      kernel, kernel)], name,
                         kernel_shape=[kernel, kernel], strides=[stride, stride],
                         pads=[kernel // 2] * 4)

    def batch_norm(self, name: str, source: str, channels: int) -> str:
        parameters = [self.weight(f"{name}.gamma", channels, scale=0.2, offset=1.0),
                      self.weight(f"{name}.beta", channels, scale=0.1),
                      self.weight(f"{name}.mean", channels, scale=0.1)]
        variance = self.rng.random(channels, dtype=np.float32) + np.float32(0.5)
        self.initializers.append(numpy_helper.from_array(variance, f"{name}.var"))
        return self.node("BatchNormalization", [source, *parameters, f"{name}.var"], name,
                         epsilon=1e-5)

    def relu(self, source: str) -> str:
        return self.node("Relu", [source], f"{source}.relu")

    def classifier(self, source: str, channels: int, classes: int) -> str:
        pooled = self.node("GlobalAveragePool", [source], "gap")
        flat = self.node("Flatten", [pooled], "flatten")
        return self.node("Gemm", [flat, self.weight("fc.w", classes, channels),
                                  self.weight("fc.b", classes, scale=0.1)], "logits", transB=1)

    def model(self, name: str, output: str, batch: int, image: int, classes: int,
              opset: int) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, name,
            [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, image, image])],
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, [batch, classes])],
            self.initializers)
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                                 ir_version=8 if opset > 9 else 4)


def resnet50(width: int = 64, image: int = 224, classes: int = 1000, batch: int = 1,
             opset: int = OPSET, seed: int = 0) -> onnx.ModelProto:
    """ResNet-50 v1: 53 convolutions with batch norm, bottleneck blocks with
    residual Adds, 25.6M parameters at the default width."""
    g = Graph(seed)

    def conv_bn(name, source, in_channels, out_channels, kernel, stride, relu=True):
        y = g.batch_norm(f"{name}.bn", g.conv(name, source, in_channels, out_channels, kernel,
                                              stride), out_channels)
        return g.relu(y) if relu else y

    x = conv_bn("stem", "input", 3, width, 7, 2)
    x = g.node("MaxPool", [x], "pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = width
    for stage, (blocks, stride) in enumerate(zip([3, 4, 6, 3], [1, 2, 2, 2])):
        mid = width * 2 ** stage
        for block in range(blocks):
            name = f"layer{stage + 1}.{block}"
            s = stride if block == 0 else 1
            y = conv_bn(f"{name}.conv1", x, channels, mid, 1, 1)
            y = conv_bn(f"{name}.conv2", y, mid, mid, 3, s)
            y = conv_bn(f"{name}.conv3", y, mid, mid * 4, 1, 1, relu=False)
            shortcut = x if block else conv_bn(f"{name}.down", x, channels, mid * 4, 1, s,
                                               relu=False)
            x = g.relu(g.node("Add", [y, shortcut], f"{name}.add"))
            channels = mid * 4
    return g.model("resnet50", g.classifier(x, channels, classes), batch, image, classes, opset)


def densenet121(growth: int = 32, blocks: tuple = (6, 12, 24, 16), image: int = 224,
                classes: int = 1000, batch: int = 1, opset: int = OPSET,
                seed: int = 0) -> onnx.ModelProto:
    """DenseNet-121 (BC): 120 convolutions; every layer of a dense block reads
    the Concat of all earlier features through BN-ReLU-Conv1x1-BN-ReLU-Conv3x3
    and appends `growth` channels; transitions halve the channels (1x1 conv)
    and the resolution (2x2 average pooling). 8.0M parameters."""
    g = Graph(seed)

    def bn_relu_conv(name, source, in_channels, out_channels, kernel):
        y = g.relu(g.batch_norm(f"{name}.bn", source, in_channels))
        return g.conv(name, y, in_channels, out_channels, kernel)

    x = g.conv("conv0", "input", 3, 2 * growth, 7, 2)
    x = g.relu(g.batch_norm("norm0", x, 2 * growth))
    x = g.node("MaxPool", [x], "pool0", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = 2 * growth
    for b, layers in enumerate(blocks):
        for layer in range(layers):
            name = f"block{b + 1}.layer{layer + 1}"
            y = bn_relu_conv(f"{name}.conv1", x, channels, 4 * growth, 1)
            y = bn_relu_conv(f"{name}.conv2", y, 4 * growth, growth, 3)
            x = g.node("Concat", [x, y], f"{name}.concat", axis=1)
            channels += growth
        if b + 1 < len(blocks):
            name = f"transition{b + 1}"
            x = bn_relu_conv(f"{name}.conv", x, channels, channels // 2, 1)
            x = g.node("AveragePool", [x], f"{name}.pool", kernel_shape=[2, 2], strides=[2, 2])
            channels //= 2
    x = g.relu(g.batch_norm("norm5", x, channels))
    return g.model("densenet121", g.classifier(x, channels, classes), batch, image, classes,
                   opset)


MODELS = {"resnet50": resnet50, "densenet121": densenet121}
