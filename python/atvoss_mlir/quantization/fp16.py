"""-precision=fp16: an fp32 ONNX model rewritten to compute in fp16.

Float32 initializers and Constant tensors become float16 at compile time,
every float32 activation becomes float16 (in DRAM and SRAM), and the matrix
unit, which takes fp16 operands, accumulates in fp32 (the lowering keeps an
fp32 accumulator for fp16 outputs). The graph's float32 inputs and outputs
stay float32 behind a Cast, so the compiled model takes and gives what the
fp32 model does and can be compared with it directly.

Values are rounded to nearest; finite values beyond fp16's range saturate at
its largest finite value (so a -1e9 attention mask stays finite and large)
and values below its smallest subnormal become zero, as fp16 arithmetic would
round them. The ONNX inputs whose type is float32 whatever the data's (Resize
and Upsample scales) keep float32."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

from ..diagnostics import Diagnostic, DiagnosticError

FLOAT, FLOAT16 = TensorProto.FLOAT, TensorProto.FLOAT16
FP16_MAX = float(np.finfo(np.float16).max)

# (op type, input index) whose ONNX type is tensor(float) only.
FLOAT32_INPUTS = {("Resize", 2), ("Upsample", 1)}
# (op type, output index) that are float32 whatever the data's type
# (LayerNormalization's mean and inverse deviation take stash_type, fp32).
FLOAT32_OUTPUTS = {("LayerNormalization", 1), ("LayerNormalization", 2)}


def _error(message: str) -> DiagnosticError:
    return DiagnosticError([Diagnostic("error", f"-precision=fp16: {message}")])


def to_float16_array(array: np.ndarray) -> np.ndarray:
    """float32 -> float16, rounded to nearest; finite values beyond fp16's
    range saturate (inf and NaN stay)."""
    array = np.asarray(array, np.float32)
    with np.errstate(over="ignore"):
        half = array.astype(np.float16)
    overflowed = np.isinf(half) & np.isfinite(array)
    if overflowed.any():
        half[overflowed] = np.copysign(FP16_MAX, array[overflowed])
    return half


def _tensor_to_fp16(tensor: TensorProto) -> TensorProto:
    converted = numpy_helper.from_array(to_float16_array(numpy_helper.to_array(tensor)),
                                        tensor.name)
    if tensor.doc_string:
        converted.doc_string = tensor.doc_string
    return converted


def _without_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model with its initializers as typed graph inputs: type inference
    needs their types, and serializing their bytes would dominate its time."""
    graph = model.graph
    declared = {i.name for i in graph.input}
    weights = [helper.make_tensor_value_info(t.name, t.data_type, list(t.dims))
               for t in graph.initializer if t.name not in declared]
    slim = helper.make_graph(graph.node, graph.name, list(graph.input) + weights,
                             graph.output, value_info=graph.value_info)
    return helper.make_model(slim, opset_imports=list(model.opset_import),
                             ir_version=max(model.ir_version, 4))


def _value_types(model: onnx.ModelProto, strict: bool = False) -> dict[str, int]:
    """The element type of every value ONNX type inference knows. `strict`:
    a type conflict is an error (the converted model's check)."""
    inferred = onnx.shape_inference.infer_shapes(_without_weights(model), strict_mode=strict)
    graph = inferred.graph
    types = {}
    for info in list(graph.input) + list(graph.value_info) + list(graph.output):
        if info.type.HasField("tensor_type") and info.type.tensor_type.elem_type:
            types[info.name] = info.type.tensor_type.elem_type
    return types


def _refuse_unsupported(model: onnx.ModelProto) -> None:
    if model.functions:
        raise _error("the model has local functions, which the fp16 rewrite does not enter")
    for node in model.graph.node:
        if any(a.type in (AttributeProto.GRAPH, AttributeProto.GRAPHS) for a in node.attribute):
            raise _error(f"node '{node.name or node.op_type}' ({node.op_type}) holds a "
                         "subgraph, which the fp16 rewrite does not enter")


def _unique_names(graph: onnx.GraphProto):
    taken = {t.name for t in graph.initializer} | {v.name for v in graph.input} \
        | {v.name for v in graph.output} | {n.name for n in graph.node} \
        | {o for n in graph.node for o in list(n.output) + list(n.input)}

    def unique(base: str) -> str:
        name, count = base, 1
        while name in taken:
            count += 1
            name = f"{base}_{count}"
        taken.add(name)
        return name
    return unique


def _cast(source: str, result: str, to: int, name: str) -> onnx.NodeProto:
    return helper.make_node("Cast", [source], [result], name=name, to=to)


