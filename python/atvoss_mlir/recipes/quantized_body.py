"""Elementwise bodies that are one quantisation op: the forms the ONNX importer
writes for requantisation, QuantizeLinear, DequantizeLinear (npu.requantize,
npu.dequantize) and QLinearAdd (npu.quantized_add)."""

from __future__ import annotations

from mlir import ir

from .problem import constant_value
from .vector_steps import QuantizedAddStep, QuantizeStep, Ref


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
        chain = quantize_chain(ops[0]) if ops[0].operands[0] == x else None
        if chain is None:
            return None
        _, kind, scale, zero_point, offset = chain
        return QuantizeStep(kind, Ref("in", 0), Ref("tmp", 0), scale, zero_point, offset=offset)
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


def _sole_reader(op, name: str):
    """The op reading `op`'s result as its first operand, when it is the only
    reader and is named `name`."""
    uses = list(op.results[0].uses)
    if len(uses) != 1 or uses[0].operand_number != 0:
        return None
    reader = uses[0].owner
    return reader if reader.name == name else None


def _by_constant(op, name: str, value: float | None = None):
    """`_sole_reader(op, name)` when its other operand is a scalar constant (equal to
    `value`, when given); with the constant."""
    reader = _sole_reader(op, name)
    if reader is None:
        return None, None
    constant = constant_value(reader.operands[1])
    if constant is None or (value is not None and float(constant) != value):
        return None, None
    return reader, float(constant)


def dequantize_chain(op):
    """(ops, scale, zero point) of `sitofp(x: i8)`, then `- zp` and `* s`
    (each optional, each the only reader of the one before), as
    DequantizeLinear is imported: one npu.dequantize inside a longer body
    (a merged DequantizeLinear -> op -> QuantizeLinear chain). None otherwise."""
    if op.name != "arith.sitofp" or str(op.operands[0].type) != "i8" \
            or str(op.results[0].type) != "f32":
        return None
    ops, scale, zero_point = [op], 1.0, 0.0
    subtract, value = _by_constant(op, "arith.subf")
    if subtract is not None and value == int(value):
        ops.append(subtract)
        zero_point = value
    multiply, value = _by_constant(ops[-1], "arith.mulf")
    if multiply is not None:
        ops.append(multiply)
        scale = value
    return ops, scale, int(zero_point)


def quantize_chain(op):
    """(ops, kind, scale, zero point, offset) of `x / s` (quantize; `x * s`,
    requantize) on f32, then `+ offset` (optional), rounded to even, `+ zp`,
    saturated to [-128, 127] and converted to i8, each the only reader of the
    one before, as QuantizeLinear is imported: one npu.requantize inside a
    longer body. A scale of 1 (x / 1, folded away: the chain starts at the
    rounding) and a zero point of 0 (+ 0, folded) may be absent. None
    otherwise."""
    if op.name not in ("math.roundeven", "arith.divf", "arith.mulf") \
            or str(op.operands[0].type) != "f32":
        return None
    if op.name == "math.roundeven":
        ops, kind, scale, offset = [], "quantize", 1.0, 0.0
        rounded = op
    else:
        scale = constant_value(op.operands[1])
        if scale is None:
            return None
        ops, offset = [op], 0.0
        kind = "quantize" if op.name == "arith.divf" else "requantize"
        added, value = _by_constant(op, "arith.addf")
        if added is not None:
            ops.append(added)
            offset = value
        rounded = _sole_reader(ops[-1], "math.roundeven")
        if rounded is None:
            return None
    ops.append(rounded)
    shifted, zero_point = _by_constant(rounded, "arith.addf")
    if shifted is not None:
        ops.append(shifted)
    low = _by_constant(ops[-1], "arith.maximumf", -128.0)[0]
    high = _by_constant(low, "arith.minimumf", 127.0)[0] if low is not None else None
    converted = _sole_reader(high, "arith.fptosi") if high is not None else None
    zero_point = 0.0 if shifted is None else zero_point
    if converted is None or str(converted.results[0].type) != "i8" \
            or zero_point != int(zero_point):
        return None
    ops += [low, high, converted]
    return ops, kind, float(scale), int(zero_point), offset
