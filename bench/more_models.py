"""More ONNX models for the benchmarks, beyond the zoo of the graph-level
targets (bench/zoo.py), built the same way (random weights, real sizes): the
patterns the zoo lacks.

  - efficientnet_like: MBConv blocks with swish (x * sigmoid(x)) and
    squeeze-excitation, as EfficientNet-B0 at 224x224 (nine blocks, not its 16);
  - unet_like: a U-Net of three levels at 128x128, nearest 2x Resize and
    Concat on the way up;
  - resnet18: basic blocks (two 3x3 convs), opset 13;
  - mobilenetv1: depthwise-separable convs, opset 11;
  - shufflenetv2: channel Split, Concat and channel shuffle (Reshape,
    Transpose, Reshape) in every unit, as ShuffleNetV2 1.0x at 224x224;
  - deeplab_aspp: a stride-8 backbone and DeepLabV3's ASPP (1x1 and dilated
    3x3 branches, the image-level feature broadcast by Expand, Concat) at
    128x128;
  - densenet121_all_features: the zoo's DenseNet-121 with each layer reading
    the Concat of all the features so far, as torchvision's is exported;
  - regnetx_400mf: RegNetX-400MF's stages (1, 2, 7 and 12 blocks of 32, 64,
    160 and 400 channels) of 3x3 grouped convs of 16 channels per group
    between 1x1 convs, residual adds.

    from more_models import MODELS
    onnx_model = MODELS["unet_like"]()
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from zoo import Graph, densenet121


def _model(g: Graph, name: str, output: str, shape_in: list, shape_out: list,
           opset: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        g.nodes, name, [helper.make_tensor_value_info("input", TensorProto.FLOAT, shape_in)],
        [helper.make_tensor_value_info(output, TensorProto.FLOAT, shape_out)], g.initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=8)


def efficientnet_like(image: int = 224, classes: int = 1000, batch: int = 1,
                      opset: int = 13) -> onnx.ModelProto:
    g = Graph(4)

    def swish(y):
        return g.node("Mul", [y, g.node("Sigmoid", [y], y + ".sig")], y + ".swish")

    x = swish(g.conv_bn("stem", "input", 3, 32, 3, 2, activation=None))
    channels = 32
    for i, (expansion, out, stride) in enumerate(
            [(1, 16, 1), (6, 24, 2), (6, 24, 1), (6, 40, 2), (6, 40, 1), (6, 80, 2),
             (6, 112, 1), (6, 192, 2), (6, 320, 1)]):
        name, hidden = f"b{i}", channels * expansion
        y = x if expansion == 1 else swish(g.conv_bn(name + ".exp", x, channels, hidden, 1,
                                                     activation=None))
        y = swish(g.conv_bn(name + ".dw", y, hidden, hidden, 3, stride, group=hidden,
                            activation=None))
        squeezed = max(1, channels // 4)
        gate = g.node("GlobalAveragePool", [y], name + ".gap")
        gate = swish(g.conv(name + ".se1", gate, hidden, squeezed, 1))
        gate = g.node("Sigmoid", [g.conv(name + ".se2", gate, squeezed, hidden, 1)],
                      name + ".gate")
        y = g.node("Mul", [y, gate], name + ".scale")
        y = g.conv_bn(name + ".proj", y, hidden, out, 1, activation=None)
        x = g.node("Add", [x, y], name + ".add") if stride == 1 and channels == out else y
        channels = out
    x = swish(g.conv_bn("head", x, channels, 1280, 1, activation=None))
    return g.model("efficientnet_like", g.classifier(x, 1280, classes), batch, image,
                   classes, opset)


def unet_like(image: int = 128, batch: int = 1, opset: int = 13) -> onnx.ModelProto:
    g = Graph(5)

    def block(name, x, in_channels, out_channels):
        x = g.conv_bn(name + ".a", x, in_channels, out_channels, 3)
        return g.conv_bn(name + ".b", x, out_channels, out_channels, 3)

    def pool(name, x):
        return g.node("MaxPool", [x], name, kernel_shape=[2, 2], strides=[2, 2])

    roi = g.constant("roi", np.array([], np.float32))
    scales = g.constant("scales", np.array([1, 1, 2, 2], np.float32))

    def up(name, x):
        return g.node("Resize", [x, roi, scales], name, mode="nearest")

    e1 = block("e1", "input", 3, 32)
    e2 = block("e2", pool("p1", e1), 32, 64)
    e3 = block("e3", pool("p2", e2), 64, 128)
    d2 = block("d2", g.node("Concat", [up("up2", e3), e2], "cat2", axis=1), 192, 64)
    d1 = block("d1", g.node("Concat", [up("up1", d2), e1], "cat1", axis=1), 96, 32)
    out = g.conv("head", d1, 32, 2, 1)
    return _model(g, "unet_like", out, [batch, 3, image, image], [batch, 2, image, image],
                  opset)


def resnet18(image: int = 224, classes: int = 1000, batch: int = 1,
             opset: int = 13) -> onnx.ModelProto:
    g = Graph(1)
    x = g.conv_bn("stem", "input", 3, 64, 7, 2)
    x = g.node("MaxPool", [x], "pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels = 64
    for stage, (width, stride) in enumerate(zip([64, 128, 256, 512], [1, 2, 2, 2])):
        for block in range(2):
            name, step = f"layer{stage + 1}.{block}", stride if block == 0 else 1
            y = g.conv_bn(name + ".conv1", x, channels, width, 3, step)
            y = g.conv_bn(name + ".conv2", y, width, width, 3, 1, activation=None)
            shortcut = x if step == 1 and channels == width else \
                g.conv_bn(name + ".down", x, channels, width, 1, step, activation=None)
            x = g.relu(g.node("Add", [y, shortcut], name + ".add"))
            channels = width
    return g.model("resnet18", g.classifier(x, channels, classes), batch, image, classes, opset)


def mobilenetv1(image: int = 224, classes: int = 1000, batch: int = 1,
                opset: int = 11) -> onnx.ModelProto:
    g = Graph(2)
    x, channels = g.conv_bn("conv0", "input", 3, 32, 3, 2), 32
    for i, (out, stride) in enumerate([(64, 1), (128, 2), (128, 1), (256, 2), (256, 1),
                                       (512, 2)] + [(512, 1)] * 5 + [(1024, 2), (1024, 1)]):
        x = g.conv_bn(f"dw{i}", x, channels, channels, 3, stride, group=channels)
        x = g.conv_bn(f"pw{i}", x, channels, out, 1)
        channels = out
    return g.model("mobilenetv1", g.classifier(x, channels, classes), batch, image, classes,
                   opset)


def shufflenetv2(image: int = 224, classes: int = 1000, batch: int = 1,
                 opset: int = 13) -> onnx.ModelProto:
    g = Graph(12)

    def shuffle(x, channels, size, name):
        grouped = g.node("Reshape", [x, g.constant(name + ".groups", np.array(
            [batch, 2, channels // 2, size, size], np.int64))], name + ".split")
        swapped = g.node("Transpose", [grouped], name + ".swap", perm=[0, 2, 1, 3, 4])
        return g.node("Reshape", [swapped, g.constant(name + ".merged", np.array(
            [batch, channels, size, size], np.int64))], name + ".merge")

    def branch(name, x, in_channels, out, stride):
        y = g.conv_bn(name + ".a", x, in_channels, out, 1)
        y = g.conv_bn(name + ".dw", y, out, out, 3, stride, group=out, activation=None)
        return g.conv_bn(name + ".b", y, out, out, 1)

    x = g.conv_bn("stem", "input", 3, 24, 3, 2)
    x = g.node("MaxPool", [x], "pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    channels, size = 24, image // 4
    for stage, (out, units) in enumerate([(116, 4), (232, 8), (464, 4)]):
        for unit in range(units):
            name = f"s{stage}.{unit}"
            if unit == 0:
                left = g.conv_bn(name + ".l", g.conv_bn(name + ".ldw", x, channels, channels, 3,
                                                        2, group=channels, activation=None),
                                 channels, out // 2, 1)
                right = branch(name + ".r", x, channels, out // 2, 2)
                size //= 2
            else:
                halves = g.constant(name + ".halves", np.array([out // 2] * 2, np.int64))
                g.nodes.append(helper.make_node("Split", [x, halves], [name + ".x1", name + ".x2"],
                                                axis=1, name=name + ".cut"))
                left, right = name + ".x1", branch(name + ".r", name + ".x2", out // 2,
                                                   out // 2, 1)
            x = shuffle(g.node("Concat", [left, right], name + ".cat", axis=1), out, size,
                        name + ".shuffle")
            channels = out
    x = g.conv_bn("last", x, channels, 1024, 1)
    return g.model("shufflenetv2", g.classifier(x, 1024, classes), batch, image, classes,
                   opset)


def deeplab_aspp(image: int = 128, batch: int = 1, opset: int = 13) -> onnx.ModelProto:
    g = Graph(9)
    x = g.conv_bn("c1", "input", 3, 64, 3, 2)
    x = g.conv_bn("c2", x, 64, 128, 3, 2)
    x = g.conv_bn("c3", x, 128, 256, 3, 2)
    branches = [g.conv_bn("aspp0", x, 256, 128, 1)]
    for rate in (2, 4, 6):
        conv = g.node("Conv", [x, g.weight(f"aspp{rate}.w", 128, 256, 3, 3)], f"aspp{rate}",
                      kernel_shape=[3, 3], pads=[rate] * 4, dilations=[rate, rate])
        branches.append(g.relu(g.batch_norm(f"aspp{rate}.bn", conv, 128)))
    pooled = g.relu(g.conv("pool.conv", g.node("GlobalAveragePool", [x], "pool"), 256, 128, 1))
    size = image // 8
    branches.append(g.node("Expand", [pooled, g.constant("pool.shape", np.array(
        [batch, 128, size, size], np.int64))], "pool.expand"))
    x = g.conv_bn("project", g.node("Concat", branches, "aspp", axis=1), 640, 128, 1)
    out = g.conv("classes", x, 128, 21, 1)
    return _model(g, "deeplab_aspp", out, [batch, 3, image, image], [batch, 21, size, size],
                  opset)


def densenet121_all_features(image: int = 224, classes: int = 1000, batch: int = 1,
                             opset: int = 13) -> onnx.ModelProto:
    """The zoo's DenseNet-121 with each layer's input the Concat of the block's
    input and all the features so far, as torchvision's DenseNet is exported."""
    return densenet121(image=image, classes=classes, batch=batch, opset=opset,
                       all_features=True)


