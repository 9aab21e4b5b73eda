"""Translate the body of an elementwise linalg op into vector-unit steps.

A step is a typed record: `BinaryStep` (npu.elementwise), `ActivationStep`
(npu.activation: the unary math functions, and the relu and clip that
`max`/`min` with constants fuse into) and `CopyStep` (the input itself,
broadcast over the tile, or converted to the output's float type). Step
operands are `Ref`s: an input of the op, the result of an earlier step, or a
scalar constant.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from mlir import ir

from .problem import Unsupported, constant_value

# Per-element binary ops of linalg.generic bodies and named elementwise ops.
BINARY_KINDS = {"arith.addf": "add", "arith.addi": "add", "arith.subf": "sub",
                "arith.subi": "sub", "arith.mulf": "mul", "arith.muli": "mul",
                "arith.maximumf": "max", "arith.maxnumf": "max", "arith.maxsi": "max",
                "arith.minimumf": "min", "arith.minnumf": "min", "arith.minsi": "min",
                "arith.divf": "div", "arith.divsi": "div"}
COMMUTATIVE = {"add", "mul", "max", "min"}
# Per-element functions of one operand: npu.activation kinds.
UNARY_KINDS = {"math.exp": "exp", "math.log": "log", "math.erf": "erf", "math.tanh": "tanh",
               "math.rsqrt": "rsqrt", "math.sqrt": "sqrt", "arith.negf": "neg",
               "math.absf": "abs"}
CONVERSIONS = ("arith.extf", "arith.truncf")


class Ref(NamedTuple):
    source: str          # "in" (input i of the op), "tmp" (result of step i), "const"
    value: int | float   # the input or step number, or the constant


@dataclass
class BinaryStep:
    kind: str            # add, sub, mul, div, max, min
    lhs: Ref
    rhs: Ref
    result: Ref


@dataclass
class ActivationStep:
    kind: str            # relu, clip, sigmoid, gelu, and the UNARY_KINDS
    source: Ref
    result: Ref
    clip_min: float | None = None
    clip_max: float | None = None


@dataclass
class CopyStep:
    source: Ref


@dataclass
class QuantizeStep:
    """npu.requantize (an i32 accumulator or, `quantize`, f32 divided by the
    scale, to i8) or npu.dequantize (i8 to f32): the whole body, one op."""
    kind: str            # requantize, quantize, dequantize
    source: Ref
    result: Ref
    scale: float
    zero_point: int
    scales: Ref | None = None   # a per-channel f32 input instead of `scale`
    offset: float = 0.0         # added before rounding (a zero point, as onnxruntime adds it)


@dataclass
class QuantizedAddStep:
    """int8 `round(fma(lhs', lhs_scale, fma(rhs', rhs_scale, offset)))`, x' the
    8-bit value in its own range: one npu.quantized_add (onnxruntime's x86
    QLinearAdd)."""
    lhs: Ref
    rhs: Ref
    result: Ref
    lhs_scale: float
    rhs_scale: float
    offset: float
    input_shift: int     # held int8 to the 8-bit type's own range
    zero_point: int      # and back

    kind = "quantized_add"
    passes = 2           # two fused multiply-adds


@dataclass
class CompareStep:
    kind: str            # eq, ne, lt, le, gt, ge: an i1 result
    lhs: Ref
    rhs: Ref
    result: Ref


@dataclass
class SelectStep:
    condition: Ref       # an i1 input of the op
    on_true: Ref
    on_false: Ref
    result: Ref

    kind = "select"


# arith.cmpf / arith.cmpi predicates (their enum values) the vector unit has:
# the ordered float ones and une (a NaN makes it true, as npu.compare's ne).
CMPF_KINDS = {1: "eq", 2: "gt", 3: "ge", 4: "lt", 5: "le", 13: "ne"}
CMPI_KINDS = {0: "eq", 1: "ne", 2: "lt", 3: "le", 4: "gt", 5: "ge"}
SWAPPED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


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
FLOAT_TYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


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


def without_unread_steps(steps: list, result: Ref) -> list:
    """The steps computing `result`: those no later step reads are dropped (the
    parts of an activation computed as one step)."""
    read = {result}
    kept = []
    for step in reversed(steps):
        if getattr(step, "result", None) in read:
            kept.append(step)
            read.update(getattr(step, f.name) for f in dataclasses.fields(step)
                        if f.name != "result" and isinstance(getattr(step, f.name), Ref))
    return kept[::-1]


def reciprocal_of(value: ir.Value) -> float | None:
    """1/c in the value's float type, for a finite non-zero scalar constant c."""
    constant = constant_value(value)
    float_type = FLOAT_TYPES.get(str(value.type))
    if constant is None or float_type is None or not math.isfinite(constant) or constant == 0:
        return None
    return float(float_type(1) / float_type(constant))


