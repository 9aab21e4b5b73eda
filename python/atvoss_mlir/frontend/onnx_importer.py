"""ONNX -> MLIR (`func.func @main` over linalg/tensor/arith on static tensors).

Like torch-mlir's importer, this depends only on `onnx` and the IR. Each node
is imported under `Location.name(node.name)` (with a file location of the
model when it was read from a path: line N is the graph's N-th node), so that
later diagnostics point at the model's node. Node kinds are dispatched
through one handler per op type (`HANDLERS`, filled by the `ops_*` modules);
an op without one that ONNX defines as a function is imported as the
function's body (`onnx_functions`), at the node's location.

Before emitting IR the importer folds what is known at import time: graph
initializers (also when an old model lists them as graph inputs), Constant,
and any node whose inputs are all constants and whose op type has a numpy
folder (`FOLDERS`: Shape, Gather, Concat, Unsqueeze, Cast, arithmetic...).
Shape of a runtime tensor is its static type, so Shape -> Gather -> Concat
-> Reshape chains collapse into a constant shape (CastLike only needs the
type of its second input). Nodes that no graph output depends on are
dropped; Identity and Dropout forward their input.

Weights: `DenseElementsAttr.get(array)` copies the numpy buffer in one call
(about 0.1 s for 100 MB) and stays readable from Python (`np.array(attr)`) by
later passes and by the simulator, so it is the default. `weights="resource"`
uses `dense_resource` blobs instead (zero-copy, but opaque to Python
passes). Either way the text form of a large model is mostly hex: write
large programs as bytecode (`module.operation.write_bytecode`), or print with
`elide_weights` to read them. README.md has the measurements.

This module holds the API and the graph walk; `onnx_model` reads and checks
the model before the walk, `handler_api` holds the handler and folder tables
and `Node`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper
from mlir import ir
from mlir.dialects import func

from ..diagnostics import Diagnostic, DiagnosticError, SourcePosition, diagnostics_of, error_at
from ..machine_model import refused_type_reason
from ..limits import (folded_bytes, format_bytes, format_limit, memory_limit,
                      onnx_folding_check, onnx_tensor_check)
from . import builders as b
from .handler_api import (FOLDERS, HANDLERS, Folder, Handler, ImportFailure,  # noqa: F401
                          Node, folds, handles)
from .onnx_functions import function_body
from .onnx_model import (MAX_OPSET, MIN_OPSET, arity_problem, attribute_problem,
                         check_input_shapes, default_input_shapes, default_opset,
                         inferred_shapes, live_nodes, load_model, opset_problem,
                         with_input_shapes)


def _element_type(elem_type: int) -> ir.Type | None:
    try:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(elem_type)
    except (KeyError, ValueError):
        return None
    return b.element_type_of(dtype)


_UNSIGNED_TYPES = {onnx.TensorProto.UINT8, onnx.TensorProto.UINT16, onnx.TensorProto.UINT32,
                   onnx.TensorProto.UINT64}


def _unsigned_refusal(what: str, dtype) -> str:
    return (f"{what} is {np.dtype(dtype).name}: unsigned integer tensors are not supported "
            f"(the NPU's integers are signed)")


# Ops of other domains with a handler: onnxruntime's QGemm, which qdq_fusion
# also writes for DequantizeLinear -> Gemm -> QuantizeLinear.
OTHER_DOMAIN_OPS = {("com.microsoft", op) for op in (
    "QGemm", "QLinearAdd", "QLinearAveragePool", "QLinearGlobalAveragePool", "QLinearConcat",
    "QLinearMul", "QLinearSigmoid", "QLinearLeakyRelu", "QLinearSoftmax")}
# Ops that read a uint8 tensor as quantised data.
QUANTIZED_READERS = {"DequantizeLinear", "QLinearConv", "QLinearMatMul", "ConvInteger",
                     "MatMulInteger"} | {op for _, op in OTHER_DOMAIN_OPS}


class Values(dict):
    """The value of each ONNX name: an ir.Value, an array, or None. An
    initializer becomes an array when first read (a folded conv's original
    weights never are)."""

    def __init__(self, initializers: dict):
        super().__init__()
        self.initializers = initializers

    def __missing__(self, name: str):
        if name not in self.initializers:
            raise KeyError(name)
        array = self[name] = numpy_helper.to_array(self.initializers.pop(name))
        return array

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name) or name in self.initializers

    def __setitem__(self, name: str, value) -> None:
        self.initializers.pop(name, None)
        dict.__setitem__(self, name, value)

    def get(self, name: str, default=None):
        try:
            return self[name]
        except KeyError:
            return default


class GraphImporter:
    def __init__(self, model: onnx.ModelProto, inferred: dict[str, list[int]], path: str | None,
                 context: ir.Context, weights: str, named_softmax: bool = False,
                 lines: dict[str, int] | None = None):
        self.model = model
        self.lines = lines or {}
        self.named_softmax = named_softmax
        self.path = path
        self.context = context
        self.weights = weights
        self.opset = default_opset(model) or 0  # 0: only other domains' ops
        self.values: dict[str, ir.Value | np.ndarray | None] = {}
        self.materialized: dict[str, ir.Value] = {}
        self.resource_names: set[str] = set()
        self.inferred = inferred

    def error(self, message: str, location: ir.Location | None = None) -> DiagnosticError:
        if location is not None:
            return error_at(location, message)
        position = SourcePosition(self.path, 1, 1) if self.path else None
        return DiagnosticError([Diagnostic("error", message, position=position)])

    def materialize(self, name: str) -> ir.Value:
        value = self.values[name]
        if not isinstance(value, np.ndarray):
            return value
        if name not in self.materialized:
            self.materialized[name] = self.constant(value, name)
        return self.materialized[name]

    def constant(self, array: np.ndarray, name: str) -> ir.Value:
        if array.dtype.kind == "u":
            raise ImportFailure(_unsigned_refusal(f"the constant '{name}'", array.dtype))
        resource = self._resource_name(name) if self.weights == "resource" else None
        return b.constant_tensor(array, resource)

    def _resource_name(self, name: str) -> str:
        base = re.sub(r"[^A-Za-z0-9_.]", "_", name) or "weight"
        unique, count = base, 0
        while unique in self.resource_names:
            count += 1
            unique = f"{base}_{count}"
        self.resource_names.add(unique)
        return unique

    def run(self) -> ir.Module:
        with self._file_location(0):
            return self._run()

    def _run(self) -> ir.Module:
        graph = self.model.graph
        self.values = Values({initializer.name: initializer for initializer in graph.initializer})
        arguments = [i for i in graph.input if i.name not in self.values]
        argument_types = [self._argument_type(i) for i in arguments]
        live = live_nodes(graph)

        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            function = func.FuncOp("main", ir.FunctionType.get(argument_types, []))
            entry = function.add_entry_block()
            for info, argument in zip(arguments, entry.arguments):
                self.values[info.name] = argument
            with ir.InsertionPoint(entry):
                for index, proto in enumerate(graph.node):
                    if index in live:
                        self._import_node(index, proto)
                results = []
                for output in graph.output:
                    value = self.values.get(output.name)
                    if value is None:
                        raise self.error(f"graph output '{output.name}' is not computed (no "
                                         f"node gives it a value at inference)")
                    try:
                        results.append(self.materialize(output.name))
                    except ImportFailure as failure:
                        raise self.error(f"graph output '{output.name}': {failure}") from None
                func.ReturnOp(results)
            function.attributes["function_type"] = ir.TypeAttr.get(
                ir.FunctionType.get(argument_types, [r.type for r in results]))
        try:  # a malformed model can slip past the handlers' checks
            module.operation.verify()
        except ir.MLIRError as failure:
            raise DiagnosticError(diagnostics_of(failure)) from None
        return module

    def _file_location(self, line: int) -> ir.Location:
        if self.path:
            return ir.Location.file(self.path, line, 1)
        return ir.Location.unknown()

    def _read_quantized(self, name: str) -> bool:
        """Whether only quantised ops read the tensor (a uint8 graph input is
        then held as int8 shifted by -128, as those ops expect)."""
        readers = [n for n in self.model.graph.node if name in n.input]
        return bool(readers) and all(n.op_type in QUANTIZED_READERS for n in readers)

    def _argument_type(self, info: onnx.ValueInfoProto) -> ir.Type:
        tensor_type = info.type.tensor_type
        element_type = _element_type(tensor_type.elem_type)
        if tensor_type.elem_type == onnx.TensorProto.BFLOAT16:
            raise self.error(f"graph input '{info.name}': {refused_type_reason('bf16')}")
        if tensor_type.elem_type == onnx.TensorProto.UINT8 and self._read_quantized(info.name):
            element_type = ir.IntegerType.get_signless(8)   # held shifted (ops_quantized)
        elif tensor_type.elem_type in _UNSIGNED_TYPES:
            raise self.error(f"graph input '{info.name}': " + _unsigned_refusal(
                "the tensor", onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)))
        if not info.type.HasField("tensor_type") or element_type is None:
            raise self.error(f"graph input '{info.name}': only tensors of numeric types "
                             f"are supported")
        # Static: import_onnx_model fixed every dynamic dimension (default_input_shapes).
        return b.tensor_type([dim.dim_value for dim in tensor_type.shape.dim], element_type)

    def _import_node(self, index: int, proto: onnx.NodeProto) -> None:
        name = proto.name or f"{proto.op_type}_{index}"
        line = self.lines.get(name, index + 1)
        location = ir.Location.name(name, childLoc=self._file_location(line)) \
            if self.path else ir.Location.name(name)
        self._import(proto, name, location, self.opset)

    def _import(self, proto: onnx.NodeProto, name: str, location: ir.Location,
                opset: int) -> None:
        node = Node(self, proto, name, location, opset)
        domain = proto.domain if proto.domain not in ("", "ai.onnx") else ""
        if domain and (domain, proto.op_type) not in OTHER_DOMAIN_OPS:
            raise error_at(location, f"node '{name}': op type '{domain}.{proto.op_type}' "
                           f"(domain '{domain}') is not supported")
        problem = arity_problem(proto, opset) or attribute_problem(proto, opset)
        if problem:
            raise error_at(location, f"node '{name}' ({proto.op_type}, opset {opset}): "
                           f"{problem}")
        for input_name in proto.input:
            if input_name and input_name not in self.values:
                raise error_at(location, f"node '{name}' ({proto.op_type}): input "
                               f"'{input_name}' is not defined before the node")
        with location:
            try:
                outputs = self._fold(node)
                if outputs is None:
                    handler = HANDLERS.get(proto.op_type)
                    if handler is None:
                        self._import_function(node)
                        return
                    outputs = handler(node)
            except ImportFailure as failure:
                raise error_at(location, f"node '{name}' ({proto.op_type}, opset "
                               f"{opset}): {failure}") from None
            except DiagnosticError:
                raise
            except ir.MLIRError as failure:
                raise error_at(location, f"node '{name}' ({proto.op_type}, opset {opset}): "
                               f"could not build the IR: {failure}") from None
            except Exception as failure:  # a malformed node or an importer bug
                if os.environ.get("ATVOSS_DEBUG"):
                    raise
                reason = self._onnx_reason(proto, opset) or \
                    f"{type(failure).__name__}: {failure}"
                raise error_at(location, f"node '{name}' ({proto.op_type}, opset {opset}): "
                               f"{reason}") from None
        for output_name, value in zip(proto.output, outputs):
            if output_name and value is not None:  # None: an output the op leaves undefined
                self._check_inferred(node, output_name, value)
                self.values[output_name] = value

    def _import_function(self, node: Node) -> None:
        """An op without a handler that ONNX defines as a function: its body,
        node by node, at the node's location."""
        proto = node.proto
        body = function_body(proto, node.opset, [self._type_proto(n) for n in proto.input],
                             f"{node.name}/")
        if body is None:
            raise error_at(node.location, f"node '{node.name}': op type '{proto.op_type}' "
                           f"(opset {node.opset}) is not supported by the ONNX importer")
        if not MIN_OPSET <= body.opset <= MAX_OPSET:
            raise ImportFailure(f"its ONNX function is written in opset {body.opset}")
        for inner in body.nodes:
            self._import(inner, inner.name, node.location, body.opset)
        for output_name in proto.output:
            if output_name and output_name not in self.values:
                raise ImportFailure(f"its ONNX function does not compute '{output_name}'")

    def _onnx_reason(self, proto: onnx.NodeProto, opset: int) -> str | None:
        """Why ONNX itself finds the node malformed (its schema check and shape
        inference, on the node's input types), if it does: a clearer reason than
        the exception a handler met on it."""
        try:
            schema = onnx.defs.get_schema(proto.op_type, opset, proto.domain or "")
            types = {name: self._type_proto(name) for name in proto.input if name}
            if any(t is None for t in types.values()):
                return None
            onnx.shape_inference.infer_node_outputs(schema, proto, types)
        except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as error:
            return f"malformed for ONNX: {str(error).strip()}"
        except Exception:  # noqa: BLE001 - no schema, or inference cannot say
            return None
        return None

    def _type_proto(self, name: str) -> onnx.TypeProto | None:
        if not name:
            return onnx.TypeProto()
        value = self.values.get(name)
        if value is None:
            return None
        array = value if isinstance(value, np.ndarray) else b.placeholder(value)
        return onnx.helper.make_tensor_type_proto(
            onnx.helper.np_dtype_to_tensor_dtype(array.dtype), list(array.shape))

    def _fold(self, node: Node):
        folder = FOLDERS.get(node.op_type)
        if folder is None:
            return None
        inputs = [self.values[n] if n else None for n in node.proto.input]
        typed = _TYPE_ONLY_INPUTS.get(node.op_type)
        if typed is not None:  # only the static type of that input is needed
            if not isinstance(inputs[typed], np.ndarray):
                inputs[typed] = b.placeholder(inputs[typed])
            if any(v is not None and not isinstance(v, np.ndarray) for v in inputs):
                return None
        elif any(v is not None and not isinstance(v, np.ndarray) for v in inputs):
            return None
        needed = folded_bytes(node.op_type, inputs)
        if needed is not None and needed > memory_limit():
            raise ImportFailure(f"folding the node needs {format_bytes(needed)}, above the "
                                f"memory limit of {format_limit(memory_limit())}")
        outputs = folder(node, inputs)
        return None if outputs is None else [np.asarray(o) for o in outputs]

    def _check_inferred(self, node: Node, name: str, value) -> None:
        """A handler's result must have the shape ONNX shape inference gives."""
        inferred = self.inferred.get(name)
        if value is None or inferred is None:
            return
        shape = list(value.shape) if isinstance(value, np.ndarray) else b.shape_of(value)
        if shape != inferred:
            raise error_at(node.location, f"node '{node.name}' ({node.op_type}): output "
                           f"'{name}' has shape {shape}, ONNX shape inference gives {inferred}")


