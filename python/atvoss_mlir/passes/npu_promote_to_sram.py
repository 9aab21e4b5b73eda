"""npu-promote-to-sram: run each tiled linalg op on SRAM tiles with DMA.

Input: the loop nests `npu-tile` made with upstream tiling (`scf.for` over a
linalg op on `memref.subview`s of DRAM buffers). For each nest this pass
  * flattens the nest into one loop over the tiles (upstream `loop.coalesce`),
    whose body computes each tile's offsets and sizes;
  * keeps every operand tile in SRAM (`npu.alloc`, memory space 1), allocated
    at the full tile size; partial tiles at the edges use a subview of it;
  * moves tiles with `npu.dma_load` / `npu.dma_store` and `npu.wait`. A tile is
    loaded only when it changes: weights that do not depend on the inner loops
    stay resident, the accumulator stays in SRAM across the reduction loop and
    is stored once, after its last reduction step;
  * runs the linalg op on the SRAM tiles, with its initial value (a fill, a
    bias) written into the SRAM tile on the first reduction step and its
    activation epilogue (`npu.activation`) on the last; `npu-convert-linalg-to-npu`
    then turns it into npu compute ops. An int8 op with a folded requantisation
    (recipes/requantize) accumulates in an int32 SRAM tile, requantised into
    the int8 output tile by `npu.requantize` after the last reduction step
    (then added to the residual's int8 tile by `npu.quantized_add` when a
    quantised residual add is folded in);
  * with pipeline-stages = S >= 2, gives every changing tile S SRAM buffers
    and starts its loads S-1 tiles ahead of compute, with tokens carried
    across iterations (npu_promote_pipeline). With 1 stage the loads of tile t
    are waited before compute(t), and a barrier follows it.
Padding folded from a tensor.pad (bufferized as a padded copy) is produced in
SRAM: the pad value is filled into the halo rows the DMA does not write.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, linalg

from ..dialects import npu
from ..recipes import linalg_ops, tiling_problem
from ..recipes.absorbed import residual_start
from ..recipes.loops import flatten
from ..recipes.requantize import QUANTIZED_ADD, REQUANTIZE
from ..recipes.problem import (ACTIVATION_ATTR, INIT_ATTR, LOOP_ORDER_ATTR, TILE_SIZES_ATTR,
                               TilingProblem, Unsupported, Window, built_op, tile_nest_root)
from ..recipes.tile_ir import (add, both, choose, compare, div, maximum, mixed, rem, select_buffer,
                               sub, subview, when)
from ..block_order import unchanged_blocks
from . import ModulePass, PassContext
from .npu_promote_pipeline import Pipeline
from .npu_promote_tiles import Staged, TileIndex, TileSpace
from .npu_tile import STAGES_ATTR, Schedule, reuse_period, trip_counts


def sram_constant(value: float, buffer: ir.Value) -> ir.Value:
    """A scalar constant of the buffer's element type."""
    element_type = ir.MemRefType(buffer.type).element_type
    if isinstance(element_type, ir.IntegerType):
        return arith.ConstantOp(element_type, int(value)).result
    return arith.ConstantOp(element_type, float(value)).result


def mark_init() -> None:
    """Mark the op just built as writing an output tile's initial value."""
    built_op().attributes[INIT_ATTR] = ir.UnitAttr.get()


