"""Elementwise ops: one linalg.generic each, numpy broadcasting through the
indexing maps, the scalar function built from arith/math in the body."""

from __future__ import annotations

import math as pymath

import numpy as np
from mlir import ir
from mlir.dialects import arith, math

from . import builders as b
from .onnx_importer import folds, handles
from .ops_fold import cast_dtype


def _int_div(x, y):
    return np.trunc(np.true_divide(x, y))  # C semantics, as the ONNX runtime does


_NUMPY_BINARY = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Pow": np.power,
                 "Max": np.maximum, "Min": np.minimum, "Sum": np.add}
_NUMPY_UNARY = {"Neg": np.negative, "Sqrt": np.sqrt, "Abs": np.abs, "Floor": np.floor,
                "Ceil": np.ceil, "Exp": np.exp, "Log": np.log, "Reciprocal": np.reciprocal,
                "Relu": lambda x: np.maximum(x, 0), "Round": np.round, "Tanh": np.tanh,
                # a sinusoidal position embedding of constants
                "Sin": np.sin, "Cos": np.cos, "Tan": np.tan, "Asin": np.arcsin,
                "Acos": np.arccos, "Atan": np.arctan, "Sinh": np.sinh, "Cosh": np.cosh,
                "Asinh": np.arcsinh, "Acosh": np.arccosh, "Atanh": np.arctanh}


@folds(*_NUMPY_BINARY, "Div")
def fold_binary(node, inputs):
    dtype = inputs[0].dtype
    if node.op_type == "Div":
        fn = _int_div if dtype.kind in "iu" else np.divide
    else:
        fn = _NUMPY_BINARY[node.op_type]
    result = inputs[0]
    for operand in inputs[1:]:
        result = fn(result, operand)
    return [np.asarray(result).astype(dtype)]


@folds(*_NUMPY_UNARY)
def fold_unary(node, inputs):
    return [np.asarray(_NUMPY_UNARY[node.op_type](inputs[0])).astype(inputs[0].dtype)]


# -- n-ary arithmetic ----------------------------------------------------------------------

_BINARY = {"Add": b.add, "Sub": b.sub, "Mul": b.mul, "Div": b.div, "Max": b.maximum,
           "Min": b.minimum, "Sum": b.add, "Pow": lambda x, y: math.powf(x, y)}


@handles(*_BINARY)
def binary(node):
    combine = _BINARY[node.op_type]
    inputs = [node.value(i) for i in range(node.input_count)]
    if len(inputs) == 1:
        return [inputs[0]]
    if node.op_type == "Pow" and (b.element_of(inputs[0]) != b.element_of(inputs[1])
                                  or not b.is_float(b.element_of(inputs[0]))):
        return [_mixed_pow(*inputs)]
    if node.op_type == "Pow" and (power := _constant_power(node)) is not None:
        return [b.elementwise([inputs[0]], lambda args: power(args[0]))]

    def body(args):
        result = args[0]
        for arg in args[1:]:
            result = combine(result, arg)
        return result
    return [b.elementwise(inputs, body)]


# A float base to a constant scalar exponent, as the vector unit computes it
# (it has no pow): a square (a variance, as exported layer norms write it), a
# cube (the tanh form of gelu), a square root. onnxruntime takes the same
# products for 2 and 3.
_POWERS = {2.0: lambda x: arith.mulf(x, x),
           3.0: lambda x: arith.mulf(arith.mulf(x, x), x),
           0.5: lambda x: math.sqrt(x)}


def _constant_power(node):
    """The body computing Pow for a constant scalar exponent of _POWERS that
    leaves the base's shape unchanged, else None."""
    exponent = node.constant(1)
    base_rank = len(b.shape_of(node.value(0)))
    if exponent is None or exponent.size != 1 or exponent.ndim > base_rank:
        return None
    return _POWERS.get(float(exponent.reshape(-1)[0]))