# Ops whose folder needs only the static type (shape, element type) of one input.
_TYPE_ONLY_INPUTS = {"Shape": 0, "Size": 0, "CastLike": 1}


# -- the public API ------------------------------------------------------------------------

def import_onnx(model_or_path, context: ir.Context | None = None, *,
                input_shapes: dict[str, list[int]] | None = None,
                weights: str = "dense") -> ir.Module:
    """Import an ONNX model (a ModelProto or a file path) as an MLIR module
    holding `func.func @main` over linalg/tensor/arith on static tensors.

    `input_shapes` fixes the dynamic dimensions of graph inputs by name; those
    of other inputs are 1 (with a remark). `weights` is "dense"
    (DenseElementsAttr, the default) or "resource" (dense_resource blobs).
    Raises DiagnosticError, located at the ONNX node, for anything that cannot
    be imported.
    """
    return import_onnx_model(model_or_path, context, input_shapes=input_shapes,
                             weights=weights).module


@dataclass
class ImportedModel:
    module: ir.Module
    input_names: list[str]   # the graph inputs that are not initializers, in order
    output_names: list[str]
    remarks: list = field(default_factory=list)   # from `graph_rewrite`
    # Name, shape and ONNX element type of those inputs (uint8 stays uint8 here,
    # where the IR has signless i8), and the ONNX element type of each output.
    input_specs: list = None
    output_dtypes: list = None


