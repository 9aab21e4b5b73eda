"""npu-tile: choose tile sizes and a loop order for every linalg op the NPU runs.

Runs on memrefs (after bufferization). For each linalg op it builds a
`TilingProblem` -- the op's loop dimensions and, per operand, which part of the
operand a tile of the loops touches (with the input halo of convolutions and
pooling) -- then picks tile sizes and a loop order with the cost model below,
records them on the op (`npu.tile_sizes`, `npu.loop_order`) and says why in a
remark. `npu-promote-to-sram` reads them to build the tiled program. Ops the
NPU cannot run stay as they are (the fallback engine runs them) with a remark
giving the reason.

Cost model (one tile = one iteration of the flattened tile loop):
  compute(tile)  matrix ops: SCALE-Sim's closed form for a GEMM M x N x K on the
                 R x C array (weight-stationary: ceil(K/R)*ceil(N/C) folds, each
                 2R + C + M - 2 cycles; output-stationary: M on rows, K streamed);
                 vector ops: elements * taps / lanes.
  dma(tile)      per operand: setup + bursts * burst / bandwidth, divided by the
                 number of consecutive iterations that reuse the tile (an operand
                 that does not depend on the innermost loops is loaded once per
                 change: weights stay resident, accumulators stay in SRAM across
                 the reduction loop).
  iteration      max(compute, dma) with pipeline-stages >= 2 (the next tile's DMA
                 overlaps this tile's compute), compute + dma with 1 stage.
  working set    sum over operands of tile bytes x buffers (pipeline-stages for
                 tiles that change, 1 for resident ones) + SRAM temporaries;
                 must fit max-sram-bytes.
Candidates per dimension: the full size, multiples of the array size up to
tile-max and, below that, powers of two down to tile-min (dims that map onto
the array: M/N/K, output/input channels); output rows of convolutions take
every balanced split. The streamed dimension (matmul M, conv output pixels)
is not capped by tile-max: a longer stream amortises the array's weight fill.
The cheapest candidate that fits wins; ties go to fewer, larger tiles.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from mlir import ir

from .. import machine_model
from ..recipes import linalg_ops, tiling_problem
from ..recipes.loops import tile_with_loops
from ..recipes.problem import (LOOP_ORDER_ATTR, TILE_SIZES_ATTR, LoopDim, OperandTile, Strided,
                               TilingProblem, Unsupported, element_bytes)
from ..target import NpuTarget
from . import ModulePass, PassContext


# ---------------------------------------------------------------------------
# Cost model
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Schedule:
    tiles: tuple
    order: tuple            # loop dims, outermost first
    cycles: int
    working_set: int


def trip_counts(problem: TilingProblem, tiles) -> list[int]:
    return [-(-d.size // t) for d, t in zip(problem.dims, tiles)]


def reuse_period(operand: OperandTile, order, trips) -> int | None:
    """Iterations of the flattened loop between two changes of the operand's
    tile; None when it never changes (loaded once)."""
    positions = [order.index(d) for d in operand.loop_dims() if trips[d] > 1]
    if not positions:
        return None
    return math.prod(trips[d] for d in order[max(positions) + 1:])


def buffer_count(operand: OperandTile, order, trips, stages: int) -> int:
    return 1 if reuse_period(operand, order, trips) is None else stages


def dma_cycles(operand: OperandTile, tiles, target: NpuTarget) -> int:
    """The DMA of the operand's first tile (its DRAM view from the buffer's
    start), timed by the machine model as the simulator times it."""
    memref = ir.MemRefType(operand.value.type)
    strides = tuple(stride * part.stride if isinstance(part, Strided) else stride
                    for stride, part in zip(machine_model.identity_strides(memref.shape),
                                            operand.region))
    return machine_model.dma_cycles(tuple(operand.extents(tiles)), strides,
                                    element_bytes(memref.element_type), 0, target)


def working_set(problem: TilingProblem, tiles, order, stages: int, alignment: int = 1) -> int:
    """SRAM bytes of all buffers of the op, each rounded up to the alignment."""
    def aligned(size):
        return -(-size // alignment) * alignment
    trips = trip_counts(problem, tiles)
    total = aligned(problem.temporary_bytes(tiles))
    for operand in problem.operands:
        tile_bytes = math.prod(operand.sram_shape(tiles)) * element_bytes(operand.element_type)
        total += buffer_count(operand, order, trips, stages) * aligned(tile_bytes)
    return total


def estimate(problem: TilingProblem, tiles, order, target: NpuTarget, stages: int) -> int:
    trips = trip_counts(problem, tiles)
    iterations = math.prod(trips)
    compute = problem.compute_cycles(tiles)
    dma = 0.0
    for operand in problem.operands:
        period = reuse_period(operand, order, trips) or iterations
        dma += dma_cycles(operand, tiles, target) / period
    per_iteration = max(compute, dma) if stages > 1 else compute + dma
    # Filling the pipeline and draining it are not overlapped.
    return int(iterations * per_iteration + (dma if stages > 1 else 0))


def candidates(dim: LoopDim, target: NpuTarget) -> list[int]:
    size = dim.size
    if dim.candidates == "one":
        return [1]
    if dim.candidates == "full":
        return [size]
    if dim.candidates == "rows":
        return sorted({-(-size // parts) for parts in range(1, size + 1)})
    step = min(target.array_rows, target.array_cols)
    cap = size if dim.candidates == "stream" else min(size, target.tile_max)
    found = set()
    if size <= target.tile_max:
        found.add(size)
    value = step
    while value <= cap:
        found.add(value)
        value += step if value < 4 * step else 2 * step if value < 16 * step else 4 * step
    value = step // 2
    while value >= target.tile_min:
        if value <= size:
            found.add(value)
        value //= 2
    if dim.candidates == "stream":
        found.add(size)
    if not found:
        found.add(min(size, max(target.tile_min, 1)))
    return sorted(found)


def loop_orders(problem: TilingProblem) -> list[tuple]:
    parallel = [i for i, d in enumerate(problem.dims) if not d.reduction]
    reduction = tuple(i for i, d in enumerate(problem.dims) if d.reduction)
    varied = [i for i in parallel if problem.dims[i].candidates not in ("one", "full")]
    fixed = [i for i in parallel if i not in varied]
    if not problem.recipe.matrix_unit or len(varied) > 3:
        return [tuple(parallel) + reduction]
    return [tuple(fixed) + perm + reduction for perm in itertools.permutations(varied)]


MAX_CANDIDATES = 40000


def choose_schedule(problem: TilingProblem, target: NpuTarget, stages: int,
                    explicit: list[int] | None = None):
    """(best Schedule or None, smallest working set seen)."""
    orders = loop_orders(problem)
    if explicit is not None:
        grid = [tuple(min(t, d.size) for t, d in zip(explicit, problem.dims))]
    else:
        per_dim = [candidates(d, target) for d in problem.dims]
        while math.prod(len(c) for c in per_dim) * len(orders) > MAX_CANDIDATES:
            longest = max(range(len(per_dim)), key=lambda i: len(per_dim[i]))
            per_dim[longest] = per_dim[longest][::2] + ([per_dim[longest][-1]]
                                                        if len(per_dim[longest]) % 2 == 0 else [])
        grid = itertools.product(*per_dim)
    best, smallest = None, None
    for tiles in grid:
        for order in orders:
            size = working_set(problem, tiles, order, stages, target.sram_alignment)
            smallest = size if smallest is None else min(smallest, size)
            if size > target.max_sram_bytes:
                continue
            cycles = estimate(problem, tiles, order, target, stages)
            key = (cycles, math.prod(trip_counts(problem, tiles)), -sum(tiles))
            if best is None or key < best[0]:
                best = (key, Schedule(tuple(tiles), order, cycles, size))
    return (best[1] if best else None), smallest


def describe(problem: TilingProblem, schedule: Schedule) -> str:
    tiles = "x".join(f"{d.name}{t}" for d, t in zip(problem.dims, schedule.tiles))
    order = ",".join(problem.dims[i].name for i in schedule.order)
    return f"tiles {tiles}, loops ({order}), working set {schedule.working_set} B, " \
           f"estimated {schedule.cycles} cycles"


def given_schedule(op, problem: TilingProblem, target: NpuTarget, stages: int):
    """The schedule written on the op (`npu.tile_sizes`, `npu.loop_order`), as
    (Schedule or None if it does not fit, its working set); (None, None) when
    the attributes do not match the op's loops."""
    if TILE_SIZES_ATTR not in op.attributes or LOOP_ORDER_ATTR not in op.attributes:
        return None, None
    tiles = list(ir.DenseI64ArrayAttr(op.attributes[TILE_SIZES_ATTR]))
    order = tuple(ir.DenseI64ArrayAttr(op.attributes[LOOP_ORDER_ATTR]))
    if len(tiles) != len(problem.dims) or sorted(order) != list(range(len(problem.dims))) \
            or min(tiles) < 1:
        return None, None
    tiles = tuple(min(t, d.size) for t, d in zip(tiles, problem.dims))
    size = working_set(problem, tiles, order, stages, target.sram_alignment)
    if size > target.max_sram_bytes:
        return None, size
    return Schedule(tiles, order, estimate(problem, tiles, order, target, stages), size), size


