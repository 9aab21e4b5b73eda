"""The ONNX model before its graph is walked: reading and validating the
file, the opset, node inputs and attributes against their ONNX schemas, fixed
input shapes,
ONNX shape inference, and which nodes some graph output depends on."""

from __future__ import annotations

import functools
import os

import numpy as np
import onnx

from ..diagnostics import Diagnostic, DiagnosticError, SourcePosition

# Default-domain opsets the importer reads: 7 (the oldest that exporters still
# write) to the newest the installed onnx package defines, whose schemas the
# importer checks nodes against.
MIN_OPSET = 7
MAX_OPSET = onnx.defs.onnx_opset_version()


def load_model(model_or_path) -> tuple[onnx.ModelProto, str | None]:
    if isinstance(model_or_path, onnx.ModelProto):
        _check_text(model_or_path, None)
        return model_or_path, None
    path = os.fspath(model_or_path)
    position = SourcePosition(path, 1, 1)
    try:
        model = onnx.load(path)
    except FileNotFoundError:
        raise DiagnosticError([Diagnostic("error", "cannot read ONNX model: no such file",
                                          position=position)]) from None
    except OSError as error:
        raise DiagnosticError([Diagnostic("error", f"cannot read ONNX model: {error.strerror}",
                                          position=position)]) from None
    except Exception as error:  # protobuf's DecodeError and friends
        raise DiagnosticError([Diagnostic(
            "error", f"cannot read ONNX model: the file is not a valid ONNX protobuf "
            f"({type(error).__name__}: {error})", position=position)]) from None
    if not model.graph.node and not model.graph.output:
        raise DiagnosticError([Diagnostic(
            "error", "cannot read ONNX model: the file holds no graph", position=position)])
    _check_text(model, path)
    return model, path


def _check_text(model: onnx.ModelProto, path: str | None) -> None:
    """Names are UTF-8 text in ONNX; protobuf hands one that is not over as
    bytes, which no name, location or remark can carry."""
    graph = model.graph
    for what, values in (("a graph input", graph.input), ("a graph output", graph.output),
                         ("an initializer", graph.initializer)):
        if any(isinstance(v.name, bytes) for v in values):
            raise DiagnosticError([Diagnostic(
                "error", f"the name of {what} is not UTF-8 text",
                position=SourcePosition(path, 1, 1) if path else None)])
    for index, node in enumerate(graph.node):
        texts = [node.name, node.op_type, node.domain, *node.input, *node.output,
                 *(a.name for a in node.attribute)]
        if any(isinstance(t, bytes) for t in texts):
            raise DiagnosticError([Diagnostic(
                "error", f"node {index} ({node.op_type!s}): a name, op type or domain is not "
                f"UTF-8 text", position=SourcePosition(path, index + 1, 1) if path else None)])


def default_opset(model: onnx.ModelProto) -> int | None:
    """The model's default-domain (ai.onnx) opset, None when it imports none."""
    for opset in model.opset_import:
        if opset.domain in ("", "ai.onnx"):
            return opset.version
    return None


def opset_problem(model: onnx.ModelProto) -> str | None:
    """Why the model's default-domain opset cannot be imported, or None."""
    opset = default_opset(model)
    if opset is None:
        uses_default = any(n.domain in ("", "ai.onnx") for n in model.graph.node)
        return ("the model imports no default-domain (ai.onnx) opset but its graph uses "
                "default-domain ops") if uses_default else None
    if opset < MIN_OPSET:
        return (f"ONNX opset {opset} is not supported (opsets {MIN_OPSET} to {MAX_OPSET} "
                f"are)")
    if opset > MAX_OPSET:
        return (f"ONNX opset {opset} is newer than the installed onnx {onnx.__version__} "
                f"knows (opsets {MIN_OPSET} to {MAX_OPSET}): upgrade the onnx package or "
                f"export with opset {MAX_OPSET} or older")
    return None


@functools.lru_cache(maxsize=1024)
def node_schema(op_type: str, opset: int):
    """ONNX's schema of a default-domain op at the opset, None when it has none."""
    try:
        return onnx.defs.get_schema(op_type, opset, "")
    except Exception:  # noqa: BLE001 - unknown op types are reported by the dispatch
        return None