def import_onnx_model(model_or_path, context: ir.Context | None = None, *,
                      input_shapes: dict[str, list[int]] | None = None,
                      weights: str = "dense", graph_rewrite=None,
                      named_softmax: bool = False,
                      origin: tuple[str, dict[str, int]] | None = None) -> ImportedModel:
    """`import_onnx`, with the graph's input and output names (a model file
    is read once: its weights are most of it). `graph_rewrite(model, path)`,
    when given, rewrites the ModelProto first and returns it with its remarks.
    With `named_softmax` a Softmax over one axis is a linalg.softmax, which the
    npu pipeline runs in one pass or decomposes (npu-decompose-linalg); without,
    it is the max, exp, sum and divide generics that run wherever linalg does.
    `origin` = (path, {node name: line}) locates the nodes of a ModelProto
    rewritten from a model file (by -precision) at their lines in that file."""
    if weights not in ("dense", "resource"):
        raise ValueError(f"weights must be 'dense' or 'resource', not {weights!r}")
    model, path = load_model(model_or_path)
    lines = None
    if origin is not None and path is None:
        path, lines = origin
    remarks = []
    if graph_rewrite is not None:
        model, remarks = graph_rewrite(model, path)
    initializers = {initializer.name for initializer in model.graph.initializer}
    input_names = [i.name for i in model.graph.input if i.name not in initializers]
    output_names = [o.name for o in model.graph.output]
    from ..inputs import InputSpec, onnx_input_spec
    check_input_shapes(model, input_shapes, path)   # before defaults are added to them
    input_shapes, defaulted = default_input_shapes(model, input_shapes)
    remarks = remarks + [Diagnostic("remark", message, position=SourcePosition(path, 1, 1)
                                    if path else None) for message in defaulted]
    module = _import(model, path, context, input_shapes, weights, named_softmax, lines)
    specs = [onnx_input_spec(i) for i in model.graph.input if i.name not in initializers]
    specs = [InputSpec(s.name, tuple(input_shapes[s.name]), s.dtype)
             if input_shapes and s.name in input_shapes else s for s in specs]
    return ImportedModel(module, input_names, output_names, remarks, specs,
                         [onnx_input_spec(o).dtype for o in model.graph.output])


