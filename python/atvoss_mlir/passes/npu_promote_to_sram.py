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
  * runs the linalg op on the SRAM tiles (npu_promote_compute), with its
    initial value on the first reduction step, its epilogue on the last;
  * with pipeline-stages = S >= 2, gives every changing tile S SRAM buffers
    and starts its loads S-1 tiles ahead of compute, with tokens carried
    across iterations (npu_promote_pipeline). With 1 stage the loads of tile t
    are waited before compute(t), and a barrier follows it.
Padding folded from a tensor.pad (bufferized as a padded copy) is produced in
SRAM: the pad value is filled into the halo rows the DMA does not write.
A program after an op left on the fallback engine starts with a barrier
(npu_promote_fallback).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from ..dialects import npu
from ..recipes import linalg_ops, tiling_problem
from ..recipes.loops import flatten
from ..recipes.prologue import PROLOGUE
from ..recipes.requantize import REQUANTIZE
from ..recipes.problem import (LOOP_ORDER_ATTR, TILE_SIZES_ATTR, TilingProblem, Unsupported,
                               Window, tile_nest_root)
from ..recipes.tile_ir import add, both, compare, maximum, rem, sub, subview, when
from ..block_order import unchanged_blocks
from . import ModulePass, PassContext
from .npu_promote_compute import TileCompute, sram_constant
from .npu_promote_fallback import FallbackTracker
from .npu_promote_pipeline import Pipeline
from .npu_promote_tiles import Staged
from .npu_tile import Schedule, given_stages, reuse_period, trip_counts


class TileProgram(TileCompute):
    """The program of one tiled op: DMA, compute on SRAM tiles, the pipeline."""

    def __init__(self, problem: TilingProblem, schedule: Schedule, loop, stages: int, target,
                 after_fallback: bool = False):
        super().__init__(problem, schedule, loop, stages, target)
        self.after_fallback = after_fallback
        self.channel = 0

    # -- DMA ---------------------------------------------------------------------------
    def next_channel(self) -> int:
        channel = self.channel
        self.channel = (self.channel + 1) % self.target.dma_channels
        return channel

    def channel_of(self, role: str) -> int:
        """The channel of a DMA of `role`'s tile. A skip loaded into the output's
        buffers shares one with the stores: the load of a buffer then follows
        the store still reading it, in order, with no wait between."""
        if self.skip_in_output and role in ("residual", self.problem.output.role):
            return 0
        return self.next_channel()

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
            tokens[role] = npu.DmaLoadOp(npu.token_type(), dram, sram, self.channel_of(role)).result
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
        token = npu.DmaStoreOp(npu.token_type(), sram, dram, self.channel_of(role)).result
        if wait:
            npu.WaitOp([token])
        return token

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
            # Pipelined, the tiles copied out of a tensor kept in SRAM (an image
            # of a batch at a time) are vector-unit copies: no DMA token to carry.
            self.copied = {}
            for staged in inputs:
                if staged.period is not None:
                    kept = pipelined and staged.operand.resident
                    (self.copied if kept else groups).setdefault(
                        staged.period, []).append(staged.operand.role)
            first = self.load(resident + [role for roles in groups.values() for role in roles]
                              + [role for roles in self.copied.values() for role in roles], 0)
            if pipelined or self.loop is None:   # else in the loop's first iteration
                self.prologue_at(0)
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

    def copy_kept_tiles(self, t) -> None:
        """Copy tile t of the operands kept in SRAM that change at t (tile 0's
        come with the first loads); the scoreboard orders them with compute."""
        for period, roles in self.copied.items():
            when(both(compare("ne", t, 0), self.changes_at(period, t)),
                 lambda roles=roles: self.load(roles, t))

    def loads(self, staged: Staged) -> bool:
        return self.problem.loads(staged.operand) and not self.in_place(staged.operand)

    def sequential_iteration(self, t, groups, output_period) -> None:
        for period, roles in groups.items():
            when(both(compare("ne", t, 0), self.changes_at(period, t)),
                 lambda roles=roles: self.load(roles, t))
        if PROLOGUE in self.problem.details:   # on each loaded input tile, in the loop
            period = self.prologue_period()
            when(compare("eq", t, 0) if period is None else self.changes_at(period, t),
                 lambda: self.prologue_at(t))
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


def schedule_of(op, problem: TilingProblem) -> Schedule | None:
    if TILE_SIZES_ATTR not in op.attributes or LOOP_ORDER_ATTR not in op.attributes \
            or not all(isinstance(op.attributes[name], ir.DenseI64ArrayAttr)
                       for name in (TILE_SIZES_ATTR, LOOP_ORDER_ATTR)):
        return None
    tiles = tuple(ir.DenseI64ArrayAttr(op.attributes[TILE_SIZES_ATTR]))
    order = tuple(ir.DenseI64ArrayAttr(op.attributes[LOOP_ORDER_ATTR]))
    if len(tiles) != len(problem.dims) or sorted(order) != list(range(len(problem.dims))):
        return None
    return Schedule(tiles, order, 0, 0)


def op_stages(op, target) -> int:
    """Pipeline stages of the op: fewer than the target's when npu-tile found
    that only fewer fit."""
    return given_stages(op) or target.pipeline_stages


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
                        given_stages(op)   # malformed stages: the op's error, as below
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