def arity_problem(proto: onnx.NodeProto, opset: int) -> str | None:
    """What is wrong with the node's inputs against its ONNX schema (a count out
    of range, a required input left empty), or None."""
    schema = node_schema(proto.op_type, opset)
    if schema is None:
        return None
    count = len(proto.input)
    if not schema.min_input <= count <= schema.max_input:
        return (f"has {count} inputs, the op takes {schema.min_input}"
                + (f" to {schema.max_input}" if schema.max_input != schema.min_input else ""))
    single = onnx.defs.OpSchema.FormalParameterOption.Single
    for index, formal in enumerate(schema.inputs[:count]):
        if formal.option == single and not proto.input[index]:
            return f"input {index} ('{formal.name}') is required but empty"
    return None


@functools.lru_cache(maxsize=None)
def contrib_attribute_types() -> dict:
    """The ops of onnxruntime's other domains (com.microsoft), by (domain, op
    type): their attributes' types (AttributeProto type numbers) by name, from
    its schemas, read once."""
    from onnxruntime.capi import onnxruntime_pybind11_state as ort_state
    return {(schema.domain, schema.name): {name: int(formal.type)
                                           for name, formal in schema.attributes.items()}
            for schema in ort_state.get_all_operator_schema()
            if schema.domain not in ("", "ai.onnx")}


def attribute_problem(proto: onnx.NodeProto, opset: int) -> str | None:
    """An attribute of the node of another type than its schema gives it (the
    ONNX schema; onnxruntime's for an op of another domain), or None."""
    if proto.domain in ("", "ai.onnx"):
        schema = node_schema(proto.op_type, opset)
        formal_types = {} if schema is None else \
            {name: int(formal.type) for name, formal in schema.attributes.items()}
    else:
        formal_types = contrib_attribute_types().get((proto.domain, proto.op_type), {})
    type_name = onnx.AttributeProto.AttributeType.Name
    for attribute in proto.attribute:
        formal = formal_types.get(attribute.name)
        if formal is not None and attribute.type != formal:
            return (f"attribute '{attribute.name}' is {type_name(attribute.type)}, "
                    f"{proto.op_type} takes {type_name(formal)}")
    return None


def input_shapes_problem(model: onnx.ModelProto, input_shapes: dict) -> str | None:
    """Why `input_shapes` (input name -> dims) cannot fix the model's input
    shapes: an unknown input, another rank, a dim that is not positive or that
    the model gives another static size; None when they can."""
    initializers = {i.name for i in model.graph.initializer}
    inputs = {i.name: i for i in model.graph.input if i.name not in initializers}
    for name, dims in input_shapes.items():
        if name not in inputs:
            return f"input shape for '{name}', which is not an input of the model (its " \
                   f"inputs: {', '.join(inputs) or 'none'})"
        declared = inputs[name].type.tensor_type.shape.dim
        if len(dims) != len(declared):
            return f"input '{name}' has rank {len(declared)}, the shape given " \
                   f"{list(dims)} rank {len(dims)}"
        for axis, (size, dim) in enumerate(zip(dims, declared)):
            if int(size) <= 0:
                return f"input '{name}': dimension {axis} must be positive, not {size}"
            if dim.HasField("dim_value") and dim.dim_value != int(size):
                return f"input '{name}': dimension {axis} is {dim.dim_value} in the model, " \
                       f"the shape given says {size}"
    return None


def check_input_shapes(model: onnx.ModelProto, input_shapes: dict | None,
                       path: str | None) -> None:
    """Raise input_shapes_problem as an error located at the model file."""
    problem = input_shapes_problem(model, input_shapes) if input_shapes else None
    if problem:
        raise DiagnosticError([Diagnostic(
            "error", problem, position=SourcePosition(path, 1, 1) if path else None)])


