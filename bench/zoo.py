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
             stride: int = 1, group: int = 1) -> str:
        return self.node("Conv", [source, self.weight(f"{name}.w", out_channels,
                                                      in_channels // group, kernel, kernel)],
                         name, kernel_shape=[kernel, kernel], strides=[stride, stride],
                         pads=[kernel // 2] * 4, group=group)

    def conv_bn(self, name: str, source: str, in_channels: int, out_channels: int,
                kernel: int, stride: int = 1, group: int = 1, activation: str | None = "relu"
                ) -> str:
        y = self.batch_norm(f"{name}.bn", self.conv(name, source, in_channels, out_channels,
                                                    kernel, stride, group), out_channels)
        if activation == "relu":
            return self.relu(y)
        if activation == "relu6":
            return self.node("Clip", [y], f"{y}.relu6", min=0.0, max=6.0)
        return y

    def constant(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(value, name))
        return name

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
        return g.conv_bn(name, source, in_channels, out_channels, kernel, stride,
                         activation="relu" if relu else None)

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
                seed: int = 0, all_features: bool = False) -> onnx.ModelProto:
    """DenseNet-121 (BC): 120 convolutions; every layer of a dense block reads
    the Concat of all earlier features through BN-ReLU-Conv1x1-BN-ReLU-Conv3x3
    and appends `growth` channels; transitions halve the channels (1x1 conv)
    and the resolution (2x2 average pooling). 8.0M parameters. Each layer's
    input is Concat(previous input, new features), or with `all_features` the
    Concat of the block's input and all the features so far, as torchvision's
    DenseNet is exported."""
    g = Graph(seed)

    def bn_relu_conv(name, source, in_channels, out_channels, kernel):
        y = g.relu(g.batch_norm(f"{name}.bn", source, in_channels))
        return g.conv(name, y, in_channels, out_channels, kernel)

    x = g.conv("conv0", "input", 3, 2 * growth, 7, 2)
    x = g.relu(g.batch_norm("norm0", x, 2 * growth))
    x = g.node("MaxPool", [x], "pool0", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = 2 * growth
    for b, layers in enumerate(blocks):
        features = [x]
        for layer in range(layers):
            name = f"block{b + 1}.layer{layer + 1}"
            if all_features and layer > 0:
                x = g.node("Concat", features, f"{name}.input", axis=1)
            y = bn_relu_conv(f"{name}.conv1", x, channels, 4 * growth, 1)
            y = bn_relu_conv(f"{name}.conv2", y, 4 * growth, growth, 3)
            features.append(y)
            if not all_features:
                x = g.node("Concat", [x, y], f"{name}.concat", axis=1)
            channels += growth
        if all_features:
            x = g.node("Concat", features, f"block{b + 1}.concat", axis=1)
        if b + 1 < len(blocks):
            name = f"transition{b + 1}"
            x = bn_relu_conv(f"{name}.conv", x, channels, channels // 2, 1)
            x = g.node("AveragePool", [x], f"{name}.pool", kernel_shape=[2, 2], strides=[2, 2])
            channels //= 2
    x = g.relu(g.batch_norm("norm5", x, channels))
    return g.model("densenet121", g.classifier(x, channels, classes), batch, image, classes,
                   opset)


def squeezenet(image: int = 224, classes: int = 1000, batch: int = 1, opset: int = OPSET,
               seed: int = 0) -> onnx.ModelProto:
    """SqueezeNet 1.1: fire modules (1x1 squeeze, then 1x1 and 3x3 expands
    concatenated), a 1x1 conv classifier and a global average pool."""
    g = Graph(seed)
    x = g.relu(g.conv("conv1", "input", 3, 64, 3, 2))
    x = g.node("MaxPool", [x], "pool1", kernel_shape=[3, 3], strides=[2, 2])
    channels = 64
    plan = [(16, 64), (16, 64), "pool", (32, 128), (32, 128), "pool", (48, 192), (48, 192),
            (64, 256), (64, 256)]
    for index, step in enumerate(plan):
        if step == "pool":
            x = g.node("MaxPool", [x], f"pool{index}", kernel_shape=[3, 3], strides=[2, 2])
            continue
        squeeze, expand = step
        name = f"fire{index}"
        y = g.relu(g.conv(f"{name}.squeeze", x, channels, squeeze, 1))
        left = g.relu(g.conv(f"{name}.expand1", y, squeeze, expand, 1))
        right = g.relu(g.conv(f"{name}.expand3", y, squeeze, expand, 3))
        x = g.node("Concat", [left, right], f"{name}.concat", axis=1)
        channels = 2 * expand
    x = g.relu(g.conv("conv10", x, channels, classes, 1))
    x = g.node("Flatten", [g.node("GlobalAveragePool", [x], "gap")], "logits")
    return g.model("squeezenet", x, batch, image, classes, opset)


def mobilenetv2(image: int = 224, classes: int = 1000, batch: int = 1, opset: int = OPSET,
                seed: int = 0) -> onnx.ModelProto:
    """MobileNetV2: inverted residual blocks (1x1 expand, 3x3 depthwise, 1x1
    project, residual add when the shape is kept), relu6 as Clip."""
    g = Graph(seed)
    x = g.conv_bn("conv0", "input", 3, 32, 3, 2, activation="relu6")
    channels = 32
    for stage, (expansion, out, repeats, stride) in enumerate(
            [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
             (6, 160, 3, 2), (6, 320, 1, 1)]):
        for repeat in range(repeats):
            name, step = f"block{stage}.{repeat}", stride if repeat == 0 else 1
            hidden = channels * expansion
            y = x if expansion == 1 else g.conv_bn(f"{name}.expand", x, channels, hidden, 1,
                                                   activation="relu6")
            y = g.conv_bn(f"{name}.dw", y, hidden, hidden, 3, step, group=hidden,
                          activation="relu6")
            y = g.conv_bn(f"{name}.project", y, hidden, out, 1, activation=None)
            x = g.node("Add", [x, y], f"{name}.add") if step == 1 and channels == out else y
            channels = out
    x = g.conv_bn("conv_last", x, channels, 1280, 1, activation="relu6")
    return g.model("mobilenetv2", g.classifier(x, 1280, classes), batch, image, classes, opset)


# ShuffleNet v1 1x: the output channels of the three stages for each number of groups.
SHUFFLENET_WIDTHS = {1: (144, 288, 576), 2: (200, 400, 800), 3: (240, 480, 960),
                     4: (272, 544, 1088), 8: (384, 768, 1536)}


def shufflenet(groups: int = 3, image: int = 224, classes: int = 1000, batch: int = 1,
               opset: int = OPSET, seed: int = 0) -> onnx.ModelProto:
    """ShuffleNet v1 1x (g=3 by default): grouped 1x1 convs, channel shuffle as
    Reshape-Transpose-Reshape, 3x3 depthwise; stride-2 units concatenate an
    average-pooled shortcut. The stages' widths are the paper's for `groups`
    (1, 2, 3, 4 or 8)."""
    widths = SHUFFLENET_WIDTHS[groups]
    g = Graph(seed)
    x = g.conv_bn("conv1", "input", 3, 24, 3, 2)
    x = g.node("MaxPool", [x], "pool1", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels, size = 24, image // 4
    for stage, (out, repeats) in enumerate(zip(widths, (4, 8, 4))):
        for repeat in range(repeats):
            name, stride = f"stage{stage}.{repeat}", 2 if repeat == 0 else 1
            branch_out = out - channels if stride == 2 else out
            bottleneck = out // 4
            first_groups = 1 if channels == 24 else groups
            y = g.conv_bn(f"{name}.gconv1", x, channels, bottleneck, 1, group=first_groups)
            shape = g.constant(f"{name}.split", np.array(
                [batch, groups, bottleneck // groups, size, size], np.int64))
            y = g.node("Reshape", [y, shape], f"{name}.reshape1")
            y = g.node("Transpose", [y], f"{name}.shuffle", perm=[0, 2, 1, 3, 4])
            merged = g.constant(f"{name}.merge", np.array([batch, bottleneck, size, size],
                                                          np.int64))
            y = g.node("Reshape", [y, merged], f"{name}.reshape2")
            size = size // stride
            y = g.conv_bn(f"{name}.dw", y, bottleneck, bottleneck, 3, stride, group=bottleneck,
                          activation=None)
            y = g.conv_bn(f"{name}.gconv2", y, bottleneck, branch_out, 1, group=groups,
                          activation=None)
            if stride == 2:
                shortcut = g.node("AveragePool", [x], f"{name}.shortcut", kernel_shape=[3, 3],
                                  strides=[2, 2], pads=[1, 1, 1, 1])
                x = g.relu(g.node("Concat", [shortcut, y], f"{name}.concat", axis=1))
            else:
                x = g.relu(g.node("Add", [x, y], f"{name}.add"))
            channels = out
    return g.model("shufflenet", g.classifier(x, channels, classes), batch, image, classes,
                   opset)


def inception_v1(image: int = 224, classes: int = 1000, batch: int = 1, opset: int = OPSET,
                 seed: int = 0) -> onnx.ModelProto:
    """GoogLeNet (Inception-v1): LRN after the stem, nine inception modules of
    four branches (1x1; 1x1-3x3; 1x1-5x5; 3x3 max pool-1x1) concatenated."""
    g = Graph(seed)
    x = g.relu(g.conv("conv1", "input", 3, 64, 7, 2))
    x = g.node("MaxPool", [x], "pool1", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    x = g.node("LRN", [x], "lrn1", size=5, alpha=1e-4, beta=0.75, bias=1.0)
    x = g.relu(g.conv("conv2", x, 64, 64, 1))
    x = g.relu(g.conv("conv3", x, 64, 192, 3))
    x = g.node("LRN", [x], "lrn2", size=5, alpha=1e-4, beta=0.75, bias=1.0)
    x = g.node("MaxPool", [x], "pool2", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = 192
    modules = [("3a", 64, 96, 128, 16, 32, 32), ("3b", 128, 128, 192, 32, 96, 64), "pool",
               ("4a", 192, 96, 208, 16, 48, 64), ("4b", 160, 112, 224, 24, 64, 64),
               ("4c", 128, 128, 256, 24, 64, 64), ("4d", 112, 144, 288, 32, 64, 64),
               ("4e", 256, 160, 320, 32, 128, 128), "pool",
               ("5a", 256, 160, 320, 32, 128, 128), ("5b", 384, 192, 384, 48, 128, 128)]
    for index, module in enumerate(modules):
        if module == "pool":
            x = g.node("MaxPool", [x], f"between{index}", kernel_shape=[3, 3], strides=[2, 2],
                       pads=[1, 1, 1, 1])
            continue
        name, b1, r3, b3, r5, b5, bp = module
        one = g.relu(g.conv(f"{name}.1x1", x, channels, b1, 1))
        three = g.relu(g.conv(f"{name}.3x3", g.relu(g.conv(f"{name}.3x3r", x, channels, r3, 1)),
                              r3, b3, 3))
        five = g.relu(g.conv(f"{name}.5x5", g.relu(g.conv(f"{name}.5x5r", x, channels, r5, 1)),
                             r5, b5, 5))
        pooled = g.node("MaxPool", [x], f"{name}.pool", kernel_shape=[3, 3], strides=[1, 1],
                        pads=[1, 1, 1, 1])
        projected = g.relu(g.conv(f"{name}.poolproj", pooled, channels, bp, 1))
        x = g.node("Concat", [one, three, five, projected], f"{name}.concat", axis=1)
        channels = b1 + b3 + b5 + bp
    return g.model("inception_v1", g.classifier(x, channels, classes), batch, image, classes,
                   opset)


def inception_v2(image: int = 224, classes: int = 1000, batch: int = 1, opset: int = OPSET,
                 seed: int = 0) -> onnx.ModelProto:
    """BN-Inception (Inception-v2): batch norm after every conv, the 5x5 branch
    as two 3x3 convs, 3x3 average pools (count_include_pad=0: a divisor per
    border position) before a projection, and two modules that reduce the
    image with stride-2 branches beside a max pool passed through."""
    g = Graph(seed)
    x = g.conv_bn("conv1", "input", 3, 64, 7, 2)
    x = g.node("MaxPool", [x], "pool1", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    x = g.conv_bn("conv2", g.conv_bn("conv2r", x, 64, 64, 1), 64, 192, 3)
    x = g.node("MaxPool", [x], "pool2", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = 192
    # name, 1x1, 3x3 reduce, 3x3, double 3x3 reduce, double 3x3, pool ("avg"/"max"), projection;
    # a stride-2 module has no 1x1 and passes its max pool through (projection 0).
    modules = [("3a", 64, 64, 64, 64, 96, "avg", 32), ("3b", 64, 64, 96, 64, 96, "avg", 64),
               ("3c", 0, 128, 160, 64, 96, "max", 0),
               ("4a", 224, 64, 96, 96, 128, "avg", 128), ("4b", 192, 96, 128, 96, 128, "avg", 128),
               ("4c", 160, 128, 160, 128, 160, "avg", 128),
               ("4d", 96, 128, 192, 160, 192, "avg", 128), ("4e", 0, 128, 192, 192, 256, "max", 0),
               ("5a", 352, 192, 320, 160, 224, "avg", 128),
               ("5b", 352, 192, 320, 192, 224, "max", 128)]
    for name, b1, r3, b3, rd, bd, pool, bp in modules:
        stride = 2 if b1 == 0 else 1
        branches = [g.conv_bn(f"{name}.1x1", x, channels, b1, 1)] if b1 else []
        branches.append(g.conv_bn(f"{name}.3x3", g.conv_bn(f"{name}.3x3r", x, channels, r3, 1),
                                  r3, b3, 3, stride))
        double = g.conv_bn(f"{name}.d3x3a", g.conv_bn(f"{name}.d3x3r", x, channels, rd, 1),
                           rd, bd, 3)
        branches.append(g.conv_bn(f"{name}.d3x3b", double, bd, bd, 3, stride))
        pooled = g.node("AveragePool" if pool == "avg" else "MaxPool", [x], f"{name}.pool",
                        kernel_shape=[3, 3], strides=[stride, stride], pads=[1, 1, 1, 1])
        branches.append(g.conv_bn(f"{name}.poolproj", pooled, channels, bp, 1) if bp else pooled)
        x = g.node("Concat", branches, f"{name}.concat", axis=1)
        channels = b1 + b3 + bd + (bp or channels)
    return g.model("inception_v2", g.classifier(x, channels, classes), batch, image, classes,
                   opset)


MODELS = {"resnet50": resnet50, "densenet121": densenet121, "squeezenet": squeezenet,
          "mobilenetv2": mobilenetv2, "shufflenet": shufflenet, "inception_v1": inception_v1,
          "inception_v2": inception_v2}
