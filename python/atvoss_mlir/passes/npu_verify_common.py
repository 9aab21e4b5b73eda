"""What the checks of npu-verify share: the npu ops' operand tables, the
error reporter, the walk in program order, and types and shapes of values."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mlir import ir

from ..block_order import block_ops
from ..diagnostics import Diagnostic, DiagnosticEngine


OPERAND_NAMES = {
    "npu.matmul": ("lhs", "rhs", "output", "bias"),
    "npu.conv2d": ("input", "filter", "output", "bias"),
    "npu.depthwise_conv2d": ("input", "filter", "output", "bias"),
    "npu.elementwise": ("lhs", "rhs", "output"),
    "npu.activation": ("input", "output"),
    "npu.compare": ("lhs", "rhs", "output"),
    "npu.select": ("condition", "on_true", "on_false", "output"),
    "npu.reduce": ("input", "output"),
    "npu.pool2d": ("input", "output"),
    "npu.transpose": ("input", "output"),
    "npu.im2col": ("input", "output"),
    "npu.fill": ("output",),
    "npu.requantize": ("input", "output", "scales"),
    "npu.dequantize": ("input", "output"),
    "npu.quantized_add": ("lhs", "rhs", "output"),
    "npu.dma_load": ("source", "target"),
    "npu.dma_store": ("source", "target"),
    "npu.dealloc": ("buffer",),
}
# The operand each compute op writes.
OUTPUT_OPERAND = {
    "npu.matmul": 2, "npu.conv2d": 2, "npu.depthwise_conv2d": 2, "npu.elementwise": 2,
    "npu.activation": 1, "npu.compare": 2, "npu.select": 3, "npu.reduce": 1, "npu.pool2d": 1,
    "npu.transpose": 1, "npu.im2col": 1, "npu.fill": 0, "npu.requantize": 1,
    "npu.dequantize": 1, "npu.quantized_add": 2,
}
COMPUTE_OPS = frozenset(OUTPUT_OPERAND)
# The compute ops of the matrix unit; the others run on the vector unit.
MATRIX_OPS = frozenset({"npu.matmul", "npu.conv2d"})
DMA_OPS = frozenset({"npu.dma_load", "npu.dma_store"})
# Ops whose result is a view of their first operand: the same SRAM buffer.
VIEW_OPS = frozenset({"memref.subview", "memref.cast", "memref.view", "memref.reinterpret_cast",
                      "memref.collapse_shape", "memref.expand_shape"})
# Ops with an `activation`-style attribute that may be `clip`.
CLIP_ATTRIBUTE = {"npu.matmul": "activation", "npu.conv2d": "activation",
                  "npu.depthwise_conv2d": "activation", "npu.activation": "kind",
                  "npu.elementwise": "activation"}
SCF_FOR_INIT_OPERANDS = 3  # scf.for operands: lower bound, upper bound, step, inits...
# Ops whose scf.yield operand i becomes their result i.
YIELDS_TO_RESULTS = frozenset({"scf.for", "scf.if", "scf.execute_region"})



@dataclass
class Reporter:
    diagnostics: DiagnosticEngine

    def error(self, op, message: str, notes: Sequence[tuple[object, str]] = ()) -> None:
        """An error at `op`, with (other op, message) notes."""
        self.diagnostics.error(op.location, f"'{op.name}' op {message}",
                               [Diagnostic("note", note, other.location) for other, note in notes])


def walk_ops(op):
    """Every op nested in `op`, in pre-order (program order)."""
    for region in op.regions:
        for block in region.blocks:
            for nested in block_ops(block):
                yield nested
                yield from walk_ops(nested)


# ---------------------------------------------------------------------------
# Types and shapes
# ---------------------------------------------------------------------------

def is_memref(value: ir.Value) -> bool:
    return isinstance(value.type, ir.MemRefType)


_TOKEN_TYPES: dict = {}    # type -> whether it is !npu.token (printing a type is slow),
                           # during one npu-verify run


def is_token(value: ir.Value) -> bool:
    type_ = value.type
    found = _TOKEN_TYPES.get(type_)
    if found is None:
        found = _TOKEN_TYPES[type_] = str(type_) == "!npu.token"
    return found


def dims(value: ir.Value) -> list[int | None]:
    """The shape of a memref value, None for a dynamic size."""
    memref_type = ir.MemRefType(value.type)
    return [None if memref_type.is_dynamic_dim(i) else size
            for i, size in enumerate(memref_type.shape)]


def element(value: ir.Value) -> str:
    return str(ir.MemRefType(value.type).element_type)


def show(shape) -> str:
    return "x".join("?" if size is None else str(size) for size in shape) or "scalar"


def same_size(a: int | None, b: int | None) -> bool:
    return a is None or b is None or a == b


def same_shape(a, b) -> bool:
    return len(a) == len(b) and all(same_size(x, y) for x, y in zip(a, b))


def operand_name(op, index: int) -> str:
    names = OPERAND_NAMES.get(op.name, ())
    return names[index] if index < len(names) else f"operand #{index}"




def forget_token_types() -> None:
    """Drop the memo of token types: its types keep their context alive."""
    _TOKEN_TYPES.clear()
