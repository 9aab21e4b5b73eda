"""npu-promote-to-sram: run each tiled linalg op on SRAM tiles with DMA.

For an op that `npu-tile` annotated (`npu.tile_sizes`, `npu.loop_order`) this
pass replaces the op with one loop over its tiles (the tile loops flattened,
outermost first) that:
  * keeps every operand tile in SRAM (`npu.alloc`, memory space 1), allocated
    at the full tile size; partial tiles at the edges use a subview of it;
  * moves tiles with `npu.dma_load` / `npu.dma_store` and `npu.wait`. A tile is
    loaded only when it changes: weights that do not depend on the inner loops
    stay resident, the accumulator stays in SRAM across the reduction loop and
    is stored once, after its last reduction step;
  * computes on the tiles with npu.matmul / conv2d / im2col / depthwise_conv2d /
    pool2d / elementwise / activation / transpose / fill, with the activation
    epilogue on the last reduction step;
  * with pipeline-stages >= 2, gives every changing tile `stages` SRAM buffers
    and issues the DMA of the next tile before waiting for the current tile's
    compute: iteration t issues compute(t), then the store of tile t-1 and the
    loads of tile t+1 (each waited), then an `npu.barrier`, so the DMA of t+1
    overlaps the compute of t and no DMA touches a buffer compute still uses.
    With 1 stage the loads of tile t are waited before compute(t).
Padding folded from a tensor.pad (bufferized as a padded copy) is produced in
SRAM: the pad value is filled into the halo rows the DMA does not write.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, memref, scf

from ..dialects import npu
from . import ModulePass, PassContext
from .npu_tile import (LOOP_ORDER_ATTR, STAGES_ATTR, TILE_SIZES_ATTR, OperandTile, Schedule,
                       Strided, Tiled, TilingProblem, Unsupported, Whole, Window, linalg_ops,
                       reuse_period, tiling_problem, trip_counts, unchanged_blocks)

DYNAMIC = ir.ShapedType.get_dynamic_size()


# ---------------------------------------------------------------------------
# Index arithmetic on Python ints (folded) and index values
# ---------------------------------------------------------------------------

def index(value):
    if isinstance(value, ir.Value):
        return value
    return arith.ConstantOp(ir.IndexType.get(), value).result


def add(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if b == 0:
        return a
    if a == 0:
        return b
    return arith.AddIOp(index(a), index(b)).result


def sub(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    if b == 0:
        return a
    return arith.SubIOp(index(a), index(b)).result


def mul(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if b == 1:
        return a
    if a == 1:
        return b
    return arith.MulIOp(index(a), index(b)).result


def div(a, b):
    if isinstance(a, int):
        return a // b
    return a if b == 1 else arith.DivUIOp(a, index(b)).result


def rem(a, b):
    if isinstance(a, int):
        return a % b
    return 0 if b == 1 else arith.RemUIOp(a, index(b)).result


def minimum(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    return arith.MinSIOp(index(a), index(b)).result


def maximum(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    return arith.MaxSIOp(index(a), index(b)).result


def compare(predicate: str, a, b):
    """An i1 value, or a Python bool when both sides are ints."""
    if isinstance(a, int) and isinstance(b, int):
        return {"eq": a == b, "ne": a != b, "ult": a < b, "slt": a < b}[predicate]
    kind = getattr(arith.CmpIPredicate, predicate)
    return arith.CmpIOp(kind, index(a), index(b)).result


def both(a, b):
    if a is False or b is False:
        return False
    if a is True:
        return b
    if b is True:
        return a
    return arith.AndIOp(a, b).result


def when(condition, emit) -> None:
    """Run `emit()` under `condition` (a Python bool or an i1 value)."""
    if condition is False:
        return
    if condition is True:
        emit()
        return
    branch = scf.IfOp(condition)
    with ir.InsertionPoint(branch.then_block):
        emit()
        scf.YieldOp([])


def choose(condition, then_emit, else_emit) -> None:
    if condition is True or condition is False:
        (then_emit if condition else else_emit)()
        return
    branch = scf.IfOp(condition, has_else=True)
    with ir.InsertionPoint(branch.then_block):
        then_emit()
        scf.YieldOp([])
    with ir.InsertionPoint(branch.else_block):
        else_emit()
        scf.YieldOp([])


# ---------------------------------------------------------------------------
# Memref views
# ---------------------------------------------------------------------------

def subview(source: ir.Value, offsets, sizes, dropped=(), steps=None) -> ir.Value:
    """memref.subview with mixed static/dynamic offsets and sizes; `dropped`
    dims (of static size 1) are removed from the result."""
    source_type = ir.MemRefType(source.type)
    strides, offset = source_type.get_strides_and_offset()
    steps = steps or [1] * len(sizes)
    if all(isinstance(o, int) for o in offsets) and offset != DYNAMIC:
        result_offset = offset + sum(o * s for o, s in zip(offsets, strides))
    else:
        result_offset = DYNAMIC
    shape = [s if isinstance(s, int) else DYNAMIC for s in sizes]
    result_strides = [s * step for s, step in zip(strides, steps)]
    keep = [i for i in range(len(shape)) if i not in dropped]
    layout = ir.StridedLayoutAttr.get(result_offset, [result_strides[i] for i in keep])
    result_type = ir.MemRefType.get([shape[i] for i in keep], source_type.element_type,
                                    layout, source_type.memory_space)
    return memref.SubViewOp(
        result_type, source,
        [o for o in offsets if isinstance(o, ir.Value)],
        [s for s in sizes if isinstance(s, ir.Value)], [],
        [o if isinstance(o, int) else DYNAMIC for o in offsets],
        shape, list(steps)).result


def collapse_to_matrix(buffer: ir.Value, row_dims: int) -> ir.Value:
    """View an identity-layout SRAM buffer as 2-D: the first `row_dims` dims as rows."""
    buffer_type = ir.MemRefType(buffer.type)
    shape = list(buffer_type.shape)
    rows, cols = math.prod(shape[:row_dims]), math.prod(shape[row_dims:])
    result = ir.MemRefType.get([rows, cols], buffer_type.element_type,
                               memory_space=buffer_type.memory_space)
    groups = [list(range(row_dims)), list(range(row_dims, len(shape)))]
    reassociation = ir.ArrayAttr.get([
        ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), d) for d in g])
        for g in groups])
    return memref.CollapseShapeOp(result, buffer, reassociation).result


def select_buffer(buffers: list[ir.Value], slot) -> ir.Value:
    if len(buffers) == 1:
        return buffers[0]
    if isinstance(slot, int):
        return buffers[slot]
    chosen = buffers[-1]
    for i in range(len(buffers) - 2, -1, -1):
        chosen = arith.SelectOp(compare("eq", slot, i), buffers[i], chosen).result
    return chosen


# ---------------------------------------------------------------------------
# The tiled program of one op
# ---------------------------------------------------------------------------

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


class TileProgram:
    def __init__(self, problem: TilingProblem, schedule: Schedule, stages: int, target,
                 after_fallback: bool = False):
        self.problem = problem
        self.after_fallback = after_fallback
        self.schedule = schedule
        self.target = target
        self.tiles = list(schedule.tiles)
        self.order = list(schedule.order)
        self.trips = trip_counts(problem, self.tiles)
        self.iterations = math.prod(self.trips)
        self.stages = stages if self.iterations > 1 else 1
        self.channel = 0
        op = problem.op
        self.activation = ir.StringAttr(op.attributes["npu.activation"]).value \
            if "npu.activation" in op.attributes else "none"
        self.clip = [ir.FloatAttr(op.attributes[name]).value if name in op.attributes else None
                     for name in ("npu.clip_min", "npu.clip_max")]

    # -- iteration space -------------------------------------------------------------
    def tile_index(self, t) -> TileIndex:
        offsets, sizes = [None] * len(self.tiles), [None] * len(self.tiles)
        stride = 1
        for d in reversed(self.order):
            position = rem(div(t, stride), self.trips[d])
            stride *= self.trips[d]
            tile, size = self.tiles[d], self.problem.dims[d].size
            offsets[d] = mul(position, tile)
            sizes[d] = tile if size % tile == 0 else minimum(tile, sub(size, offsets[d]))
        return TileIndex(offsets, sizes)

    def changes_at(self, period, t):
        """Whether a tile with this reuse period starts at iteration t."""
        return compare("eq", rem(t, period), 0) if period > 1 else True

    # -- buffers ---------------------------------------------------------------------
    def allocate(self) -> None:
        self.staged = {}
        self.allocs = []
        for operand in self.problem.operands:
            period = reuse_period(operand, self.order, self.trips)
            count = 1 if period is None else self.stages
            shape = self.sram_shape(operand)
            buffers = [self.alloc(shape, operand.element_type) for _ in range(count)]
            self.staged[operand.role] = Staged(operand, buffers, period, shape)

    def sram_shape(self, operand: OperandTile) -> list[int]:
        shape = operand.sram_shape(self.tiles)
        if self.broadcasts(operand):
            # A broadcast input keeps the output's rank with unit dims, so the
            # vector unit broadcasts it by numpy rules.
            rank = len(self.problem.dims)
            kept = [part.dim for part in operand.region]
            return [self.tiles[d] if d in kept else 1 for d in range(rank)]
        return shape

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
        """(DRAM view, SRAM view the DMA fills, padding fills) of an operand's tile."""
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
        dram = subview(operand.value, dram_offsets, dram_sizes, operand.dropped, steps)
        if self.broadcasts(operand):
            # The buffer has the output's rank; view it at the DRAM tile's rank.
            rank = len(self.problem.dims)
            by_dim = {part.dim: i for i, part in enumerate(operand.region)}
            offsets = [sram_offsets[by_dim[d]] if d in by_dim else 0 for d in range(rank)]
            sizes = [sram_sizes[by_dim[d]] if d in by_dim else 1 for d in range(rank)]
            sram = subview(buffer, offsets, sizes, tuple(d for d in range(rank) if d not in by_dim))
        else:
            keep = [i for i in range(len(sram_sizes)) if i not in operand.dropped]
            sram = subview(buffer, [sram_offsets[i] for i in keep], [sram_sizes[i] for i in keep])
        return dram, sram, buffer, pad_fills

    def broadcasts(self, operand: OperandTile) -> bool:
        """An elementwise input kept at the output's rank with unit dims."""
        return self.problem.kind == "elementwise" and not operand.is_output

    def compute_view(self, role: str, t, index: TileIndex) -> ir.Value:
        """The SRAM view of an operand's tile, at the size this iteration computes."""
        operand = self.staged[role].operand
        buffer = self.buffer(role, t)
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
            rank = len(self.problem.dims)
            by_dim = {part.dim: size for part, size in zip(operand.region, sizes)}
            sizes = [by_dim.get(d, 1) for d in range(rank)]
            return subview(buffer, [0] * rank, sizes)
        sizes = [s for i, s in enumerate(sizes) if i not in operand.dropped]
        return subview(buffer, [0] * len(sizes), sizes)

    # -- DMA ---------------------------------------------------------------------------
    def next_channel(self) -> int:
        channel = self.channel
        self.channel = (self.channel + 1) % self.target.dma_channels
        return channel

    def load(self, roles, t) -> None:
        """Load the tiles of `roles` for iteration t and wait for them."""
        if not roles:
            return
        index = self.tile_index(t)
        tokens = []
        for role in roles:
            dram, sram, _, _ = self.dram_and_sram_views(role, t, index)
            tokens.append(npu.DmaLoadOp(npu.token_type(), dram, sram,
                                        self.next_channel()).result)
        npu.WaitOp(tokens)

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

    def fill_rows(self, buffer, operand, axis, low, high) -> None:
        """Fill [low, high) of dim `axis` of a padded input buffer with the pad value."""
        if isinstance(low, int) and isinstance(high, int) and high <= low:
            return
        shape = ir.MemRefType(buffer.type).shape
        offsets = [0] * len(shape)
        sizes = list(shape)
        offsets[axis] = low
        sizes[axis] = maximum(sub(high, low), 0)
        npu.FillOp(subview(buffer, offsets, sizes), operand.pad_value)

    def store(self, t) -> None:
        index = self.tile_index(t)
        role = self.problem.output.role
        dram, sram, _, _ = self.dram_and_sram_views(role, t, index)
        token = npu.DmaStoreOp(npu.token_type(), sram, dram, self.next_channel()).result
        npu.WaitOp([token])

    # -- compute -----------------------------------------------------------------------
    def compute(self, t) -> None:
        """Compute tile t, with the reduction's first/last-step variants."""
        output_period = reuse_period(self.problem.output, self.order, self.trips)
        reduction_steps = math.prod(self.trips[d] for d, dim in enumerate(self.problem.dims)
                                    if dim.reduction)
        index = self.tile_index(t)
        if reduction_steps == 1 or not self.has_variants():
            self.emit_compute(t, index, first=True, last=True) if reduction_steps == 1 else \
                self.emit_compute(t, index, first=None, last=None)
            return
        period = output_period or self.iterations
        is_first = compare("eq", rem(t, period), 0)
        is_last = compare("eq", rem(t, period), period - 1)
        choose(is_first, lambda: self.emit_compute(t, index, first=True, last=False),
               lambda: choose(is_last, lambda: self.emit_compute(t, index, False, True),
                              lambda: self.emit_compute(t, index, False, False)))

    def has_variants(self) -> bool:
        return self.problem.kind in ("matmul", "batch_matmul", "conv2d")

    def accumulates(self, first) -> bool:
        """Whether the matrix op adds to the output it finds."""
        if first is None or not first:
            return True
        init = self.problem.init_value
        return init is None or init != 0.0

    def epilogue(self, last):
        if last is False or self.activation == "none":
            return "none", None, None
        return self.activation, self.clip[0], self.clip[1]

    def emit_compute(self, t, index: TileIndex, first, last) -> None:
        kind = self.problem.kind
        view = lambda role: self.compute_view(role, t, index)  # noqa: E731
        out = view("output")
        if first and self.problem.init_value not in (None, 0.0) and kind in (
                "matmul", "batch_matmul", "conv2d"):
            npu.FillOp(out, self.problem.init_value)
        accumulate = self.accumulates(first)
        activation, clip_min, clip_max = self.epilogue(last)
        if kind in ("matmul", "batch_matmul"):
            npu.MatmulOp(view("lhs"), view("rhs"), out, accumulate, activation,
                         clip_min=clip_min, clip_max=clip_max)
        elif kind == "conv2d":
            self.emit_conv(t, index, out, accumulate, activation, clip_min, clip_max)
        elif kind == "depthwise_conv2d":
            details = self.problem.details
            bias = view("bias") if "bias" in self.staged else None
            npu.DepthwiseConv2dOp(view("input"), view("filter"), out, details["strides"],
                                  details["dilations"], self.activation, bias=bias,
                                  clip_min=self.clip[0], clip_max=self.clip[1])
        elif kind == "pool2d":
            details = self.problem.details
            pool = details["pool"]
            npu.Pool2dOp(view("input"), out, "max" if pool == "max" else "avg",
                         list(details["window"]), details["strides"])
            if pool == "sum":
                npu.ElementwiseOp(out, self.window_count, out, "mul")
        elif kind == "fill":
            npu.FillOp(out, self.problem.details["value"])
        elif kind == "transpose":
            npu.TransposeOp(view("input"), out, self.problem.details["permutation"])
        elif kind == "elementwise":
            self.emit_elementwise(t, index, out)

    def emit_conv(self, t, index, out, accumulate, activation, clip_min, clip_max) -> None:
        details = self.problem.details
        strategy = details["strategy"]
        image = self.compute_view("input", t, index)
        if strategy == "direct":
            npu.Conv2dOp(image, self.compute_view("filter", t, index), out,
                         details["strides"], details["dilations"], accumulate, activation,
                         clip_min=clip_min, clip_max=clip_max)
            return
        # GEMM forms: output pixels x filters = (pixels x K) * (K x filters).
        pixels = mul(mul(index.sizes[0], index.sizes[1]), index.sizes[2])
        filters, channels = index.sizes[3], index.sizes[4]
        kh, kw = details["kernel"]
        out_matrix = subview(collapse_to_matrix(self.buffer("output", t), 3), [0, 0],
                             [pixels, filters])
        weights = subview(collapse_to_matrix(self.buffer("filter", t), 3), [0, 0],
                          [mul(kh * kw, channels), filters])
        if strategy == "im2col":
            columns = subview(self.columns, [0, 0], [pixels, mul(kh * kw, channels)])
            npu.Im2colOp(image, columns, [kh, kw], details["strides"], details["dilations"])
        else:  # implicit GEMM: a 1x1 conv's input tile is already the GEMM's lhs
            columns = subview(collapse_to_matrix(self.buffer("input", t), 3), [0, 0],
                              [pixels, channels])
        npu.MatmulOp(columns, weights, out_matrix, accumulate, activation,
                     clip_min=clip_min, clip_max=clip_max)

    def emit_elementwise(self, t, index, out) -> None:
        steps = self.problem.details["steps"]
        inputs = {}

        def value(ref):
            if ref[0] == "in":
                if ref[1] not in inputs:
                    inputs[ref[1]] = self.compute_view(f"in{ref[1]}", t, index)
                return inputs[ref[1]]
            if ref[0] == "const":
                return self.constants[ref[1]]
            return results[ref[1]]
        results = []
        for number, step in enumerate(steps):
            last = number == len(steps) - 1
            target = out if last else subview(self.temporaries[number],
                                              [0] * len(index.sizes), index.sizes)
            if step[0] == "binary":
                npu.ElementwiseOp(value(step[2]), value(step[3]), target, step[1])
            elif step[0] == "activation":
                npu.ActivationOp(value(step[2]), target, step[1], clip_min=step[4],
                                 clip_max=step[5])
            else:  # copy, broadcasting the input over the tile
                source = value(step[1])
                if ir.MemRefType(source.type).shape == ir.MemRefType(target.type).shape:
                    npu.ActivationOp(source, target, "none")
                else:
                    npu.FillOp(target, 0.0)
                    npu.ElementwiseOp(target, source, target, "add")
            results.append(target)

    # -- the program -----------------------------------------------------------------
    def emit(self) -> None:
        problem = self.problem
        self.allocate()
        self.allocate_temporaries()
        self.fill_padding_once()
        inputs = [s for s in self.staged.values() if self.loads(s)]
        resident = [s.operand.role for s in inputs if s.period is None]
        groups = {}
        for staged in inputs:
            if staged.period is not None:
                groups.setdefault(staged.period, []).append(staged.operand.role)
        self.load(resident + [role for roles in groups.values() for role in roles], 0)
        output_period = reuse_period(problem.output, self.order, self.trips)
        if self.iterations == 1:
            self.compute(0)
            npu.BarrierOp()
            self.store(0)
        else:
            loop = scf.ForOp(index(0), index(self.iterations), index(1))
            with ir.InsertionPoint(loop.body):
                t = loop.induction_variable
                if self.stages > 1:
                    self.pipelined_iteration(t, groups, output_period)
                else:
                    self.sequential_iteration(t, groups, output_period)
                scf.YieldOp([])
            if self.stages > 1 or output_period is None:
                self.store(self.iterations - 1)
        for buffer in reversed(self.allocs):
            npu.DeallocOp(buffer)

    def loads(self, staged: Staged) -> bool:
        """Whether the operand's tiles come from DRAM (inputs, and an output that
        accumulates onto its initial contents)."""
        operand = staged.operand
        if not operand.is_output:
            return True
        return self.problem.kind in ("matmul", "batch_matmul", "conv2d") \
            and self.problem.init_value is None

    def pipelined_iteration(self, t, groups, output_period) -> None:
        self.compute(t)
        self.refill_padding(t)
        if output_period is not None:
            previous = sub(t, 1)
            when(both(compare("ne", t, 0), self.changes_at(output_period, t)),
                 lambda: self.store(previous))
        following = add(t, 1)
        has_next = compare("ult", following, self.iterations)
        for period, roles in groups.items():
            when(both(has_next, self.changes_at(period, following)),
                 lambda roles=roles: self.load(roles, following))
        npu.BarrierOp()

    def sequential_iteration(self, t, groups, output_period) -> None:
        for period, roles in groups.items():
            when(both(compare("ne", t, 0), self.changes_at(period, t)),
                 lambda roles=roles: self.load(roles, t))
        self.compute(t)
        self.refill_padding(t)
        npu.BarrierOp()
        if output_period is not None:
            is_last = compare("eq", rem(t, output_period), output_period - 1) \
                if output_period > 1 else True
            when(is_last, lambda: self.store(t))

    def allocate_temporaries(self) -> None:
        problem = self.problem
        self.temporaries, self.constants = {}, {}
        output = self.staged[problem.output.role]
        element_type = problem.output.element_type
        if problem.kind == "elementwise":
            steps = problem.details["steps"]
            for number in range(len(steps) - 1):
                self.temporaries[number] = self.alloc(output.sram_shape, element_type)
            for step in steps:
                if step[0] == "binary" and step[3][0] == "const" \
                        and step[3][1] not in self.constants:
                    buffer = self.alloc([1], element_type)
                    npu.FillOp(buffer, step[3][1])
                    self.constants[step[3][1]] = buffer
        if problem.kind == "pool2d" and problem.details["pool"] == "sum":
            self.window_count = self.alloc([1], element_type)
            kh, kw = problem.details["window"]
            npu.FillOp(self.window_count, float(kh * kw))
        if problem.kind == "conv2d" and problem.details["strategy"] == "im2col":
            kh, kw = problem.details["kernel"]
            pixels = self.tiles[0] * self.tiles[1] * self.tiles[2]
            self.columns = self.alloc([pixels, kh * kw * self.tiles[4]],
                                      problem.operand("input").element_type)

    def fill_padding_once(self) -> None:
        """Fill every buffer of a padded input with the pad value before any DMA;
        DMAs then only overwrite the interior (halo rows are refilled per tile)."""
        filled = False
        for staged in self.staged.values():
            operand = staged.operand
            if operand.pad_value is None or not any(isinstance(p, Window) for p in operand.region):
                continue
            for buffer in staged.buffers:
                npu.FillOp(buffer, operand.pad_value)
                filled = True
        if filled or self.constants or getattr(self, "window_count", None) is not None \
                or self.after_fallback:
            # The fills run on the vector unit and a fallback op before this program
            # may still be writing its input: only a barrier orders DMAs after them.
            npu.BarrierOp()


