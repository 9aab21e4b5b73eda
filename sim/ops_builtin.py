"""func, scf, arith, index and affine: control flow and scalar arithmetic.

Scalars are Python ints (index and integers, wrapped to their width, i1 as
bool) and Python floats (rounded to their type). They cost no cycles.
"""

from __future__ import annotations

import math

import numpy as np
from mlir import ir

from .interpreter import impl

_FLOAT_ROUND = {"f16": np.float16, "f32": np.float32, "bf16": None, "f64": None}
_INT_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
_FLOAT_PREDICATES = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
                     "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true")


def int_width(type_: ir.Type) -> int:
    return 64 if isinstance(type_, ir.IndexType) else ir.IntegerType(type_).width


def wrapper(width: int):
    """Two's-complement wrap to `width` bits (i1 becomes bool)."""
    if width == 1:
        return lambda x: bool(x & 1)
    half, mask = 1 << (width - 1), (1 << width) - 1
    return lambda x: ((x + half) & mask) - half


def float_rounder(type_: ir.Type):
    kind = _FLOAT_ROUND.get(str(type_))
    if kind is None:
        return float
    return lambda x: float(kind(x))


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _int_binary(name: str, width: int):
    mask = (1 << width) - 1
    u = lambda x: x & mask  # noqa: E731 - the unsigned reading of a value
    return {
        "addi": lambda a, b: a + b, "subi": lambda a, b: a - b, "muli": lambda a, b: a * b,
        "divsi": _trunc_div, "divui": lambda a, b: u(a) // u(b),
        "floordivsi": lambda a, b: a // b, "ceildivsi": lambda a, b: -((-a) // b),
        "ceildivui": lambda a, b: -((-u(a)) // u(b)),
        "remsi": lambda a, b: a - b * _trunc_div(a, b), "remui": lambda a, b: u(a) % u(b),
        "minsi": min, "maxsi": max,
        "minui": lambda a, b: a if u(a) <= u(b) else b,
        "maxui": lambda a, b: a if u(a) >= u(b) else b,
        "andi": lambda a, b: a & b, "ori": lambda a, b: a | b, "xori": lambda a, b: a ^ b,
        "shli": lambda a, b: a << b, "shrsi": lambda a, b: a >> b,
        "shrui": lambda a, b: u(a) >> b,
    }[name]


_INDEX_TO_ARITH = {"add": "addi", "sub": "subi", "mul": "muli", "divs": "divsi",
                   "divu": "divui", "rems": "remsi", "remu": "remui", "ceildivs": "ceildivsi",
                   "ceildivu": "ceildivui", "floordivs": "floordivsi", "mins": "minsi",
                   "maxs": "maxsi", "minu": "minui", "maxu": "maxui", "shl": "shli",
                   "shrs": "shrsi", "shru": "shrui", "and": "andi", "or": "ori", "xor": "xori"}


def _divf(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:  # IEEE semantics, as the hardware would give
        if a == 0 or a != a:
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _float_binary(name: str):
    return {
        "addf": lambda a, b: a + b, "subf": lambda a, b: a - b, "mulf": lambda a, b: a * b,
        "divf": _divf,
        "remf": math.fmod,
        "maximumf": lambda a, b: math.nan if a != a or b != b else max(a, b),
        "minimumf": lambda a, b: math.nan if a != a or b != b else min(a, b),
        "maxnumf": lambda a, b: b if a != a else a if b != b else max(a, b),
        "minnumf": lambda a, b: b if a != a else a if b != b else min(a, b),
    }[name]


def compare_int(predicate: str, width: int):
    mask = (1 << width) - 1
    return {
        "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
        "slt": lambda a, b: a < b, "sle": lambda a, b: a <= b,
        "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
        "ult": lambda a, b: a & mask < b & mask, "ule": lambda a, b: a & mask <= b & mask,
        "ugt": lambda a, b: a & mask > b & mask, "uge": lambda a, b: a & mask >= b & mask,
    }[predicate]


def compare_float(predicate: str):
    ordered = lambda a, b: a == a and b == b  # noqa: E731
    base = {"eq": lambda a, b: a == b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
            "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "ne": lambda a, b: a != b}
    if predicate == "false":
        return lambda a, b: False
    if predicate == "true":
        return lambda a, b: True
    if predicate == "ord":
        return ordered
    if predicate == "uno":
        return lambda a, b: not ordered(a, b)
    test = base[predicate[1:]]
    if predicate[0] == "o":
        return lambda a, b: ordered(a, b) and test(a, b)
    return lambda a, b: not ordered(a, b) or test(a, b)


def _unary(t, op, fn):
    (a,), (r,) = t.slots(op.operands), t.slots(op.results)

    def run(regs):
        regs[r] = fn(regs[a])
    return run


def _binary(t, op, fn):
    (a, b), (r,) = t.slots(op.operands), t.slots(op.results)

    def run(regs):
        regs[r] = fn(regs[a], regs[b])
    return run


# -- func ---------------------------------------------------------------------------

@impl("func.call")
def func_call(t, op, info):
    callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
    args, results = t.slots(op.operands), t.slots(op.results)
    location = op.location
    cache = []

    def run(regs):
        if not cache:
            cache.append(t.function(callee, location))
        values = cache[0].call([regs[a] for a in args])
        for r, v in zip(results, values):
            regs[r] = v
    return run


# -- scf ----------------------------------------------------------------------------

@impl("scf.for")
def scf_for(t, op, info):
    operands = t.slots(op.operands)
    lower, upper, step, inits = operands[0], operands[1], operands[2], operands[3:]
    body = t.block(op.regions[0].blocks[0])
    induction, iter_slots, yields = body.arg_slots[0], body.arg_slots[1:], body.yield_slots
    results = t.slots(op.results)
    run_body = body.run

    def run(regs):
        if regs[step] <= 0:
            raise ValueError(f"step {regs[step]} is not positive")
        for s, init in zip(iter_slots, inits):
            regs[s] = regs[init]
        for i in range(regs[lower], regs[upper], regs[step]):
            regs[induction] = i
            run_body(regs)
            if iter_slots:
                values = [regs[y] for y in yields]
                for s, v in zip(iter_slots, values):
                    regs[s] = v
        for r, s in zip(results, iter_slots):
            regs[r] = regs[s]
    return run


@impl("scf.if")
def scf_if(t, op, info):
    (condition,) = t.slots(op.operands)
    then_block = t.block(op.regions[0].blocks[0])
    else_block = t.block(op.regions[1].blocks[0]) if op.regions[1].blocks else None
    results = t.slots(op.results)

    def run(regs):
        block = then_block if regs[condition] else else_block
        if block is None:
            return
        block.run(regs)
        values = [regs[y] for y in block.yield_slots]
        for r, v in zip(results, values):
            regs[r] = v
    return run


@impl("scf.while")
def scf_while(t, op, info):
    inits = t.slots(op.operands)
    before = t.block(op.regions[0].blocks[0])
    after = t.block(op.regions[1].blocks[0])
    results = t.slots(op.results)

    def run(regs):
        values = [regs[s] for s in inits]
        while True:
            for s, v in zip(before.arg_slots, values):
                regs[s] = v
            before.run(regs)
            condition, *values = [regs[y] for y in before.yield_slots]
            if not condition:
                break
            for s, v in zip(after.arg_slots, values):
                regs[s] = v
            after.run(regs)
            values = [regs[y] for y in after.yield_slots]
        for r, v in zip(results, values):
            regs[r] = v
    return run


# -- arith ----------------------------------------------------------------------------

@impl("arith.constant", "index.constant", "index.bool.constant")
def arith_constant(t, op, info):
    attr = op.attributes["value"]
    if isinstance(attr, ir.BoolAttr):
        value = bool(attr.value)
    elif isinstance(attr, ir.IntegerAttr):
        value = attr.value
        if not isinstance(attr.type, ir.IndexType):
            value = wrapper(int_width(attr.type))(value)
    elif isinstance(attr, ir.FloatAttr):
        value = attr.value
    else:
        raise info.error("only scalar constants are supported")
    (r,) = t.slots(op.results)

    def run(regs):
        regs[r] = value
    return run


@impl(*(f"arith.{n}" for n in ("addi", "subi", "muli", "divsi", "divui", "floordivsi",
                                "ceildivsi", "ceildivui", "remsi", "remui", "minsi", "maxsi",
                                "minui", "maxui", "andi", "ori", "xori", "shli", "shrsi",
                                "shrui")))
def arith_int_binary(t, op, info):
    width = int_width(op.results[0].type)
    fn, wrap = _int_binary(info.name.split(".")[1], width), wrapper(width)
    return _binary(t, op, lambda a, b: wrap(fn(a, b)))


@impl(*(f"index.{n}" for n in _INDEX_TO_ARITH))
def index_binary(t, op, info):
    fn, wrap = _int_binary(_INDEX_TO_ARITH[info.name.split(".")[1]], 64), wrapper(64)
    return _binary(t, op, lambda a, b: wrap(fn(a, b)))


@impl(*(f"arith.{n}" for n in ("addf", "subf", "mulf", "divf", "remf", "maximumf",
                                "minimumf", "maxnumf", "minnumf")))
def arith_float_binary(t, op, info):
    fn, rounded = _float_binary(info.name.split(".")[1]), float_rounder(op.results[0].type)
    return _binary(t, op, lambda a, b: rounded(fn(a, b)))


@impl("arith.negf")
def arith_negf(t, op, info):
    return _unary(t, op, lambda a: -a)


@impl("arith.cmpi")
def arith_cmpi(t, op, info):
    predicate = _INT_PREDICATES[ir.IntegerAttr(op.attributes["predicate"]).value]
    return _binary(t, op, compare_int(predicate, int_width(op.operands[0].type)))


@impl("index.cmp")
def index_cmp(t, op, info):
    text = str(op.attributes["pred"])  # e.g. #index<cmp_predicate slt>
    predicate = text.rstrip(">").split()[-1]
    return _binary(t, op, compare_int(predicate, 64))


@impl("arith.cmpf")
def arith_cmpf(t, op, info):
    predicate = _FLOAT_PREDICATES[ir.IntegerAttr(op.attributes["predicate"]).value]
    return _binary(t, op, compare_float(predicate))


@impl("arith.select")
def arith_select(t, op, info):
    (c, a, b), (r,) = t.slots(op.operands), t.slots(op.results)

    def run(regs):
        regs[r] = regs[a] if regs[c] else regs[b]
    return run


@impl("arith.index_cast", "arith.extsi", "arith.trunci", "index.casts")
def arith_signed_cast(t, op, info):
    return _unary(t, op, wrapper(int_width(op.results[0].type)))


@impl("arith.index_castui", "arith.extui", "index.castu")
def arith_unsigned_cast(t, op, info):
    mask = (1 << int_width(op.operands[0].type)) - 1
    wrap = wrapper(int_width(op.results[0].type))
    return _unary(t, op, lambda a: wrap(a & mask))


@impl("arith.sitofp")
def arith_sitofp(t, op, info):
    rounded = float_rounder(op.results[0].type)
    return _unary(t, op, lambda a: rounded(a))


@impl("arith.uitofp")
def arith_uitofp(t, op, info):
    rounded, mask = float_rounder(op.results[0].type), (1 << int_width(op.operands[0].type)) - 1
    return _unary(t, op, lambda a: rounded(a & mask))


@impl("arith.fptosi", "arith.fptoui")
def arith_fptoint(t, op, info):
    wrap = wrapper(int_width(op.results[0].type))
    return _unary(t, op, lambda a: wrap(int(a)))


@impl("arith.extf", "arith.truncf")
def arith_float_cast(t, op, info):
    return _unary(t, op, float_rounder(op.results[0].type))


# -- affine ---------------------------------------------------------------------------

def affine_expr(expr: ir.AffineExpr):
    """A function (dims, symbols) -> value of an affine expression; works on
    ints and on numpy index arrays alike."""
    expr = expr.maybe_downcast() if hasattr(expr, "maybe_downcast") else expr
    if isinstance(expr, ir.AffineConstantExpr):
        value = expr.value
        return lambda d, s: value
    if isinstance(expr, ir.AffineDimExpr):
        position = expr.position
        return lambda d, s: d[position]
    if isinstance(expr, ir.AffineSymbolExpr):
        position = expr.position
        return lambda d, s: s[position]
    lhs, rhs = affine_expr(expr.lhs), affine_expr(expr.rhs)
    if isinstance(expr, ir.AffineAddExpr):
        return lambda d, s: lhs(d, s) + rhs(d, s)
    if isinstance(expr, ir.AffineMulExpr):
        return lambda d, s: lhs(d, s) * rhs(d, s)
    if isinstance(expr, ir.AffineModExpr):
        return lambda d, s: lhs(d, s) % rhs(d, s)
    if isinstance(expr, ir.AffineFloorDivExpr):
        return lambda d, s: lhs(d, s) // rhs(d, s)
    if isinstance(expr, ir.AffineCeilDivExpr):
        return lambda d, s: -((-lhs(d, s)) // rhs(d, s))
    raise ValueError(f"unsupported affine expression {expr}")


def affine_map_fn(affine_map: ir.AffineMap):
    exprs = [affine_expr(e) for e in affine_map.results]
    return lambda d, s: [e(d, s) for e in exprs]


def _affine(t, op, combine):
    affine_map = ir.AffineMapAttr(op.attributes["map"]).value
    fn, n_dims = affine_map_fn(affine_map), affine_map.n_dims
    operands, (r,) = t.slots(op.operands), t.slots(op.results)
    dims, syms = operands[:n_dims], operands[n_dims:]

    def run(regs):
        regs[r] = combine(fn([regs[i] for i in dims], [regs[i] for i in syms]))
    return run


@impl("affine.apply")
def affine_apply(t, op, info):
    return _affine(t, op, lambda values: values[0])


@impl("affine.min")
def affine_min(t, op, info):
    return _affine(t, op, min)


@impl("affine.max")
def affine_max(t, op, info):
    return _affine(t, op, max)


@impl("affine.delinearize_index")
def affine_delinearize_index(t, op, info):
    """Row-major digits of a linear index over `static_basis` (a leading
    dynamic or absent bound is unbounded)."""
    basis = list(ir.DenseI64ArrayAttr(op.attributes["static_basis"]))
    operands, results = t.slots(op.operands), t.slots(op.results)
    if any(b == ir.ShapedType.get_dynamic_size() for b in basis):
        raise info.error("a dynamic basis is not supported")
    strides = [1] * len(basis)
    for i in range(len(basis) - 2, -1, -1):
        strides[i] = strides[i + 1] * basis[i + 1]
    if len(results) == len(basis) - 1:   # without the outer bound
        strides = strides[1:]
    linear = operands[0]

    def run(regs):
        rest = regs[linear]
        for slot, stride in zip(results, strides):
            regs[slot], rest = divmod(rest, stride)
    return run
