"""The compute of npu-promote-to-sram's tile programs: the tiled linalg op on
its SRAM tiles, with the output tile's initial value (a fill, a bias, a folded
residual: its skip tile loaded into the output tile, or skip + bias on the
vector unit) on the first reduction step and its activation epilogue on the
last, `npu-convert-linalg-to-npu` then turning it into npu compute ops. A
matrix op whose reduction is split keeps fp16/bf16 partial sums in an fp32
accumulator; an int8 op with a folded requantisation (recipes/requantize)
accumulates in an int32 accumulator, requantised into the int8 output tile by
`npu.requantize` after the last reduction step (then added to the residual's
int8 tile by `npu.quantized_add` when a quantised residual add is folded in).
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, linalg

from ..dialects import npu
from ..recipes.absorbed import bias_onto, residual_start
from ..recipes.prologue import PROLOGUE, apply_prologue
from ..recipes.requantize import QUANTIZED_ADD, REQUANTIZE
from ..recipes.ir_queries import drop_epilogue
from ..recipes.problem import ACTIVATION_ATTR, INIT_ATTR, LOOP_ORDER_ATTR, TILE_SIZES_ATTR, built_op
from ..recipes.tile_ir import choose, compare, div, mixed, rem, select_buffer, subview
from .npu_promote_tiles import TileIndex, TileSpace


def sram_constant(value: float, buffer: ir.Value) -> ir.Value:
    """A scalar constant of the buffer's element type."""
    element_type = ir.MemRefType(buffer.type).element_type
    if isinstance(element_type, ir.IntegerType):
        return arith.ConstantOp(element_type, int(value)).result
    return arith.ConstantOp(element_type, float(value)).result


def mark_init(tile: ir.Value) -> None:
    """Mark the op just built, writing `tile`, as writing an output tile's
    initial value."""
    built_op(tile).attributes[INIT_ATTR] = ir.UnitAttr.get()