# ---------------------------------------------------------------------------
class TileProgram(TileSpace):
    """The program of one tiled op: DMA, compute on SRAM tiles, the pipeline."""

    def __init__(self, problem: TilingProblem, schedule: Schedule, loop, stages: int, target,
                 after_fallback: bool = False):
        super().__init__(problem, schedule, loop, stages, target)
        self.after_fallback = after_fallback
        self.channel = 0
        self.before_epilogue = None

    # -- DMA ---------------------------------------------------------------------------
    def next_channel(self) -> int:
        channel = self.channel
        self.channel = (self.channel + 1) % self.target.dma_channels
        return channel

    def load(self, roles, t, wait: bool = True) -> dict:
        """Load the tiles of `roles` for iteration t (and wait for them);
        role -> the DMA's token."""
        if not roles:
            return {}
        index = self.tile_index(t)
        tokens = {}
        for role in roles:
            operand = self.staged[role].operand
            dram, sram, _, _ = self.dram_and_sram_views(role, t, index)
            if operand.resident:   # kept in SRAM: a vector-unit copy, ordered by the scoreboard
                linalg.copy(dram, outs=[sram])
                continue
            tokens[role] = npu.DmaLoadOp(npu.token_type(), dram, sram, self.next_channel()).result
        if wait and tokens:
            npu.WaitOp(list(tokens.values()))
        return tokens

    def refill_padding(self, t) -> None:
        """Write the pad value into the halo rows of tile t + stages, which will
        reuse the buffer tile t computes on (scoreboarded after that compute).

        The fill runs an iteration (a barrier) before the DMA filling the rest of
        the buffer, because DMA engines do not wait for compute. The first
        `stages` tiles find their padding from the whole-buffer fill before the loop.
        """
        later = add(t, self.stages)
        for staged in self.staged.values():
            operand = staged.operand
            if operand.pad_value is None or staged.period is None:
                continue
            if not any(isinstance(p, Window) and self.trips[p.dim] > 1 for p in operand.region):
                continue

            def fill(staged=staged, operand=operand):
                index = self.tile_index(later)
                _, _, buffer, pad_fills = self.dram_and_sram_views(operand.role, later, index)
                for axis, valid_low, valid_high, extent in pad_fills:
                    self.fill_rows(buffer, operand, axis, 0, valid_low)
                    self.fill_rows(buffer, operand, axis, valid_high, extent)
            when(both(compare("ult", later, self.iterations),
                      self.changes_at(staged.period, later)), fill)

    def fill_halo(self, staged) -> bool:
        """Fill the rows and columns of a once-loaded padded tile that its DMA (or
        copy) does not write; whether any were filled."""
        operand, buffer = staged.operand, staged.buffers[0]
        filled = False
        for axis, part in enumerate(operand.region):
            if not isinstance(part, Window):
                continue
            extent = part.extent(self.tiles[part.dim])
            valid_low = min(part.pad_low, extent)
            valid_high = min(part.pad_low + part.input_size, extent)
            for low, high in ((0, valid_low), (valid_high, extent)):
                if high > low:
                    self.fill_rows(buffer, operand, axis, low, high)
                    filled = True
        return filled

    def fill_rows(self, buffer, operand, axis, low, high) -> None:
        """Fill [low, high) of dim `axis` of a padded input buffer with the pad value."""
        if isinstance(low, int) and isinstance(high, int) and high <= low:
            return
        shape = ir.MemRefType(buffer.type).shape
        offsets = [0] * len(shape)
        sizes = list(shape)
        offsets[axis] = low
        sizes[axis] = maximum(sub(high, low), 0)
        linalg.fill(sram_constant(operand.pad_value, buffer), outs=[subview(buffer, offsets, sizes)])

    def store(self, t, wait: bool = True) -> ir.Value | None:
        output = self.problem.output
        if self.in_place(output):
            return None
        index = self.tile_index(t)
        role = output.role
        dram, sram, _, _ = self.dram_and_sram_views(role, t, index)
        if output.resident:
            linalg.copy(sram, outs=[dram])
            # The tile's buffer is released after this: no later DMA may reuse it
            # while the vector unit still reads it.
            npu.BarrierOp(engines="compute")
            return None
        token = npu.DmaStoreOp(npu.token_type(), sram, dram, self.next_channel()).result
        if wait:
            npu.WaitOp([token])
        return token

    # -- compute -----------------------------------------------------------------------
    def has_vector_epilogue(self) -> bool:
        """Whether every tile's compute ends with a requantisation on the vector
        unit after its matrix op (one reduction step per tile)."""
        steps = math.prod(self.trips[d] for d, dim in enumerate(self.problem.dims)
                          if dim.reduction)
        return REQUANTIZE in self.problem.details and bool(self.accumulators) and steps == 1

    def epilogue_reads(self) -> set:
        """The operands only the vector epilogue reads (has_vector_epilogue): the
        requantisation's scales, the residual's skip tile."""
        return {role for role in self.staged if role in ("scales", "skip")}

    def compute(self, t, before_epilogue=None) -> None:
        """Compute tile t, with the reduction's first/last-step variants.
        `before_epilogue` (with has_vector_epilogue) emits what comes between
        the matrix op and the requantisation."""
        self.before_epilogue = before_epilogue
        output_period = reuse_period(self.problem.output, self.order, self.trips)
        reduction_steps = math.prod(self.trips[d] for d, dim in enumerate(self.problem.dims)
                                    if dim.reduction)
        index = self.tile_index(t)
        if reduction_steps == 1 or not self.recipe.accumulates:
            self.emit_compute(t, index, first=True, last=True) if reduction_steps == 1 else \
                self.emit_compute(t, index, first=None, last=None)
            return
        period = output_period or self.iterations
        is_first = compare("eq", rem(t, period), 0)
        is_last = compare("eq", rem(t, period), period - 1)
        choose(is_first, lambda: self.emit_compute(t, index, first=True, last=False),
               lambda: choose(is_last, lambda: self.emit_compute(t, index, False, True),
                              lambda: self.emit_compute(t, index, False, False)))

    def emit_compute(self, t, index: TileIndex, first, last) -> None:
        """The tiled op on SRAM tiles, after the output tile's initial value (a fill or
        a bias, marked INIT_ATTR) on the first reduction step; the activation
        epilogue stays on the op only on the last step. With an fp32 accumulator
        the op accumulates there, and the last step rounds it into the output tile."""
        out = self.compute_view(self.problem.output.role, t, index)
        problem = self.problem
        accumulator = self.accumulator_view(t, out) if self.accumulators else out
        if first and "residual" in self.staged:
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
            mark_init()   # the op's bias epilogue adds it
        elif first and "bias" in self.staged:
            bias = self.compute_view("bias", t, index)
            rank = ir.MemRefType(out.type).rank
            linalg.broadcast(bias, outs=[out], dimensions=list(range(rank - 1)))
            if self.accumulators:   # the fp32 accumulator starts from the bias
                linalg.copy(out, outs=[accumulator])
            else:                   # the op's bias epilogue adds it
                mark_init()
        elif first and problem.init_value is not None and not self.recipe.reads_output(problem):
            linalg.fill(sram_constant(problem.init_value, accumulator), outs=[accumulator])
            mark_init()
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
            for name in (ACTIVATION_ATTR, "npu.clip_min", "npu.clip_max"):
                if name in compute.attributes:
                    del compute.attributes[name]
        for name in (TILE_SIZES_ATTR, LOOP_ORDER_ATTR):
            if name in compute.attributes:
                del compute.attributes[name]
        self.recipe.on_sram_tiles(compute, problem)
        if self.accumulators and last and REQUANTIZE in problem.details:
            if self.before_epilogue is not None:
                self.before_epilogue()
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
        steps = math.prod(self.trips[d] for d, dim in enumerate(self.problem.dims)
                          if dim.reduction)
        if REQUANTIZE in self.problem.details:   # int32, requantised into the output
            return ir.IntegerType.get_signless(32)
        element = self.problem.output.element_type
        if self.recipe.matrix_unit and steps > 1 and isinstance(element,
                                                                  (ir.F16Type, ir.BF16Type)):
            return ir.F32Type.get()
        return None

    # -- the program -----------------------------------------------------------------
    def emit(self) -> None:
        """The program around and in the tile loop: buffers and the first loads
        before it, one iteration in its body (at the tiled op), the last store
        and the deallocations after it."""
        root = self.loop if self.loop is not None else self.op
        pipelined = self.loop is not None and self.stages > 1
        if REQUANTIZE in self.problem.details:
            # The int8 buffer of the folded requantisation is allocated after
            # the op: the tile program stores into it, so it comes first.
            # (The interior of a padded buffer in SRAM: the buffer and its view.)
            chain, value = [], self.problem.output.value
            while value.owner.name == "memref.subview" and len(value.owner.operands) == 1:
                chain.append(value.owner)
                value = value.owner.operands[0]
            if not list(value.owner.operands):
                for allocation in [value.owner] + chain[::-1]:
                    allocation.move_before(root.operation if hasattr(root, "operation") else root)
        with ir.InsertionPoint(root):
            self.allocate()
            self.fill_padding_once()
            inputs = [s for s in self.staged.values() if self.loads(s)]
            resident = [s.operand.role for s in inputs if s.period is None]
            groups = {}
            for staged in inputs:
                if staged.period is not None:
                    groups.setdefault(staged.period, []).append(staged.operand.role)
            first = self.load(resident + [role for roles in groups.values() for role in roles], 0)
        output_period = reuse_period(self.problem.output, self.order, self.trips)
        if pipelined:
            with ir.InsertionPoint(self.loop):
                Pipeline(self, groups, output_period,
                         {role: first[role] for roles in groups.values() for role in roles}).emit()
        else:
            with ir.InsertionPoint(self.op):
                if self.loop is None:
                    self.compute(0)
                    npu.BarrierOp(engines="compute")
                    self.store(0)
                else:
                    self.sequential_iteration(self.loop.regions[0].blocks[0].arguments[0],
                                              groups, output_period)
        root = self.loop if self.loop is not None else self.op
        with ir.InsertionPoint.after(root) if self.loop is not None else ir.InsertionPoint(root):
            if pipelined:
                # The compute of the last tile, and the DMAs the loop carries out
                # (the last store; loads already waited, which costs nothing).
                npu.BarrierOp(engines="compute")
                if len(self.loop.results):
                    npu.WaitOp(list(self.loop.results))
            if self.loop is not None and (pipelined or output_period is None):
                self.store(self.iterations - 1)
            for buffer in reversed(self.allocs):
                npu.DeallocOp(buffer)
        self.op.erase()

    def loads(self, staged: Staged) -> bool:
        return self.problem.loads(staged.operand) and not self.in_place(staged.operand)

    def sequential_iteration(self, t, groups, output_period) -> None:
        for period, roles in groups.items():
            when(both(compare("ne", t, 0), self.changes_at(period, t)),
                 lambda roles=roles: self.load(roles, t))
        self.compute(t)
        self.refill_padding(t)
        npu.BarrierOp(engines="compute")
        if output_period is not None:
            is_last = compare("eq", rem(t, output_period), output_period - 1) \
                if output_period > 1 else True
            when(is_last, lambda: self.store(t))

    def fill_padding_once(self) -> None:
        """Fill every buffer of a padded input with the pad value before any DMA;
        DMAs then only overwrite the interior (halo rows are refilled per tile).
        A tile loaded once has a fixed halo: only that is filled."""
        filled = False
        for staged in self.staged.values():
            operand = staged.operand
            if operand.pad_value is None or not any(isinstance(p, Window) for p in operand.region):
                continue
            if staged.period is None and len(staged.buffers) == 1:
                filled = self.fill_halo(staged) or filled
                continue
            for buffer in staged.buffers:
                linalg.fill(sram_constant(operand.pad_value, buffer), outs=[buffer])
                filled = True
        if filled or self.after_fallback:
            # The fills run on the vector unit and a fallback op before this program
            # may still be writing its input: only a barrier orders DMAs after them.
            npu.BarrierOp(engines="compute")


