"""More elementwise functions of one float tensor: activations (Selu, Celu,
Mish, Swish, Softsign, Shrink, ThresholdedRelu), Round and the
trigonometric/hyperbolic family. Each is one linalg.generic whose body uses
the arith/math ops the vector unit and the fallback engine know (exp, log,
sqrt, atan, sin, cos, tan); the others are composed from those."""

from __future__ import annotations

import math as pymath

from mlir.dialects import arith, math

from . import builders as b
from .handler_api import handles
from .ops_elementwise import exponential_linear


def _const(value, like):
    return b.const_like(value, like)


def _softplus(x):
    return math.log(arith.addf(math.exp(x), _const(1.0, x)))


def _sqrt_of(x, sign):
    """sqrt(x*x + sign)"""
    return math.sqrt(arith.addf(arith.mulf(x, x), _const(sign, x)))


def _asin(x):
    return math.atan(arith.divf(x, math.sqrt(arith.subf(_const(1.0, x), arith.mulf(x, x)))))


_FUNCTIONS = {
    "Mish": lambda x, n: arith.mulf(x, math.tanh(_softplus(x))),
    "Softsign": lambda x, n: arith.divf(x, arith.addf(_const(1.0, x), math.absf(x))),
    "Swish": lambda x, n: arith.mulf(x, b.sigmoid(arith.mulf(_const(n.attr("alpha", 1.0), x),
                                                             x))),
    "Round": lambda x, n: math.roundeven(x),
    "Sin": lambda x, n: math.sin(x),
    "Cos": lambda x, n: math.cos(x),
    "Tan": lambda x, n: math.tan(x),
    "Atan": lambda x, n: math.atan(x),
    "Asin": lambda x, n: _asin(x),
    "Acos": lambda x, n: arith.subf(_const(pymath.pi / 2, x), _asin(x)),
    "Sinh": lambda x, n: arith.mulf(_const(0.5, x), arith.subf(math.exp(x),
                                                                math.exp(arith.negf(x)))),
    "Cosh": lambda x, n: arith.mulf(_const(0.5, x), arith.addf(math.exp(x),
                                                                math.exp(arith.negf(x)))),
    "Asinh": lambda x, n: math.log(arith.addf(x, _sqrt_of(x, 1.0))),
    "Acosh": lambda x, n: math.log(arith.addf(x, _sqrt_of(x, -1.0))),
    "Atanh": lambda x, n: arith.mulf(_const(0.5, x), math.log(arith.divf(
        arith.addf(_const(1.0, x), x), arith.subf(_const(1.0, x), x)))),
}


@handles(*_FUNCTIONS)
def function(node):
    x = node.value(0)
    if not b.is_float(b.element_of(x)):
        raise node.unsupported(f"{node.op_type} of integer tensors")
    fn = _FUNCTIONS[node.op_type]
    return [b.elementwise([x], lambda a: fn(a[0], node))]


@handles("Selu")
def selu(node):
    alpha = node.attr("alpha", 1.67326319217681884765625)
    gamma = node.attr("gamma", 1.05070102214813232421875)

    def body(a):
        return arith.mulf(_const(gamma, a[0]), exponential_linear(a[0], alpha))
    return [b.elementwise([node.value(0)], body)]


@handles("Celu")
def celu(node):
    alpha = node.attr("alpha", 1.0)

    def body(a):
        # max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), as the ONNX reference.
        x, zero = a[0], _const(0.0, a[0])
        below = arith.mulf(_const(alpha, x), arith.subf(
            math.exp(arith.divf(x, _const(alpha, x))), _const(1.0, x)))
        return arith.addf(arith.maximumf(x, zero), arith.minimumf(below, zero))
    return [b.elementwise([node.value(0)], body)]


@handles("ThresholdedRelu")
def thresholded_relu(node):
    alpha = node.attr("alpha", 1.0)

    def body(a):
        x = a[0]
        above = arith.cmpf(arith.CmpFPredicate.OGT, x, _const(alpha, x))
        return arith.select(above, x, _const(0.0, x))
    return [b.elementwise([node.value(0)], body)]


@handles("Shrink")
def shrink(node):
    bias, lambd = node.attr("bias", 0.0), node.attr("lambd", 0.5)
    x = node.value(0)
    floating = b.is_float(b.element_of(x))

    def body(a):
        v = a[0]
        if floating:
            below = arith.cmpf(arith.CmpFPredicate.OLT, v, _const(-lambd, v))
            above = arith.cmpf(arith.CmpFPredicate.OGT, v, _const(lambd, v))
            low, high, zero = (arith.addf(v, _const(bias, v)), arith.subf(v, _const(bias, v)),
                               _const(0.0, v))
        else:
            below = arith.cmpi(arith.CmpIPredicate.slt, v, _const(int(-lambd), v))
            above = arith.cmpi(arith.CmpIPredicate.sgt, v, _const(int(lambd), v))
            low, high, zero = (arith.addi(v, _const(int(bias), v)),
                               arith.subi(v, _const(int(bias), v)), _const(0, v))
        return arith.select(below, low, arith.select(above, high, zero))
    if not floating and (lambd != int(lambd) or bias != int(bias)):
        raise node.unsupported("Shrink of an integer tensor with fractional lambd or bias")
    return [b.elementwise([x], body)]
