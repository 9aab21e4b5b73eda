"""`fuse_qdq`: a QDQ graph's DequantizeLinear -> op -> QuantizeLinear patterns
rewritten, before import, into ops that compute on the 8-bit tensors.

- Conv, MatMul and Gemm whose inputs are dequantised (the weights constant,
  the bias int32 at scale sx * sw, as onnxruntime's quantiser writes them) and
  whose only use is a QuantizeLinear become QLinearConv, QLinearMatMul and
  com.microsoft QGemm: an int8 product with an int32 accumulator and a
  requantising epilogue (`ops_integer`).
- An Add of two tensors dequantised per tensor and quantised after it (a
  residual add) becomes com.microsoft QLinearAdd: int8 in, int8 out.
- A GlobalAveragePool dequantised and quantised per tensor becomes
  com.microsoft QLinearGlobalAveragePool: the exact sum of the int8 image,
  requantised.
- An AveragePool dequantised and quantised per tensor becomes com.microsoft
  QLinearAveragePool, computed in float as onnxruntime computes it (the zero
  point added before rounding), with a remark.
- Ops that only move or select elements (MaxPool, Reshape, Transpose, Concat,
  ...) between a DequantizeLinear and a QuantizeLinear of the same scale and
  zero point run on the 8-bit tensor itself.
- A Concat of tensors dequantised per tensor with other scales than the
  QuantizeLinear after it becomes com.microsoft QLinearConcat: each such
  input requantised into the output's scale (dequantised, quantised, as
  onnxruntime's kernel does), the 8-bit tensors concatenated.
- A Softmax dequantised and quantised per tensor (one type) becomes
  com.microsoft QLinearSoftmax, as onnxruntime fuses it: computed in float and
  scaled by floor(1 / y_scale) as its kernel scales, with a remark.
- Any other op between a DequantizeLinear and a QuantizeLinear is computed in
  float, with a remark saying why (a batch norm that folds into no conv too).

The op keeps its position (a QuantizeLinear it absorbed becomes an Identity),
so locations of diagnostics do not change.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..diagnostics import Diagnostic, SourcePosition
from .onnx_model import default_opset
from .ops_integer import exact_activation_product
from .ops_quantized import held

QUANTIZED_DTYPES = (np.dtype(np.int8), np.dtype(np.uint8))
# Ops whose output elements are input elements: exact on the quantised tensor
# when their input and output share one scale and zero point.
MOVES = {"MaxPool", "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze", "Concat",
         "Slice", "Identity", "SpaceToDepth", "DepthToSpace"}
FLOAT_REMARK_OPS = {"Conv", "MatMul", "Gemm", "Add", "Mul", "Sub", "AveragePool",
                    "GlobalAveragePool", "Relu", "Clip", "Sigmoid", "Softmax", "Concat",
                    "MaxPool", "LeakyRelu", "HardSigmoid", "HardSwish", "Tanh", "Gelu",
                    "BatchNormalization"}


class QdqGraph:
    def __init__(self, model: onnx.ModelProto):
        self.model = model
        graph = model.graph
        self.initializers = {i.name: i for i in graph.initializer}
        self.producer = {output: node for node in graph.node for output in node.output}
        self.uses: dict[str, int] = {}
        for node in graph.node:
            for name in node.input:
                self.uses[name] = self.uses.get(name, 0) + 1
        for output in graph.output:
            self.uses[output.name] = self.uses.get(output.name, 0) + 1
        self.shapes = None

    def constant(self, name: str) -> np.ndarray | None:
        tensor = self.initializers.get(name)
        if tensor is not None:
            return numpy_helper.to_array(tensor)
        node = self.producer.get(name)
        if node is not None and node.op_type == "Constant":
            value = next((a for a in node.attribute if a.name == "value"), None)
            return numpy_helper.to_array(value.t) if value is not None else None
        return None

    def dequantized(self, name: str) -> onnx.NodeProto | None:
        node = self.producer.get(name)
        if node is None or node.op_type != "DequantizeLinear" or node.domain not in ("", "ai.onnx") \
                or len(node.input) < 2:
            return None   # a malformed one is the importer's to refuse
        return node

    def quantize_after(self, name: str) -> onnx.NodeProto | None:
        """The QuantizeLinear that is the only use of `name`."""
        if self.uses.get(name, 0) != 1:
            return None
        for node in self.model.graph.node:
            if name in node.input:
                return node if node.op_type == "QuantizeLinear" and \
                    node.domain in ("", "ai.onnx") and len(node.input) >= 2 else None
        return None

    def params(self, node: onnx.NodeProto) -> tuple | None:
        """(scale, zero point) of a Q/DQ node as constants, its zero point's
        dtype giving the quantised type (uint8 when absent), or None."""
        scale = self.constant(node.input[1])
        if scale is None:
            return None
        if len(node.input) > 2 and node.input[2]:
            zero_point = self.constant(node.input[2])
            if zero_point is None:
                return None
        else:
            data = self.constant(node.input[0]) if node.op_type == "DequantizeLinear" else None
            zero_point = np.zeros(scale.shape, data.dtype if data is not None else np.uint8)
        if zero_point.dtype not in QUANTIZED_DTYPES or scale.ndim > 1:
            return None
        return scale, zero_point

    def last_dim(self, name: str) -> int | None:
        """The static size of the last dim of tensor `name` (shape inference)."""
        if self.shapes is None:
            try:
                inferred = onnx.shape_inference.infer_shapes(self.model)
            except Exception:   # a model shape inference fails on is the importer's to refuse
                inferred = self.model
            graph = inferred.graph
            self.shapes = {v.name: [d.dim_value if d.HasField("dim_value") else None
                                    for d in v.type.tensor_type.shape.dim]
                           for v in list(graph.value_info) + list(graph.input)}
        shape = self.shapes.get(name)
        return shape[-1] if shape else None

    def same_params(self, a: onnx.NodeProto, b: onnx.NodeProto) -> bool:
        pa, pb = self.params(a), self.params(b)
        if pa is None or pb is None or _axis(a) != _axis(b) and pa[0].ndim:
            return False
        return pa[0].shape == pb[0].shape and np.array_equal(pa[0], pb[0]) and \
            pa[1].dtype == pb[1].dtype and np.array_equal(pa[1], pb[1])

    def params_int32(self, node: onnx.NodeProto):
        """(scale, zero point) of the DequantizeLinear of an int32 bias, or None."""
        scale = self.constant(node.input[1])
        zero = self.constant(node.input[2]) if len(node.input) > 2 and node.input[2] else \
            np.zeros((), np.int32)
        if scale is None or zero is None:
            return None
        return scale, zero


def _axis(node: onnx.NodeProto) -> int | None:
    """The node's `axis` (1 when absent); None when it is not an integer."""
    attribute = next((a for a in node.attribute if a.name == "axis"), None)
    if attribute is None:
        return 1
    return attribute.i if attribute.type == onnx.AttributeProto.INT else None