SATURATE_TO_I8 = ["math.roundeven", "arith.addf", "arith.maximumf", "arith.minimumf",
                  "arith.fptosi", "linalg.yield"]


def quantization_step(block: ir.Block, n_inputs: int) -> QuantizeStep | None:
    """The body as one QuantizeStep, when it is one of the forms the ONNX
    importer writes for requantisation, QuantizeLinear and DequantizeLinear
    (frontend/ops_quantized)."""
    ops = [op for op in block.operations if op.name != "arith.constant"]
    names = [op.name for op in ops]
    x = block.arguments[0]

    def scalar(value):
        constant = constant_value(value)
        return None if constant is None else float(constant)

    def follows(op, previous) -> bool:
        return op.operands[0] == previous.results[0]

    if names == ["arith.sitofp", "linalg.yield"] and n_inputs == 1 and str(x.type) == "i8" \
            and str(ops[0].results[0].type) == "f32":   # the scale 1, zero point 0 form
        return QuantizeStep("dequantize", Ref("in", 0), Ref("tmp", 0), 1.0, 0)
    if names == ["arith.sitofp", "arith.mulf", "linalg.yield"] and n_inputs == 1:
        scale = scalar(ops[1].operands[1])   # the zero point 0 form
        if str(x.type) == "i8" and ops[0].operands[0] == x and follows(ops[1], ops[0]) \
                and scale is not None and str(ops[1].results[0].type) == "f32":
            return QuantizeStep("dequantize", Ref("in", 0), Ref("tmp", 0), scale, 0)
        return None
    if names == ["arith.sitofp", "arith.subf", "linalg.yield"] and n_inputs == 1:
        zero_point = scalar(ops[1].operands[1])   # the scale 1 form: centred
        if str(x.type) == "i8" and ops[0].operands[0] == x and follows(ops[1], ops[0]) \
                and zero_point is not None and zero_point == int(zero_point) \
                and str(ops[1].results[0].type) == "f32":
            return QuantizeStep("dequantize", Ref("in", 0), Ref("tmp", 0), 1.0, int(zero_point))
        return None
    if names == ["arith.sitofp", "arith.subf", "arith.mulf", "linalg.yield"] and n_inputs == 1:
        zero_point, scale = scalar(ops[1].operands[1]), scalar(ops[2].operands[1])
        if str(x.type) == "i8" and ops[0].operands[0] == x and follows(ops[1], ops[0]) \
                and follows(ops[2], ops[1]) and zero_point is not None and scale is not None \
                and zero_point == int(zero_point) and str(ops[2].results[0].type) == "f32":
            return QuantizeStep("dequantize", Ref("in", 0), Ref("tmp", 0), scale,
                                int(zero_point))
        return None
    if names[:2] in (["arith.divf", "arith.addf"], ["arith.mulf", "arith.addf"]) \
            and names[2:] == SATURATE_TO_I8 and n_inputs == 1:
        # x / s (or x * m) + offset, rounded, shifted, saturated: the zero point
        # added before rounding (frontend/ops_quantized's *_zero_point_first)
        divide, offset, _, shift, low, high, fptosi = ops[:7]
        if str(x.type) != "f32" or divide.operands[0] != x or str(fptosi.results[0].type) != "i8" \
                or not all(follows(op, previous) for previous, op in zip(ops[:6], ops[1:7])):
            return None
        scale, offset, zero_point = (scalar(op.operands[1]) for op in (divide, offset, shift))
        if None in (scale, offset, zero_point) or zero_point != int(zero_point) or \
                scalar(low.operands[1]) != -128.0 or scalar(high.operands[1]) != 127.0:
            return None
        kind = "quantize" if divide.name == "arith.divf" else "requantize"
        return QuantizeStep(kind, Ref("in", 0), Ref("tmp", 0), scale, int(zero_point),
                            offset=offset)
    if names[2:] == SATURATE_TO_I8 and names[:2] == ["arith.sitofp", "arith.mulf"]:
        kind = "requantize"
        if str(x.type) != "i32" or ops[0].operands[0] != x or not follows(ops[1], ops[0]):
            return None
    elif names[1:] == SATURATE_TO_I8 and names[0] == "arith.mulf":
        kind = "requantize"   # an accumulator held in f32
        if str(x.type) != "f32" or ops[0].operands[0] != x:
            return None
    elif names[1:] == SATURATE_TO_I8 and names[0] == "arith.divf":
        kind = "quantize"
        if str(x.type) != "f32" or ops[0].operands[0] != x:
            return None
    else:
        return None
    product = ops[-7]
    tail = ops[-6:-1]
    if not all(follows(op, previous) for previous, op in zip([product] + tail[:-1], tail)) \
            or str(tail[-1].results[0].type) != "i8":
        return None
    zero_point = scalar(tail[1].operands[1])
    if zero_point is None or zero_point != int(zero_point) or \
            scalar(tail[2].operands[1]) != -128.0 or scalar(tail[3].operands[1]) != 127.0:
        return None
    factor = product.operands[1]
    scale, scales = scalar(factor), None
    if scale is None:
        if n_inputs != 2 or factor != block.arguments[1] or str(factor.type) != "f32":
            return None
        scale, scales = 1.0, Ref("in", 1)
    elif n_inputs != 1:
        return None
    return QuantizeStep(kind, Ref("in", 0), Ref("tmp", 0), scale, int(zero_point), scales)


