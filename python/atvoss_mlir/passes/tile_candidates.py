"""The candidate space of `npu-tile`'s search: the tile sizes tried per loop
dimension and the loop orders, and which dims a tensor kept in SRAM fixes.

Per dimension (`candidates`): the full size, multiples of the array size up to
-tile-max and, below that, powers of two down to -tile-min; a streamed dim
(matmul M) is not capped by -tile-max, output rows of convolutions take every
balanced split. The dims of a tensor kept in SRAM are not tiled, but those the
op reads or writes it along a tile at a time, in place (`whole_dims`,
`tiled_in_place`). A space over MAX_CANDIDATES schedules (tile tuples x loop
orders) is thinned along its longest dim (`thinned`), keeping the small and
middling sizes and the whole dim.
"""

from __future__ import annotations

import itertools
import math

from ..recipes.problem import Tiled, Window, in_place, views_buffer_as_matrix
from ..recipes.requantize import REQUANTIZE
from ..target import NpuTarget


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
    orders = [tuple(fixed) + perm + reduction for perm in itertools.permutations(varied)]
    if reduction and direct_conv_tiles(problem, problem.output) and accumulates_in_place(problem):
        # The reduction outside the innermost output loop: each reduction step
        # reads its input chunk once for all the output tiles, whose partial
        # sums wait in the tensor kept in SRAM. (Only a direct conv's: the
        # buffer plan's estimates of GEMM-form convs kept so did not match
        # the tile search's.)
        orders += [tuple(fixed) + perm[:-1] + reduction + perm[-1:]
                   for perm in itertools.permutations(varied) if perm]
    return orders


def reduction_innermost(problem, order) -> bool:
    """Whether the loop order ends with the reduction loops (or has none)."""
    reductions = {d for d, dim in enumerate(problem.dims) if dim.reduction}
    return not reductions or set(order[-len(reductions):]) == reductions


def accumulates_in_place(problem) -> bool:
    """Whether the op accumulates its output tiles in place, in a tensor kept
    in SRAM that it writes tile by tile, with no accumulator of its own (an
    fp32 output, no requantisation): a tile's partial sums may wait there
    while the op computes others."""
    output = problem.output
    return problem.recipe.accumulates and output.resident and \
        written_by_tiles(problem, output) and REQUANTIZE not in problem.details and \
        str(output.element_type) == "f32"


def direct_conv_tiles(problem, operand) -> bool:
    """A direct conv's output kept in SRAM (not the interior of a padded
    buffer), which it writes tile by tile in place, each tile a strided view
    of the tensor: only with its reduction outside the innermost output loop
    (tile_search.only_reduction_outer); else whole, as before."""
    return problem.recipe.name == "conv2d" and not views_buffer_as_matrix(problem) and \
        operand.is_output and operand.resident and not operand.padded_interior


MAX_CANDIDATES = 40000


def written_by_tiles(problem, operand) -> bool:
    """A resident output the op writes tile by tile in place: an int8 one,
    each tile's requantisation writing its view of the tensor from the tile's
    own int32 accumulator (a whole-tensor accumulator would be four times its
    size); an elementwise op's, each tile computed into its view; a depthwise
    conv's, each block of pixels (all channels) computed into its strided
    view; a GEMM-form conv's, each tile's pixels a matrix with a row
    stride (`pixel_rows`). All but the int8 one not into the interior of a
    buffer kept padded, which they write whole."""
    return operand.is_output and (REQUANTIZE in problem.details or (
        not operand.padded_interior
        and (problem.recipe.name in ("elementwise", "depthwise_conv2d")
             or views_buffer_as_matrix(problem) or direct_conv_tiles(problem, operand)))) \
        and all(isinstance(part, Tiled) for part in operand.region) \
        and in_place(problem, operand)


def pixel_rows(problem, tiles) -> bool:
    """Whether each output tile a GEMM-form conv writes in place collapses to
    uniformly strided rows of pixels: whole output rows (of one image, unless
    whole images), or part of one row of one image."""
    if REQUANTIZE in problem.details or not views_buffer_as_matrix(problem):
        return True
    output = problem.output
    if not output.resident or not written_by_tiles(problem, output):
        return True
    batch, rows, columns = (part.dim for part in output.region[:3])
    whole = [tiles[d] == problem.dims[d].size for d in (rows, columns)]
    if whole[1] and (whole[0] or tiles[batch] == 1):
        return True
    return tiles[rows] == 1 and tiles[batch] == 1


