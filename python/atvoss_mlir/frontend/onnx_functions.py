"""Ops without a handler that ONNX defines as a function of other ops
(Attention, NegativeLogLikelihoodLoss, CenterCropPad, ...): the importer
imports the op's function body from its ONNX schema in place of the node,
as the ONNX specification defines the op. The body's nodes are renamed
under the node's name and keep its location, so a refusal inside the body
points at the model's node.

Context-dependent functions (whose body depends on the input types) get
the element types and static shapes of the node's inputs."""

from __future__ import annotations

from dataclasses import dataclass

import onnx
from onnx import AttributeProto, FunctionProto, NodeProto, TypeProto


@dataclass
class FunctionBody:
    nodes: list[NodeProto]
    opset: int          # the default-domain opset the body is written in


def function_body(proto: NodeProto, opset: int, input_types: list[TypeProto | None],
                  prefix: str) -> FunctionBody | None:
    """The body of the op's ONNX function at `opset`, its edges renamed: the
    function's inputs and outputs become the node's, internal values get
    `prefix`. None when the op has no function at that opset."""
    try:
        schema = onnx.defs.get_schema(proto.op_type, opset, "")
    except Exception:  # noqa: BLE001 - not a default-domain op
        return None
    plain = [v for v in schema.function_opset_versions if v <= opset]
    dependent = [v for v in schema.context_dependent_function_opset_versions if v <= opset]
    if not plain and not dependent:
        return None
    node = NodeProto()
    node.CopyFrom(proto)
    given = {a.name for a in node.attribute}
    for name, attribute in schema.attributes.items():
        if name not in given and attribute.default_value.name:
            node.attribute.append(attribute.default_value)
    function = FunctionProto()
    if dependent and (not plain or max(dependent) >= max(plain)):
        if any(t is None for t in input_types):
            return None
        function.ParseFromString(schema.get_context_dependent_function_with_opset_version(
            max(dependent), node.SerializeToString(),
            [t.SerializeToString() for t in input_types]))
    else:
        function.ParseFromString(schema.get_function_with_opset_version(max(plain)))
    body_opset = next((o.version for o in function.opset_import if o.domain in ("", "ai.onnx")),
                      opset)
    return FunctionBody(_renamed(node, function, prefix), body_opset)


def _renamed(node: NodeProto, function: FunctionProto, prefix: str) -> list[NodeProto]:
    names = {}
    for index, name in enumerate(function.input):
        names[name] = node.input[index] if index < len(node.input) else ""
    for index, name in enumerate(function.output):
        if index < len(node.output) and node.output[index]:
            names[name] = node.output[index]
    attributes = {a.name: a for a in node.attribute}

    def rename(name: str) -> str:
        if name in names:
            return names[name]
        return prefix + name if name else ""
    renamed = []
    for index, inner in enumerate(function.node):
        copy = NodeProto()
        copy.CopyFrom(inner)
        copy.name = prefix + (inner.name or f"{inner.op_type}_{index}")
        del copy.input[:], copy.output[:], copy.attribute[:]
        copy.input.extend(rename(n) for n in inner.input)
        copy.output.extend(rename(n) for n in inner.output)
        for attribute in inner.attribute:
            if attribute.HasField("ref_attr_name"):
                if attribute.ref_attr_name not in attributes:
                    continue  # an optional attribute the node does not set
                value = AttributeProto()
                value.CopyFrom(attributes[attribute.ref_attr_name])
                value.name = attribute.name
                copy.attribute.append(value)
            else:
                copy.attribute.append(attribute)
        renamed.append(copy)
    return renamed
