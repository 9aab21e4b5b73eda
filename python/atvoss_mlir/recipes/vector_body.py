"""Translate the body of an elementwise linalg op into vector-unit steps
(vector_steps): the quantisation forms (quantized_body) and whole-body
activations (activation_body) as one step, else an op of the body per step,
with activations recognised inside it, max/min with constants fused into relu
and clip, and the steps no later one reads dropped."""

from __future__ import annotations

import math

from mlir import ir

from .activation_body import activation_of, body_activation
from .problem import Unsupported, constant_value
from .quantized_body import (dequantize_chain, quantization_step, quantize_chain,
                             quantized_add_step)
from .vector_steps import (BINARY_KINDS, CMPF_KINDS, CMPI_KINDS, COMMUTATIVE, CONVERSIONS,
                           FLOAT_TYPES, SELF_CMPF_KINDS, SWAPPED, UNARY_KINDS, ActivationStep,
                           BinaryStep, CompareStep, CopyStep, QuantizeStep, Ref, SelectStep,
                           numbered, operand_refs)


def without_unread_steps(steps: list, result: Ref) -> list:
    """The steps computing `result`: those no later step reads are dropped (the
    parts of an activation computed as one step)."""
    read = {result}
    kept = []
    for step in reversed(steps):
        if getattr(step, "result", None) in read:
            kept.append(step)
            read.update(operand_refs(step))
    return kept[::-1]


def reciprocal_of(value: ir.Value) -> float | None:
    """1/c in the value's float type, for a finite non-zero scalar constant c."""
    constant = constant_value(value)
    float_type = FLOAT_TYPES.get(str(value.type))
    if constant is None or float_type is None or not math.isfinite(constant) or constant == 0:
        return None
    return float(float_type(1) / float_type(constant))


def mask_select(op, ref) -> tuple[Ref, Ref, Ref] | None:
    """(condition, on_true, on_false) of the npu.select computing an and, or or
    not (xor with true) of i1 masks, or a mask's 0 and 1 as numbers (a Cast from
    bool); None for other ops. The condition must be an input of the op."""
    def is_mask(value):
        return str(value.type) == "i1"
    operands = [ref(value) for value in op.operands]
    if None in operands:
        return None
    # A mask's constant is 0 or 1 (an i1 IntegerAttr may read as -1).
    operands = [Ref("const", float(bool(r.value))) if r.source == "const" else r
                for r in operands]
    one, zero = Ref("const", 1.0), Ref("const", 0.0)
    if op.name in ("arith.extui", "arith.uitofp") and is_mask(op.operands[0]):
        return (operands[0], one, zero) if operands[0].source == "in" else None
    if op.name not in ("arith.andi", "arith.ori", "arith.xori") or not is_mask(op.results[0]):
        return None
    lhs, rhs = operands
    if lhs.source != "in":   # and, or and xor commute: the input is the condition
        lhs, rhs = rhs, lhs
    if lhs.source != "in":
        return None
    if op.name == "arith.andi":
        return lhs, rhs, zero
    if op.name == "arith.ori":
        return lhs, one, rhs
    if rhs.source == "const":   # x xor 1 = not x; x xor 0 = x
        return (lhs, zero, one) if rhs.value else (lhs, one, zero)
    return None


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

    folded = set()   # results of ops a quantisation step computes with the one before
    for op in operations[:-1]:
        name = op.name
        if op.results and op.results[0] in folded:
            continue
        quantisation = dequantize_chain(op) or quantize_chain(op)
        source = ref(op.operands[0]) if quantisation is not None else None
        if source is not None and source.source != "const":
            chain, *parameters = quantisation
            if name == "arith.sitofp":
                scale, zero_point = parameters
                step = dict(kind="dequantize", scale=scale, zero_point=zero_point)
            else:
                kind, scale, zero_point, offset = parameters
                step = dict(kind=kind, scale=scale, zero_point=zero_point, offset=offset)
            computed(chain[-1], QuantizeStep, source=source, **step)
            folded.update(other.results[0] for other in chain[1:])
            continue
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
            predicate = ir.IntegerAttr(op.attributes["predicate"]).value
            kind = kinds.get(predicate)
            if name == "arith.cmpf" and op.operands[0] == op.operands[1]:
                kind = SELF_CMPF_KINDS.get(predicate, kind)
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
        chosen = mask_select(op, ref)
        if chosen is not None:
            computed(op, SelectStep, *chosen)
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
    return numbered(fused)