def _attribute(node: onnx.NodeProto, name: str, default):
    attribute = next((a for a in node.attribute if a.name == name), None)
    return default if attribute is None else helper.get_attribute_value(attribute)


def _q_inputs(node: onnx.NodeProto, graph: QdqGraph, name_for_zero_point: str) -> list[str]:
    """Scale and zero point input names of a Q/DQ node (a missing zero point
    written as a uint8 zero initializer)."""
    if len(node.input) > 2 and node.input[2]:
        return [node.input[1], node.input[2]]
    scale = graph.constant(node.input[1])
    zero = numpy_helper.from_array(np.zeros(scale.shape, np.uint8), name_for_zero_point)
    graph.model.graph.initializer.append(zero)
    graph.initializers[zero.name] = zero
    return [node.input[1], zero.name]


RUNTIME_WEIGHTS = "the weights are not constant (an int8 product of two activations)"


def _activation_product_reason(graph: QdqGraph, node: onnx.NodeProto,
                               q: onnx.NodeProto) -> str | None:
    """Why a MatMul of two dequantised tensors computed at run time (attention's
    products) cannot run as onnxruntime's QLinearMatMul does, exactly (an
    int32 sum, held in f32: `ops_integer.activation_product`), or None."""
    if not _per_tensor(graph, node, q):
        return "an operand or the result is not quantised per tensor"
    depth = graph.last_dim(node.input[0])
    if depth is None:
        return "the product's depth is not known"
    zeros = [int(held(graph.params(graph.dequantized(name))[1]).reshape(()))
             for name in node.input]
    if not exact_activation_product(depth, *zeros):
        return (f"{RUNTIME_WEIGHTS}, over {depth} terms: the int32 sums would leave f32's "
                f"exact integers")
    return None