def _import(model: onnx.ModelProto, path: str | None, context: ir.Context | None,
            input_shapes: dict[str, list[int]] | None, weights: str,
            named_softmax: bool = False, lines: dict[str, int] | None = None) -> ir.Module:
    if input_shapes:
        model = with_input_shapes(model, input_shapes)
    problem = opset_problem(model)
    if problem:
        raise DiagnosticError([Diagnostic(
            "error", problem, position=SourcePosition(path, 1, 1) if path else None)])
    refused = onnx_folding_check(model)
    if refused:  # before shape inference, whose data propagation would build the output
        index, message = refused
        raise DiagnosticError([Diagnostic("error", message, position=SourcePosition(
            path, index + 1, 1) if path else None)])
    try:
        inferred = inferred_shapes(model)
    except Exception as error:
        raise DiagnosticError([Diagnostic(
            "error", f"ONNX shape inference failed: {error}",
            position=SourcePosition(path, 1, 1) if path else None)]) from None
    refused = onnx_tensor_check(model, inferred)
    if refused:  # before any tensor is built
        index, message = refused
        raise DiagnosticError([Diagnostic(
            "error", message, position=SourcePosition(path, 1 if index is None else index + 1, 1)
            if path else None)])
    from . import (ops_activation, ops_conv, ops_elementwise,  # noqa: F401  (handlers)
                   ops_fold, ops_gather, ops_integer, ops_layout, ops_logic, ops_nn,
                   ops_norm, ops_qoperator, ops_quantized, ops_reduce, ops_resize, ops_shape)
    context = context or _make_context()
    with context:
        try:
            return GraphImporter(model, inferred, path, context, weights, named_softmax,
                                 lines).run()
        except DiagnosticError:
            raise
        except Exception as error:  # never a traceback: report where the model is
            if os.environ.get("ATVOSS_DEBUG"):
                raise
            raise DiagnosticError([Diagnostic(
                "error", f"internal error importing the ONNX model: {type(error).__name__}: "
                f"{error}", position=SourcePosition(path, 1, 1) if path else None)]) from None


def import_onnx_text(model_or_path, context: ir.Context | None = None, *,
                     elide_weights: int | None = None, debug_info: bool = False,
                     **options) -> str:
    """The imported module as MLIR text. `elide_weights=N` prints constants of
    more than N elements as `dense_resource<__elided__>` (readable, not runnable)."""
    module = import_onnx(model_or_path, context, **options)
    return module.operation.get_asm(large_elements_limit=elide_weights,
                                    large_resource_limit=elide_weights,
                                    enable_debug_info=debug_info)


def _make_context() -> ir.Context:
    from ..context import make_context
    return make_context()