def _mixed_pow(base, exponent):
    """Pow of an integer base, or with an exponent of another type: a float
    base raises to the exponent converted to its type; an integer base is
    computed in f64 and truncated back (as C's pow then a cast)."""
    base_type, exponent_type = b.element_of(base), b.element_of(exponent)
    f64 = ir.F64Type.get()
    work = base_type if b.is_float(base_type) else f64

    def to_work(v, type_):
        if type_ == work:
            return v
        if b.is_float(type_):
            wider = ir.FloatType(work).width > ir.FloatType(type_).width
            return arith.extf(work, v) if wider else arith.truncf(work, v)
        return arith.sitofp(work, v)

    def body(a):
        result = math.powf(to_work(a[0], base_type), to_work(a[1], exponent_type))
        return result if b.is_float(base_type) else arith.fptosi(base_type, result)
    return b.elementwise([base, exponent], body, base_type)


@handles("Mean")
def mean(node):
    inputs = [node.value(i) for i in range(node.input_count)]

    def body(args):
        total = args[0]
        for arg in args[1:]:
            total = arith.addf(total, arg)
        return arith.divf(total, b.const_like(float(len(args)), total))
    return [b.elementwise(inputs, body)]


# -- unary ---------------------------------------------------------------------------------

def _unary(node, body):
    return [b.elementwise([node.value(0)], lambda args: body(args[0]))]


def _erf_gelu(x):
    # 0.5 * x * (1 + erf(x / sqrt(2)))
    half, one = b.const_like(0.5, x), b.const_like(1.0, x)
    scaled = arith.mulf(x, b.const_like(1.0 / pymath.sqrt(2.0), x))
    return arith.mulf(arith.mulf(half, x), arith.addf(one, math.erf(scaled)))


def _tanh_gelu(x):
    # 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
    half, one = b.const_like(0.5, x), b.const_like(1.0, x)
    cube = arith.mulf(arith.mulf(x, x), x)
    inner = arith.addf(x, arith.mulf(b.const_like(0.044715, x), cube))
    inner = arith.mulf(b.const_like(pymath.sqrt(2.0 / pymath.pi), x), inner)
    return arith.mulf(arith.mulf(half, x), arith.addf(one, math.tanh(inner)))


def _hard_sigmoid(x, alpha, beta):
    linear = arith.addf(arith.mulf(b.const_like(alpha, x), x), b.const_like(beta, x))
    return arith.minimumf(arith.maximumf(linear, b.const_like(0.0, x)), b.const_like(1.0, x))


_SIMPLE_UNARY = {
    "Sigmoid": b.sigmoid,
    "Tanh": lambda x: math.tanh(x),
    "Erf": lambda x: math.erf(x),
    "Exp": lambda x: math.exp(x),
    "Log": lambda x: math.log(x),
    "Sqrt": lambda x: math.sqrt(x),
    "Neg": lambda x: arith.negf(x),
    "Abs": lambda x: math.absf(x),
    "Floor": lambda x: math.floor(x),
    "Ceil": lambda x: math.ceil(x),
    "Reciprocal": lambda x: arith.divf(b.const_like(1.0, x), x),
    "Relu": lambda x: arith.maximumf(x, b.const_like(0.0, x)),
    "Softplus": lambda x: math.log(arith.addf(math.exp(x), b.const_like(1.0, x))),
    "HardSwish": lambda x: arith.mulf(x, _hard_sigmoid(x, 1.0 / 6.0, 0.5)),
}


@handles(*_SIMPLE_UNARY)
def simple_unary(node):
    if not b.is_float(b.element_of(node.value(0))):
        raise node.unsupported(f"{node.op_type} on integer tensors")
    return _unary(node, _SIMPLE_UNARY[node.op_type])


def _negative_part_scaled(x, slope):
    """max(x, 0) + slope * min(x, 0): `x < 0 ? slope * x : x` without a compare
    (the vector unit selects only by a mask the op reads), exactly: one of the
    two terms is a zero, infinities and NaNs come out as the select gives them."""
    zero = b.const_like(0.0, x)
    return arith.addf(arith.maximumf(x, zero), arith.mulf(slope, arith.minimumf(x, zero)))


@handles("LeakyRelu")
def leaky_relu(node):
    alpha = node.attr("alpha", 0.01)

    def body(x):
        if alpha == 0.0:   # 0 * inf is NaN: max(x, 0 * x) would lose +inf
            return _negative_part_scaled(x, b.const_like(alpha, x))
        # The select's value is the larger of x and alpha * x when alpha <= 1 (on
        # either side of 0), the smaller when alpha > 1: two vector ops.
        scaled = arith.mulf(x, b.const_like(alpha, x))
        return arith.maximumf(x, scaled) if alpha <= 1.0 else arith.minimumf(x, scaled)
    return _unary(node, body)


