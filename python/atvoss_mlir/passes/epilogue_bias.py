"""The bias add after a matmul, folded into it (npu-fuse-epilogue, -fusion=1).

An exported linear layer is a MatMul then an Add of a constant bias[N]
(PyTorch writes nn.Linear on a 3-d input so, and ONNX MatMul has no bias
input). Imported, that is a linalg.matmul starting from zero, possibly
reshaped back to the input's batch dims (tensor.expand_shape of its rows),
then an elementwise add of bias[N] along the last dim. Folded, the matmul
starts from the bias broadcast over its rows, as the importer writes a Gemm's
or a Conv's bias: the matrix unit adds it (its `bias` operand) and the add,
a vector pass over the whole result, is gone."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import linalg, tensor

from . import erase_if_unused
from ..frontend.builders import result_of
from ..recipes.problem import (Unsupported, constant_value, indexing_maps, ins_outs,
                               is_reduction)
from ..recipes.vector_body import body_program
from ..recipes.vector_steps import BinaryStep


def starts_from_zero(matmul) -> bool:
    """Whether the matmul's init is a fill of 0 read by it alone."""
    init = matmul.operands[len(matmul.operands) - 1]
    return isinstance(init, ir.OpResult) and init.owner.name == "linalg.fill" \
        and len(list(init.uses)) == 1 and constant_value(init.owner.operands[0]) == 0.0


def adds_two_inputs(op) -> bool:
    """Whether the generic's body is one add of its two inputs."""
    try:
        steps = body_program(op.regions[0].blocks[0], 2)
    except Unsupported:
        return False
    return len(steps) == 1 and isinstance(steps[0], BinaryStep) and steps[0].kind == "add"


def matmul_rows(value: ir.Value):
    """(the linalg.matmul, its reshape or None) when `value` is a matmul result
    read only here, or the only use of one reshaped by splitting its rows."""
    reshape = None
    if isinstance(value, ir.OpResult) and value.owner.name == "tensor.expand_shape":
        reshape = value.owner
        groups = [list(ir.ArrayAttr(group)) for group in reshape.attributes["reassociation"]]
        if len(groups) != 2 or len(groups[1]) != 1 or len(list(value.uses)) != 1:
            return None
        value = reshape.operands[0]
    if not isinstance(value, ir.OpResult) or value.owner.name != "linalg.matmul" \
            or len(list(value.uses)) != 1 or not starts_from_zero(value.owner):
        return None
    return value.owner, reshape


def bias_add(op):
    """(matmul, reshape or None, bias) when `op` adds a bias[N] along the last
    dim to a matmul result (matmul_rows) of its own type and float elements."""
    if op.name != "linalg.generic" or len(op.results) != 1 or is_reduction(op):
        return None
    inputs, _ = ins_outs(op)
    result_type = op.results[0].type
    if len(inputs) != 2 or not isinstance(result_type, ir.RankedTensorType) \
            or result_type.rank < 2 or not isinstance(result_type.element_type,
                                                      (ir.F32Type, ir.F16Type, ir.BF16Type)):
        return None   # a matmul's result has rows and columns
    rank = result_type.rank
    identity = ir.AffineMap.get_identity(rank)
    last = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(rank - 1)])
    maps = indexing_maps(op)
    if maps[2] != identity or not adds_two_inputs(op):
        return None
    for number in (0, 1):
        rows, bias = inputs[number], inputs[1 - number]
        if maps[number] != identity or maps[1 - number] != last or rows.type != result_type \
                or not isinstance(bias.type, ir.RankedTensorType) \
                or bias.type.shape != [result_type.shape[-1]] \
                or bias.type.element_type != result_type.element_type:
            continue
        found = matmul_rows(rows)
        if found is not None:
            return (*found, bias)
    return None


def fold_bias(add, matmul, reshape, bias) -> None:
    """The matmul starts from `bias` broadcast over its rows and replaces the
    add (start_from)."""
    result_type = ir.RankedTensorType(matmul.results[0].type)
    with add.location, ir.InsertionPoint(add):
        empty = tensor.EmptyOp(result_type.shape, result_type.element_type).result
        start = result_of(linalg.broadcast(bias, outs=[empty], dimensions=[0]))
    start_from(add, matmul, start, reshape)


def start_from(add, producer, start: ir.Value, reshape=None) -> None:
    """The matmul or conv `producer` starts from `start` instead of its init
    and replaces `add`, which reads its result (through `reshape`): it moves
    next to the add, after what `start` reads."""
    old_init = producer.operands[len(producer.operands) - 1]
    producer.operands[len(producer.operands) - 1] = start
    producer.move_before(add)
    if reshape is not None:
        reshape.move_before(add)
    add.results[0].replace_all_uses_with((reshape or producer).results[0])
    add_init = add.operands[2]
    add.erase()
    erase_if_unused(add_init)
    erase_if_unused(old_init)