def quantized_add_step(block: ir.Block, n_inputs: int) -> QuantizedAddStep | None:
    """The body as a QuantizedAddStep: the form frontend/ops_qoperator writes
    for QLinearAdd (each i8 input moved to its own range, two fused
    multiply-adds, rounded, shifted back and saturated to i8)."""
    if n_inputs != 2 or any(str(a.type) != "i8" for a in block.arguments[:2]):
        return None
    yielded = list(block.operations)[-1].operands
    if len(yielded) != 1:
        return None

    def producer(value, name):
        if isinstance(value, ir.OpResult) and value.owner.name == name \
                and value.owner.parent == block.owner:
            return value.owner
        return None

    def scalar(value):
        constant = constant_value(value)
        return None if constant is None else float(constant)

    chain = []
    value = yielded[0]
    for name in ("arith.fptosi", "arith.minimumf", "arith.maximumf", "arith.addf",
                 "math.roundeven", "math.fma"):
        op = producer(value, name)
        if op is None and name == "arith.addf":   # no shift back (int8)
            chain.append(None)
            continue
        if op is None:
            return None
        chain.append(op)
        value = op.operands[0]
    fptosi, minimum, maximum, back, _, outer = chain
    inner = producer(outer.operands[2], "math.fma")
    if str(fptosi.results[0].type) != "i8" or scalar(minimum.operands[1]) != 127.0 \
            or scalar(maximum.operands[1]) != -128.0 or inner is None:
        return None

    def own_range(value):
        """(argument index, shift) of `sitofp(arg) + shift`."""
        shift = 0.0
        op = producer(value, "arith.addf")
        if op is not None:
            shift, value = scalar(op.operands[1]), op.operands[0]
        op = producer(value, "arith.sitofp")
        if op is None or shift is None or op.operands[0] not in list(block.arguments[:2]):
            return None
        return list(block.arguments).index(op.operands[0]), shift

    lhs, rhs = own_range(outer.operands[0]), own_range(inner.operands[0])
    numbers = [scalar(v) for v in (outer.operands[1], inner.operands[1], inner.operands[2])]
    numbers.append(scalar(back.operands[1]) if back else -0.0)
    if None in (lhs, rhs) or None in numbers or lhs[0] == rhs[0] or lhs[1] != rhs[1] \
            or numbers[3] != -lhs[1] or lhs[1] != int(lhs[1]):
        return None
    lhs_scale, rhs_scale, offset, _ = numbers
    return QuantizedAddStep(Ref("in", lhs[0]), Ref("in", rhs[0]), Ref("tmp", 0), lhs_scale,
                            rhs_scale, offset, int(lhs[1]), -int(lhs[1]))


