"""The cost model of the tile search, one candidate at a time: a tile
program timed as the simulator runs it (`npu-promote-to-sram`'s program).

Every tile shape (the whole tiles and the partial ones at the ends of uneven
dims) has its own compute and DMAs; each iteration loads the next tile's
changed operands and stores the previous output tile; DMAs issued together
overlap their setups across the channels and share the DRAM. `estimate` and
`program_cycles` state it; `tile_search` evaluates the same model over a
whole candidate space as numpy arrays."""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..recipes.problem import Window, element_bytes, in_place, skip_into_output
from .. import machine_model
from ..target import NpuTarget

def _dma_cycles():
    """npu_tile.dma_cycles, the DMA cycles of one operand tile (imported late:
    npu_tile imports this module)."""
    from .npu_tile import dma_cycles
    return dma_cycles


def _dma_view():
    from .npu_tile import dma_view
    return dma_view


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
        if in_place(problem, operand) or skip_into_output(problem, operand, tiles):
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


def compute_busy(problem, tiles) -> int:
    """Cycles the op's compute engine is busy over the whole loop nest: its
    tiles' compute, each at its shape."""
    return sum(count * int(problem.compute_cycles(shape))
               for shape, count in tile_kinds(problem, tiles))


# What the search minimises besides time: the compute engine's busy cycles at
# this weight. Where an op waits for DMA, fewer of them cost no time and leave
# the engine to overlapped ops; where it computes, they are its time. At 1/2 a
# DMA-bound op gives up an estimated cycle only for two busy cycles saved (its
# larger tiles fill the pipeline longer before the first matmul).
BUSY_WEIGHT = 1 / 2


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
                if not (chance.any() if isinstance(chance, np.ndarray) else chance):
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
                   fills, memo: dict | None = None):
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
    with the pad value: every buffer of a tile that changes, else its halo.
    `memo`: what does not depend on the loop order, shared by the calls for
    the orders of one space."""
    operands = problem.operands
    vector = not problem.recipe.matrix_unit    # copies queue behind the compute
    dims = [operand.loop_dims() for operand in operands]
    loading = [number for number, operand in enumerate(operands) if problem.loads(operand)]
    output = operands.index(problem.output)
    moves_of = {partial: moves for _, partial, _, moves in kinds}
    uneven = kinds[-1][1]
    everything = frozenset(range(len(trips)))
    none = dma_batch((), (), target)
    memo = {} if memo is None else memo
    changed, batches = memo.setdefault("changed", {}), memo.setdefault("batches", {})

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
    loops = [d for d in order if (np.asarray(trips[d]) > 1).any()]
    steps_of = memo.setdefault("steps", {})
    for d in loops:
        if d not in steps_of:
            steps_of[d] = steps(whole[d], rest[d])
    cases = {d: steps_of[d] for d in loops}
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
