"""What an op handler sees and registers with: the handler and folder tables
(`HANDLERS`, `FOLDERS`, filled by the `ops_*` modules through `@handles` and
`@folds`), `ImportFailure`, and `Node`, the node being imported."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import numpy as np
import onnx
from onnx import numpy_helper
from mlir import ir

from . import builders as b

if TYPE_CHECKING:
    from .onnx_importer import GraphImporter

# A handler takes the node being imported and returns its outputs, each an
# ir.Value, a numpy array (a constant) or None (an output not produced).
Handler = Callable[["Node"], list]
HANDLERS: dict[str, Handler] = {}
# A folder evaluates a node whose inputs are all constants, with numpy.
Folder = Callable[["Node", list], list]
FOLDERS: dict[str, Folder] = {}


def handles(*op_types: str):
    def register(fn):
        for op_type in op_types:
            HANDLERS[op_type] = fn
        return fn
    return register


def folds(*op_types: str):
    def register(fn):
        for op_type in op_types:
            FOLDERS[op_type] = fn
        return fn
    return register


class ImportFailure(Exception):
    """Raised by a handler for a node it cannot import; becomes a located error."""


def normalized_axis(axis: int, rank: int) -> int:
    """An ONNX axis in [-rank, rank) as its index in [0, rank)."""
    if not -rank <= axis < rank:
        raise ImportFailure(f"axis {axis} out of range for rank {rank}")
    return axis % rank


class Node:
    """The node being imported, as its handler sees it."""

    def __init__(self, importer: "GraphImporter", proto: onnx.NodeProto, name: str,
                 location: ir.Location, opset: int | None = None):
        self.importer = importer
        self.proto = proto
        self.name = name
        self.op_type = proto.op_type
        # the model's opset, or that of the ONNX function body the node is in
        self.opset = importer.opset if opset is None else opset
        self.location = location
        self.attributes = {a.name: a for a in proto.attribute}

    # inputs
    @property
    def input_count(self) -> int:
        return len(self.proto.input)

    def has_input(self, index: int) -> bool:
        return index < len(self.proto.input) and self.proto.input[index] != ""

    def constant(self, index: int) -> np.ndarray | None:
        """The input as a numpy array if it is known at import time."""
        if not self.has_input(index):
            return None
        value = self.importer.values[self.proto.input[index]]
        return value if isinstance(value, np.ndarray) else None

    def required_constant(self, index: int, what: str) -> np.ndarray:
        value = self.constant(index)
        if value is None:
            raise ImportFailure(f"{what} (input {index}) must be a constant")
        return value

    def value(self, index: int) -> ir.Value | None:
        """The input as an IR value (a constant input is materialized once)."""
        if not self.has_input(index):
            return None
        return self.importer.materialize(self.proto.input[index])

    def weight(self, array: np.ndarray, suffix: str) -> ir.Value:
        """A constant derived from the node's inputs (a transposed weight, a
        folded scale), stored like the model's weights."""
        return self.importer.constant(array, f"{self.name}.{suffix}")

    def shape(self, index: int) -> list[int]:
        value = self.importer.values[self.proto.input[index]]
        return list(value.shape) if isinstance(value, np.ndarray) else b.shape_of(value)

    # attributes
    def attr(self, name: str, default=None):
        attribute = self.attributes.get(name)
        if attribute is None:
            return default
        value = onnx.helper.get_attribute_value(attribute)
        if isinstance(value, bytes):
            return value.decode()
        if isinstance(value, onnx.TensorProto):
            return numpy_helper.to_array(value)
        if isinstance(value, (list, tuple)):
            return [v.decode() if isinstance(v, bytes) else v for v in value]
        return value

    def unsupported(self, what: str) -> ImportFailure:
        return ImportFailure(f"{what} is not supported")