def body_program(block: ir.Block, n_inputs: int) -> list:
    """The vector-unit steps computing a linalg.generic body."""
    added = quantized_add_step(block, n_inputs)
    if added is not None:
        return [added]
    quantization = quantization_step(block, n_inputs)
    if quantization is not None:
        return [quantization]
    names: dict = {}
    for i, argument in enumerate(block.arguments):
        if i < n_inputs:
            names[argument] = Ref("in", i)
    if n_inputs == 1:
        kind = body_activation(block)
        if kind is not None:
            return [ActivationStep(kind, Ref("in", 0), Ref("tmp", 0))]
    operations = list(block.operations)
    if n_inputs == 1 and len(operations) == 2 and operations[0].name in CONVERSIONS \
            and operations[0].operands[0] == block.arguments[0] \
            and operations[1].operands[0] == operations[0].results[0]:
        return [CopyStep(Ref("in", 0))]   # a float conversion: npu.activation "none"
    steps = []

    def ref(value):
        """What a step reads for `value`: an input, an earlier step's result or a
        scalar constant (one canonicalization hoisted out of the body included);
        None for anything else."""
        if value not in names and constant_value(value) is not None:
            names[value] = Ref("const", float(constant_value(value)))
        return names.get(value)

    def computed(op, step_type, *operands, **attributes) -> None:
        """Append a step computing the result of `op`."""
        result = Ref("tmp", len(steps))
        steps.append(step_type(*operands, result=result, **attributes))
        names[op.results[0]] = result

    for op in operations[:-1]:
        name = op.name
        found = activation_of(op.results[0], block) if len(op.results) == 1 else None
        if found is not None and ref(found[1]) is not None and ref(found[1]).source != "const":
            computed(op, ActivationStep, found[0], ref(found[1]))
            continue
        if name == "arith.constant":
            value = constant_value(op.results[0])
            if value is None:
                raise Unsupported("a non-scalar constant in the body")
            names[op.results[0]] = Ref("const", float(value))
            continue
        if name == "arith.divf" and op.operands[0] in names:
            reciprocal = reciprocal_of(op.operands[1])
            if reciprocal is not None:   # x / c as x * (1/c): the vector unit multiplies
                computed(op, BinaryStep, "mul", names[op.operands[0]], Ref("const", reciprocal))
                continue
        if name in UNARY_KINDS:
            source = ref(op.operands[0])
            if source is None or source.source == "const":
                raise Unsupported(f"'{name}' of a value defined outside the body or a constant")
            computed(op, ActivationStep, UNARY_KINDS[name], source)
            continue
        if name == "arith.divf" and constant_value(op.operands[0]) == 1.0:   # 1 / x
            denominator = ref(op.operands[1])
            if denominator is not None and denominator.source != "const":
                computed(op, ActivationStep, "reciprocal", denominator)
                continue
        if name in ("arith.cmpf", "arith.cmpi"):
            kinds = CMPF_KINDS if name == "arith.cmpf" else CMPI_KINDS
            kind = kinds.get(ir.IntegerAttr(op.attributes["predicate"]).value)
            lhs, rhs = (ref(value) for value in op.operands)
            if kind is not None and lhs is not None and lhs.source == "const":
                kind, lhs, rhs = SWAPPED[kind], rhs, lhs
            if kind is None or lhs is None or rhs is None or lhs.source == "const":
                raise Unsupported(f"a '{name}' predicate or operands the vector unit has no "
                                  f"compare for")
            if op.results[0] != operations[-1].operands[0]:
                raise Unsupported("a comparison whose mask is not the op's result")
            computed(op, CompareStep, kind, lhs, rhs)
            continue
        if name == "arith.select":
            condition, on_true, on_false = (ref(value) for value in op.operands)
            if condition is None or condition.source != "in" or on_true is None \
                    or on_false is None:
                raise Unsupported("a select whose condition is not an input of the op")
            computed(op, SelectStep, condition, on_true, on_false)
            continue
        if name not in BINARY_KINDS:
            raise Unsupported(f"'{name}' in the body has no vector-unit instruction")
        lhs, rhs = (ref(value) for value in op.operands)
        if lhs is None or rhs is None:
            raise Unsupported("the body reads the output's old value or a value "
                              "defined outside it")
        kind = BINARY_KINDS[name]
        if lhs.source == "const" and rhs.source == "const":
            raise Unsupported("a constant-only expression in the body")
        if lhs.source == "const" and kind == "sub":
            # c - x as (-x) + c: the same value (IEEE subtraction adds the negation).
            negated = Ref("tmp", len(steps))
            steps.append(ActivationStep("neg", rhs, result=negated))
            computed(op, BinaryStep, "add", negated, lhs)
            continue
        if lhs.source == "const":
            if kind not in COMMUTATIVE:
                raise Unsupported(f"'{name}' with a constant left operand")
            lhs, rhs = rhs, lhs
        computed(op, BinaryStep, kind, lhs, rhs)
    yielded = operations[-1].operands
    if len(yielded) != 1 or yielded[0] not in names or names[yielded[0]].source == "const":
        raise Unsupported("the body must yield one computed value")
    if names[yielded[0]].source == "in" and not steps:
        steps.append(CopyStep(names[yielded[0]]))
    elif names[yielded[0]] != Ref("tmp", len(steps) - 1):
        raise Unsupported("the body's result is not its last operation")
    else:
        steps = without_unread_steps(steps, names[yielded[0]])
    return fuse_activations(steps)


