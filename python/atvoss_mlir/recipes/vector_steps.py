"""The steps the vector unit runs an elementwise body as, and their operands.

A step is a typed record: `BinaryStep` (npu.elementwise), `ActivationStep`
(npu.activation: the unary math functions, and the relu and clip that
`max`/`min` with constants fuse into), `CopyStep` (the input itself,
broadcast over the tile, or converted to the output's float type),
`CompareStep`/`SelectStep` (npu.compare / npu.select) and the quantisation
steps, each one npu op. Step operands are `Ref`s: an input of the op, the
result of an earlier step, or a scalar constant.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..machine_model import ONE_PASS_ACTIVATIONS

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
# A float compared with itself: uno (IsNaN) is une, ord is oeq.
SELF_CMPF_KINDS = {14: "ne", 7: "eq"}
SWAPPED = {"eq": "eq", "ne": "ne", "lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}
FLOAT_TYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def operand_refs(step) -> list:
    """The Refs a step reads (every Ref field but its result)."""
    return [getattr(step, f.name) for f in dataclasses.fields(step)
            if f.name != "result" and isinstance(getattr(step, f.name), Ref)]


def renamed(step, names: dict, result: Ref | None = None):
    """`step` reading names.get(ref, ref) for each Ref it reads, and writing
    `result` when given."""
    changes = {f.name: names.get(getattr(step, f.name), getattr(step, f.name))
               for f in dataclasses.fields(step) if f.name != "result"
               and isinstance(getattr(step, f.name), Ref)}
    if result is not None:
        changes["result"] = result
    return dataclasses.replace(step, **changes)


def numbered(steps: list) -> list:
    """The steps with each result renumbered Ref("tmp", index of the step), and
    the reads of them with it."""
    mapping, result = {}, []
    for number, step in enumerate(steps):
        if getattr(step, "result", None) is None:   # a CopyStep: the whole program
            result.append(step)
            continue
        mapping[step.result] = Ref("tmp", number)
        result.append(renamed(step, mapping, Ref("tmp", number)))
    return result


def epilogue_steps(steps: list) -> set[int]:
    """The numbers of the activation steps an npu.elementwise applies to its
    results on their way out (its `activation`): one the lanes apply in one
    pass, of the result of the binary step just before it, which no other step
    reads."""
    fused = set()
    for number in range(1, len(steps)):
        step, before = steps[number], steps[number - 1]
        source = Ref("tmp", number - 1)
        if isinstance(step, ActivationStep) and step.kind in ONE_PASS_ACTIVATIONS \
                and isinstance(before, BinaryStep) and step.source == source \
                and before.result == source \
                and not any(source in operand_refs(other)
                            for other in steps[:number] + steps[number + 1:]):
            fused.add(number)
    return fused


def with_epilogues(steps: list) -> list:
    """(number, step, the activation step it applies as its epilogue or None)
    for each step that is not itself an epilogue (epilogue_steps)."""
    fused = epilogue_steps(steps)
    return [(number, step, steps[number + 1] if number + 1 in fused else None)
            for number, step in enumerate(steps) if number not in fused]


def step_constants(steps: list, numbers: bool = False) -> list:
    """The scalar constants the steps read, each once: one-element SRAM
    buffers around the tile loop (with `numbers`, each with the number of the
    first step reading it)."""
    found = {}
    for number, step in enumerate(steps):
        for name in ("rhs", "on_true", "on_false"):
            ref = getattr(step, name, None)
            if ref is not None and ref.source == "const" and ref.value not in found:
                found[ref.value] = number
    return list(found.items()) if numbers else list(found)


def step_types(steps: list, input_types: list[str], output_type: str) -> list[str]:
    """The element type of each step's result: a merged DequantizeLinear -> op
    -> QuantizeLinear chain computes in f32 between an i8 input and output."""
    types: list[str] = []

    def of(ref: Ref | None) -> str | None:
        if ref is None or ref.source == "const":
            return None
        return input_types[ref.value] if ref.source == "in" else types[ref.value]
    for step in steps:
        if isinstance(step, QuantizeStep):
            found = "f32" if step.kind == "dequantize" else "i8"
        elif isinstance(step, QuantizedAddStep):
            found = "i8"
        elif isinstance(step, CompareStep):
            found = "i1"
        elif isinstance(step, SelectStep):
            found = of(step.on_true) or of(step.on_false)
        elif isinstance(step, CopyStep):
            found = output_type
        else:
            found = of(getattr(step, "lhs", None) or getattr(step, "source", None)) \
                or of(getattr(step, "rhs", None))
        types.append(found or output_type)
    return types
