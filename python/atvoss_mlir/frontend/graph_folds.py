"""Graph rewrites on the ONNX model before import, where the weights are numpy
arrays (in MLIR they may be opaque `dense_resource` blobs).

`fold_batchnorm_into_conv`: an inference BatchNormalization whose input is the
only use of a Conv with constant weights becomes part of that Conv:

    W'[f] = W[f] * s[f],  B'[f] = B[f] * s[f] + t[f],
    s = scale / sqrt(var + epsilon),  t = bias - mean * s

so the normalisation costs nothing at run time, and an activation after it
directly follows the Conv (npu-fuse-epilogue folds it into the epilogue). The
BatchNormalization node stays in the graph as an Identity, so node positions
(the locations of diagnostics) do not change. Applied from `-fusion=1` on.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import numpy_helper

from ..diagnostics import Diagnostic, SourcePosition
from .onnx_model import MAX_OPSET, attribute_problem, default_opset

FOLDABLE_TYPES = (np.float32, np.float16)


def consumers(graph: onnx.GraphProto) -> dict[str, int]:
    """How many node inputs and graph outputs read each tensor."""
    counts: dict[str, int] = {}
    for node in graph.node:
        for name in node.input:
            counts[name] = counts.get(name, 0) + 1
    for output in graph.output:
        counts[output.name] = counts.get(output.name, 0) + 1
    return counts


class Folder:
    def __init__(self, model: onnx.ModelProto):
        self.model = model
        self.opset = default_opset(model) or MAX_OPSET
        graph = model.graph
        self.initializers = {i.name: i for i in graph.initializer}
        self.arrays: dict[str, np.ndarray | None] = {}
        self.graph_inputs = {i.name for i in graph.input}
        self.uses = consumers(graph)
        self.producer = {output: index for index, node in enumerate(graph.node)
                         for output in node.output}

    def constant(self, name: str) -> np.ndarray | None:
        """The initializer's array (read once: a conv's weights are asked for
        when its batch norm is matched and again when it is folded)."""
        if name not in self.arrays:
            tensor = self.initializers.get(name)
            self.arrays[name] = numpy_helper.to_array(tensor) if tensor is not None else None
        return self.arrays[name]

    def conv_before(self, bn: onnx.NodeProto) -> onnx.NodeProto | None:
        """The Conv whose only use is `bn`, with constant weights (and bias)."""
        if not bn.input or not bn.output:
            return None   # malformed: the importer says so at the BatchNormalization
        index = self.producer.get(bn.input[0])
        if index is None:
            return None
        conv = self.model.graph.node[index]
        if conv.op_type != "Conv" or conv.domain not in ("", "ai.onnx") \
                or self.uses.get(bn.input[0], 0) != 1:
            return None
        if len(conv.input) < 2:
            return None   # malformed: the importer says so at the Conv
        weight = self.constant(conv.input[1])
        if weight is None or weight.dtype.type not in FOLDABLE_TYPES or weight.ndim < 3:
            return None
        if len(conv.input) > 2 and conv.input[2] and self.constant(conv.input[2]) is None:
            return None
        return conv

    def fold(self, bn: onnx.NodeProto, conv: onnx.NodeProto) -> bool:
        params = [self.constant(name) if name else None for name in bn.input[1:5]]
        if len(params) != 4 or any(p is None for p in params):
            return False
        if attribute_problem(bn, self.opset):
            return False   # malformed: the importer says so at the BatchNormalization
        attributes = {a.name: onnx.helper.get_attribute_value(a) for a in bn.attribute}
        if attributes.get("training_mode", 0) or any(bn.output[1:]):
            return False
        weight = self.constant(conv.input[1])
        channels = weight.shape[0]
        if any(p.shape != (channels,) for p in params):
            return False
        scale, shift, mean, variance = (p.astype(np.float64) for p in params)
        factor = scale / np.sqrt(variance + attributes.get("epsilon", 1e-5))
        offset = shift - mean * factor
        bias = self.constant(conv.input[2]) if len(conv.input) > 2 and conv.input[2] else \
            np.zeros(channels, weight.dtype)
        if bias.shape != (channels,):
            return False   # a malformed bias: the importer refuses it at the Conv
        folded_weight = (weight.astype(np.float64)
                         * factor.reshape([-1] + [1] * (weight.ndim - 1))).astype(weight.dtype)
        folded_bias = (bias.astype(np.float64) * factor + offset).astype(weight.dtype)
        conv.input[1] = self.add_initializer(f"{conv.input[1]}.bn_folded.{bn.output[0]}",
                                             folded_weight)
        bias_name = self.add_initializer(f"{bn.output[0]}.conv_bias", folded_bias)
        if len(conv.input) > 2:
            conv.input[2] = bias_name
        else:
            conv.input.append(bias_name)
        source, output = bn.input[0], bn.output[0]
        del bn.input[:], bn.output[:], bn.attribute[:]
        bn.op_type, bn.domain = "Identity", ""
        bn.input.append(source)
        bn.output.append(output)
        return True

    def add_initializer(self, name: str, array: np.ndarray) -> str:
        graph = self.model.graph
        graph.initializer.append(numpy_helper.from_array(array, name))
        if self.model.ir_version < 4:  # initializers must be graph inputs there
            graph.input.append(onnx.helper.make_tensor_value_info(
                name, onnx.helper.np_dtype_to_tensor_dtype(array.dtype), array.shape))
        return name


def fold_batchnorm_into_conv(model: onnx.ModelProto, path: str | None
                             ) -> tuple[onnx.ModelProto, list[Diagnostic]]:
    """The model with its foldable BatchNormalizations folded (a copy when one
    is), and a remark per fold at the BatchNormalization node."""
    foldable = [(index, node) for index, node in enumerate(model.graph.node)
                if node.op_type == "BatchNormalization" and node.domain in ("", "ai.onnx")]
    if not foldable:
        return model, []
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    folder = Folder(copy)
    remarks = []
    for index, _ in foldable:
        bn = copy.graph.node[index]
        conv = folder.conv_before(bn)
        if conv is None or not folder.fold(bn, conv):
            continue
        conv_name = conv.name or conv.output[0]
        bn_name = bn.name or bn.output[0]
        remarks.append(Diagnostic(
            "remark", f"BatchNormalization '{bn_name}' folded into the weights and bias of "
                      f"Conv '{conv_name}'",
            position=SourcePosition(path or "<onnx>", index + 1, 1)))
    return (copy, remarks) if remarks else (model, [])
