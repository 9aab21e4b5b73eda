"""Comparisons, logical and bitwise ops, Where, Mod, CastLike and the
predicates (IsNaN, IsInf, Sign): one broadcasting linalg.generic each, a
numpy folder when every input is a constant. Booleans are i1."""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, math

from . import builders as b
from .handler_api import ImportFailure, folds, handles

_BOOL = lambda: ir.IntegerType.get_signless(1)  # noqa: E731

# -- comparisons ---------------------------------------------------------------------------

_FLOAT_PREDICATES = {"Equal": "OEQ", "Less": "OLT", "Greater": "OGT", "LessOrEqual": "OLE",
                     "GreaterOrEqual": "OGE"}
_INT_PREDICATES = {"Equal": "eq", "Less": "slt", "Greater": "sgt", "LessOrEqual": "sle",
                   "GreaterOrEqual": "sge"}


@handles(*_FLOAT_PREDICATES)
def compare(node):
    x, y = node.value(0), node.value(1)
    if b.element_of(x) != b.element_of(y):
        raise ImportFailure(f"operands of different element types ({b.element_of(x)} and "
                            f"{b.element_of(y)})")
    if b.is_float(b.element_of(x)):
        predicate = getattr(arith.CmpFPredicate, _FLOAT_PREDICATES[node.op_type])
        return [b.elementwise([x, y], lambda a: arith.cmpf(predicate, a[0], a[1]), _BOOL())]
    predicate = getattr(arith.CmpIPredicate, _INT_PREDICATES[node.op_type])
    return [b.elementwise([x, y], lambda a: arith.cmpi(predicate, a[0], a[1]), _BOOL())]


# -- logical and bitwise ---------------------------------------------------------------------

_LOGICAL = {"And": arith.andi, "Or": arith.ori, "Xor": arith.xori,
            "BitwiseAnd": arith.andi, "BitwiseOr": arith.ori, "BitwiseXor": arith.xori}
_NUMPY_LOGICAL = {"BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or,
                  "BitwiseXor": np.bitwise_xor, "Xor": np.logical_xor,
                  "BitwiseNot": np.invert}


@folds(*_NUMPY_LOGICAL)
def fold_logical(node, inputs):
    return [_NUMPY_LOGICAL[node.op_type](*inputs)]


@handles(*_LOGICAL)
def logical(node):
    combine = _LOGICAL[node.op_type]
    return [b.elementwise([node.value(0), node.value(1)], lambda a: combine(a[0], a[1]))]


@handles("Not", "BitwiseNot")
def not_(node):
    return [b.elementwise([node.value(0)],
                          lambda a: arith.xori(a[0], b.const_like(-1, a[0])))]


@handles("BitShift")
def bit_shift(node):
    """Signed integers (opset 28): an arithmetic right shift; a shift by a
    negative amount or by the width or more gives the sign fill (-1 or 0)."""
    x, amount = node.value(0), node.value(1)
    element_type = b.element_of(x)
    if b.is_float(element_type) or b.element_of(amount) != element_type:
        raise ImportFailure("BitShift needs two integer tensors of one type")
    width = ir.IntegerType(element_type).width
    right = node.attr("direction", "") == "RIGHT"

    def body(a):
        value, shift = a
        zero = b.const_like(0, value)
        in_range = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, shift, zero),
                              arith.cmpi(arith.CmpIPredicate.slt, shift,
                                         b.const_like(width, shift)))
        safe = arith.select(in_range, shift, zero)
        shifted = arith.shrsi(value, safe) if right else arith.shli(value, safe)
        fill = arith.select(arith.cmpi(arith.CmpIPredicate.slt, value, zero),
                            b.const_like(-1, value), zero) if right else zero
        return arith.select(in_range, shifted, fill)
    return [b.elementwise([x, amount], body)]


# -- Where, Mod ------------------------------------------------------------------------------

@handles("Where")
def where(node):
    condition, x, y = node.value(0), node.value(1), node.value(2)
    known = node.constant(0)
    if known is not None and known.size and (known.all() or not known.any()):
        # One branch everywhere (a mask that masks nothing): that branch, broadcast.
        shape = b.broadcast_shape(*(b.shape_of(v) for v in (condition, x, y)))
        return [b.broadcast_to(x if known.all() else y, shape)]
    return [b.elementwise([condition, x, y], lambda a: arith.select(a[0], a[1], a[2]),
                          b.element_of(x))]


@folds("Mod")
def fold_mod(node, inputs):
    x, y = inputs
    if node.attr("fmod", 0):
        return [np.fmod(x, y)]
    return [np.mod(x, y)]


