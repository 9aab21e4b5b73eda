"""The tile search of `npu-tile`: the cheapest schedule of a tiling problem
that fits the SRAM budget.

A schedule is a tile size per loop dimension and a loop order. The candidate
space (tile_candidates.py) is the product of the per-dimension candidates
times the loop orders; the cost model of `npu_tile` is evaluated over
the whole space at once, as numpy arrays:

  - the quantities of one operand (tile bytes, DMA cycles of a tile) depend
    only on the tile sizes of the loop dims it is indexed by, so they are
    computed once per combination of those sizes (the whole tiles' and the
    partial ones' at the ends of the dims) and gathered into the space;
  - a tile's compute cycles and SRAM temporaries are computed once per tile
    tuple and tile shape, shared by every loop order;
  - reuse periods, buffer counts, working sets and estimated cycles are array
    expressions over (tile tuples x loop orders).

The scalar functions of `tile_cost` (`working_set`, `estimate`, ...) state
the model one candidate at a time; the array evaluation computes the same
numbers through the same `program_cycles`, and
`choose_schedule` picks the same schedule as a loop over them would: the
cheapest that fits (its estimated cycles plus BUSY_WEIGHT of its compute
engine's busy cycles), ties to fewer and then larger tiles, then to the first
candidate in the order of the space.

Schedules are memoised per op signature (`signature`): the op, its operands'
types and tiled regions, its loop dims, the attributes and details the cost
depends on, the target and the search options.

When nothing fits, `search` tries fewer pipeline stages (down to 1) and tiles
below -tile-min (down to 1) and keeps the cheapest schedule found that way; a
refusal names the smallest working set found and the -max-sram-bytes that
would hold it.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
from dataclasses import dataclass

import numpy as np

from ..recipes.problem import in_place, skip_into_output
from .. import machine_model
from ..target import NpuTarget
from .tile_candidates import direct_conv_tiles, loop_orders, reduction_innermost, tile_grid
from .tile_cost import (BUSY_WEIGHT, _dma_view, aligned, move_cycles, padding_fills,
                        program_cycles, tile_bytes)

# Attributes the search writes; they do not take part in an op's signature.
SEARCH_ATTRIBUTES = ("npu.tile_sizes", "npu.loop_order", "npu.pipeline_stages",
                     "npu.dataflow")


@dataclass(frozen=True)
class Schedule:
    tiles: tuple
    order: tuple            # loop dims, outermost first
    cycles: int
    working_set: int


# ---------------------------------------------------------------------------
# The cost model over the whole space
# ---------------------------------------------------------------------------

class Space:
    """Tile tuples in the order of itertools.product(*per_dim), as arrays."""

    def __init__(self, problem, per_dim: list[list[int]]):
        self.problem = problem
        self.per_dim = per_dim
        shape = tuple(len(c) for c in per_dim)
        # Index of each tuple's candidate per dim, last dim fastest.
        self.index = [i.ravel() for i in np.indices(shape)]
        self.tiles = np.stack([np.asarray(c, dtype=np.int64)[i]
                               for c, i in zip(per_dim, self.index)], axis=1) \
            if per_dim else np.zeros((1, 0), dtype=np.int64)
        self.count = int(math.prod(shape))
        self.sizes = np.array([d.size for d in problem.dims], dtype=np.int64)
        self.trips = -(-self.sizes // self.tiles)
        self.iterations = np.prod(self.trips, axis=1)
        # Per dim, the sizes its tiles take (whole or the rest of the dim), and
        # each candidate's position among them as a whole and as a partial tile.
        self.tile_sizes = []
        for dim, whole in zip(problem.dims, per_dim):
            rest = [dim.size % size or size for size in whole]
            sizes = tuple(sorted(set(whole) | set(rest)))
            position = {size: number for number, size in enumerate(sizes)}
            self.tile_sizes.append((np.array(sizes, dtype=np.int64),
                                    np.array([position[size] for size in whole], dtype=np.int64),
                                    np.array([position[size] for size in rest], dtype=np.int64),
                                    sizes))

    def per_tuple(self, function, tiles=None) -> np.ndarray:
        """function(tiles) for every tile tuple (or every row of `tiles`): one
        call on the columns when the function computes with arrays as with
        numbers (checked on samples), one call per distinct tuple otherwise."""
        tiles = self.tiles if tiles is None else tiles
        count = len(tiles)
        try:
            with np.errstate(all="ignore"):
                values = np.broadcast_to(np.asarray(function(self.columns(tiles)),
                                                    dtype=np.float64), (count,))
        except Exception:  # noqa: BLE001 (branches on a value, min() of arrays, ...)
            values = None
        samples = sorted({0, count // 2, count - 1})
        if values is not None and all(values[i] == function(tuple(tiles[i].tolist()))
                                      for i in samples):
            return values
        # Each distinct tuple once: a row's number from its columns' value indices.
        number = np.zeros(count, dtype=np.int64)
        for column in tiles.T:
            distinct, index = np.unique(column, return_inverse=True)
            number = number * len(distinct) + index.ravel()
        _, first, inverse = np.unique(number, return_index=True, return_inverse=True)
        values = np.array([function(tuple(row)) for row in tiles[first].tolist()],
                          dtype=np.float64)
        return values[inverse.ravel()]

    def columns(self, tiles=None) -> tuple:
        """The tile sizes of each loop dim, one array per dim."""
        tiles = self.tiles if tiles is None else tiles
        return tuple(tiles[:, d] for d in range(tiles.shape[1]))

    def kinds(self):
        """The tiles of each tuple's loop nest by shape (`tile_kinds`): per
        combination of whole and partial tiles along the dims some tile size
        does not divide, (the dims taking their partial tile, the tile sizes,
        how many such tiles). The whole tiles come first, the last tiles last."""
        rest = self.sizes % self.tiles
        whole = self.sizes // self.tiles
        uneven = [d for d in range(self.tiles.shape[1]) if rest[:, d].any()]
        for flags in itertools.product((False, True), repeat=len(uneven)):
            partial = frozenset(d for d, flag in zip(uneven, flags) if flag)
            tiles = self.tiles.copy()
            count = np.ones(self.count, dtype=np.int64)
            for d in range(self.tiles.shape[1]):
                if d in partial:
                    tiles[:, d] = np.where(rest[:, d] > 0, rest[:, d], self.tiles[:, d])
                    count *= rest[:, d] > 0
                else:
                    count *= whole[:, d]
            yield partial, tiles, count

    def reuse_periods(self, operand, order) -> tuple[np.ndarray, np.ndarray]:
        """(period, changes) per tile tuple: iterations between two changes of
        the operand's tile, and whether it changes at all."""
        dims = operand.loop_dims()
        period = np.ones(self.count, dtype=np.int64)
        changes = np.zeros(self.count, dtype=bool)
        for d in reversed(order):
            if d in dims:
                changes |= self.trips[:, d] > 1
            else:
                period = np.where(changes, period, period * self.trips[:, d])
        return period, changes


