"""The requantising epilogue of an int8 conv or matmul, folded into its tile
program: the int32 accumulator stays in SRAM and `npu.requantize` writes the
int8 tile that is stored, so the int32 result never reaches DRAM.

The importer writes an int8 product as the matrix op accumulating into an
int32 buffer (initialised with the bias), then a generic requantising that
buffer into int8 (frontend/ops_integer). When that generic is the buffer's
only reader, reads it by the identity and writes a fresh int8 buffer by the
identity, the op's problem takes the int8 buffer as its output, the scales
(per channel) as an operand tiled with the output's channels, and the generic
as an absorbed op.
"""

from __future__ import annotations

import math

from mlir import ir

from .. import machine_model
from .absorbed import VIEWS, fresh_buffer, ops_before, touches
from .problem import (REQUANTIZE, OperandTile, Tiled, TilingProblem, indexing_maps, ins_outs,
                      tile_nest_root, type_name)
from .quantized_body import quantization_step, quantized_add_step

# The key of problem.details for a quantised residual add folded in after the
# requantisation: (its QuantizedAddStep, whether the op's result is its lhs).
QUANTIZED_ADD = "quantized_add"


def _operation(op):
    return op.operation if hasattr(op, "operation") else op


def _inside(op, roots) -> bool:
    while op is not None:
        if op in roots:
            return True
        op = op.parent
    return False


def requantize_after(problem: TilingProblem):
    """(generic, step) when a requantising generic is the only reader of the
    op's fresh int32 output (the op and the ops folded into it aside); else None."""
    output = problem.output.value
    if type_name(output) != "i32" or not fresh_buffer(output):
        return None
    own = [tile_nest_root(_operation(problem.op))] + \
        [_operation(o) for o in problem.absorbed_ops]
    readers = []
    for use in output.uses:
        user = _operation(use.owner)
        if user.name == "memref.dealloc" or _inside(user, own):
            continue   # the op, its tile loops' views, the ops folded into it
        if user.name in VIEWS:
            return None
        readers.append(user)
    if len(readers) != 1 or readers[0].name != "linalg.generic":
        return None
    generic = readers[0]
    inputs, outputs = ins_outs(generic)
    if not inputs or inputs[0] != output or len(outputs) != 1 or output in inputs[1:]:
        return None
    step = quantization_step(generic.regions[0].blocks[0], len(inputs))
    if step is None or step.kind != "requantize":
        return None
    maps = indexing_maps(generic)
    rank = ir.MemRefType(output.type).rank
    identity = ir.AffineMap.get_identity(rank)
    if maps[0] != identity or maps[-1] != identity or not fresh_buffer(outputs[0]):
        return None
    if step.scales is not None:
        channel = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(rank - 1)])
        if maps[1] != channel:
            return None
    return generic, step


def quantized_add_after(op, requantize, int8: ir.Value):
    """(generic, step, is_lhs) when the only reader of the fresh int8 buffer
    the op's `requantize` generic writes is a quantised add (npu.quantized_add's
    body) of it and another buffer of its shape, all by the identity, into a
    fresh buffer; nothing between the op and the add touching the other input
    or the add's output (the op's tile program then loads the one and writes
    the other). Else None."""
    readers = [user for user in (_operation(use.owner) for use in int8.uses)
               if user.name not in ("memref.dealloc", "npu.dealloc") and user != requantize]
    if len(readers) != 1 or readers[0].name != "linalg.generic" or not fresh_buffer(int8):
        return None
    generic = readers[0]
    inputs, outputs = ins_outs(generic)
    if len(inputs) != 2 or len(outputs) != 1 or inputs[0] == inputs[1] \
            or not fresh_buffer(outputs[0]):
        return None
    rank = ir.MemRefType(int8.type).rank
    identity = ir.AffineMap.get_identity(rank)
    if any(m != identity for m in indexing_maps(generic)) \
            or ir.MemRefType(inputs[0].type).shape != ir.MemRefType(inputs[1].type).shape:
        return None
    step = quantized_add_step(generic.regions[0].blocks[0], 2)
    if step is None:
        return None
    other = inputs[1] if inputs[0] == int8 else inputs[0]
    root = tile_nest_root(_operation(op))
    for between in ops_before(generic):
        if between == root:
            break
        if between.name in ("memref.dealloc", "npu.dealloc"):
            continue   # the op's tile program reads the other input before this
        if touches(between, other) or touches(between, outputs[0]):
            return None
    else:
        return None   # the op is not before the add in its block
    is_lhs = inputs[step.lhs.value] == int8
    return generic, step, is_lhs


def with_requantize(problem: TilingProblem, channel_dim: int, target) -> TilingProblem:
    """Fold the requantising reader of the op's int32 result into the op (see
    the module's doc). Only when the output starts from a folded bias or fill
    (it is never loaded: its tile starts in the accumulator)."""
    output = problem.output
    if "bias" not in [o.role for o in problem.operands] and problem.init_value is None:
        return problem
    found = requantize_after(problem)
    if found is None:
        return problem
    generic, step = found
    inputs, (int8_output,) = ins_outs(generic)
    problem.absorbed_ops.append(generic)
    problem.details[REQUANTIZE] = step
    index = problem.operands.index(output)
    problem.operands[index] = OperandTile(output.role, int8_output, output.region, is_output=True)
    if step.scales is not None:
        problem.operands.insert(index, OperandTile("scales", inputs[1], (Tiled(channel_dim),)))
    added = quantized_add_after(problem.op, _operation(generic), int8_output) \
        if target.fusion >= 2 else None
    if added is not None:   # the residual add's int8 tile computed in SRAM too
        add, add_step, is_lhs = added
        add_inputs, (add_output,) = ins_outs(add)
        problem.absorbed_ops.append(add)
        problem.details[QUANTIZED_ADD] = (add_step, is_lhs)
        index = problem.operands.index(problem.output)
        problem.operands[index] = OperandTile(output.role, add_output, output.region,
                                              is_output=True)
        skip = add_inputs[1] if add_inputs[0] == int8_output else add_inputs[0]
        problem.operands.insert(index, OperandTile("skip", skip, output.region))
    output_dims = [part.dim for part in output.region]
    base_bytes, base_cycles = problem.temporary_bytes, problem.compute_cycles
    add_passes = 2 if added is not None else 0

    def temporaries(tiles):   # the int32 accumulator, one per output buffer
        return base_bytes(tiles) + target.pipeline_stages * \
            math.prod(tiles[d] for d in output_dims) * 4

    def cycles(tiles):        # and the requantisation of each output tile, and its add
        elements = math.prod(tiles[d] for d in output_dims)
        return base_cycles(tiles) + machine_model.vector_cycles(elements, target) + \
            (machine_model.vector_cycles(elements, target, add_passes) if add_passes else 0)
    problem.temporary_bytes = temporaries
    problem.compute_cycles = cycles
    return problem