@handles("Mod")
def mod(node):
    """fmod=1: the remainder has the dividend's sign (C fmod); fmod=0: it has
    the divisor's sign (Python's %), on floats from opset 28."""
    x, y = node.value(0), node.value(1)
    floating = b.is_float(b.element_of(x))
    if floating and not node.attr("fmod", 0) and node.opset < 28:
        raise ImportFailure("Mod of floating-point tensors needs fmod=1 before opset 28")
    if floating:
        remainder_of, zero = arith.remf, 0.0

        def negative(v):
            return arith.cmpf(arith.CmpFPredicate.OLT, v, b.const_like(0.0, v))
    else:
        remainder_of, zero = arith.remsi, 0

        def negative(v):
            return arith.cmpi(arith.CmpIPredicate.slt, v, b.const_like(0, v))
    if node.attr("fmod", 0):
        return [b.elementwise([x, y], lambda a: remainder_of(a[0], a[1]))]

    def body(a):
        remainder = remainder_of(a[0], a[1])
        nonzero = arith.xori(arith.cmpf(arith.CmpFPredicate.OEQ, remainder,
                                        b.const_like(zero, remainder)),
                             b.scalar(1, ir.IntegerType.get_signless(1))) if floating else \
            arith.cmpi(arith.CmpIPredicate.ne, remainder, b.const_like(zero, remainder))
        adjust = arith.andi(nonzero, arith.xori(negative(remainder), negative(a[1])))
        return arith.select(adjust, b.add(remainder, a[1]), remainder)
    return [b.elementwise([x, y], body)]


# -- CastLike --------------------------------------------------------------------------------

@folds("CastLike")
def fold_cast_like(node, inputs):
    return [inputs[0].astype(inputs[1].dtype)]


@handles("CastLike")
def cast_like(node):
    from .ops_elementwise import cast_value
    target = node.importer.values[node.proto.input[1]]
    if isinstance(target, np.ndarray) and target.dtype.kind == "u":
        raise node.unsupported(f"CastLike to the unsigned type {target.dtype.name}")
    target_type = b.element_type_of(target.dtype) if isinstance(target, np.ndarray) \
        else b.element_of(target)
    return [cast_value(node, node.value(0), target_type)]


# -- predicates ------------------------------------------------------------------------------

@folds("IsNaN", "IsInf", "Sign")
def fold_predicate(node, inputs):
    x = inputs[0]
    if node.op_type == "IsNaN":
        return [np.isnan(x)]
    if node.op_type == "Sign":
        return [np.sign(x)]
    positive, negative = node.attr("detect_positive", 1), node.attr("detect_negative", 1)
    return [np.isinf(x) & (((x > 0) & bool(positive)) | ((x < 0) & bool(negative)))]


@handles("IsNaN", "IsInf")
def predicate(node):
    x = node.value(0)
    if not b.is_float(b.element_of(x)):
        return [b.constant_tensor(np.zeros(b.shape_of(x), np.bool_))]
    if node.op_type == "IsNaN":
        return [b.elementwise([x], lambda a: arith.cmpf(arith.CmpFPredicate.UNO, a[0], a[0]),
                              _BOOL())]
    positive, negative = node.attr("detect_positive", 1), node.attr("detect_negative", 1)

    def body(a):
        infinite = arith.cmpf(arith.CmpFPredicate.OEQ, math.absf(a[0]),
                              b.const_like(float("inf"), a[0]))
        above = arith.cmpf(arith.CmpFPredicate.OGT, a[0], b.const_like(0.0, a[0]))
        keep = b.scalar(1, _BOOL())
        if not positive:
            keep = arith.xori(above, b.scalar(1, _BOOL()))
        if not negative:
            keep = above if positive else b.scalar(0, _BOOL())
        return arith.andi(infinite, keep)
    return [b.elementwise([x], body, _BOOL())]


@handles("Sign")
def sign(node):
    x = node.value(0)
    element_type = b.element_of(x)

    def body(a):
        zero = b.const_like(0.0 if b.is_float(element_type) else 0, a[0])
        one = b.const_like(1.0 if b.is_float(element_type) else 1, a[0])
        minus = b.const_like(-1.0 if b.is_float(element_type) else -1, a[0])
        if b.is_float(element_type):
            above = arith.cmpf(arith.CmpFPredicate.OGT, a[0], zero)
            below = arith.cmpf(arith.CmpFPredicate.OLT, a[0], zero)
        else:
            above = arith.cmpi(arith.CmpIPredicate.sgt, a[0], zero)
            below = arith.cmpi(arith.CmpIPredicate.slt, a[0], zero)
        return arith.select(above, one, arith.select(below, minus, zero))
    return [b.elementwise([x], body)]