def _float_reason(graph: QdqGraph, node: onnx.NodeProto) -> str | None:
    """Why a Conv/MatMul/Gemm between DQ and Q cannot run in int8, or None."""
    x = graph.dequantized(node.input[0])
    w = graph.dequantized(node.input[1]) if len(node.input) > 1 else None
    if x is None or w is None:
        return "an input is not dequantised"
    if graph.params(x) is None or graph.params(w) is None:
        return "a scale or zero point is not a constant 8-bit quantisation"
    weight = graph.constant(w.input[0])
    if weight is None:
        return RUNTIME_WEIGHTS
    if weight.dtype not in QUANTIZED_DTYPES:
        return f"the weights are {weight.dtype.name}, not 8-bit"
    if weight.ndim == 0 or weight.size == 0:
        return "the weights are a scalar or empty"
    x_scale, x_zero = graph.params(x)
    if x_scale.ndim:
        return "the input is quantised per axis"
    w_scale, w_zero = graph.params(w)
    if x_zero.shape != x_scale.shape or w_zero.shape != w_scale.shape:
        return "a zero point's shape is not its scale's"
    if _axis(w) is None:
        return "the weights' DequantizeLinear has an `axis` that is not an integer"
    axis = _axis(w) % weight.ndim
    wanted = 0 if node.op_type == "Conv" else (0 if _attribute(node, "transB", 0) else 1)
    if w_scale.ndim and axis != wanted:
        return "the weights are quantised along an axis other than the output channels"
    if w_scale.ndim and w_scale.shape != (weight.shape[axis],):
        return "the weights' scales or zero points are not one per output channel"
    if node.op_type == "MatMul" and weight.ndim != 2:
        return "a batched weight"
    if node.op_type == "Gemm" and (_attribute(node, "transA", 0) or
                                   _attribute(node, "beta", 1.0) != 1.0):
        return "Gemm with transA or beta != 1"
    centred = weight.astype(np.int32) - (w_zero.astype(np.int32).reshape(
        [-1] + [1] * (weight.ndim - axis - 1)) if w_zero.ndim else w_zero.astype(np.int32))
    if centred.min() < -128 or centred.max() > 127:
        return "the weights minus their zero point leave int8"
    if len(node.input) > 2 and node.input[2]:
        b = graph.dequantized(node.input[2])
        bias = graph.constant(b.input[0]) if b is not None else None
        params = graph.params_int32(b) if bias is not None else None
        if bias is None or bias.dtype != np.int32 or params is None:
            return "the bias is not a dequantised int32 constant"
        b_scale, b_zero = params
        expected = (x_scale * w_scale).astype(np.float32)
        if np.any(b_zero != 0) or not np.allclose(b_scale, expected, rtol=1e-6, atol=0):
            return "the bias scale is not input scale x weight scale"
    return None




def _fused(graph: QdqGraph, node: onnx.NodeProto, q: onnx.NodeProto, index: int) -> onnx.NodeProto:
    """The QLinear form of `node` writing `q`'s output."""
    x = graph.dequantized(node.input[0])
    w = graph.dequantized(node.input[1])
    x_inputs = [x.input[0]] + _q_inputs(x, graph, f"{node.name or index}.x_zero_point")
    w_inputs = [w.input[0]] + _q_inputs(w, graph, f"{node.name or index}.w_zero_point")
    y_inputs = _q_inputs(q, graph, f"{node.name or index}.y_zero_point")
    bias = []
    if len(node.input) > 2 and node.input[2]:
        bias = [graph.dequantized(node.input[2]).input[0]]
    attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    name = node.name
    if node.op_type == "Conv":
        fused = helper.make_node("QLinearConv", x_inputs + w_inputs + y_inputs + bias,
                                 [q.output[0]], name=name)
        fused.attribute.extend(node.attribute)   # as they are (an empty list stays typed)
        return fused
    if node.op_type == "MatMul":
        return helper.make_node("QLinearMatMul", x_inputs + w_inputs + y_inputs,
                                [q.output[0]], name=name)
    gemm = {k: v for k, v in attributes.items() if k in ("transB", "alpha")}
    return helper.make_node("QGemm", x_inputs + w_inputs + (bias or [""]) + y_inputs,
                            [q.output[0]], name=name, domain="com.microsoft", **gemm)


