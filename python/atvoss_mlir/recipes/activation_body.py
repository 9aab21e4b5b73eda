"""Elementwise bodies, and parts of them, that the vector unit runs as one
activation: the sigmoid, exact gelu and tanh as the ONNX importer and exporters write them."""

from __future__ import annotations

import math

from mlir import ir

from .problem import constant_value
from .vector_steps import FLOAT_TYPES


def expression(value: ir.Value, block: ir.Block, x: int = 0, scalars: dict | None = None):
    """The expression tree computing `value` in a linalg body whose argument
    `x` is the input and whose other arguments are the scalars in `scalars`
    (by argument number): "x" for the input, a float for a scalar constant,
    (op name, operands...) for an op of the body, operands of commutative ops
    sorted; None when it reads anything else."""
    if value == block.arguments[x]:
        return "x"
    for number, scalar in (scalars or {}).items():
        if value == block.arguments[number]:
            return scalar
    constant = constant_value(value)
    if constant is not None:
        return float(constant)
    if not isinstance(value, ir.OpResult) or value.owner.parent != block.owner:
        return None
    operands = [expression(operand, block, x, scalars) for operand in value.owner.operands]
    if any(operand is None for operand in operands):
        return None
    if value.owner.name in ("arith.addf", "arith.mulf"):
        operands.sort(key=repr)
    return (value.owner.name, *operands)


def _exact_gelus() -> list:
    """The exact gelu, 0.5 x (1 + erf(x / sqrt(2))), as the ONNX importer writes
    it and as exporters do before opset 20 (PyTorch: Div, Erf, Add, Mul by x,
    Mul by 0.5; BERT's x * 0.5 * (1 + erf(x / sqrt(2)))): x / sqrt(2) or x times
    its reciprocal, the half taken first or last."""
    scaled = [("arith.mulf", "x", 1.0 / math.sqrt(2.0)), ("arith.divf", "x", math.sqrt(2.0))]
    trees = []
    for argument in scaled:
        phi = ("arith.addf", 1.0, ("math.erf", argument))
        trees += [("gelu", ("arith.mulf", ("arith.mulf", 0.5, "x"), phi)),
                  ("gelu", ("arith.mulf", ("arith.mulf", "x", phi), 0.5))]
    return trees


# Bodies the vector unit runs as one activation. Not the tanh form of Gelu:
# the vector unit's gelu is the exact one.
ACTIVATION_BODIES = [
    ("sigmoid", ("arith.divf", 1.0, ("arith.addf", 1.0, ("math.exp", ("arith.negf", "x"))))),
    *_exact_gelus(),
    ("tanh", ("math.tanh", "x")),
]


def flattened(tree):
    """`tree` with nested products as one product of all their factors (sorted,
    as `expression` sorts a commutative op's operands): x * 0.5 * y and
    0.5 * (x * y) are one body."""
    if not isinstance(tree, tuple):
        return tree
    operands = [flattened(operand) for operand in tree[1:]]
    if tree[0] != "arith.mulf":
        return (tree[0], *operands)
    factors = []
    for operand in operands:
        factors += operand[1:] if isinstance(operand, tuple) and operand[0] == "arith.mulf" \
            else [operand]
    return ("arith.mulf", *sorted(factors, key=repr))


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


def body_activation(block: ir.Block, x: int = 0, scalars: dict | None = None) -> str | None:
    """The activation a linalg.generic body computes of its argument `x` (its
    other arguments the constants in `scalars`, by argument number), if it is
    one of ACTIVATION_BODIES (its products in any grouping)."""
    yielded = list(block.operations)[-1].operands
    float_type = FLOAT_TYPES.get(str(block.arguments[x].type))
    if len(yielded) != 1 or float_type is None:
        return None
    found = flattened(expression(yielded[0], block, x, scalars))
    return next((kind for kind, tree in ACTIVATION_BODIES
                 if flattened(in_type(tree, float_type)) == found), None)


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