def exponential_linear(x, alpha: float):
    """max(x, 0) + alpha * (exp(min(x, 0)) - 1): ELU as the ONNX reference and
    onnxruntime compute it (exp - 1, not expm1), without a compare."""
    zero, one = b.const_like(0.0, x), b.const_like(1.0, x)
    below = arith.subf(math.exp(arith.minimumf(x, zero)), one)
    return arith.addf(arith.maximumf(x, zero), arith.mulf(b.const_like(alpha, x), below))


@handles("Elu")
def elu(node):
    alpha = node.attr("alpha", 1.0)
    return _unary(node, lambda x: exponential_linear(x, alpha))


@handles("PRelu")
def prelu(node):
    if not b.is_float(b.element_of(node.value(0))):
        raise node.unsupported("PRelu on integer tensors")
    return [b.elementwise([node.value(0), node.value(1)],
                          lambda args: _negative_part_scaled(args[0], args[1]),
                          result_shape=node.shape(0))]


@handles("HardSigmoid")
def hard_sigmoid(node):
    alpha, beta = node.attr("alpha", 0.2), node.attr("beta", 0.5)
    return _unary(node, lambda x: _hard_sigmoid(x, alpha, beta))


@handles("Gelu")
def gelu(node):
    approximate = node.attr("approximate", "none")
    if approximate not in ("none", "tanh"):
        raise node.unsupported(f"approximate='{approximate}'")
    return _unary(node, _tanh_gelu if approximate == "tanh" else _erf_gelu)


@handles("Clip")
def clip(node):
    """Bounds are attributes before opset 11, optional inputs from 11 on."""
    if node.opset < 11:
        low, high = node.attr("min"), node.attr("max")
    else:
        low, high = (_bound(node, 1, "min"), _bound(node, 2, "max"))

    def body(x):
        if low is not None:
            x = b.maximum(x, b.const_like(low, x))
        if high is not None:
            x = b.minimum(x, b.const_like(high, x))
        return x
    return _unary(node, body)


def _bound(node, index, what):
    if not node.has_input(index):
        return None
    value = node.required_constant(index, f"the {what} bound")
    return value.reshape(()).item()


@handles("Cast")
def cast(node):
    target_dtype = cast_dtype(node)
    target_type = b.element_type_of(target_dtype)
    if target_dtype.kind == "u":
        raise node.unsupported(f"Cast to the unsigned type {target_dtype.name}")
    if target_type is None:
        raise node.unsupported(f"Cast to ONNX type {node.attr('to')}")
    return [cast_value(node, node.value(0), target_type)]


def cast_value(node, source, target_type):
    """`source` converted to `target_type` as ONNX's Cast does: floats to
    integers truncate, anything to bool is `!= 0`, bool is 0 or 1."""
    source_type = b.element_of(source)
    if source_type == target_type:
        return source
    bool_type = ir.IntegerType.get_signless(1)

    def body(args):
        x = args[0]
        if target_type == bool_type:
            zero = b.const_like(0.0 if b.is_float(source_type) else 0, x)
            if b.is_float(source_type):
                return arith.cmpf(arith.CmpFPredicate.UNE, x, zero)
            return arith.cmpi(arith.CmpIPredicate.ne, x, zero)
        if source_type == bool_type:
            return arith.uitofp(target_type, x) if b.is_float(target_type) \
                else arith.extui(target_type, x)
        if b.is_float(source_type) and b.is_float(target_type):
            wider = ir.FloatType(target_type).width > ir.FloatType(source_type).width
            return arith.extf(target_type, x) if wider else arith.truncf(target_type, x)
        if b.is_float(source_type):
            return arith.fptosi(target_type, x)
        if b.is_float(target_type):
            return arith.sitofp(target_type, x)
        wider = ir.IntegerType(target_type).width > ir.IntegerType(source_type).width
        return arith.extsi(target_type, x) if wider else arith.trunci(target_type, x)
    return b.elementwise([source], body, element_type=target_type)
