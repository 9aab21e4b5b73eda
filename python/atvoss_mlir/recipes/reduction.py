"""Reductions on the vector unit: a linalg.generic with reduction loops whose
body combines each input element into the output (a sum, max or min), and
linalg.reduce, as npu.reduce on SRAM tiles. A constant fill of the output
is folded into the op; without one the output is loaded and accumulated onto.
A reduction split into several tiles accumulates
into the output tile, which stays in SRAM across them and is stored once."""

from __future__ import annotations

import math

from mlir import ir

from ..dialects import npu
from .absorbed import output_init
from .problem import (VECTOR_TYPES, LoopDim, OperandTile, Recipe, Tiled, TilingProblem,
                      Unsupported, indexing_maps, ins_outs, is_reduction, static_shape,
                      type_name, vector_cycles)
from .sram_ops import fill_constant, in_sram, initial_value

COMBINERS = {"arith.addf": "sum", "arith.addi": "sum",
             "arith.maximumf": "max", "arith.maxnumf": "max", "arith.maxsi": "max",
             "arith.minimumf": "min", "arith.minnumf": "min", "arith.minsi": "min"}


def is_identity(combine: str, value: float) -> bool:
    """Whether a fill with `value` is the identity of the combining op (f16's
    largest finite values count as infinite: the importer's lowest is finite;
    NaN is for maxnumf and minnumf, which ignore it)."""
    kind = COMBINERS[combine]
    if math.isnan(value):
        return combine in ("arith.maxnumf", "arith.minnumf")
    if kind == "sum":
        return value == 0.0
    return value <= -65504.0 if kind == "max" else value >= 65504.0


def combining_op(op) -> str:
    """The name of the op combining each input element with the accumulator,
    when that is all the reduction's body does."""
    block = op.regions[0].blocks[0]
    operations = list(block.operations)
    if len(operations) != 2 or operations[0].name not in COMBINERS:
        raise Unsupported("the reduction body does more than combine an element with the "
                          "accumulator by add, max or min")
    combine, terminator = operations
    element, accumulator = block.arguments[0], block.arguments[len(block.arguments) - 1]
    if {combine.operands[0], combine.operands[1]} != {element, accumulator} \
            or len(block.arguments) != 2 or terminator.operands[0] != combine.results[0]:
        raise Unsupported("the reduction body does more than combine an element with the "
                          "accumulator by add, max or min")
    return combine.name


def reduced_dims(op) -> list[int]:
    """The loops reduced away; the input is indexed by the identity and the
    output by the other loops in order."""
    op = op.operation
    if op.name == "linalg.reduce":
        return sorted(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
    iterators = [str(kind) for kind in ir.ArrayAttr(op.attributes["iterator_types"])]
    reduced = [d for d, kind in enumerate(iterators) if "reduction" in kind]
    maps = indexing_maps(op)
    rank = len(iterators)
    if len(maps) != 2 or maps[0] != ir.AffineMap.get_identity(rank):
        raise Unsupported("a reduction whose input is not indexed by the identity map")
    kept = [d for d in range(rank) if d not in reduced]
    if maps[1] != ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(d) for d in kept]):
        raise Unsupported("a reduction whose output is not indexed by its parallel loops in order")
    return reduced


def reduction_problem(op, target) -> TilingProblem:
    inputs, outputs = ins_outs(op)
    if len(inputs) != 1 or len(outputs) != 1:
        raise Unsupported("a reduction of several inputs or into several outputs")
    (source,), (out,) = inputs, outputs
    shape = static_shape(source, "input")
    static_shape(out, "output")
    element = type_name(out)
    if element not in VECTOR_TYPES or type_name(source) != element:
        raise Unsupported(f"a reduction from {type_name(source)} to {element} on the vector unit")
    kind = COMBINERS[combining_op(op)]
    reduced = reduced_dims(op)
    kept = [d for d in range(len(shape)) if d not in reduced]
    innermost = max(reduced)

    def candidates(d):
        if d == innermost or d == len(shape) - 1:
            return "stream"   # contiguous rows: as long as SRAM allows
        return "rows"
    dims = [LoopDim(f"d{d}", n, d in reduced, candidates(d)) for d, n in enumerate(shape)]
    operands = [OperandTile("in0", source, tuple(Tiled(d) for d in range(len(shape)))),
                OperandTile("output", out, tuple(Tiled(d) for d in kept), is_output=True)]
    return output_init(TilingProblem(
        op, REDUCTION, dims, operands, lambda t: vector_cycles(math.prod(t), target),
        details={"reduce": kind, "dims": reduced}))


class ReductionRecipe(Recipe):
    name = "reduce"
    ops = ("linalg.generic", "linalg.reduce")
    accumulates = True

    def recognises(self, op) -> bool:
        return is_reduction(op)

    def problem(self, op, target) -> TilingProblem:
        return reduction_problem(op, target)

    def reads_output(self, problem) -> bool:
        return problem.init_value is None   # accumulates onto the output's contents

    def rewrite(self, op, rewriter):
        operation = op.operation
        operands = list(operation.operands)
        if not is_reduction(operation) or not in_sram(operands[-1]):
            return True
        if len(operands) != 2:
            raise Unsupported("a reduction of several inputs or into several outputs")
        source, out = operands
        combine, reduced = combining_op(operation), reduced_dims(operation)
        kind = COMBINERS[combine]
        with rewriter.ip, op.location:
            accumulate = True
            init = initial_value(op, out)
            if init is not None:   # the first step: start from the fill
                value = fill_constant(init)
                accumulate = not is_identity(combine, value)
                if accumulate:
                    npu.FillOp(out, value)
                rewriter.erase_op(init.operation)
            npu.ReduceOp(source, out, kind, reduced, accumulate)
        rewriter.erase_op(operation)


REDUCTION = ReductionRecipe()