def regnetx_400mf(image: int = 224, classes: int = 1000, batch: int = 1,
                  opset: int = 13) -> onnx.ModelProto:
    g = Graph(9)
    x, channels = g.conv_bn("stem", "input", 3, 32, 3, 2), 32
    for stage, (width, depth) in enumerate(zip([32, 64, 160, 400], [1, 2, 7, 12])):
        for block in range(depth):
            name, stride = f"s{stage + 1}.b{block}", 2 if block == 0 else 1
            y = g.conv_bn(name + ".a", x, channels, width, 1)
            y = g.conv_bn(name + ".b", y, width, width, 3, stride, group=width // 16)
            y = g.conv_bn(name + ".c", y, width, width, 1, activation=None)
            shortcut = x if stride == 1 and channels == width else \
                g.conv_bn(name + ".proj", x, channels, width, 1, stride, activation=None)
            x = g.relu(g.node("Add", [y, shortcut], name + ".add"))
            channels = width
    return g.model("regnetx_400mf", g.classifier(x, channels, classes), batch, image, classes,
                   opset)


MODELS = {"efficientnet_like": efficientnet_like, "unet_like": unet_like,
          "resnet18": resnet18, "mobilenetv1": mobilenetv1, "shufflenetv2": shufflenetv2,
          "deeplab_aspp": deeplab_aspp, "densenet121_all_features": densenet121_all_features,
          "regnetx_400mf": regnetx_400mf}
