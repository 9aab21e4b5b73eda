"""Elementwise bodies, and parts of them, that the vector unit runs as one
activation: the sigmoid, exact gelu and tanh as the ONNX importer writes them."""

from __future__ import annotations

import math

from mlir import ir

from .problem import constant_value
from .vector_steps import FLOAT_TYPES


def expression(value: ir.Value, block: ir.Block):
    """The expression tree computing `value` in a one-input linalg body: "x" for
    the input, a float for a scalar constant, (op name, operands...) for an op
    of the body, operands of commutative ops sorted; None when it reads
    anything else."""
    if value == block.arguments[0]:
        return "x"
    constant = constant_value(value)
    if constant is not None:
        return float(constant)
    if not isinstance(value, ir.OpResult) or value.owner.parent != block.owner:
        return None
    operands = [expression(operand, block) for operand in value.owner.operands]
    if any(operand is None for operand in operands):
        return None
    if value.owner.name in ("arith.addf", "arith.mulf"):
        operands.sort(key=repr)
    return (value.owner.name, *operands)


# Bodies the vector unit runs as one activation, as the ONNX importer writes
# them. Not the tanh form of Gelu: the vector unit's gelu is the exact one.
ACTIVATION_BODIES = [
    ("sigmoid", ("arith.divf", 1.0, ("arith.addf", 1.0, ("math.exp", ("arith.negf", "x"))))),
    ("gelu", ("arith.mulf", ("arith.mulf", 0.5, "x"),
              ("arith.addf", 1.0, ("math.erf", ("arith.mulf", "x", 1.0 / math.sqrt(2.0)))))),
    ("tanh", ("math.tanh", "x")),
]


def in_type(tree, float_type):
    """`tree` with its constants rounded to the body's float type, as `expression` sees them."""
    if isinstance(tree, float):
        return float(float_type(tree))
    if not isinstance(tree, tuple):
        return tree
    operands = [in_type(operand, float_type) for operand in tree[1:]]
    if tree[0] in ("arith.addf", "arith.mulf"):
        operands.sort(key=repr)
    return (tree[0], *operands)


def body_activation(block: ir.Block) -> str | None:
    """The activation a one-input linalg.generic body computes, if it is one of
    ACTIVATION_BODIES."""
    yielded = list(block.operations)[-1].operands
    float_type = FLOAT_TYPES.get(str(block.arguments[0].type))
    if len(yielded) != 1 or float_type is None:
        return None
    found = expression(yielded[0], block)
    return next((kind for kind, tree in ACTIVATION_BODIES if in_type(tree, float_type) == found),
                None)


def activation_of(value: ir.Value, block: ir.Block):
    """(kind, x) when `value` is one of ACTIVATION_BODIES of a value x of the
    body (the sigmoid of x * sigmoid(x)); else None."""
    float_type = FLOAT_TYPES.get(str(value.type))
    if float_type is None:
        return None

    unmatched = object()

    def match(tree, value, bound):
        """The value "x" stands for (None: not yet known) when `value` computes
        `tree`, else `unmatched`."""
        if tree == "x":
            return value if bound is None or bound == value else unmatched
        if isinstance(tree, float):
            constant = constant_value(value)
            return bound if constant is not None and \
                float(float_type(constant)) == float(float_type(tree)) else unmatched
        if not isinstance(value, ir.OpResult) or value.owner.parent != block.owner \
                or value.owner.name != tree[0] or len(value.owner.operands) != len(tree) - 1:
            return unmatched
        orders = [tree[1:]] + ([tree[:0:-1]] if tree[0] in ("arith.addf", "arith.mulf") else [])
        for operands in orders:
            found = bound
            for subtree, operand in zip(operands, value.owner.operands):
                found = match(subtree, operand, found)
                if found is unmatched:
                    break
            else:
                return found
        return unmatched
    for kind, tree in ACTIVATION_BODIES:
        x = match(tree, value, None)
        if x is not unmatched and x is not None:
            return kind, x
    return None