def _convert_attributes(node: onnx.NodeProto) -> None:
    """Float32 tensors and element types in the node's attributes -> fp16
    (Constant, ConstantOfShape, Cast, the dtype of generators)."""
    for attribute in node.attribute:
        if attribute.type == AttributeProto.TENSOR and attribute.t.data_type == FLOAT:
            attribute.t.CopyFrom(_tensor_to_fp16(attribute.t))
        elif attribute.type == AttributeProto.TENSORS:
            for index, tensor in enumerate(attribute.tensors):
                if tensor.data_type == FLOAT:
                    attribute.tensors[index].CopyFrom(_tensor_to_fp16(tensor))
        elif attribute.name in ("to", "dtype") and attribute.type == AttributeProto.INT \
                and attribute.i == FLOAT:
            attribute.i = FLOAT16
    if node.op_type == "Constant":
        for attribute in list(node.attribute):
            if attribute.name in ("value_float", "value_floats"):
                value = to_float16_array(attribute.f if attribute.name == "value_float"
                                         else list(attribute.floats))
                node.attribute.remove(attribute)
                node.attribute.append(helper.make_attribute("value", numpy_helper.from_array(
                    value)))
    elif node.op_type == "ConstantOfShape" and not any(a.name == "value"
                                                       for a in node.attribute):
        # The default fill is a float32 zero.
        node.attribute.append(helper.make_attribute(
            "value", numpy_helper.from_array(np.zeros(1, np.float16))))
    elif node.op_type in ("RandomNormal", "RandomUniform") and not any(
            a.name == "dtype" for a in node.attribute):
        node.attribute.append(helper.make_attribute("dtype", FLOAT16))


def to_fp16(model: onnx.ModelProto) -> onnx.ModelProto:
    """The model computing in fp16 with fp32 inputs and outputs (a new model;
    `model` is left as it is)."""
    _refuse_unsupported(model)
    try:
        types = _value_types(model)
    except Exception as error:  # noqa: BLE001 - onnx raises several kinds
        raise _error(f"ONNX type inference failed on the fp32 model: {error}") from None
    converted = onnx.ModelProto()
    converted.CopyFrom(model)
    graph = converted.graph
    unique = _unique_names(graph)

    def is_float(name: str) -> bool:
        return types.get(name) == FLOAT

    # Constants read only where ONNX wants float32 keep float32.
    constants = {t.name for t in graph.initializer} | {
        n.output[0] for n in graph.node if n.op_type == "Constant"}
    fp32_uses, other_uses = set(), set()
    for node in graph.node:
        for index, name in enumerate(node.input):
            (fp32_uses if (node.op_type, index) in FLOAT32_INPUTS else other_uses).add(name)
    graph_outputs = {v.name for v in graph.output}
    kept32 = (fp32_uses - other_uses - graph_outputs) & constants

    rename: dict[str, str] = {}
    head, tail = [], []
    for info in graph.input:
        if is_float(info.name) and info.name not in constants:
            rename[info.name] = unique(f"{info.name}.fp16")
            head.append(_cast(info.name, rename[info.name], FLOAT16,
                              unique(f"{info.name}.to_fp16")))
    for info in graph.output:
        if is_float(info.name):
            source = rename.get(info.name, info.name)
            rename[info.name] = unique(f"{info.name}.fp16")
            if source != info.name:  # a graph input given back as it is
                head.append(helper.make_node("Identity", [source], [rename[info.name]],
                                             name=unique(f"{info.name}.identity")))
            tail.append(_cast(rename[info.name], info.name, FLOAT,
                              unique(f"{info.name}.to_fp32")))

    for index, tensor in enumerate(graph.initializer):
        if tensor.data_type == FLOAT and tensor.name not in kept32:
            graph.initializer[index].CopyFrom(_tensor_to_fp16(tensor))
            if tensor.name in rename:  # an initializer given as a graph output
                graph.initializer[index].name = rename[tensor.name]

    nodes = []
    graph_inputs = {v.name for v in graph.input}
    for node in graph.node:
        for index, name in enumerate(node.input):
            if (node.op_type, index) not in FLOAT32_INPUTS or not is_float(name) \
                    or name in kept32:
                node.input[index] = rename.get(name, name)
            elif name not in graph_inputs or name in constants:
                # computed (or stored) in fp16: widened back
                widened = unique(f"{name}.fp32")
                nodes.append(_cast(rename.get(name, name), widened, FLOAT,
                                   unique(f"{widened}.cast")))
                node.input[index] = widened
            # (a float32 graph input is read as given)
        for index, name in enumerate(node.output):
            node.output[index] = rename.get(name, name)
        if not (node.op_type == "Constant" and node.output[0] in kept32):
            _convert_attributes(node)
        nodes.append(node)
        stash32 = next((a.i for a in node.attribute if a.name == "stash_type"), FLOAT) == FLOAT
        for index, name in enumerate(node.output):
            if (node.op_type, index) in FLOAT32_OUTPUTS and name and stash32:
                wide = unique(f"{name}.fp32")
                node.output[index] = wide
                nodes.append(_cast(wide, name, FLOAT16, unique(f"{name}.cast")))
    del graph.node[:]
    graph.node.extend(head + nodes + tail)

    for info in graph.value_info:
        info.name = rename.get(info.name, info.name)
        if info.type.tensor_type.elem_type == FLOAT:
            info.type.tensor_type.elem_type = FLOAT16
    try:  # every op takes the types it is given now
        _value_types(converted, strict=True)
    except Exception as error:  # noqa: BLE001 - onnx raises several kinds
        raise _error(f"the converted model does not type-check: {error}") from None
    return converted