def transfer_cycles(operand, space: "Space", target: NpuTarget, partial=frozenset()) -> np.ndarray:
    """npu_tile.dma_cycles of the operand's tile for every tile tuple; along the
    dims in `partial`, of its partial tile (the rest of the dim, where there is
    one)."""
    return kind_transfer_cycles(operand, space, target, [partial])[0]


_TABLES: dict = {}


def kind_transfer_cycles(operand, space: "Space", target: NpuTarget, partials) -> list:
    """transfer_cycles for each set of dims in `partials`, from one table: the
    machine model's `dma_cycles_many` once per combination of the sizes the
    operand's tiles take along the loop dims it is indexed by."""
    shape, strides, itemsize = _dma_view()(operand)
    dims = sorted(operand.loop_dims())
    lengths = [len(space.tile_sizes[d][0]) for d in dims]
    # The same operand is searched again and again (the buffer plan tries budgets).
    key = (strides, itemsize, operand.region, tuple(space.tile_sizes[d][3] for d in dims),
           target.dma_setup_cycles, target.dma_burst_bytes, target.dram_bytes_per_cycle)
    table = _TABLES.get(key)
    if table is None:
        grid = [i.ravel() for i in np.indices(lengths)] if dims else []
        tiles = [None] * len(space.per_dim)
        for d, index in zip(dims, grid):
            tiles[d] = space.tile_sizes[d][0][index]
        count = int(math.prod(lengths))
        extents = np.stack([np.broadcast_to(np.asarray(e, dtype=np.int64), (count,))
                            for e in operand.extents(tiles)], axis=1) \
            if operand.region else np.ones((count, 0), dtype=np.int64)
        table = machine_model.dma_cycles_many(extents, strides, itemsize, 0, target)
        if len(_TABLES) >= MEMO_ENTRIES:
            _TABLES.clear()
        table = _TABLES[key] = table.astype(np.float64)
    if not dims:
        return [np.full(space.count, table[0]) for _ in partials]
    return [table[np.ravel_multi_index([space.tile_sizes[d][2 if d in partial else 1]
                                        [space.index[d]] for d in dims], lengths)]
            for partial in partials]