def _spent(q: onnx.NodeProto, unused: str | None = None) -> onnx.NodeProto:
    """What takes the place of a QuantizeLinear the fused op before it now
    computes: an Identity of its output, into a name nothing reads."""
    return helper.make_node("Identity", [q.output[0]], [unused or f"{q.output[0]}.unused"],
                            name=q.name)


def fuse_qdq(model: onnx.ModelProto, path: str | None) -> tuple[onnx.ModelProto, list]:
    """The rewritten model and the remarks: one per op left in float."""
    if not any(n.op_type == "DequantizeLinear" for n in model.graph.node):
        return model, []
    model_copy = onnx.ModelProto()
    model_copy.CopyFrom(model)
    graph = QdqGraph(model_copy)
    nodes = list(model_copy.graph.node)
    remarks = []
    replaced: dict[int, onnx.NodeProto] = {}
    for index, node in enumerate(nodes):
        if node.domain not in ("", "ai.onnx") or not node.output or not node.input:
            continue
        q = graph.quantize_after(node.output[0]) if len(node.output) == 1 else None
        if node.op_type in ("Conv", "MatMul", "Gemm") and q is not None and \
                graph.params(q) is not None:
            reason = _float_reason(graph, node)
            if reason == RUNTIME_WEIGHTS and node.op_type == "MatMul":
                reason = _activation_product_reason(graph, node, q)
            if reason is None:
                replaced[index] = _fused(graph, node, q, index)
                replaced[nodes.index(q)] = _spent(q)
                continue
            remarks.append(_remark(path, index, node, reason))
        elif node.op_type in MOVES and q is not None and _moves_exactly(graph, node, q):
            data = len(node.input) if node.op_type == "Concat" else 1
            for position in range(data):
                node.input[position] = graph.dequantized(node.input[position]).input[0]
            node.output[0], old = q.output[0], node.output[0]
            replaced[nodes.index(q)] = _spent(q, f"{old}.unused")
        elif node.op_type == "Add" and len(node.input) == 2 and q is not None and \
                _per_tensor(graph, node, q):
            a, b = (graph.dequantized(name) for name in node.input)
            inputs = [a.input[0], *_q_inputs(a, graph, f"{node.name or index}.a_zero_point"),
                      b.input[0], *_q_inputs(b, graph, f"{node.name or index}.b_zero_point"),
                      *_q_inputs(q, graph, f"{node.name or index}.y_zero_point")]
            replaced[index] = helper.make_node("QLinearAdd", inputs, [q.output[0]],
                                               name=node.name, domain="com.microsoft",
                                               round_as_uint8=1)
            replaced[nodes.index(q)] = _spent(q)
        elif node.op_type == "GlobalAveragePool" and q is not None and \
                _per_tensor(graph, node, q):
            x = graph.dequantized(node.input[0])
            inputs = [x.input[0], *_q_inputs(x, graph, f"{node.name or index}.x_zero_point"),
                      *_q_inputs(q, graph, f"{node.name or index}.y_zero_point")]
            replaced[index] = helper.make_node("QLinearGlobalAveragePool", inputs, [q.output[0]],
                                               name=node.name, domain="com.microsoft")
            replaced[nodes.index(q)] = _spent(q)
        elif node.op_type == "AveragePool" and q is not None and _per_tensor(graph, node, q):
            x = graph.dequantized(node.input[0])
            inputs = [x.input[0], *_q_inputs(x, graph, f"{node.name or index}.x_zero_point"),
                      *_q_inputs(q, graph, f"{node.name or index}.y_zero_point")]
            # onnxruntime runs int8 QDQ graphs as uint8 on x86: round_as_uint8
            pool = helper.make_node("QLinearAveragePool", inputs, [q.output[0]],
                                    name=node.name, domain="com.microsoft", round_as_uint8=1)
            pool.attribute.extend(node.attribute)   # as they are (an empty list stays typed)
            replaced[index] = pool
            replaced[nodes.index(q)] = _spent(q)
            remarks.append(_remark(path, index, node, "as onnxruntime's QLinearAveragePool, "
                                   "the zero point added before rounding"))
        elif node.op_type == "Concat" and q is not None and _per_tensor(graph, node, q):
            # Inputs of other scales than the output's: requantised into it.
            inputs = _q_inputs(q, graph, f"{node.name or index}.y_zero_point")
            for position, name in enumerate(node.input):
                x = graph.dequantized(name)
                inputs += [x.input[0],
                           *_q_inputs(x, graph, f"{node.name or index}.x{position}_zero_point")]
            concat = helper.make_node("QLinearConcat", inputs, [q.output[0]], name=node.name,
                                      domain="com.microsoft")
            concat.attribute.extend(node.attribute)
            replaced[index] = concat
            replaced[nodes.index(q)] = _spent(q)
        elif node.op_type == "Softmax" and q is not None and _fuses_as_onnxruntime(graph, node, q):
            x = graph.dequantized(node.input[0])
            inputs = [x.input[0], *_q_inputs(x, graph, f"{node.name or index}.x_zero_point"),
                      *_q_inputs(q, graph, f"{node.name or index}.y_zero_point")]
            softmax = helper.make_node("QLinearSoftmax", inputs, [q.output[0]], name=node.name,
                                       domain="com.microsoft",
                                       opset=default_opset(model_copy) or 1)
            softmax.attribute.extend(node.attribute)
            replaced[index] = softmax
            replaced[nodes.index(q)] = _spent(q)
            remarks.append(_remark(path, index, node, "as onnxruntime's QLinearSoftmax, scaled "
                                   "by floor(1 / y_scale)"))
        elif node.op_type in FLOAT_REMARK_OPS and any(graph.dequantized(i) for i in node.input):
            remarks.append(_remark(path, index, node, "no int8 form here"))
    if not replaced:
        return model, remarks
    for index, node in replaced.items():
        nodes[index] = node
    del model_copy.graph.node[:]
    model_copy.graph.node.extend(nodes)
    if any(n.domain == "com.microsoft" for n in nodes) and \
            not any(o.domain == "com.microsoft" for o in model_copy.opset_import):
        model_copy.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model_copy, remarks