class FallbackTracker:
    """Whether an op left on the fallback engine (a linalg op or a memref.copy on
    DRAM) precedes a tile nest in its block with no npu.barrier in between.

    Each block's ops are listed once, before any op is lowered, and ops are
    named by their (block, index) in that list. A lowered op's program leaves
    nothing running after it at the top of its block: it starts with a barrier
    when a fallback op may be running before it, and an untiled op's compute is
    followed by one. So the search back from a tile nest stops at the previous
    lowered one; the absorbed ops erased with it are skipped."""

    def __init__(self):
        self.blocks: dict = {}      # block -> [op name] in block order
        self.position: dict = {}    # op -> (block, index), of live ops only
        self.lowered: set = set()   # positions of lowered tile nests
        self.erased: set = set()    # positions of absorbed ops, erased

    def where(self, op) -> tuple:
        """The position of `op` (before any op of its block is lowered)."""
        op = op.operation
        if op not in self.position:
            block = op.block
            siblings = [sibling.operation for sibling in block.operations]
            self.blocks[block] = [sibling.name for sibling in siblings]
            for index, sibling in enumerate(siblings):
                self.position[sibling] = (block, index)
        return self.position[op]

    def may_be_running(self, nest: tuple, absorbed: list[tuple]) -> bool:
        block, index = nest
        names = self.blocks[block]
        for before in range(index - 1, -1, -1):
            at = (block, before)
            if at in self.erased:
                continue
            if at in self.lowered or names[before] == "npu.barrier":
                return False
            if (names[before].startswith("linalg.") or names[before] == "memref.copy") \
                    and at not in absorbed:
                return True
        return False

    def lowered_with(self, nest: tuple, absorbed: list[tuple]) -> None:
        """The nest at `nest` is lowered and the ops at `absorbed` are erased."""
        self.lowered.add(nest)
        self.erased.update(absorbed)