_SPACES: dict = {}
SPACE_ENTRIES = 4096   # each holds a Frontier: a few schedules


@dataclass(frozen=True)
class Frontier:
    """The schedules a search may choose, by SRAM budget: `schedules[j]` is
    the best of those whose working set is at most the budget for budgets
    from `sizes[j]` up to the next size (none below `sizes[0]`)."""
    sizes: list
    schedules: list
    smallest: int   # the smallest working set of the space


def space_frontier(problem, target: NpuTarget, stages: int, explicit=None) -> Frontier:
    """The frontier of the problem's candidates. It does not depend on the
    SRAM budget, of which the buffer plan tries many: memoised per op
    signature and target but the budget."""
    key = (signature(problem), dataclasses.replace(target, max_sram_bytes=0), stages,
           tuple(explicit) if explicit is not None else None)
    if key not in _SPACES:
        if len(_SPACES) >= SPACE_ENTRIES:
            _SPACES.clear()
        orders = loop_orders(problem)
        space = Space(problem, tile_grid(problem, target, orders, explicit))
        sizes, cycles, busy = evaluate_space(problem, space, orders, target, stages)
        sizes = only_reduction_outer(problem, space.tiles, orders, sizes)
        _SPACES[key] = frontier(orders, space.tiles, space.iterations, sizes, cycles,
                                cycles + BUSY_WEIGHT * busy)
    return _SPACES[key]


