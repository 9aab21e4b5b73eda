"""linalg ops left on the fallback path (correct, visibly slow).

linalg.matmul (with its default indexing maps), fill, copy and transpose
have direct numpy handlers. Every other structured op (named ops, matmuls
with transposed or broadcast operands, linalg.map, reduce, elementwise,
contract, ...) is generalized to linalg.generic before translation (upstream
`transform.structured.generalize`). linalg.generic is evaluated vectorised: the
body runs once per point of the reduction dimensions, on numpy arrays that
cover all parallel dimensions at once, so a reduction is accumulated in the
order and precision the body states.

Cost on the fallback engine: iteration points x body ops x the scalar rate.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from mlir import ir

from atvoss_mlir import machine_model

from . import numerics
from .interpreter import HANDLERS, impl
from .ops_builtin import affine_map_fn
from .ops_memref import dram_bytes
from .values import numpy_dtype


def _ins_outs(t, op):
    if hasattr(op, "inputs"):
        return t.slots(op.inputs), t.slots(op.outputs)
    operands = list(op.operands)  # ops with one init (linalg.transpose): ins..., init
    return t.slots(operands[:-1]), t.slots(operands[-1:])


def _issue(t, info, cycles, reads, writes, macs=0):
    t.machine.run(info, "fallback", cycles, reads, writes, macs=macs,
                  dram_read=sum(dram_bytes(m) for m in reads if hasattr(m, "buffer")),
                  dram_write=sum(dram_bytes(m) for m in writes))


_MATMUL_MAPS = ["affine_map<(d0, d1, d2) -> (d0, d2)>", "affine_map<(d0, d1, d2) -> (d2, d1)>",
                "affine_map<(d0, d1, d2) -> (d0, d1)>"]


def _default_matmul(op) -> bool:
    return "indexing_maps" not in op.attributes or \
        [str(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"])] == _MATMUL_MAPS


def needs_generalizing(op) -> bool:
    """Whether no handler here runs `op` as written (it is generalized first)."""
    if op.name == "linalg.matmul":
        return not _default_matmul(op)
    return op.name not in HANDLERS


@impl("linalg.matmul")
def linalg_matmul(t, op, info):
    if not _default_matmul(op):  # generalized before translation (needs_generalizing)
        raise info.error("linalg.matmul with non-default indexing maps is not supported")
    (a, b), (c,) = _ins_outs(t, op)
    target = t.target

    def run(regs):
        lhs, rhs, out = regs[a], regs[b], regs[c]
        (m, k), n = lhs.shape, rhs.shape[1]
        if rhs.shape[0] != k or out.shape != (m, n):
            raise ValueError(f"shapes {lhs.shape} x {rhs.shape} -> {out.shape} do not agree")
        _issue(t, info, machine_model.fallback_cycles(m * n, k, target), [lhs, rhs, out], [out],
               macs=m * n * k)
        if t.numerics:
            acc = numerics.accumulator_dtype(out.dtype)
            # Step by step for fp16 (numerics.in_order): the same bits as npu.matmul.
            result = numerics.matmul(lhs.array(), rhs.array(), acc, out.array())
            numerics.store(out.array(), result)
    return run


@impl("linalg.fill")
def linalg_fill(t, op, info):
    (v,), (o,) = _ins_outs(t, op)
    target = t.target

    def run(regs):
        out = regs[o]
        _issue(t, info, machine_model.fallback_cycles(out.size, 1, target), [], [out])
        if t.numerics:
            numerics.store(out.array(), np.asarray(regs[v]))
    return run


@impl("linalg.copy")
def linalg_copy(t, op, info):
    (a,), (o,) = _ins_outs(t, op)
    target = t.target

    def run(regs):
        src, out = regs[a], regs[o]
        if src.shape != out.shape:
            raise ValueError(f"source shape {src.shape} differs from {out.shape}")
        _issue(t, info, machine_model.fallback_cycles(out.size, 1, target), [src], [out])
        if t.numerics:
            numerics.store(out.array(), src.array())
    return run


@impl("linalg.transpose")
def linalg_transpose(t, op, info):
    permutation = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    (a,), (o,) = _ins_outs(t, op)
    target = t.target

    def run(regs):
        src, out = regs[a], regs[o]
        if out.shape != tuple(src.shape[p] for p in permutation):
            raise ValueError(f"{out.shape} is not {src.shape} permuted by {permutation}")
        _issue(t, info, machine_model.fallback_cycles(out.size, 1, target), [src], [out])
        if t.numerics:
            out.array()[...] = np.transpose(src.array(), permutation)
    return run


# -- linalg.generic ------------------------------------------------------------------------

VECTOR_OPS = {}


def vector_op(*names):
    def register(fn):
        for name in names:
            VECTOR_OPS[name] = fn
        return fn
    return register


def _result_dtype(op):
    return numpy_dtype(op.results[0].type)


_NP_BINARY = {
    "arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply,
    "arith.divf": np.divide, "arith.remf": np.fmod, "arith.maximumf": np.maximum,
    "arith.minimumf": np.minimum, "arith.maxnumf": np.fmax, "arith.minnumf": np.fmin,
    "arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
    "arith.maxsi": np.maximum, "arith.minsi": np.minimum, "arith.andi": np.bitwise_and,
    "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor, "arith.floordivsi": np.floor_divide,
    "arith.divsi": lambda a, b: np.trunc(np.true_divide(a, b)).astype(np.result_type(a, b)),
    "arith.remsi": np.fmod, "arith.shli": np.left_shift, "arith.shrsi": np.right_shift,
    "math.powf": np.power, "math.atan2": np.arctan2, "math.copysign": np.copysign,
    "arith.ceildivsi": lambda a, b: -np.floor_divide(np.negative(a), b),
}


def _as_unsigned(value):
    """An integer array read as unsigned (two's complement of its width)."""
    value = np.asarray(value)
    return value.astype(f"u{value.dtype.itemsize}") if value.dtype.kind == "i" else value


def _unsigned(fn):
    return lambda *args: fn(*map(_as_unsigned, args))


_NP_BINARY.update({
    "arith.divui": _unsigned(np.floor_divide), "arith.remui": _unsigned(np.remainder),
    "arith.maxui": _unsigned(np.maximum), "arith.minui": _unsigned(np.minimum),
    "arith.shrui": _unsigned(np.right_shift),
    "arith.ceildivui": _unsigned(lambda a, b: a // b + (a % b != 0)),
})
_NP_TERNARY = {"math.fma": lambda a, b, c: a * b + c}
_NP_UNARY = {
    "arith.negf": np.negative, "math.exp": np.exp, "math.log": np.log, "math.tanh": np.tanh,
    "math.sqrt": np.sqrt, "math.rsqrt": lambda x: 1 / np.sqrt(x), "math.absf": np.abs,
    "math.absi": np.abs, "math.floor": np.floor, "math.ceil": np.ceil,
    "math.round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),
    "math.roundeven": np.rint, "math.erf": lambda x: numerics.erf(x).astype(x.dtype),
    "math.sin": np.sin, "math.cos": np.cos, "math.exp2": np.exp2, "math.log2": np.log2,
    "math.log1p": np.log1p, "math.expm1": np.expm1, "math.log10": np.log10,
    "math.tan": np.tan, "math.atan": np.arctan, "math.cbrt": np.cbrt, "math.trunc": np.trunc,
    "arith.fptosi": np.trunc, "arith.fptoui": np.trunc,
    "arith.uitofp": _as_unsigned, "arith.extui": _as_unsigned, "arith.index_castui": _as_unsigned,
    # Casts: the result dtype does it.
    "arith.extf": None, "arith.truncf": None, "arith.sitofp": None, "arith.extsi": None,
    "arith.trunci": None, "arith.index_cast": None,
}
_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
        "gt": np.greater, "ge": np.greater_equal}


def _compile_vector_body(block: ir.Block, info, outer_slot):
    """Translate a linalg body into closures over numpy arrays.
    Returns (run(args, dims, regs) -> yielded values, number of ops); values
    the body captures from the enclosing region are read from `regs` through
    `outer_slot` (the translator's register of a value)."""
    from .ops_builtin import _FLOAT_PREDICATES, _INT_PREDICATES

    slots: dict = {}

    def slot(v):
        return slots.setdefault(v, len(slots))

    arg_slots = [slot(a) for a in block.arguments]
    defined = set(arg_slots)
    steps, yields = [], []
    for op in block.operations:
        name = op.operation.name
        if name == "linalg.yield":
            yields = [slot(v) for v in op.operands]
            continue
        ins = [slot(v) for v in op.operands]
        out = slot(op.results[0])
        defined.add(out)
        dtype = _result_dtype(op)
        if name == "arith.constant":
            value = op.attributes["value"]
            constant = np.asarray(value.value, dtype)
            steps.append((lambda dims, c=constant: c, None, out))
        elif name == "linalg.index":
            dim = ir.IntegerAttr(op.attributes["dim"]).value
            steps.append((lambda dims, d=dim: dims[d], None, out))
        elif name in _NP_BINARY:
            steps.append((_np_fn(_NP_BINARY[name], dtype), ins, out))
        elif name in _NP_TERNARY:
            steps.append((_np_fn(_NP_TERNARY[name], dtype), ins, out))
        elif name in _NP_UNARY:
            steps.append((_np_fn(_NP_UNARY[name] or (lambda x: x), dtype), ins, out))
        elif name in ("arith.cmpf", "arith.cmpi"):
            index = ir.IntegerAttr(op.attributes["predicate"]).value
            table = _FLOAT_PREDICATES if name == "arith.cmpf" else _INT_PREDICATES
            steps.append((_comparison(table[index], name == "arith.cmpf"), ins, out))
        elif name == "arith.select":
            steps.append((np.where, ins, out))
        else:
            raise info.error(f"the simulator cannot evaluate '{name}' in a linalg body")
    n_ops = len(steps)
    captured = [(inner, outer_slot(value)) for value, inner in slots.items()
                if inner not in defined]

    def run(args, dims, regs):
        env = [None] * len(slots)
        for s, a in zip(arg_slots, args):
            env[s] = a
        for inner, outer in captured:
            env[inner] = regs[outer]
        for fn, ins, out in steps:
            env[out] = fn(dims) if ins is None else fn(*[env[i] for i in ins])
        return [env[y] for y in yields]
    return run, n_ops


def _comparison(predicate: str, is_float: bool):
    """arith.cmpf / cmpi on arrays: unsigned integer predicates compare the bits
    as unsigned; float ones are ordered (false on NaN) or unordered (true)."""
    if predicate in ("false", "true"):
        return lambda a, b: np.full(np.broadcast(a, b).shape, predicate == "true")
    if not is_float:
        test = _CMP[predicate[-2:]]
        return _unsigned(test) if predicate[0] == "u" else test

    def unordered(a, b):
        return np.isnan(a) | np.isnan(b)
    if predicate in ("ord", "uno"):
        return unordered if predicate == "uno" else (lambda a, b: ~unordered(a, b))
    test = _CMP[predicate[1:]]
    if predicate[0] == "u":
        return lambda a, b: test(a, b) | unordered(a, b)
    return lambda a, b: test(a, b) & ~unordered(a, b)


def _np_fn(fn, dtype):
    if dtype is None:
        return fn

    def apply(*args):
        return np.asarray(fn(*args)).astype(dtype, copy=False)
    return apply


@impl("linalg.generic")
def linalg_generic(t, op, info):
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    map_fns = [affine_map_fn(m) for m in maps]
    iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    parallel = [d for d, kind in enumerate(iterators) if "parallel" in kind]
    reduction = [d for d, kind in enumerate(iterators) if "parallel" not in kind]
    n_loops = len(iterators)
    # Loop d's size comes from the first operand dimension indexed by exactly d.
    size_from = {}
    for k, m in enumerate(maps):
        for j, expr in enumerate(m.results):
            if isinstance(expr, ir.AffineDimExpr) and expr.position not in size_from:
                size_from[expr.position] = (k, j)
    if len(size_from) != n_loops:
        raise info.error("cannot infer the loop sizes from the indexing maps")
    ins, outs = _ins_outs(t, op)
    n_in = len(ins)
    body, n_ops = _compile_vector_body(op.regions[0].blocks[0], info, t.slot)
    has_mul = any(o.operation.name in ("arith.mulf", "arith.muli")
                  for o in op.regions[0].blocks[0].operations)
    target = t.target

    def run(regs):
        operands = [regs[s] for s in ins + outs]
        shapes = [getattr(v, "shape", ()) for v in operands]
        sizes = [shapes[k][j] for k, j in (size_from[d] for d in range(n_loops))]
        points = math.prod(sizes)
        memrefs = [v for v in operands if hasattr(v, "buffer")]
        outputs = operands[n_in:]
        macs = points if (reduction and has_mul) else 0
        _issue(t, info, machine_model.fallback_cycles(points, n_ops, target), memrefs, outputs, macs)
        if not t.numerics:
            return
        arrays = [v.array() if hasattr(v, "buffer") else v for v in operands]
        domain = [sizes[d] for d in parallel]
        dims = [None] * n_loops
        for axis, d in enumerate(parallel):
            shape = [1] * len(parallel)
            shape[axis] = sizes[d]
            dims[d] = np.arange(sizes[d]).reshape(shape)

        def gather(k):
            if not hasattr(operands[k], "buffer"):
                return arrays[k]  # a scalar operand
            return arrays[k][tuple(map_fns[k](dims, []))]

        values = None
        for point in itertools.product(*(range(sizes[d]) for d in reduction)):
            for d, i in zip(reduction, point):
                dims[d] = i
            if values is None:
                values = [gather(k) for k in range(n_in, len(operands))]
            values = body([gather(k) for k in range(n_in)] + values, dims, regs)
        for d in reduction:
            dims[d] = 0
        for k, value in zip(range(n_in, len(operands)), values):
            index = tuple(np.broadcast_to(i, domain) if isinstance(i, np.ndarray) else i
                          for i in map_fns[k](dims, []))
            arrays[k][index] = np.broadcast_to(value, domain).astype(arrays[k].dtype)
    return run