def loop_tiles(problem: TilingProblem, schedule: Schedule) -> tuple[list[int], list[int]]:
    """Upstream tile sizes per loop of the linalg op (0: a dim of one tile is
    not tiled) and the loop interchange, outermost first, of a schedule."""
    loop_count, positions = problem.recipe.loop_positions(problem)
    sizes = [0] * loop_count
    for dim, trips in enumerate(trip_counts(problem, schedule.tiles)):
        if trips > 1:
            sizes[positions[dim]] = schedule.tiles[dim]
    interchange = [positions[dim] for dim in schedule.order]
    return sizes, interchange + [loop for loop in range(loop_count) if loop not in interchange]


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------

def refused_element_type(op) -> str | None:
    """Why no engine runs an operand's element type (bf16), or None."""
    for value in op.operands:
        element = value.type.element_type if isinstance(value.type, ir.ShapedType) else value.type
        reason = machine_model.refused_type_reason(element)
        if reason is not None:
            return reason
    return None


@dataclass(frozen=True)
class NpuTile(ModulePass):
    argument = "npu-tile"
    summary = "Choose tile sizes and loop order of each linalg op from the SRAM budget " \
              "and a cost model"

    tile_sizes: list[int] = field(default_factory=list)

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            target, diagnostics = context.target, context.diagnostics
            stages = target.pipeline_stages
            problems = []
            for op in linalg_ops(module):
                refused = refused_element_type(op)
                if refused is not None:
                    diagnostics.error(op.location, f"'{op.name}': {refused}")
                    continue
                try:
                    problems.append((op, tiling_problem(op, target), None))
                except Unsupported as reason:
                    problems.append((op, None, str(reason)))
            # Fills and padded copies folded into the op that reads them.
            absorbed = [a for _, problem, _ in problems if problem for a in problem.absorbed_ops]
            problems = [entry for entry in problems if entry[0] not in absorbed]
            for op, problem, reason in problems:
                if problem is None:
                    diagnostics.remark(op.location, f"'{op.name}' stays on the fallback "
                                                    f"engine: {reason}")
                    continue
                explicit = list(self.tile_sizes) or None
                if explicit is not None and len(explicit) != len(problem.dims):
                    names = ", ".join(d.name for d in problem.dims)
                    diagnostics.error(op.location, f"'{op.name}' has {len(problem.dims)} loop "
                                                   f"dimensions ({names}), tile-sizes gives "
                                                   f"{len(explicit)}")
                    continue
                if explicit is not None and min(explicit) < 1:
                    diagnostics.error(op.location, "tile sizes must be positive")
                    continue
                if TILE_SIZES_ATTR in op.attributes or LOOP_ORDER_ATTR in op.attributes:
                    schedule, smallest = given_schedule(op, problem, target, stages)
                    if schedule is None and smallest is None:
                        diagnostics.error(op.location, f"'{op.name}' has malformed "
                                                       f"{TILE_SIZES_ATTR}/{LOOP_ORDER_ATTR}")
                        continue
                else:
                    schedule, smallest = choose_schedule(problem, target, stages, explicit)
                if schedule is None:
                    diagnostics.error(op.location, f"'{op.name}' does not fit in SRAM: working set "
                                                   f"{smallest} B exceeds SRAM budget "
                                                   f"{target.max_sram_bytes} B")
                    continue
                with op.context:
                    op.attributes[TILE_SIZES_ATTR] = ir.DenseI64ArrayAttr.get(list(schedule.tiles))
                    op.attributes[LOOP_ORDER_ATTR] = ir.DenseI64ArrayAttr.get(list(schedule.order))
                diagnostics.remark(op.location, f"'{op.name}': {describe(problem, schedule)}")
                tile_with_loops(op, *loop_tiles(problem, schedule))