def schedule_of(op, problem: TilingProblem) -> Schedule | None:
    if TILE_SIZES_ATTR not in op.attributes or LOOP_ORDER_ATTR not in op.attributes:
        return None
    tiles = tuple(ir.DenseI64ArrayAttr(op.attributes[TILE_SIZES_ATTR]))
    order = tuple(ir.DenseI64ArrayAttr(op.attributes[LOOP_ORDER_ATTR]))
    if len(tiles) != len(problem.dims) or sorted(order) != list(range(len(problem.dims))):
        return None
    return Schedule(tiles, order, 0, 0)


def op_stages(op, target) -> int:
    """Pipeline stages of the op: fewer than the target's when npu-tile found
    that only fewer fit."""
    if STAGES_ATTR in op.attributes:
        return ir.IntegerAttr(op.attributes[STAGES_ATTR]).value
    return target.pipeline_stages


@dataclass(frozen=True)
class NpuPromoteToSram(ModulePass):
    argument = "npu-promote-to-sram"
    summary = "Run tiled linalg ops on SRAM tiles: npu.alloc, DMA with waits, " \
              "multi-buffering for pipeline-stages > 1"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            target = context.target
            fallback = FallbackTracker()
            # The problems as npu-tile saw them, built before any op is lowered.
            problems = []
            with unchanged_blocks():
                for op in linalg_ops(module):
                    if TILE_SIZES_ATTR not in op.attributes:
                        continue
                    try:
                        problem = tiling_problem(op, target)
                    except Unsupported as reason:
                        problems.append((op, reason, None, None))
                        continue
                    problems.append((op, problem, fallback.where(tile_nest_root(op.operation)),
                                     [fallback.where(a) for a in problem.absorbed_ops]))
                fallback.position.clear()   # ops are lowered and erased from here on
            for op, problem, nest, absorbed_at in problems:
                if isinstance(problem, Unsupported):
                    context.diagnostics.error(op.location, f"'{op.name}' cannot be lowered: "
                                                           f"{problem}")
                    continue
                schedule = schedule_of(op, problem)
                loop = flatten(op) if schedule is not None else None
                if schedule is None or not self.matches(problem, schedule, loop):
                    context.diagnostics.error(op.location, f"'{op.name}' has malformed "
                                                           f"{TILE_SIZES_ATTR}/{LOOP_ORDER_ATTR}")
                    continue
                absorbed = problem.absorbed_ops
                after_fallback = fallback.may_be_running(nest, absorbed_at)
                fallback.lowered_with(nest, absorbed_at)
                with op.location:
                    TileProgram(problem, schedule, loop, op_stages(op, target), target,
                                after_fallback).emit()
                for absorbed_op in absorbed:
                    absorbed_op.erase()

    @staticmethod
    def matches(problem: TilingProblem, schedule: Schedule, loop) -> bool:
        """Whether the tile loop (None: untiled) has one iteration per tile."""
        iterations = math.prod(trip_counts(problem, schedule.tiles))
        if loop is None:
            return iterations == 1
        upper = list(loop.operands)[1].owner
        return upper.name == "arith.constant" and \
            ir.IntegerAttr(upper.attributes["value"]).value == iterations