def default_input_shapes(model: onnx.ModelProto, input_shapes: dict | None) -> tuple:
    """`input_shapes` with every input that has a dynamic dimension and no shape
    given at its shape with those dimensions 1, and one message per such input."""
    shapes, messages = dict(input_shapes or {}), []
    initializers = {i.name for i in model.graph.initializer}
    for info in model.graph.input:
        dims = info.type.tensor_type.shape.dim
        if info.name in initializers or info.name in shapes or \
                all(d.HasField("dim_value") for d in dims):
            continue
        shapes[info.name] = [d.dim_value if d.HasField("dim_value") else 1 for d in dims]
        symbols = ", ".join(f"'{d.dim_param or '?'}'" for d in dims if not d.HasField("dim_value"))
        given = ",".join(str(d) for d in shapes[info.name])
        messages.append(f"input '{info.name}' has the dynamic dimension(s) {symbols}: compiled "
                        f"for 1 ({info.name}={given}; --input-shape or input_shapes= for "
                        f"another size)")
    return shapes, messages


def with_input_shapes(model: onnx.ModelProto, input_shapes: dict) -> onnx.ModelProto:
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for info in model.graph.input:
        if info.name in input_shapes:
            dims = info.type.tensor_type.shape.dim
            del dims[:]
            for size in input_shapes[info.name]:
                dims.add().dim_value = int(size)
    return model


def inferred_shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    """Static shapes of every value from onnx.shape_inference. Large
    initializers are passed as typed graph inputs instead: inference needs
    their shapes, not their bytes, and serializing them dominates its time."""
    graph = model.graph
    small = [i for i in graph.initializer if np.prod(i.dims) <= 4096]
    large = [onnx.helper.make_tensor_value_info(i.name, i.data_type, list(i.dims))
             for i in graph.initializer if np.prod(i.dims) > 4096]
    declared = {i.name for i in graph.input}
    slim = onnx.helper.make_graph(
        graph.node, graph.name, list(graph.input) + [v for v in large if v.name not in declared],
        graph.output, small, value_info=graph.value_info)
    slim_model = onnx.helper.make_model(slim, opset_imports=list(model.opset_import),
                                        ir_version=max(model.ir_version, 4))
    inferred = onnx.shape_inference.infer_shapes(slim_model, strict_mode=False, data_prop=True)
    return static_shapes(inferred)


def static_shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    shapes = {}
    for info in list(model.graph.value_info) + list(model.graph.output):
        if not info.type.HasField("tensor_type"):
            continue
        tensor_shape = info.type.tensor_type.shape
        if not info.type.tensor_type.HasField("shape"):
            continue
        dims = [d.dim_value if d.HasField("dim_value") else None for d in tensor_shape.dim]
        if all(d is not None for d in dims):
            shapes[info.name] = dims
    return shapes


def live_nodes(graph: onnx.GraphProto) -> set[int]:
    """Indices of the nodes some graph output depends on."""
    producer = {}
    for index, node in enumerate(graph.node):
        for output in node.output:
            producer[output] = index
    live, work = set(), [o.name for o in graph.output]
    while work:
        index = producer.get(work.pop())
        if index is None or index in live:
            continue
        live.add(index)
        work.extend(n for n in graph.node[index].input if n)
    return live


def node_lines(original: onnx.ModelProto, rewritten: onnx.ModelProto) -> dict[str, int]:
    """For each node of `rewritten` (a rewrite of `original`, such as the
    quantiser's), its line in the original file: the line of the node of the
    same name, else of the nearest original node through the tensors it reads
    and writes (a QuantizeLinear after a conv belongs to the conv, a
    DequantizeLinear before it too)."""
    lines = {node.name: index + 1 for index, node in enumerate(original.graph.node) if node.name}
    nodes = list(rewritten.graph.node)
    producer = {output: i for i, node in enumerate(nodes) for output in node.output if output}
    consumers: dict[str, list[int]] = {}
    for i, node in enumerate(nodes):
        for name in node.input:
            consumers.setdefault(name, []).append(i)
    found = {}
    for i, node in enumerate(nodes):
        if node.name in lines:
            found[node.name] = lines[node.name]
            continue
        seen, frontier = {i}, [i]
        while frontier and node.name not in found:
            step = []
            for j in frontier:
                near = [k for output in nodes[j].output for k in consumers.get(output, [])]
                near += [producer[name] for name in nodes[j].input if name in producer]
                step += [k for k in near if k not in seen]
                seen.update(near)
            named = [k for k in step if nodes[k].name in lines]
            if named:
                found[node.name] = lines[nodes[named[0]].name]
            frontier = step
    return found
