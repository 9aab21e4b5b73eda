"""The tile space of npu-promote-to-sram: for one tiled op, the offsets and
sizes of tile t read from the tile loop's own index computations (cloned for
another iteration), the SRAM buffers of each operand (multi-buffered when the
tile changes) and the DRAM and SRAM views a tile's DMA and compute use."""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir

from ..dialects import npu
from ..recipes.loops import Iteration
from ..recipes.problem import (OperandTile, Strided, Tiled, TilingProblem, Whole, Window,
                               in_place, skip_into_output, unit_stride)
from ..recipes.tile_ir import (add, compare, div, index, maximum, minimum, mixed, mul, rem,
                               select_buffer, sub, subview)
from .npu_tile import Schedule, reuse_period, trip_counts


@dataclass
class TileIndex:
    """Offsets and sizes of every loop dim for one iteration of the tile loop."""
    offsets: list
    sizes: list


@dataclass
class Staged:
    """The SRAM buffers of one operand."""
    operand: OperandTile
    buffers: list
    period: int | None       # iterations between changes; None = never changes
    sram_shape: list


class TileSpace:
    """The tiles of one op in its (flattened) tile loop: their offsets and sizes at
    any iteration, their SRAM buffers, and the DRAM and SRAM views of a tile."""

    def __init__(self, problem: TilingProblem, schedule: Schedule, loop, stages: int, target):
        self.problem = problem
        self.recipe = problem.recipe
        self.op = problem.op
        self.loop = loop
        self.target = target
        self.tiles = list(schedule.tiles)
        self.order = list(schedule.order)
        self.trips = trip_counts(problem, self.tiles)
        self.iterations = math.prod(self.trips)
        self.stages = stages if self.iterations > 1 else 1
        self.dim_views = self.views_of_dims()

    # -- iteration space -------------------------------------------------------------
    def views_of_dims(self) -> dict:
        """For each loop dim, (subview op, axis) of an operand tile it indexes (not
        one of a shared window, whose views are wider by their shift)."""
        found = {}
        for operand, view in zip(self.problem.operands, self.operand_views()):
            if view is None or not isinstance(view, ir.OpResult) \
                    or view.owner.name != "memref.subview" or operand.shift is not None:
                continue
            for axis, part in enumerate(operand.region):
                if isinstance(part, Tiled):
                    found.setdefault(part.dim, (view.owner, axis))
        return found

    def operand_views(self) -> list:
        """The tiled op's operand for each problem operand (None for a folded bias)."""
        operands = list(self.op.operands)
        inputs = len(operands) - 1
        views = []
        for operand in self.problem.operands:
            if operand.is_output:
                views.append(operands[-1])
            elif operand.role.startswith("in") and operand.role[2:].isdigit():
                views.append(operands[int(operand.role[2:])])
            else:
                position = {"lhs": 0, "rhs": 1, "input": 0, "filter": 1}.get(operand.role)
                views.append(operands[position] if position is not None and position < inputs
                             else None)
        return views

    def tile_index(self, t) -> TileIndex:
        """The offsets and sizes of tile t, from the loop body's index computations."""
        iteration = Iteration(self.loop, index(t) if isinstance(t, int) else t)
        offsets, sizes = [], []
        for d, dim in enumerate(self.problem.dims):
            if d not in self.dim_views or self.trips[d] == 1:
                offsets.append(0), sizes.append(dim.size)
                continue
            view, axis = self.dim_views[d]
            offsets.append(iteration.value(mixed(view, "offsets")[axis]))
            sizes.append(iteration.value(mixed(view, "sizes")[axis]))
        return TileIndex(offsets, sizes)

    def changes_at(self, period, t):
        """Whether a tile with this reuse period starts at iteration t."""
        return compare("eq", rem(t, period), 0) if period > 1 else True

    # -- buffers ---------------------------------------------------------------------
    def allocate(self) -> None:
        self.staged = {}
        self.allocs = []
        self.skip_in_output = False
        for operand in self.problem.operands:
            period = reuse_period(operand, self.order, self.trips)
            count = 0 if self.in_place(operand) else 1 if period is None else self.stages
            if skip_into_output(self.problem, operand, self.tiles):
                self.skip_in_output, count = True, 0   # loaded into the output's buffers
            shape = self.sram_shape(operand)
            buffers = [self.alloc(shape, operand.element_type) for _ in range(count)]
            self.staged[operand.role] = Staged(operand, buffers, period, shape)
        if self.skip_in_output:
            self.staged["residual"].buffers = self.staged[self.problem.output.role].buffers
        wide = self.accumulator_type()
        output = self.staged[self.problem.output.role]
        # One accumulator per output buffer; an output written in place (kept in
        # SRAM) still has one per stage, so the next tile's matmul need not wait
        # for this tile's requantisation (the tile search counts them so).
        count = len(output.buffers) or (1 if output.period is None else self.stages)
        self.accumulators = [self.alloc(output.sram_shape, wide) for _ in range(count)] \
            if wide is not None else []

    def in_place(self, operand: OperandTile) -> bool:
        """A tensor kept in SRAM that the op computes on without a tile of its own."""
        return in_place(self.problem, operand)

    def sram_shape(self, operand: OperandTile) -> list[int]:
        if self.broadcasts(operand):
            # A broadcast input keeps the output's rank with unit dims, so the
            # vector unit broadcasts it by numpy rules.
            kept = [part.dim for part in operand.region]
            return [self.tiles[d] if d in kept else 1 for d in range(len(self.problem.dims))]
        return operand.extents(self.tiles)

    def broadcasts(self, operand: OperandTile) -> bool:
        """An elementwise input kept at the output's rank with unit dims (a
        transposed one keeps its own layout)."""
        return self.recipe.broadcast_inputs(self.problem) and not operand.is_output \
            and not operand.permuted() and operand.shift is None

    def at_output_rank(self, operand: OperandTile, buffer, offsets, sizes) -> ir.Value:
        """The operand-rank view of a broadcast input's output-rank buffer."""
        rank = len(self.problem.dims)
        by_dim = {part.dim: i for i, part in enumerate(operand.region)}
        return subview(buffer, [offsets[by_dim[d]] if d in by_dim else 0 for d in range(rank)],
                       [sizes[by_dim[d]] if d in by_dim else 1 for d in range(rank)],
                       tuple(d for d in range(rank) if d not in by_dim))

    def alloc(self, shape, element_type) -> ir.Value:
        buffer = npu.AllocOp(npu.sram_memref(shape, element_type)).result
        self.allocs.append(buffer)
        return buffer

    def buffer(self, role: str, t) -> ir.Value:
        staged = self.staged[role]
        if staged.period is None or len(staged.buffers) == 1:
            return staged.buffers[0]
        slot = rem(div(t, staged.period), len(staged.buffers))
        return select_buffer(staged.buffers, slot)

    # -- regions of an operand ------------------------------------------------------
    def dram_and_sram_views(self, role: str, t, index: TileIndex):
        """(DRAM view, SRAM view the DMA fills, padding fills) of an operand's tile;
        for a tensor kept in SRAM, its SRAM view in place of the DRAM one."""
        staged = self.staged[role]
        operand = staged.operand
        buffer = self.buffer(role, t)
        dram_offsets, dram_sizes, steps = [], [], []
        sram_offsets, sram_sizes = [], []
        pad_fills = []
        for axis, part in enumerate(operand.region):
            if isinstance(part, Whole):
                dram_offsets.append(0), dram_sizes.append(part.size), steps.append(1)
                sram_offsets.append(0), sram_sizes.append(part.size)
            elif isinstance(part, Tiled):
                dram_offsets.append(index.offsets[part.dim])
                dram_sizes.append(index.sizes[part.dim])
                steps.append(1)
                sram_offsets.append(0), sram_sizes.append(index.sizes[part.dim])
            elif isinstance(part, Strided):
                dram_offsets.append(mul(index.offsets[part.dim], part.stride))
                dram_sizes.append(index.sizes[part.dim])
                steps.append(part.stride)
                sram_offsets.append(0), sram_sizes.append(index.sizes[part.dim])
            else:
                low = sub(mul(index.offsets[part.dim], part.stride), part.pad_low)
                extent = add(mul(sub(index.sizes[part.dim], 1), part.stride),
                             (part.kernel - 1) * part.dilation + 1)
                valid_low = maximum(low, 0)
                valid_high = minimum(add(low, extent), part.input_size)
                count = sub(valid_high, valid_low)
                skipped = sub(valid_low, low)
                dram_offsets.append(valid_low), dram_sizes.append(count), steps.append(1)
                sram_offsets.append(skipped), sram_sizes.append(count)
                if operand.pad_value is not None and self.trips[part.dim] > 1:
                    pad_fills.append((axis, skipped, add(skipped, count), extent))
        dram = subview(operand.value, dram_offsets, dram_sizes, (), steps)
        if self.broadcasts(operand):
            sram = self.at_output_rank(operand, buffer, sram_offsets, sram_sizes)
        else:
            sram = subview(buffer, sram_offsets, sram_sizes)
        return dram, sram, buffer, pad_fills

    def compute_view(self, role: str, t, index: TileIndex) -> ir.Value:
        """The SRAM view of an operand's tile, at the size this iteration computes."""
        operand = self.staged[role].operand
        if operand.shift is not None:
            # One of the inputs sharing a window tile: its view at its shift.
            owner = operand.window_owner or role
            return subview(self.window_view(owner, t, index),
                           [operand.shift if isinstance(part, Window) else 0
                            for part in self.staged[owner].operand.region],
                           [index.sizes[d] for d in range(len(operand.region))])
        return self.window_view(role, t, index)

    def window_view(self, role: str, t, index: TileIndex) -> ir.Value:
        """The SRAM view of an operand's tile (a window: all of it)."""
        operand = self.staged[role].operand
        if self.in_place(operand):
            if all(self.trips[d] == 1 for d in operand.loop_dims()):
                return operand.value
            # This iteration's slice of the tensor (a batch taken one at a time,
            # a tile read or written in place): a window's rows with its halo.
            offsets, sizes = [], []
            for p in operand.region:
                if isinstance(p, Window):
                    offsets.append(sub(mul(index.offsets[p.dim], p.stride), p.pad_low))
                    sizes.append(add(mul(sub(index.sizes[p.dim], 1), p.stride),
                                     (p.kernel - 1) * p.dilation + 1))
                elif isinstance(p, Tiled) or unit_stride(p):
                    offsets.append(index.offsets[p.dim]), sizes.append(index.sizes[p.dim])
                else:
                    offsets.append(0), sizes.append(p.size)
            return subview(operand.value, offsets, sizes)
        sizes = []
        for part in operand.region:
            if isinstance(part, Whole):
                sizes.append(part.size)
            elif isinstance(part, (Tiled, Strided)):
                sizes.append(index.sizes[part.dim])
            else:
                sizes.append(add(mul(sub(index.sizes[part.dim], 1), part.stride),
                                 (part.kernel - 1) * part.dilation + 1))
        if self.broadcasts(operand):
            return self.at_output_rank(operand, self.buffer(role, t), [0] * len(sizes), sizes)
        return subview(self.buffer(role, t), [0] * len(sizes), sizes)

