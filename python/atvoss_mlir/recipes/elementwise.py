"""Elementwise ops on the vector unit: linalg.generic with parallel loops and
a body of vector-unit steps, the named binary ops (linalg.add, ...) and
linalg.broadcast, as a chain of npu.elementwise / npu.activation on SRAM
tiles. Inputs indexed by a projected identity map are broadcast: their tile
keeps the output's rank with unit dims."""

from __future__ import annotations

import math

from mlir import ir

from ..dialects import npu
from .problem import (INIT_ATTR, VECTOR_TYPES, LoopDim, OperandTile, Recipe, Tiled, TilingProblem,
                      Unsupported, element_bytes, ins_outs, static_shape, type_name,
                      vector_cycles)
from .sram_ops import full_rank_view, in_sram, scratch, sram_buffer, view_sizes
from .tile_ir import subview
from .vector_body import (COMMUTATIVE, ActivationStep, BinaryStep, CopyStep, Ref,
                          body_program)

NAMED_BINARY = {"linalg.add": "add", "linalg.sub": "sub", "linalg.mul": "mul",
                "linalg.max": "max", "linalg.min": "min"}


def elementwise_dims(shape: list[int]) -> list[LoopDim]:
    """Leading dims are tiled freely; the last one stays whole when it can."""
    return [LoopDim(f"d{i}", n, candidates="rows" if i < len(shape) - 1 else "array")
            for i, n in enumerate(shape)]


def broadcast_region(affine_map: ir.AffineMap, rank: int):
    """The operand region of an input indexed by a projected identity map
    (broadcasting drops dims, never permutes), or None."""
    positions = []
    for expr in affine_map.results:
        if not isinstance(expr, ir.AffineDimExpr):
            return None
        positions.append(expr.position)
    if positions != sorted(positions) or len(set(positions)) != len(positions):
        return None
    return tuple(Tiled(p) for p in positions)


