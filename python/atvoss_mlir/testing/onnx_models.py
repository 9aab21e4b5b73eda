"""Shared helpers of the importer tests: single-node ONNX models built with
onnx.helper, onnxruntime as the reference, and the imported module run on
the simulator after upstream bufferization."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from mlir import ir
from mlir.dialects.transform import interpreter
from mlir.passmanager import PassManager

from atvoss_mlir.frontend import import_onnx
from atvoss_mlir.reference import reference_session
from atvoss_mlir.sim import simulate

BUFFERIZE = ("builtin.module(one-shot-bufferize{bufferize-function-boundaries "
             "function-boundary-type-conversion=identity-layout-map})")

# tensor.pad bufferizes to linalg.map, which the simulator does not run;
# upstream's rewrite turns it into linalg.fill + tensor.insert_slice first.
PAD_TO_FILL = """
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %pads = transform.structured.match ops{["tensor.pad"]} in %root
        : (!transform.any_op) -> !transform.any_op
    %filled = transform.structured.rewrite_in_destination_passing_style %pads
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
"""

_NP_TO_ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int64): TensorProto.INT64,
               np.dtype(np.float16): TensorProto.FLOAT16}


def model(nodes, inputs: dict, outputs: dict, initializers: dict | None = None, opset: int = 17,
          initializers_as_inputs: bool = False, dtype=np.float32) -> onnx.ModelProto:
    """inputs/outputs: name -> shape (of `dtype`); initializers: name -> array."""
    initializers = initializers or {}
    element_type = _NP_TO_ONNX[np.dtype(dtype)]
    graph_inputs = [helper.make_tensor_value_info(n, element_type, s) for n, s in inputs.items()]
    if initializers_as_inputs:
        graph_inputs += [helper.make_tensor_value_info(n, _NP_TO_ONNX[v.dtype], list(v.shape))
                         for n, v in initializers.items()]
    graph = helper.make_graph(
        nodes, "test", graph_inputs,
        [helper.make_tensor_value_info(n, element_type, s) for n, s in outputs.items()],
        [numpy_helper.from_array(v, n) for n, v in initializers.items()])
    ir_version = 3 if initializers_as_inputs else 8
    made = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             ir_version=ir_version)
    return made


def single(op_type, inputs: dict, output_shape, attributes=None, initializers=None, opset=17,
           extra_inputs=(), name="node0", dtype=np.float32):
    """A model of one node reading `inputs` (runtime), then `initializers`/`extra_inputs`
    (names, "" for an absent optional input) in that order."""
    initializers = initializers or {}
    names = list(inputs) + list(initializers) + list(extra_inputs)
    node = helper.make_node(op_type, names, ["y"], name=name, **(attributes or {}))
    return model([node], inputs, {"y": output_shape}, initializers, opset, dtype=dtype)


def reference(onnx_model, feeds: dict) -> list[np.ndarray]:
    return reference_session(onnx_model).run(None, feeds)


def bufferize(module: ir.Module) -> ir.Module:
    with module.context:
        script = ir.Module.parse(PAD_TO_FILL)
        interpreter.apply_named_sequence(module.operation, script.body.operations[0], script)
        PassManager.parse(BUFFERIZE).run(module.operation)
    return module


def simulated(onnx_model, feeds: dict) -> list[np.ndarray]:
    module = bufferize(import_onnx(onnx_model))
    return simulate(module, list(feeds.values())).outputs


def check(onnx_model, feeds: dict, rtol=1e-4, atol=1e-5):
    """The imported model on the simulator agrees with onnxruntime."""
    expected = reference(onnx_model, feeds)
    actual = simulated(onnx_model, feeds)
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def resnet50(width: int = 64, image: int = 224, classes: int = 1000, batch: int = 1,
             opset: int = 13, seed: int = 0) -> onnx.ModelProto:
    """ResNet-50 v1 as exported models have it (Conv, BatchNormalization, Relu,
    MaxPool, Add, GlobalAveragePool, Flatten, Gemm), random weights. The
    default size has 25.6M parameters; `width` scales every layer."""
    rng = np.random.default_rng(seed)
    nodes, initializers = [], []

    def weight(name, *shape, scale=None):
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        value = rng.standard_normal(shape, dtype=np.float32) * np.float32(
            scale if scale is not None else np.sqrt(2.0 / fan_in))
        initializers.append(numpy_helper.from_array(value, name))
        return name

    def conv_bn(name, source, in_channels, out_channels, kernel, stride, relu=True):
        conv = helper.make_node(
            "Conv", [source, weight(f"{name}.w", out_channels, in_channels, kernel, kernel)],
            [f"{name}.conv"], name=name, kernel_shape=[kernel, kernel], strides=[stride, stride],
            pads=[kernel // 2] * 4)
        bn = helper.make_node(
            "BatchNormalization",
            [f"{name}.conv", weight(f"{name}.gamma", out_channels, scale=0.2),
             weight(f"{name}.beta", out_channels, scale=0.1),
             weight(f"{name}.mean", out_channels, scale=0.1),
             f"{name}.var"], [f"{name}.bn"], name=f"{name}.bn", epsilon=1e-5)
        initializers.append(numpy_helper.from_array(
            (rng.random(out_channels, dtype=np.float32) + 0.5), f"{name}.var"))
        nodes.extend([conv, bn])
        if not relu:
            return f"{name}.bn"
        nodes.append(helper.make_node("Relu", [f"{name}.bn"], [f"{name}.relu"],
                                      name=f"{name}.relu"))
        return f"{name}.relu"

    x = conv_bn("stem", "input", 3, width, 7, 2)
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], name="pool", kernel_shape=[3, 3],
                                  strides=[2, 2], pads=[1, 1, 1, 1]))
    x, channels = "pool", width
    for stage, (blocks, stride) in enumerate(zip([3, 4, 6, 3], [1, 2, 2, 2])):
        mid = width * 2 ** stage
        for block in range(blocks):
            name = f"layer{stage + 1}.{block}"
            s = stride if block == 0 else 1
            y = conv_bn(f"{name}.conv1", x, channels, mid, 1, 1)
            y = conv_bn(f"{name}.conv2", y, mid, mid, 3, s)
            y = conv_bn(f"{name}.conv3", y, mid, mid * 4, 1, 1, relu=False)
            shortcut = x
            if block == 0:
                shortcut = conv_bn(f"{name}.down", x, channels, mid * 4, 1, s, relu=False)
            nodes.append(helper.make_node("Add", [y, shortcut], [f"{name}.add"], name=f"{name}.add"))
            nodes.append(helper.make_node("Relu", [f"{name}.add"], [f"{name}.out"],
                                          name=f"{name}.out"))
            x, channels = f"{name}.out", mid * 4
    nodes += [helper.make_node("GlobalAveragePool", [x], ["gap"], name="gap"),
              helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
              helper.make_node("Gemm", ["flat", weight("fc.w", classes, channels),
                                        weight("fc.b", classes, scale=0.1)], ["logits"],
                               name="fc", transB=1)]
    graph = helper.make_graph(
        nodes, "resnet50",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, image, image])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, classes])],
        initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)
