"""atvoss-mlir as an ONNX backend (`onnx.backend.base.Backend`), the interface
that onnxruntime, onnx-mlir and TVM offer to ONNX's own backend test suite.

    from atvoss_mlir import onnx_backend
    rep = onnx_backend.prepare(model)          # compiles for the NPU (default target)
    outputs = rep.run([x])                     # simulates; outputs in graph order
    onnx_backend.run_model(model, [x])         # both at once

`prepare` compiles for the NPU target and `run` simulates the program. An
ahead-of-time compiler needs every shape to be static, so inputs that decide
shapes or must be constants (the shape of a Reshape, axes, pads, indices,
repeats, the K of TopK, Resize scales, ...; not indices into data, such as
Gather's) cannot stay run-time inputs when
they are not initializers. Such inputs are bound as constants from the values
of the first `run`, and the model is compiled then (lazily); later runs must
give the same values for them. `shape_deciding_inputs` says which inputs those
are; docs/onnx-backend.md explains the rule.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, namedtupledict

from .diagnostics import Diagnostic, DiagnosticError
from .inputs import InputSpec, check_inputs, onnx_input_spec

# Node inputs that decide a shape or must be known when compiling although the
# ONNX schema admits non-integer types for them (the rest is read from the
# schemas: inputs whose only types are int32/int64 tensors, see _index_slot).
SHAPE_SLOTS: dict[str, tuple[int, ...]] = {
    "Range": (0, 1, 2),          # start, limit, delta: the output length
    "OneHot": (1,),              # depth
    "Resize": (1, 2, 3),         # roi, scales, sizes
    "Upsample": (1,),            # scales
    "ConstantOfShape": (0,),     # the shape
}
# Integer-only node inputs that are data, not shapes: they stay run-time inputs
# (an embedding's token ids feed Gather's indices).
DATA_SLOTS: dict[str, tuple[int, ...]] = {
    "Gather": (1,), "GatherElements": (1,), "GatherND": (1,), "Scatter": (1,),
    "ScatterElements": (1,), "ScatterND": (1,), "TensorScatter": (2,), "MaxUnpool": (1,),
    "NegativeLogLikelihoodLoss": (1,), "SoftmaxCrossEntropyLoss": (1,), "RoiAlign": (2,),
    "RotaryEmbedding": (3,), "QLinearConv": (8,), "Attention": (6,), "RNN": (4,),
    "GRU": (4,), "LSTM": (4,), "ReverseSequence": (1,),
}
# Ops whose outputs do not depend on the values of their inputs, only on their shapes.
SHAPE_ONLY_OPS = {"Shape", "Size"}
_INDEX_TYPES = {"tensor(int32)", "tensor(int64)"}
DEVICES = ("CPU", "NPU")  # the simulator runs on the host CPU


def _schema(node: onnx.NodeProto, opsets: dict[str, int]):
    domain = "" if node.domain in ("", "ai.onnx") else node.domain
    try:
        return onnx.defs.get_schema(node.op_type, opsets.get(domain, 1), domain)
    except Exception:  # noqa: BLE001 - an unknown op: the compiler reports it
        return None


def _index_slot(schema, index: int) -> bool:
    """Whether the schema admits only int32/int64 tensors at input `index`."""
    if schema is None or not schema.inputs:
        return False
    formal = schema.inputs[min(index, len(schema.inputs) - 1)]
    allowed = {formal.type_str}
    for constraint in schema.type_constraints:
        if constraint.type_param_str == formal.type_str:
            allowed = set(constraint.allowed_type_strs)
    return allowed <= _INDEX_TYPES


def _is_integer(info: onnx.ValueInfoProto) -> bool:
    if not info.type.HasField("tensor_type"):
        return False
    try:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(info.type.tensor_type.elem_type)
    except (KeyError, ValueError):
        return False
    return dtype.kind in "iu"


def shape_deciding_inputs(model: onnx.ModelProto) -> list[str]:
    """The graph inputs (not initializers) that `prepare` binds from the first
    run: integer inputs that reach, directly or through other nodes, a node
    input that admits only int32/int64 tensors (but is not in DATA_SLOTS) or
    is listed in SHAPE_SLOTS; and any input that is itself such a listed input
    (Resize's float scales)."""
    graph = model.graph
    opsets = {o.domain if o.domain != "ai.onnx" else "": o.version for o in model.opset_import}
    initializers = {i.name for i in graph.initializer}
    inputs = [i for i in graph.input if i.name not in initializers]
    deciding: set[str] = set()      # values whose contents decide a shape
    direct: set[str] = set()        # values used directly by a listed slot
    for node in reversed(graph.node):  # consumers come after producers
        schema = _schema(node, opsets)
        listed = SHAPE_SLOTS.get(node.op_type, ())
        data = DATA_SLOTS.get(node.op_type, ())
        for index, name in enumerate(node.input):
            if name and (index in listed or (_index_slot(schema, index) and index not in data)):
                deciding.add(name)
                if index in listed:
                    direct.add(name)
        if node.op_type not in SHAPE_ONLY_OPS and any(o in deciding for o in node.output):
            deciding.update(n for n in node.input if n)
    return [i.name for i in inputs
            if i.name in direct or (i.name in deciding and _is_integer(i))]


def _bound_model(model: onnx.ModelProto, values: dict[str, np.ndarray]) -> onnx.ModelProto:
    """A copy of `model` where the inputs in `values` are initializers."""
    bound = onnx.ModelProto()
    bound.CopyFrom(model)
    kept = [i for i in bound.graph.input if i.name not in values]
    del bound.graph.input[:]
    bound.graph.input.extend(kept)
    for name, array in values.items():
        bound.graph.initializer.append(onnx.numpy_helper.from_array(array, name))
    return bound


class NpuBackendRep(BackendRep):
    """A model prepared for the NPU: compiled at once, or at the first run when
    some of its inputs decide shapes (they are bound from that run's values)."""

    def __init__(self, model: onnx.ModelProto, target=None):
        from .compiler import compile as compile_model
        self._compile_model = compile_model
        self.model = model
        self.target = target
        initializers = {i.name for i in model.graph.initializer}
        self.inputs = [onnx_input_spec(i) for i in model.graph.input if i.name not in initializers]
        self.output_names = [o.name for o in model.graph.output]
        self.bound_names = shape_deciding_inputs(model)
        self.bound: dict[str, np.ndarray] | None = None
        # Inputs with dynamic dimensions: compiled for each run's shapes of them.
        self.dynamic = [i.name for i in model.graph.input if i.name not in initializers
                        and not all(d.HasField("dim_value")
                                    for d in i.type.tensor_type.shape.dim)]
        self.by_shapes: dict = {}
        self.compiled = None if self.bound_names or self.dynamic \
            else compile_model(model, target)

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        if kwargs:
            raise TypeError(f"run() takes no options, given {', '.join(kwargs)}")
        given = self._by_name(inputs)
        specs = [s for s in self.inputs if s.name in self.bound_names]
        values, _ = check_inputs(specs, {n: given[n] for n in self.bound_names if n in given})
        if self.bound is None and self.bound_names:
            self.bound = values
        elif self.bound_names:
            self._check_bound(values)
        if self.compiled is None or self.dynamic:
            self.compiled = self._compiled_for(given)
        outputs = self.compiled.run({n: given[n] for n in self.compiled.input_names
                                     if n in given})
        return namedtupledict("Outputs", self.output_names)(
            *[outputs[name] for name in self.output_names])

    def _compiled_for(self, given: dict) -> Any:
        """The model compiled with its bound inputs and this run's shapes of the
        inputs with dynamic dimensions (once per distinct shapes)."""
        shapes = {name: [int(d) for d in np.shape(given[name])]
                  for name in self.dynamic if name in given and name not in self.bound_names}
        key = tuple((name, tuple(dims)) for name, dims in shapes.items())
        if key not in self.by_shapes:
            model = _bound_model(self.model, self.bound) if self.bound_names else self.model
            self.by_shapes[key] = self._compile_model(model, self.target,
                                                      input_shapes=shapes or None)
        return self.by_shapes[key]

    def _by_name(self, inputs) -> dict[str, Any]:
        names = [s.name for s in self.inputs]
        if isinstance(inputs, dict):
            unknown = [repr(name) for name in inputs if name not in names]
            if unknown:
                raise DiagnosticError([Diagnostic(
                    "error", f"unknown input(s) {', '.join(unknown)}: the model takes "
                    f"{', '.join(names)}")])
            return dict(inputs)
        if isinstance(inputs, np.ndarray):
            inputs = [inputs]
        inputs = list(inputs)
        if len(inputs) != len(names):
            raise DiagnosticError([Diagnostic(
                "error", f"the model takes {len(names)} input(s) ({', '.join(names)}), "
                f"{len(inputs)} were given")])
        return dict(zip(names, inputs))

    def _check_bound(self, values: dict[str, np.ndarray]) -> None:
        for name, value in values.items():
            first = self.bound[name]
            if value.shape != first.shape or not np.array_equal(value, first):
                raise DiagnosticError([Diagnostic(
                    "error", f"input '{name}' decides shapes and was bound to "
                    f"{first.tolist()} when the model was compiled at its first run; this "
                    f"run gives {value.tolist()}: prepare the model again for other values")])


class NpuBackend(Backend):
    """The atvoss-mlir ONNX backend: compile for the NPU, run on the simulator."""

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", target=None,
                **kwargs: Any) -> NpuBackendRep:
        if kwargs:
            raise TypeError(f"prepare() takes the option target, given {', '.join(kwargs)}")
        if not cls.supports_device(device):
            raise DiagnosticError([Diagnostic(
                "error", f"device '{device}' is not supported (devices: {', '.join(DEVICES)})")])
        return NpuBackendRep(model, target)

    @classmethod
    def run_model(cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU",
                  **kwargs: Any) -> tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device.split(":")[0].upper() in DEVICES


prepare = NpuBackend.prepare
run_model = NpuBackend.run_model
run_node = NpuBackend.run_node
supports_device = NpuBackend.supports_device

__all__ = ["NpuBackend", "NpuBackendRep", "InputSpec", "prepare", "run_model", "run_node",
           "supports_device", "shape_deciding_inputs"]