def read_by_tiles(problem, operand) -> bool:
    """A resident input the op reads a tile at a time in place along its
    parallel dims: the skip tensor of a residual add (each tile adds its view
    of the tensor), a direct conv's input (each tile reads its window of
    rows)."""
    if operand.is_output or not in_place(problem, operand):
        return False
    windows = [part for part in operand.region if isinstance(part, Window)]
    return all(isinstance(part, (Tiled, Window)) for part in operand.region) and \
        not (windows and views_buffer_as_matrix(problem)) and \
        not any(problem.dims[part.dim].reduction for part in windows)


def tiled_in_place(problem, operand) -> set[int]:
    """The loop dims along which the op reads or writes a resident operand a
    tile at a time, in place (its reduction dims it reads whole)."""
    if written_by_tiles(problem, operand):
        if problem.recipe.name == "depthwise_conv2d":
            # By pixels, its channels whole: a channel slice would take a
            # slice of the weights per tile, loaded again for each.
            return {part.dim for part in operand.region[:-1]}   # all Tiled, as written
        return operand.loop_dims()
    if read_by_tiles(problem, operand):
        return {d for d in operand.loop_dims() if not problem.dims[d].reduction}
    return set()


def whole_dims(problem) -> set[int]:
    """The loop dims of tensors kept in SRAM, which are never tiled (a dim the
    recipe only takes one at a time stays so: `reads_resident_whole` says
    whether the op can then read the tensor a slice at a time); but those
    along which it is `tiled_in_place`."""
    return {d for operand in problem.operands if operand.resident
            for d in operand.loop_dims() - tiled_in_place(problem, operand)
            if problem.dims[d].candidates != "one"}


def reads_resident_whole(problem, tiles) -> bool:
    """Whether the schedule reads every resident operand whole, but along the
    dims its SRAM tile drops or the op always takes one at a time (a batch),
    on which it computes in place a slice at a time, and those it is
    `tiled_in_place` along."""
    for operand in problem.operands:
        if not operand.resident:
            continue
        sliced = {part.dim for axis, part in enumerate(operand.region)
                  if axis in operand.dropped} if in_place(problem, operand) else set()
        sliced |= {part.dim for part in operand.region
                   if isinstance(part, Tiled) and problem.dims[part.dim].candidates == "one"}
        if any(tiles[d] < problem.dims[d].size
               for d in operand.loop_dims() - sliced - tiled_in_place(problem, operand)):
            return False
    return pixel_rows(problem, tiles)


def tile_grid(problem, target: NpuTarget, orders, explicit=None) -> list[list[int]]:
    """Candidate tile sizes per loop dim, thinned to at most MAX_CANDIDATES
    schedules (tile tuples x loop orders)."""
    if explicit is not None:
        return [[min(t, d.size)] for t, d in zip(explicit, problem.dims)]
    whole = whole_dims(problem)
    # Along the dims it reads or writes a resident tensor in place a tile at a
    # time, the op may still take it whole, as along the others.
    in_place_dims = {d for operand in problem.operands if operand.resident
                     for d in tiled_in_place(problem, operand)}
    per_dim = [[dim.size] if d in whole else
               sorted(set(candidates(dim, target)) |
                      ({dim.size} if d in in_place_dims and dim.candidates != "one" else set()))
               for d, dim in enumerate(problem.dims)]
    # Thinned for the orders with the reduction innermost: the reduction-outer
    # ones an op accumulating in place may also take (loop_orders) add to the
    # schedules rather than take tile sizes away.
    innermost = [order for order in orders if reduction_innermost(problem, order)]
    while math.prod(len(c) for c in per_dim) * len(innermost) > MAX_CANDIDATES:
        longest = max(range(len(per_dim)), key=lambda i: len(per_dim[i]))
        per_dim[longest] = thinned(per_dim[longest])
    return per_dim


def thinned(values: list[int]) -> list[int]:
    """Every other value of the upper half of `values` (sorted) dropped, the
    largest kept: repeated, the sizes left grow geometrically, so the small
    and middling tiles stay (where a long dim's best tile usually is) and the
    whole dim stays a candidate."""
    if len(values) <= 2:
        return values[-1:]
    half = len(values) // 2
    upper = values[half:-1][::2] + [values[-1]]
    return values[:half] + upper