def frontier(orders, tiles, iterations, sizes, cycles, costs) -> Frontier:
    """The best schedule within each budget: the cheapest (by `costs`) that
    fits, ties to fewer and then larger tiles, then to the first candidate in
    the order of the space (tile tuples outside, loop orders inside). The best of all is
    the best for the budgets from its working set up; below it, the best of
    those smaller, and so on."""
    tuple_of = np.arange(len(sizes)) // len(orders)
    tile_sums = tiles.sum(axis=1)
    candidates = np.flatnonzero(np.isfinite(sizes))
    smallest = int(sizes[candidates].min())
    chosen = []
    while candidates.size:
        best = candidates[costs[candidates] == costs[candidates].min()]
        best = best[iterations[tuple_of[best]] == iterations[tuple_of[best]].min()]
        best = int(best[tile_sums[tuple_of[best]] == tile_sums[tuple_of[best]].max()][0])
        chosen.append(best)
        candidates = candidates[sizes[candidates] < sizes[best]]
    chosen.reverse()
    schedules = [Schedule(tuple(int(t) for t in tiles[best // len(orders)]),
                          orders[best % len(orders)], int(cycles[best]), int(sizes[best]))
                 for best in chosen]
    return Frontier([schedule.working_set for schedule in schedules], schedules, smallest)


def only_reduction_outer(problem, tiles, orders, sizes):
    """The working sets of the schedules, none fitting where a direct conv
    writes its output kept in SRAM by tiles without a split reduction outside
    the innermost output loop (tile_candidates.direct_conv_tiles): it then
    computes the output whole (unless no candidate does)."""
    output = problem.output
    if not direct_conv_tiles(problem, output):
        return sizes
    whole = np.all(np.stack([tiles[:, d] == problem.dims[d].size
                             for d in sorted(output.loop_dims())], axis=1), axis=1)
    reductions = [d for d, dim in enumerate(problem.dims) if dim.reduction]
    split = np.any(np.stack([tiles[:, d] < problem.dims[d].size for d in reductions], axis=1),
                   axis=1) if reductions else np.zeros(len(tiles), dtype=bool)
    outer = np.array([bool(reductions) and not reduction_innermost(problem, order)
                      for order in orders])
    allowed = (whole[:, None] | (split[:, None] & outer[None, :])).ravel()
    if not allowed.any():   # no whole output among the candidates left: any tiles
        return sizes
    return np.where(allowed, sizes, np.inf)


def choose_schedule(problem, target: NpuTarget, stages: int, explicit: list[int] | None = None):
    """(best Schedule or None, smallest working set seen)."""
    front = space_frontier(problem, target, stages, explicit)
    j = bisect.bisect_right(front.sizes, target.max_sram_bytes) - 1
    return (front.schedules[j] if j >= 0 else None), front.smallest


def evaluate_space(problem, space: "Space", orders, target: NpuTarget, stages: int):
    """(working sets, estimated cycles, compute engine busy cycles) of every
    schedule of the space, tile tuples outside and loop orders inside, as flat
    arrays."""
    alignment = target.sram_alignment
    temporaries = aligned(space.per_tuple(problem.temporary_bytes).astype(np.int64), alignment)
    columns = space.columns()
    # A skip loaded into the output tile has no buffers where the reduction is whole.
    sizes_of = [aligned(np.broadcast_to(tile_bytes(operand, columns), (space.count,)), alignment)
                * (not in_place(problem, operand))
                * np.where(skip_into_output(problem, operand, columns), 0, 1)
                for operand in problem.operands]
    # A tensor kept in SRAM is never tiled: its copies cost the same in every tile.
    copies = [np.full(space.count, float(move_cycles(problem, operand, space.tiles[0].tolist(),
                                                     target))) if operand.resident else None
              for operand in problem.operands]
    partials, tiles, counts = zip(*space.kinds())
    # The compute of every tile shape in one call.
    compute = np.split(space.per_tuple(problem.compute_cycles, np.concatenate(tiles)),
                       len(tiles))
    moves = [[copy] * len(partials) if operand.resident else
             kind_transfer_cycles(operand, space, target, partials)
             for operand, copy in zip(problem.operands, copies)]
    kinds = [(count, partial, cycles, [move[number] for move in moves])
             for number, (count, partial, cycles) in enumerate(zip(counts, partials, compute))]
    fills = [padding_fills(problem, operand, columns, target) for operand in problem.operands]
    trips = list(space.trips.T)
    whole = list((space.sizes // space.tiles).T)
    rest = list((space.sizes % space.tiles > 0).T)
    sizes, cycles, memo = [], [], {}
    for order in orders:
        size = temporaries.copy()
        for operand, bytes_ in zip(problem.operands, sizes_of):
            _, changes = space.reuse_periods(operand, order)
            size += np.where(changes, stages, 1) * bytes_
        sizes.append(size)
        cycles.append(program_cycles(problem, target, stages, order, trips, whole, rest,
                                     kinds, fills, memo).astype(np.int64))
    busy = sum(count * compute for count, _, compute, _ in kinds)
    # Flattened as the loop nest visits them: tile tuples outside, orders inside.
    return (np.stack(sizes, axis=1).ravel(), np.stack(cycles, axis=1).ravel(),
            np.repeat(busy, len(orders)))


def describe(problem, schedule: Schedule) -> str:
    tiles = "x".join(f"{d.name}{t}" for d, t in zip(problem.dims, schedule.tiles))
    order = ",".join(problem.dims[i].name for i in schedule.order)
    text = f"tiles {tiles}, loops ({order}), working set {schedule.working_set} B, " \
           f"estimated {schedule.cycles} cycles"
    if problem.kind == "reduce":   # whether the reduced dims fit one SRAM tile
        steps = math.prod(-(-d.size // t) for d, t in zip(problem.dims, schedule.tiles)
                          if d.reduction)
        text += "; reduction whole in one SRAM tile" if steps == 1 else \
            f"; reduction in {steps} tiles, accumulated in SRAM"
    return text


# ---------------------------------------------------------------------------
# Memoised search with relaxation
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Outcome:
    schedule: Schedule | None
    stages: int             # pipeline stages the schedule is built for
    smallest: int           # smallest working set of everything tried
    relaxed: str = ""       # what the schedule gives up to fit, for the remark
    refusal: str = ""       # why nothing fits and what would, when schedule is None


def signature(problem) -> tuple:
    """What a schedule depends on, as a hashable value: the op's name and the
    attributes the search does not write (strides, dilations, strategy,
    epilogue, maps), the problem's loop dims and details, and per operand its
    memref type (shape, element type, layout) and every field of its tile (the
    region it covers, whether it is resident or a padded interior, ...): two
    problems alike in all this cost the same, whichever is searched first.
    Found once per problem (the buffer plan searches one at many budgets): a
    problem is not changed once built."""
    found = problem.__dict__.get("_signature")
    if found is None:
        found = problem.__dict__["_signature"] = _signature(problem)
    return found


def _signature(problem) -> tuple:
    op = problem.op
    attributes = tuple(sorted((name, str(op.attributes[name])) for name in op.attributes
                              if name not in SEARCH_ATTRIBUTES))
    operands = tuple((str(o.value.type),) + tuple(getattr(o, field.name)
                                                  for field in dataclasses.fields(o)
                                                  if field.name != "value")
                     for o in problem.operands)
    # Functions among the details (a matrix op's GEMM shape per tile) follow from the rest.
    details = repr({key: value for key, value in problem.details.items() if not callable(value)})
    # A folded fill: the output starts from it instead of being loaded.
    return (op.name, problem.kind, tuple(problem.dims), operands, attributes, details,
            problem.init_value)


_MEMO: dict = {}
MEMO_ENTRIES = 4096


def search(problem, target: NpuTarget, stages: int, explicit: list[int] | None = None) -> Outcome:
    """The schedule of `problem` for `target` with `stages` pipeline stages
    (explicit tile sizes when given), memoised per op signature."""
    key = (signature(problem), target, stages, tuple(explicit) if explicit is not None else None)
    outcome = _MEMO.get(key)
    if outcome is None:
        if len(_MEMO) >= MEMO_ENTRIES:
            _MEMO.clear()
        outcome = _MEMO[key] = _search(problem, target, stages, explicit)
    return outcome


def _search(problem, target: NpuTarget, stages: int, explicit) -> Outcome:
    schedule, smallest = choose_schedule(problem, target, stages, explicit)
    if schedule is not None:
        return Outcome(schedule, stages, smallest)
    budget = target.max_sram_bytes
    needs = f"the smallest working set is {smallest} B, above the SRAM budget {budget} B"
    # Fewer stages first, then tiles below -tile-min; the cheapest fit wins.
    small_tiles = dataclasses.replace(target, tile_min=1)
    tries = [(target, fewer, f"{fewer} pipeline stage{'s' if fewer > 1 else ''} instead of "
                             f"{stages} (with {stages}, {needs})")
             for fewer in range(stages - 1, 0, -1)]
    if explicit is None and target.tile_min > 1:
        tries += [(small_tiles, fewer, f"tiles below -tile-min={target.tile_min}"
                   + (f" and {fewer} pipeline stage{'s' if fewer > 1 else ''}"
                      if fewer < stages else "") + f" ({needs} otherwise)")
                  for fewer in range(stages, 0, -1)]
    best = None
    for relaxed_target, fewer, why in tries:
        found, size = choose_schedule(problem, relaxed_target, fewer, explicit)
        smallest = min(smallest, size)
        if found is not None and (best is None or found.cycles < best.schedule.cycles):
            best = Outcome(found, fewer, smallest, why)
    if best is not None:
        return dataclasses.replace(best, smallest=smallest)
    what = "with these tile sizes" if explicit is not None else \
        "even with 1 pipeline stage and tiles down to 1" if tries else ""
    fit = aligned(smallest, 1024)
    refusal = f"working set {smallest} B exceeds SRAM budget {budget} B" \
        + (f" {what}" if what else "") + f"; -max-sram-bytes={fit} would fit"
    return Outcome(None, stages, smallest, refusal=refusal)