def step_constants(steps: list) -> list[float]:
    """The scalar constants the steps read, each once: one-element SRAM
    buffers around the tile loop."""
    found = []
    for step in steps:
        for name in ("rhs", "on_true", "on_false"):
            ref = getattr(step, name, None)
            if ref is not None and ref.source == "const" and ref.value not in found:
                found.append(ref.value)
    return found


def is_binary(step, kind: str) -> bool:
    return isinstance(step, BinaryStep) and step.kind == kind


def fuse_activations(steps: list) -> list:
    """max(x, 0) -> relu; min(max(x, lo), hi) -> clip (vector-unit activations)."""
    fused = []
    for step in steps:
        if is_binary(step, "max") and step.rhs == Ref("const", 0.0):
            fused.append(ActivationStep("relu", step.lhs, step.result))
            continue
        previous = fused[-1] if fused else None
        min_by_constant = is_binary(step, "min") and step.rhs.source == "const"
        if min_by_constant and is_binary(previous, "max") and previous.rhs.source == "const" \
                and step.lhs == previous.result and previous.rhs.value <= step.rhs.value:
            fused[-1] = ActivationStep("clip", previous.lhs, step.result, previous.rhs.value,
                                       step.rhs.value)
            continue
        if min_by_constant and isinstance(previous, ActivationStep) and previous.kind == "relu" \
                and step.lhs == previous.result and step.rhs.value >= 0:
            fused[-1] = ActivationStep("clip", previous.source, step.result, 0.0, step.rhs.value)
            continue
        fused.append(step)
    # Renumber temporaries: each step's result is Ref("tmp", index of the step).
    mapping = {}

    def rename(ref):
        return mapping.get(ref, ref)
    for number, step in enumerate(fused):
        if isinstance(step, (BinaryStep, CompareStep)):
            step.lhs, step.rhs = rename(step.lhs), rename(step.rhs)
        elif isinstance(step, ActivationStep):
            step.source = rename(step.source)
        elif isinstance(step, SelectStep):
            step.on_true, step.on_false = rename(step.on_true), rename(step.on_false)
        else:
            continue
        mapping[step.result] = Ref("tmp", number)
        step.result = Ref("tmp", number)
    return fused
