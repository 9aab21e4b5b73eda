"""The tile search of `npu-tile`: the cheapest schedule of a tiling problem
that fits the SRAM budget.

A schedule is a tile size per loop dimension and a loop order. The candidate
space is the product of the per-dimension candidates (`candidates`) times the
loop orders (`loop_orders`); the cost model of `npu_tile` is evaluated over
the whole space at once, as numpy arrays:

  - the quantities of one operand (tile bytes, DMA cycles of a tile) depend
    only on the tile sizes of the loop dims it is indexed by, so they are
    computed once per combination of those sizes (the whole tiles' and the
    partial ones' at the ends of the dims) and gathered into the space;
  - a tile's compute cycles and SRAM temporaries are computed once per tile
    tuple and tile shape, shared by every loop order;
  - reuse periods, buffer counts, working sets and estimated cycles are array
    expressions over (tile tuples x loop orders).

The scalar functions (`working_set`, `estimate`, ...) state the model one
candidate at a time; the array evaluation computes the same numbers, and
`choose_schedule` picks the same schedule as a loop over them would: the
cheapest that fits, ties to fewer and then larger tiles, then to the first
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

import dataclasses
import itertools
import math
from dataclasses import dataclass

import numpy as np
from mlir import ir

from ..recipes.problem import Window, element_bytes, in_place
from .. import machine_model
from ..target import NpuTarget

# Attributes the search writes; they do not take part in an op's signature.
SEARCH_ATTRIBUTES = ("npu.tile_sizes", "npu.loop_order", "npu.pipeline_stages",
                     "npu.dataflow")


def _dma_cycles():
    """npu_tile.dma_cycles, the DMA cycles of one operand tile (imported late:
    npu_tile imports this module)."""
    from .npu_tile import dma_cycles
    return dma_cycles


def _dma_view():
    from .npu_tile import dma_view
    return dma_view


@dataclass(frozen=True)
class Schedule:
    tiles: tuple
    order: tuple            # loop dims, outermost first
    cycles: int
    working_set: int


# ---------------------------------------------------------------------------
# The cost model, one candidate at a time
# ---------------------------------------------------------------------------

def trip_counts(problem, tiles) -> list[int]:
    return [-(-d.size // t) for d, t in zip(problem.dims, tiles)]


def reuse_period(operand, order, trips) -> int | None:
    """Iterations of the flattened loop between two changes of the operand's
    tile; None when it never changes (loaded once)."""
    positions = [order.index(d) for d in operand.loop_dims() if trips[d] > 1]
    if not positions:
        return None
    return math.prod(trips[d] for d in order[max(positions) + 1:])


def buffer_count(operand, order, trips, stages: int) -> int:
    return 1 if reuse_period(operand, order, trips) is None else stages


def aligned(size, alignment: int):
    return -(-size // alignment) * alignment


def tile_bytes(operand, tiles) -> int:
    return math.prod(operand.sram_shape(tiles)) * element_bytes(operand.element_type)


def copy_cycles(operand, tiles, target: NpuTarget):
    """A resident operand's tile moves by a vector-unit copy (none when the op
    computes on its SRAM buffer in place), never by DMA."""
    return machine_model.vector_cycles(math.prod(operand.extents(tiles)), target)


def working_set(problem, tiles, order, stages: int, alignment: int = 1) -> int:
    """SRAM bytes of all buffers of the op, each rounded up to the alignment
    (a resident operand computed in place has none)."""
    trips = trip_counts(problem, tiles)
    total = aligned(problem.temporary_bytes(tiles), alignment)
    for operand in problem.operands:
        if in_place(problem, operand):
            continue
        total += buffer_count(operand, order, trips, stages) * aligned(tile_bytes(operand, tiles),
                                                                       alignment)
    return total


def tile_kinds(problem, tiles) -> list[tuple[tuple, int]]:
    """The tiles of the loop nest by shape, as (tile sizes, how many): along a
    dim whose size the tile size does not divide, the last tile is smaller
    (and computes and moves less). The whole tiles come first, the last tile's
    shape last."""
    parts = []
    for dim, tile in zip(problem.dims, tiles):
        whole, rest = divmod(dim.size, tile)
        parts.append([(tile, whole)] + ([(rest, 1)] if rest else []))
    return [(tuple(size for size, _ in combo), math.prod(count for _, count in combo))
            for combo in itertools.product(*parts)]


def move_cycles(problem, operand, tiles, target: NpuTarget):
    """Cycles moving one tile of the operand: its DMA alone on the machine, a
    vector-unit copy for a tensor kept in SRAM, nothing when the op computes
    on that tensor in place."""
    if not operand.resident:
        return _dma_cycles()(operand, tiles, target)
    return 0 if in_place(problem, operand) else copy_cycles(operand, tiles, target)


def padding_fills(problem, operand, tiles, target: NpuTarget) -> tuple:
    """Vector-unit cycles filling a padded input's SRAM buffer with the pad
    value before the loop (npu-promote-to-sram): (a whole buffer, the halo
    its DMA does not write); for numbers or arrays; None for other operands."""
    if operand.pad_value is None or in_place(problem, operand) \
            or not any(isinstance(part, Window) for part in operand.region):
        return None
    extents = operand.extents(tiles)
    halo = 0
    for axis, part in enumerate(operand.region):
        if isinstance(part, Window):
            extent = extents[axis]
            others = math.prod(extents[:axis] + extents[axis + 1:])
            low = np.minimum(part.pad_low, extent)
            for rows in (low, extent - np.minimum(part.pad_low + part.input_size, extent)):
                halo = halo + np.where(rows > 0, machine_model.vector_cycles(rows * others,
                                                                             target), 0)
    return machine_model.vector_cycles(math.prod(extents), target), halo


def estimate(problem, tiles, order, target: NpuTarget, stages: int) -> int:
    trips = trip_counts(problem, tiles)
    whole = [dim.size // tile for dim, tile in zip(problem.dims, tiles)]
    rest = [dim.size % tile > 0 for dim, tile in zip(problem.dims, tiles)]
    kinds = []
    for shape, count in tile_kinds(problem, tiles):
        partial = frozenset(d for d, (size, tile) in enumerate(zip(shape, tiles)) if size < tile)
        kinds.append((count, partial, problem.compute_cycles(shape),
                      [move_cycles(problem, operand, shape, target)
                       for operand in problem.operands]))
    fills = [padding_fills(problem, operand, tiles, target) for operand in problem.operands]
    return int(program_cycles(problem, target, stages, order, trips, whole, rest, kinds, fills))


def steps(whole, rest) -> dict:
    """How a tile's neighbours differ along one loop of `whole` whole tiles
    (and a partial one with `rest`), for a whole tile at a uniform index:
    (the tile after: steps to a whole or the partial tile, or carries to the
    next loop out; the tile before: steps back or carries) -> share."""
    one, many = np.where(whole == 1, 1.0, 0.0), np.where(whole > 1, 1 / whole, 0.0)
    return {("carry", "carry"): np.where(rest, 0.0, one),
            ("partial", "carry"): np.where(rest, one, 0.0),
            ("whole", "carry"): many,
            ("carry", "back"): np.where(rest, 0.0, many),
            ("partial", "back"): np.where(rest, many, 0.0),
            ("whole", "back"): np.where(whole > 1, (whole - 2) / whole, 0.0)}


def neighbours(loops, partial, cases) -> list:
    """The tiles before and after one with partial tiles along the dims in
    `partial`, in the loop order, for numbers or arrays: (share of the tiles
    of that shape, dims the tile after is partial along or None for the last
    tile, the dims whose tile index changes to it, the same for the tile
    before or None for the first tile, the dims changing from it). `cases`:
    per loop, its `steps`.

    The tile after: the innermost loop not at its last tile steps (to a whole
    tile or to the partial one), the loops inside it start again at a whole
    tile. The tile before: the innermost loop not at its first tile steps
    back (to a whole tile), the loops inside it end at their last tile
    (partial where they have a rest). A tile's index along each loop is
    uniform over the tiles of its shape, independently per loop."""
    done = []
    # (share, the tile after: pending dims or (partial, dims), the one before: the same)
    walks = [(1.0, ("pending", frozenset()), ("pending", frozenset()))]
    for d in reversed(loops):
        # The partial tile is the last one along d, after a whole one.
        along = {("carry", "back"): 1.0} if d in partial else cases[d]
        stepped = []
        for share, after, before in walks:
            merged = {}
            for (ahead, back), chance in along.items():
                key = (ahead if after[0] == "pending" else None,
                       back if before[0] == "pending" else None)
                merged[key] = merged[key] + chance if key in merged else chance
            for (ahead, back), chance in merged.items():
                if not np.any(chance):
                    continue
                next_after, next_before = after, before
                if ahead == "carry":
                    next_after = ("pending", after[1] | {d})
                elif ahead is not None:
                    moved = after[1] | {d}
                    next_after = ((partial - moved) | ({d} if ahead == "partial" else set()),
                                  moved)
                if back == "carry":
                    next_before = ("pending", before[1] | {d})
                elif back is not None:
                    next_before = ((partial - {d}) | before[1], before[1] | {d})
                walk = (share * chance, next_after, next_before)
                (stepped if "pending" in (next_after[0], next_before[0]) else done).append(walk)
        walks = stepped
    # Walks still pending at the outermost loop: the last tile, or the first.
    return [(share, *((None, after[1]) if after[0] == "pending" else after),
             *((None, before[1]) if before[0] == "pending" else before))
            for share, after, before in done + walks]


def dma_batch(dmas, copies, target: NpuTarget) -> tuple:
    """Tiles moved together: DMAs and vector-unit copies, each given as
    (cycles alone, 1 if it runs else 0). Returns (the DMAs that run, their
    transfers, their cycles alone, the copies' cycles); `joined` adds two,
    `batch_cycles` times one."""
    setup = target.dma_setup_cycles
    runs = transfers = busy = copied = 0.0
    for cycles, ran in dmas:
        runs = runs + ran
        transfers = transfers + ran * (cycles - setup)
        busy = busy + ran * cycles
    for cycles, ran in copies:
        copied = copied + ran * cycles
    return runs, transfers, busy, copied


def joined(first, second) -> tuple:
    return tuple(a + b for a, b in zip(first, second))


def rows(values, like) -> np.ndarray:
    """Numbers or arrays shaped like `like`, as the rows of one array."""
    stack = np.empty((len(values),) + np.shape(like))
    for row, value in enumerate(values):
        stack[row] = value
    return stack


def batch_cycles(batch, target: NpuTarget, compute=0.0, vector=False):
    """Cycles of a dma_batch from idle channels, beside `compute`, as the
    simulator times them (machine_model.SharedDram): each channel spends a
    DMA's setup alone, setups on different channels overlap, and the
    transfers take the DRAM one at a time, so the DMAs last one setup plus all
    their transfers, or as long as the busiest channel, which
    npu-promote-to-sram gives one DMA in `channels` (an average DMA each),
    whichever is longer. The copies run on the vector unit: after the compute
    when it runs there too (`vector`), else beside it."""
    runs, transfers, busy, copied = batch
    channels = target.dma_channels
    busiest = np.ceil(runs / channels) * busy / np.maximum(runs, 1)
    dmas = np.maximum(np.minimum(runs, 1) * target.dma_setup_cycles + transfers, busiest)
    return np.maximum(dmas, compute + copied if vector else np.maximum(compute, copied))


def program_cycles(problem, target: NpuTarget, stages: int, order, trips, whole, rest, kinds,
                   fills):
    """Cycles of the op's tile program (npu-promote-to-sram), for numbers or for
    arrays over candidates. Per loop dim, `trips`, `whole` (its whole tiles)
    and `rest` (whether it has a partial tile); `kinds`: per tile shape (the
    whole tiles first, the last tile's last), (how many tiles, the dims it is
    partial along, its compute cycles, the cycles moving each operand's tile);
    `fills`: per operand, `padding_fills`.

    An operand's tile is loaded when it changes from one tile to the next, the
    output tile stored when it changes (`neighbours`), each at the size of the
    tile it belongs to. The tiles an iteration moves move together
    (`batch_cycles`). With one stage every iteration loads its tile, computes,
    then stores its output tile. With more, iteration t computes tile t while
    tile t+1 is loaded and tile t-1's output stored (before, and waited, when
    the output tile is loaded too or kept in SRAM, or no DMA loads a changing
    tile); the first loads (tile 0 and the tiles loaded once) and the last
    store are not overlapped. Before them, a padded input's buffers are filled
    with the pad value: every buffer of a tile that changes, else its halo."""
    operands = problem.operands
    vector = not problem.recipe.matrix_unit    # copies queue behind the compute
    dims = [operand.loop_dims() for operand in operands]
    loading = [number for number, operand in enumerate(operands) if problem.loads(operand)]
    output = operands.index(problem.output)
    moves_of = {partial: moves for _, partial, _, moves in kinds}
    uneven = kinds[-1][1]
    everything = frozenset(range(len(trips)))
    none = dma_batch((), (), target)
    changed, batches = {}, {}

    def changes(number, moved):
        """1 where operand `number`'s tile changes when the tiles along `moved` do."""
        key = (number, moved & dims[number])
        if key not in changed:
            ran = False
            for d in key[1]:
                ran = ran | (trips[d] > 1)
            changed[key] = np.where(ran, 1.0, 0.0)
        return changed[key]

    def loads(partial, moved):
        """The loads of the tiles (partial along `partial`) that change along
        `moved`: all of them with None."""
        key = ("loads", partial, moved)
        if key not in batches:
            moves = moves_of[partial]
            loaded = [(operands[number].resident, moves[number],
                       1.0 if moved is None else changes(number, moved)) for number in loading]
            batches[key] = dma_batch(
                [(cycles, ran) for resident, cycles, ran in loaded if not resident],
                [(cycles, ran) for resident, cycles, ran in loaded if resident], target)
        return batches[key]

    def store(partial, moved):
        """The store of the output tile (partial along `partial`) when it changes
        along `moved`: in any case with None."""
        key = ("store", partial, moved)
        if key not in batches:
            move = [(moves_of[partial][output], 1.0 if moved is None else changes(output, moved))]
            batches[key] = dma_batch(() if problem.output.resident else move,
                                     move if problem.output.resident else (), target)
        return batches[key]

    # Loops of one tile never step.
    loops = [d for d in order if np.any(trips[d] > 1)]
    cases = {d: steps(whole[d], rest[d]) for d in loops}
    _, _, first_compute, _ = kinds[0]
    first_loads = batch_cycles(loads(frozenset(), None), target)
    for number, fill in enumerate(fills):
        if fill is not None:
            first_loads = first_loads + np.where(changes(number, everything), stages * fill[0],
                                                 fill[1])
    last_store = batch_cycles(store(uneven, None), target)
    output_changes = changes(output, everything)
    body = 0.0
    if stages == 1:
        for count, partial, compute, _ in kinds:
            body = body + count * compute
            for share, after, after_moved, before, before_moved in neighbours(
                    loops, partial, cases):
                if before is not None:   # tile 0 loads before the loop
                    body = body + count * share * batch_cycles(loads(partial, before_moved),
                                                               target)
                ran = output_changes if after is None else changes(output, after_moved)
                body = body + count * share * ran * batch_cycles(store(partial, None), target)
        # An output tile that never changes is stored after the loop.
        return np.trunc(first_loads + body + (1 - output_changes) * last_store)
    carried = 0.0
    if not problem.loads(problem.output) and not problem.output.resident:
        for number in loading:
            if not operands[number].resident:
                carried = np.maximum(carried, changes(number, everything))
    for count, partial, compute, _ in kinds:
        # Each iteration loads the tile after's changed tiles and stores the tile
        # before's output tile if it changes.
        entries = []
        for share, after, after_moved, before, before_moved in neighbours(
                loops, partial, cases):
            loaded = none if after is None or not any(after_moved & dims[n] for n in loading) \
                else loads(after & uneven, after_moved)
            stored = none if before is None or not before_moved & dims[output] \
                else store(before & uneven, before_moved)
            entries.append((share, loaded, stored))
        # All entries at once, one row each.
        shares, loaded, stored = zip(*entries)
        shares = rows(shares, compute)
        load = [rows(part, compute) for part in zip(*loaded)]
        saved = [rows(part, compute) for part in zip(*stored)]
        together = waited = 0.0
        if np.any(carried):
            for cycles in shares * batch_cycles(joined(load, saved), target, compute, vector):
                together = together + cycles
        if not np.all(carried):
            for cycles in shares * (batch_cycles(saved, target)
                                    + batch_cycles(load, target, compute, vector)):
                waited = waited + cycles
        body = body + count * np.where(carried, together, waited)
    many = first_loads + body + last_store
    iterations = 1
    for trip in trips:
        iterations = iterations * trip
    return np.trunc(np.where(iterations > 1, many, first_loads + first_compute + last_store))


# ---------------------------------------------------------------------------
# The candidate space
# ---------------------------------------------------------------------------

def candidates(dim, target: NpuTarget) -> list[int]:
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
    # -tile-min bounds the array-sized steps too; a whole dim is always a candidate.
    found = {value for value in found if value >= target.tile_min or value == size}
    if not found:
        found.add(min(size, max(target.tile_min, 1)))
    return sorted(found)


def loop_orders(problem) -> list[tuple]:
    parallel = [i for i, d in enumerate(problem.dims) if not d.reduction]
    reduction = tuple(i for i, d in enumerate(problem.dims) if d.reduction)
    varied = [i for i in parallel if problem.dims[i].candidates not in ("one", "full")]
    fixed = [i for i in parallel if i not in varied]
    if not problem.recipe.matrix_unit or len(varied) > 3:
        return [tuple(parallel) + reduction]
    return [tuple(fixed) + perm + reduction for perm in itertools.permutations(varied)]


MAX_CANDIDATES = 40000


def whole_dims(problem) -> set[int]:
    """The loop dims of tensors kept in SRAM, which are never tiled (a dim the
    recipe only takes one at a time stays so: `reads_resident_whole` says
    whether the op can then read the tensor a slice at a time)."""
    return {d for operand in problem.operands if operand.resident
            for d in operand.loop_dims() if problem.dims[d].candidates != "one"}


def reads_resident_whole(problem, tiles) -> bool:
    """Whether the schedule reads every resident operand whole, but along the
    dims its SRAM tile drops (a batch the op takes one at a time), on which it
    computes in place a slice at a time."""
    for operand in problem.operands:
        if not operand.resident:
            continue
        sliced = {part.dim for axis, part in enumerate(operand.region)
                  if axis in operand.dropped} if in_place(problem, operand) else set()
        if any(tiles[d] < problem.dims[d].size for d in operand.loop_dims() - sliced):
            return False
    return True


def tile_grid(problem, target: NpuTarget, orders, explicit=None) -> list[list[int]]:
    """Candidate tile sizes per loop dim, thinned to at most MAX_CANDIDATES
    schedules (tile tuples x loop orders)."""
    if explicit is not None:
        return [[min(t, d.size)] for t, d in zip(explicit, problem.dims)]
    whole = whole_dims(problem)
    per_dim = [[dim.size] if d in whole else candidates(dim, target)
               for d, dim in enumerate(problem.dims)]
    while math.prod(len(c) for c in per_dim) * len(orders) > MAX_CANDIDATES:
        longest = max(range(len(per_dim)), key=lambda i: len(per_dim[i]))
        per_dim[longest] = per_dim[longest][::2] + ([per_dim[longest][-1]]
                                                    if len(per_dim[longest]) % 2 == 0 else [])
    return per_dim


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
SPACE_ENTRIES = 64   # each holds arrays over up to MAX_CANDIDATES schedules


def evaluated_space(problem, target: NpuTarget, stages: int, explicit=None) -> tuple:
    """(loop orders, tile tuples, their iterations, working sets, estimated
    cycles) of the problem's candidates. They do not depend on the SRAM
    budget, of which the buffer plan tries many: memoised per op signature
    and target but the budget."""
    key = (signature(problem), dataclasses.replace(target, max_sram_bytes=0), stages,
           tuple(explicit) if explicit is not None else None)
    if key not in _SPACES:
        if len(_SPACES) >= SPACE_ENTRIES:
            _SPACES.clear()
        orders = loop_orders(problem)
        space = Space(problem, tile_grid(problem, target, orders, explicit))
        _SPACES[key] = (orders, space.tiles, space.iterations) + \
            evaluate_space(problem, space, orders, target, stages)
    return _SPACES[key]


def choose_schedule(problem, target: NpuTarget, stages: int, explicit: list[int] | None = None):
    """(best Schedule or None, smallest working set seen)."""
    orders, tiles, iterations, sizes, cycles = evaluated_space(problem, target, stages, explicit)
    smallest = int(sizes.min())
    fits = np.flatnonzero(sizes <= target.max_sram_bytes)
    if fits.size == 0:
        return None, smallest
    tuple_of = fits // len(orders)
    key_iterations = iterations[tuple_of]
    key_sum = -tiles.sum(axis=1)[tuple_of]
    best = fits[np.lexsort((fits, key_sum, key_iterations, cycles[fits]))[0]]
    return Schedule(tuple(int(t) for t in tiles[best // len(orders)]), orders[best % len(orders)],
                    int(cycles[best]), int(sizes[best])), smallest


def evaluate_space(problem, space: "Space", orders, target: NpuTarget, stages: int):
    """(working sets, estimated cycles) of every schedule of the space, tile
    tuples outside and loop orders inside, as flat arrays."""
    alignment = target.sram_alignment
    temporaries = aligned(space.per_tuple(problem.temporary_bytes).astype(np.int64), alignment)
    columns = space.columns()
    sizes_of = [aligned(np.broadcast_to(tile_bytes(operand, columns), (space.count,)), alignment)
                * (not in_place(problem, operand)) for operand in problem.operands]
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
    sizes, cycles = [], []
    for order in orders:
        size = temporaries.copy()
        for operand, bytes_ in zip(problem.operands, sizes_of):
            _, changes = space.reuse_periods(operand, order)
            size += np.where(changes, stages, 1) * bytes_
        sizes.append(size)
        cycles.append(program_cycles(problem, target, stages, order, trips, whole, rest,
                                     kinds, fills).astype(np.int64))
    # Flattened as the loop nest visits them: tile tuples outside, orders inside.
    return np.stack(sizes, axis=1).ravel(), np.stack(cycles, axis=1).ravel()


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
    memref type (shape, element type, layout) and the region a tile covers."""
    op = problem.op
    attributes = tuple(sorted((name, str(op.attributes[name])) for name in op.attributes
                              if name not in SEARCH_ATTRIBUTES))
    operands = tuple((o.role, str(o.value.type), o.region, o.is_output, o.dropped, o.pad_value,
                      o.resident)
                     for o in problem.operands)
    # Functions among the details (a matrix op's GEMM shape per tile) follow from the rest.
    details = repr({key: value for key, value in problem.details.items() if not callable(value)})
    return (op.name, problem.kind, tuple(problem.dims), operands, attributes, details)


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