class TileCompute(TileSpace):
    """The tiled op computed on one tile's SRAM views."""

    @property
    def reduction_steps(self) -> int:
        """The tiles of the reduction each output tile accumulates over."""
        return math.prod(self.trips[d] for d, dim in enumerate(self.problem.dims)
                         if dim.reduction)

    def reduction_step(self, t):
        """Which step of its output tile's reduction tile t is. The reduction
        loops are adjacent in the loop order; the loops inside them (none, or
        the output's innermost loop) go over `inner` other output tiles
        between two steps of one."""
        order = list(self.order)
        last = max(order.index(d) for d, dim in enumerate(self.problem.dims)
                   if dim.reduction and self.trips[d] > 1)
        inner = math.prod(self.trips[d] for d in order[last + 1:])
        return rem(div(t, inner) if inner > 1 else t, self.reduction_steps)

    def has_vector_epilogue(self) -> bool:
        """Whether every tile's compute ends with a requantisation on the vector
        unit after its matrix op (one reduction step per tile)."""
        return REQUANTIZE in self.problem.details and bool(self.accumulators) \
            and self.reduction_steps == 1

    def epilogue_reads(self) -> set:
        """The operands only the vector epilogue reads (has_vector_epilogue): the
        requantisation's scales, the residual's skip tile."""
        return {role for role in self.staged if role in ("scales", "skip")}

    def prologue_at(self, t) -> None:
        """The elementwise prologue folded into the op (recipes/prologue), on the
        input tile of iteration t, in place: once per load, after its wait."""
        prologue = self.problem.details.get(PROLOGUE)
        if prologue is None:
            return
        index = self.tile_index(t)
        apply_prologue(self.op, prologue, self.compute_view("input", t, index),
                       [self.compute_view(role, t, index) for role in prologue.roles])

    def prologue_period(self):
        """The input's reuse period when a prologue is folded in and the input
        changes in the loop (else its tile 0's prologue is the only one)."""
        if PROLOGUE not in self.problem.details:
            return None
        return self.staged["input"].period

    def compute(self, t, before_epilogue=None) -> None:
        """Compute tile t, with the reduction's first/last-step variants.
        `before_epilogue` (with has_vector_epilogue) emits what comes between
        the matrix op and the requantisation."""
        index = self.tile_index(t)
        if self.reduction_steps == 1:
            self.emit_compute(t, index, True, True, before_epilogue)
            return
        if not self.recipe.accumulates:
            self.emit_compute(t, index, None, None)
            return
        step = self.reduction_step(t)
        is_first = compare("eq", step, 0)
        is_last = compare("eq", step, self.reduction_steps - 1)
        choose(is_first, lambda: self.emit_compute(t, index, first=True, last=False),
               lambda: choose(is_last, lambda: self.emit_compute(t, index, False, True),
                              lambda: self.emit_compute(t, index, False, False)))

    def emit_compute(self, t, index: TileIndex, first, last, before_epilogue=None) -> None:
        """The tiled op on SRAM tiles, after the output tile's initial value (a fill or
        a bias, marked INIT_ATTR) on the first reduction step; the activation
        epilogue stays on the op only on the last step. With an fp32 accumulator
        the op accumulates there, and the last step rounds it into the output tile."""
        out = self.compute_view(self.problem.output.role, t, index)
        problem = self.problem
        accumulator = self.accumulator_view(t, out) if self.accumulators else out
        if first and "residual" in self.staged and self.skip_in_output:
            # The skip was loaded into the output tile: the op accumulates onto
            # it and its bias epilogue adds the bias.
            init = bias_onto(self.compute_view("bias", t, index), out)
            init.attributes[INIT_ATTR] = ir.UnitAttr.get()
        elif first and "residual" in self.staged:
            # A residual add folded in: the op accumulates onto skip + bias,
            # one pass of the vector unit.
            residual_start(self.compute_view("residual", t, index),
                           self.compute_view("bias", t, index), out)
            if self.accumulators:
                linalg.copy(out, outs=[accumulator])
        elif first and "bias" in self.staged and REQUANTIZE in problem.details:
            bias = self.compute_view("bias", t, index)   # int32, into the accumulator
            rank = ir.MemRefType(out.type).rank
            linalg.broadcast(bias, outs=[accumulator], dimensions=list(range(rank - 1)))
            mark_init(accumulator)   # the op's bias epilogue adds it
        elif first and "bias" in self.staged:
            bias = self.compute_view("bias", t, index)
            rank = ir.MemRefType(out.type).rank
            linalg.broadcast(bias, outs=[out], dimensions=list(range(rank - 1)))
            if self.accumulators:   # the fp32 accumulator starts from the bias
                linalg.copy(out, outs=[accumulator])
            else:                   # the op's bias epilogue adds it
                mark_init(out)
        elif first and problem.init_value is not None and not self.recipe.reads_output(problem):
            linalg.fill(sram_constant(problem.init_value, accumulator), outs=[accumulator])
            mark_init(accumulator)
        elif first and self.accumulators:
            linalg.copy(out, outs=[accumulator])   # the loaded output, widened
        # Inputs by their view; the output (the last operand) by position, since
        # an op computed in place has an input that is its output's view.
        # (Inputs sharing a window tile may read one view: by their position.)
        tile_of, shifted = {}, {}
        for operand, view in zip(problem.operands, self.operand_views()):
            if operand.shift is not None:
                shifted[int(operand.role[2:])] = self.compute_view(operand.role, t, index)
            elif view is not None and view not in tile_of and not operand.is_output:
                tile_of[view] = self.compute_view(operand.role, t, index)
        if self.accumulators:
            compute = self.recipe.build_on_tiles(
                self.op, [shifted.get(n, tile_of.get(v, v))
                          for n, v in enumerate(list(self.op.operands)[:-1])], accumulator)
        else:
            compute = self.op.clone()
            output_number = len(compute.operands) - 1
            for number, operand in enumerate(compute.operands):
                if number == output_number:
                    compute.operands[number] = accumulator
                elif number in shifted:
                    compute.operands[number] = shifted[number]
                elif operand in tile_of:
                    compute.operands[number] = tile_of[operand]
        if last is False and ACTIVATION_ATTR in compute.attributes:
            drop_epilogue(compute)
        for name in (TILE_SIZES_ATTR, LOOP_ORDER_ATTR):
            if name in compute.attributes:
                del compute.attributes[name]
        self.recipe.on_sram_tiles(compute, problem)
        if self.accumulators and last and REQUANTIZE in problem.details:
            if before_epilogue is not None:
                before_epilogue()
            step = problem.details[REQUANTIZE]
            scales = self.compute_view("scales", t, index) if "scales" in self.staged else None
            npu.RequantizeOp(accumulator, out, step.scale, step.zero_point, scales=scales)
            if QUANTIZED_ADD in problem.details:   # the residual add, on the int8 tile
                add, is_lhs = problem.details[QUANTIZED_ADD]
                skip = self.compute_view("skip", t, index)
                lhs, rhs = (out, skip) if is_lhs else (skip, out)
                npu.QuantizedAddOp(lhs, rhs, out, add.lhs_scale, add.rhs_scale, add.offset,
                                   add.input_shift, add.zero_point)
        elif self.accumulators and last:
            linalg.copy(accumulator, outs=[out])   # rounded once, to the output type

    def accumulator_view(self, t, out: ir.Value) -> ir.Value:
        """The fp32 accumulator tile at the output tile's size."""
        staged = self.staged[self.problem.output.role]
        buffer = self.accumulators[0] if len(self.accumulators) == 1 else \
            select_buffer(self.accumulators, rem(div(t, staged.period), len(self.accumulators)))
        sizes = [size if size != ir.ShapedType.get_dynamic_size() else None
                 for size in ir.MemRefType(out.type).shape]
        mixed_sizes = mixed(out.owner, "sizes") if None in sizes else sizes
        return subview(buffer, [0] * len(sizes), mixed_sizes)

    def accumulator_type(self):
        """fp32 for the fp16/bf16 output of a matrix op whose reduction is split
        into several tiles: partial sums stay fp32 in SRAM, rounded once."""
        if REQUANTIZE in self.problem.details:   # int32, requantised into the output
            return ir.IntegerType.get_signless(32)
        element = self.problem.output.element_type
        if self.recipe.matrix_unit and self.reduction_steps > 1 and isinstance(element,
                                                                  (ir.F16Type, ir.BF16Type)):
            return ir.F32Type.get()
        return None