class FallbackTracker:
    """Whether an op left on the fallback engine (a linalg op or a memref.copy on
    DRAM) precedes an op in its block with no npu.barrier in between.

    The ops of each block are listed once, before any is lowered. Lowered ops
    are replaced by npu programs, which hold no fallback op and end with
    nothing running (a program after a fallback op starts with a barrier), so
    the search back from an op stops at the previous lowered op."""

    def __init__(self):
        self.blocks: dict = {}      # block -> [(op, name)] in block order
        self.position: dict = {}    # op -> (block, index)
        self.lowered: set = set()   # (block, index) of lowered ops
        self.erased: set = set()    # (block, index) of absorbed ops, erased

    def _where(self, op):
        op = op.operation
        if op not in self.position:
            block = op.block
            siblings = [(sibling.operation, sibling.operation.name)
                        for sibling in block.operations]
            self.blocks[block] = siblings
            for index, (sibling, _) in enumerate(siblings):
                self.position[sibling] = (block, index)
        return self.position[op]

    def may_be_running(self, op, absorbed: list) -> bool:
        block, index = self._where(op)
        skipped = {absorbed_op.operation for absorbed_op in absorbed}
        for before in range(index - 1, -1, -1):
            if (block, before) in self.erased:
                continue
            sibling, name = self.blocks[block][before]
            if (block, before) in self.lowered or name == "npu.barrier":
                return False
            if (name.startswith("linalg.") or name == "memref.copy") and sibling not in skipped:
                return True
        return False

    def replaced(self, op, absorbed: list) -> None:
        """`op` is about to become an npu program and the `absorbed` ops to be erased."""
        self.lowered.add(self._where(op))
        self.erased.update(self._where(absorbed_op) for absorbed_op in absorbed)


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
    summary = "Run tiled linalg ops on SRAM tiles: npu.alloc, DMA with waits, npu compute " \
              "ops, multi-buffering for pipeline-stages > 1"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            target = context.target
            fallback = FallbackTracker()
            # The problems as npu-tile saw them, built before any op is replaced.
            problems = []
            with unchanged_blocks():
                for op in linalg_ops(module):
                    if TILE_SIZES_ATTR not in op.attributes:
                        continue
                    try:
                        problems.append((op, tiling_problem(op, target)))
                    except Unsupported as reason:
                        problems.append((op, reason))
            for op, problem in problems:
                if isinstance(problem, Unsupported):
                    context.diagnostics.error(op.location, f"'{op.name}' cannot be lowered: "
                                                           f"{problem}")
                    continue
                schedule = schedule_of(op, problem)
                if schedule is None:
                    context.diagnostics.error(op.location, f"'{op.name}' has malformed "
                                                           f"{TILE_SIZES_ATTR}/{LOOP_ORDER_ATTR}")
                    continue
                absorbed = problem.absorbed_ops
                after_fallback = fallback.may_be_running(op, absorbed)
                with op.location, ir.InsertionPoint(op):
                    TileProgram(problem, schedule, op_stages(op, target), target,
                                after_fallback).emit()
                fallback.replaced(op, absorbed)
                op.erase()
                for absorbed_op in absorbed:
                    absorbed_op.erase()