def _per_tensor(graph: QdqGraph, node: onnx.NodeProto, q: onnx.NodeProto) -> bool:
    """Every input of `node` dequantised, every scale and zero point (theirs
    and `q`'s) one constant."""
    dqs = [graph.dequantized(name) for name in node.input]
    params = [graph.params(n) for n in dqs + [q] if n is not None]
    return all(dqs) and len(params) == len(node.input) + 1 and \
        all(p is not None and p[0].size == 1 and p[1].size == 1 for p in params)


def _fuses_as_onnxruntime(graph: QdqGraph, node: onnx.NodeProto, q: onnx.NodeProto) -> bool:
    """Whether onnxruntime fuses DequantizeLinear -> `node` -> `q` into its
    QLinear op (its QDQ selector for one-input ops): per-tensor 8-bit
    quantisations of one type, the DequantizeLinear no output of the graph."""
    x = graph.dequantized(node.input[0])
    outputs = {o.name for o in graph.model.graph.output}
    return len(node.input) == 1 and _per_tensor(graph, node, q) and \
        x.output[0] not in outputs and graph.params(x)[1].dtype == graph.params(q)[1].dtype


def _moves_exactly(graph: QdqGraph, node: onnx.NodeProto, q: onnx.NodeProto) -> bool:
    """Every data input is dequantised with the output's scale and zero point."""
    data = node.input if node.op_type == "Concat" else node.input[:1]
    dqs = [graph.dequantized(name) for name in data]
    return bool(dqs) and all(dq is not None and graph.same_params(dq, q) for dq in dqs)


def _remark(path: str | None, index: int, node: onnx.NodeProto, reason: str) -> Diagnostic:
    name = node.name or f"{node.op_type}_{index}"
    return Diagnostic("remark", f"node '{name}' ({node.op_type}) is computed in float between "
                      f"DequantizeLinear and QuantizeLinear: {reason}",
                      position=SourcePosition(path, index + 1, 1) if path else None)