def elementwise_problem(op, target) -> TilingProblem:
    inputs, outputs = ins_outs(op)
    if len(outputs) != 1:
        raise Unsupported("more than one output")
    out = outputs[0]
    shape = static_shape(out, "output")
    rank = len(shape)
    if op.name in NAMED_BINARY:
        steps = [BinaryStep(NAMED_BINARY[op.name], Ref("in", 0), Ref("in", 1), Ref("tmp", 0))]
        maps = [ir.AffineMap.get_identity(rank)] * 2
    else:
        iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
        if any("parallel" not in kind for kind in iterators):
            raise Unsupported("a linalg.generic with reductions")
        all_maps = [ir.AffineMapAttr(m).value
                    for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        if all_maps[-1] != ir.AffineMap.get_identity(rank):
            raise Unsupported("a linalg.generic whose output map is not the identity")
        maps = all_maps[:-1]
        steps = body_program(op.regions[0].blocks[0], len(inputs))
    element = type_name(out)
    if element not in VECTOR_TYPES:
        raise Unsupported(f"element type {element} on the vector unit")
    operands = []
    for i, (value, affine_map) in enumerate(zip(inputs, maps)):
        if not isinstance(value.type, ir.MemRefType):
            raise Unsupported("a scalar input")
        static_shape(value, f"input #{i}")
        if type_name(value) != element:
            raise Unsupported("inputs and output of different element types")
        region = broadcast_region(affine_map, rank)
        if region is None:
            raise Unsupported(f"input #{i} is permuted, not broadcast")
        operands.append(OperandTile(f"in{i}", value, region))
    operands.append(OperandTile("output", out, tuple(Tiled(d) for d in range(rank)),
                                is_output=True))
    check_broadcasts(steps, {i for i, o in enumerate(operands[:-1]) if len(o.region) != rank})
    n_steps = max(1, len(steps))
    dims = elementwise_dims(shape)

    def temporaries(t):
        alignment = target.sram_alignment
        tile_bytes = -(-math.prod(t) * element_bytes(operands[-1].element_type) // alignment) \
            * alignment
        constants = sum(1 for s in steps if isinstance(s, BinaryStep) and s.rhs.source == "const")
        return max(0, n_steps - 1) * tile_bytes + constants * target.sram_alignment
    return TilingProblem(op, ELEMENTWISE, dims, operands,
                         lambda t: n_steps * vector_cycles(math.prod(t), target),
                         temporaries, {"steps": steps})


def check_broadcasts(steps, broadcast_inputs: set[int]) -> None:
    """npu.elementwise broadcasts only its rhs; a broadcast lhs must be swappable."""
    def broadcast(ref):
        return ref.source == "in" and ref.value in broadcast_inputs
    for step in steps:
        if isinstance(step, BinaryStep):
            if broadcast(step.lhs):
                full_rhs = step.rhs.source == "tmp" or (step.rhs.source == "in"
                                                        and not broadcast(step.rhs))
                if step.kind in COMMUTATIVE and full_rhs:
                    step.lhs, step.rhs = step.rhs, step.lhs
                else:
                    raise Unsupported("a broadcast left operand of a non-commutative op")
            if broadcast(step.lhs):
                raise Unsupported("an elementwise op between two broadcast operands")
        elif isinstance(step, ActivationStep) and broadcast(step.source):
            raise Unsupported("an activation of a broadcast operand")


def broadcast_problem(op, target) -> TilingProblem:
    """linalg.broadcast, and linalg.copy (a broadcast that adds no dims): each
    tile is loaded, copied on the vector unit, and stored."""
    (source,), (out,) = ins_outs(op)
    added = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"])) \
        if op.name == "linalg.broadcast" else []
    shape = static_shape(out, "output")
    static_shape(source, "input")
    if type_name(source) not in VECTOR_TYPES:
        raise Unsupported(f"element type {type_name(source)} on the vector unit")
    if type_name(source) != type_name(out):
        raise Unsupported("input and output of different element types")
    kept = [d for d in range(len(shape)) if d not in added]
    operands = [OperandTile("in0", source, tuple(Tiled(d) for d in kept)),
                OperandTile("output", out, tuple(Tiled(d) for d in range(len(shape))),
                            is_output=True)]
    steps = [CopyStep(Ref("in", 0))]  # the lowering keeps the input tile at the output's rank
    return TilingProblem(op, ELEMENTWISE, elementwise_dims(shape), operands,
                         lambda t: vector_cycles(math.prod(t), target), details={"steps": steps})


class ElementwiseRecipe(Recipe):
    name = "elementwise"
    # linalg.copy: a DRAM copy (npu-convert-copies), or on SRAM tiles the
    # widening/rounding of fp32 accumulators.
    ops = ("linalg.generic", "linalg.broadcast", "linalg.copy", *NAMED_BINARY)

    def problem(self, op, target) -> TilingProblem:
        build = broadcast_problem if op.name in ("linalg.broadcast", "linalg.copy") \
            else elementwise_problem
        return build(op, target)

    def broadcast_inputs(self, problem) -> bool:
        return True

    def rewrite(self, op, rewriter):
        """A chain of npu.elementwise / npu.activation, each step but the last
        into a scratch tile; scalar constants live in one-element buffers."""
        operation = op.operation
        operands = list(operation.operands)
        out = operands[-1]
        if not in_sram(out) or INIT_ATTR in operation.attributes:
            return True
        if operation.name in ("linalg.broadcast", "linalg.copy"):
            steps = [CopyStep(Ref("in", 0))]
        elif operation.name in NAMED_BINARY:
            steps = [BinaryStep(NAMED_BINARY[operation.name], Ref("in", 0), Ref("in", 1),
                                Ref("tmp", 0))]
        else:
            steps = body_program(operation.regions[0].blocks[0], len(operands) - 1)
            rank = ir.MemRefType(out.type).rank
            check_broadcasts(steps, {i for i, value in enumerate(operands[:-1])
                                     if ir.MemRefType(value.type).rank != rank})
        element_type = ir.MemRefType(out.type).element_type
        tile_shape = ir.MemRefType(sram_buffer(out).type).shape
        with rewriter.ip, op.location:
            constants, results = {}, []
            sizes = view_sizes(out)
            for step in steps:
                if isinstance(step, BinaryStep) and step.rhs.source == "const" \
                        and step.rhs.value not in constants:
                    constants[step.rhs.value] = scratch(op, [1], element_type, step.rhs.value)

            def value(ref: Ref):
                if ref.source == "in":
                    return full_rank_view(operands[ref.value])
                if ref.source == "const":
                    return constants[ref.value]
                return results[ref.value]
            for number, step in enumerate(steps):
                result = out if number == len(steps) - 1 else \
                    subview(scratch(op, tile_shape, element_type), [0] * len(sizes), sizes)
                if isinstance(step, BinaryStep):
                    npu.ElementwiseOp(value(step.lhs), value(step.rhs), result, step.kind)
                elif isinstance(step, ActivationStep):
                    npu.ActivationOp(value(step.source), result, step.kind,
                                     clip_min=step.clip_min, clip_max=step.clip_max)
                else:  # a copy, broadcasting the input over the tile
                    source = value(step.source)
                    if ir.MemRefType(source.type).shape == ir.MemRefType(result.type).shape:
                        npu.ActivationOp(source, result, "none")
                    else:
                        npu.FillOp(result, 0.0)
                        npu.ElementwiseOp(result, source, result, "add")
                results.append(result)
        rewriter.erase_op(op.operation)


ELEMENTWISE = ElementwiseRecipe()
