"""npu-tile: choose tile sizes and a loop order for every linalg op the NPU runs.

Runs on memrefs (after bufferization). For each linalg op it builds a
`TilingProblem` -- the op's loop dimensions and, per operand, which part of the
operand a tile of the loops touches (with the input halo of convolutions and
pooling) -- then picks tile sizes and a loop order with the cost model below,
records them on the op (`npu.tile_sizes`, `npu.loop_order`; `npu.pipeline_stages`
when only fewer stages than the target's fit) and says why in a remark. `npu-promote-to-sram` reads them to build the tiled program. Ops the
NPU cannot run stay as they are (the fallback engine runs them) with a remark
giving the reason.

Cost model (one tile = one iteration of the flattened tile loop; tile_cost.py
states it in full, as the simulator times the tile program):
  compute(tile)  matrix ops: SCALE-Sim's closed form for a GEMM M x N x K on the
                 R x C array (weight-stationary: ceil(K/R)*ceil(N/C) folds, each
                 2R + C + M - 2 cycles; output-stationary: M on rows, K streamed);
                 vector ops: elements * taps / lanes.
  tile shapes    along a dim the tile size does not divide, the last tile is
                 smaller: every shape of tile counts with its own compute and
                 DMAs, as many times as there are tiles of that shape.
  dma(tile)      per operand: setup + bursts * burst / bandwidth. A tile is
                 loaded when it changes (an operand that does not depend on the
                 innermost loops is not reloaded: weights stay resident,
                 accumulators stay in SRAM across the reduction loop), on the
                 iterations where it changes, not spread over the others.
  DMAs together  the DMAs of one iteration share the channels: setups on
                 different channels overlap, transfers take the DRAM one at a
                 time (one setup + all transfers, or all DMAs' cycles / channels,
                 whichever is longer).
  iteration      max(compute, DMAs) with pipeline-stages >= 2 (tile t computes
                 while tile t+1 loads and the output tile before it is stored),
                 compute + DMAs with 1 stage.
  working set    sum over operands of tile bytes x buffers (pipeline-stages for
                 tiles that change, 1 for resident ones) + SRAM temporaries;
                 must fit max-sram-bytes.
Candidates per dimension: the full size, multiples of the array size up to
tile-max and, below that, powers of two down to tile-min (dims that map onto
the array: M/N/K, output/input channels); output rows of convolutions take
every balanced split. The streamed dimension (matmul M, conv output pixels)
is not capped by tile-max: a longer stream amortises the array's weight fill.
Loop orders: the output's loops in every order, the reduction innermost; for a
direct conv accumulating in place into its output kept in SRAM (fp32, written
a tile at a time), also a split reduction just outside the innermost output
loop, each input chunk then loaded once for all the output tiles
(tile_candidates).
The cheapest candidate that fits wins; ties go to fewer, larger tiles. The
search (tile_search.py; the candidates, tile_candidates.py) evaluates all
candidates at once, memoises schedules per op signature, and tries fewer
stages and tiles below tile-min before it refuses.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from mlir import ir

from .. import machine_model
from ..block_order import unchanged_blocks
from ..recipes import linalg_ops, tiling_problem
from ..recipes.loops import tile_with_loops
from ..recipes.sram_ops import dataflow_of, epilogue
from ..recipes.problem import (DATAFLOW_ATTR, LOOP_ORDER_ATTR, TILE_SIZES_ATTR, OperandTile,
                               Strided, TilingProblem, Unsupported, Malformed, checked_attr,
                               element_bytes, root_buffer)
from ..target import NpuTarget
from . import ModulePass, PassContext
from ..diagnostics import name_of
from .buffer_plan import resident_budgets
from ..frontend.builders import generic, maximum, minimum, scalar
from ..recipes.ir_queries import ACTIVATION_ATTR, drop_epilogue
from ..recipes.pooling import SEPARABLE, WHOLE_WINDOW_ATTR
from ..recipes.prologue import PROLOGUE
# The search over tile sizes and loop orders; its names stay importable from here.
from .tile_cost import (buffer_count, estimate, reuse_period, trip_counts,  # noqa: F401
                        working_set)
from .tile_candidates import (MAX_CANDIDATES, candidates, loop_orders,  # noqa: F401
                              reads_resident_whole)
from .tile_search import Schedule, choose_schedule, describe, search  # noqa: F401

STAGES_ATTR = "npu.pipeline_stages"    # set when an op fits only with fewer stages


def split_epilogue(op) -> str | None:
    """Apply the activation folded into `op` (npu-fuse-epilogue) as an
    elementwise op of its own on the op's output, right after it, and drop
    it from the op: the fallback engine runs a linalg op as written, without
    the NPU ops' epilogue. Else why not (a malformed attribute, or an
    activation other than relu and clips, which are all the pass folds)."""
    try:
        kind, clip_min, clip_max = epilogue(op)
    except Malformed as reason:
        return str(reason)
    bounds = {"relu": (0.0, None), "relu6": (0.0, 6.0), "clip": (clip_min, clip_max)}.get(kind)
    output = op.operands[len(op.operands) - 1]
    if bounds is None or not isinstance(output.type, ir.MemRefType):
        return f"it stays on the fallback engine with a folded {kind} it cannot apply"
    low, high = bounds
    rank = ir.MemRefType(output.type).rank
    with ir.InsertionPoint.after(op), op.location:
        def activation(arguments):
            value = arguments[0]
            if low is not None:
                value = maximum(value, scalar(low, value.type))
            if high is not None:
                value = minimum(value, scalar(high, value.type))
            return value
        identity = ir.AffineMap.get_identity(rank)
        generic([output], [identity], output, identity, ["parallel"] * rank, activation)
    drop_epilogue(op)
    return None


def given_stages(op) -> int | None:
    """The pipeline stages written on the op (fewer than the target's fit, or tuned)."""
    return checked_attr(op, STAGES_ATTR, ir.IntegerAttr, lambda stages: stages >= 1,
                        "a positive integer")


# ---------------------------------------------------------------------------
# Cost model
# ---------------------------------------------------------------------------

def dma_view(operand: OperandTile) -> tuple:
    """(shape, strides in elements, element bytes) of the operand's DRAM buffer
    as its tiles read it (a strided region reads every stride-th element)."""
    memref = ir.MemRefType(operand.value.type)
    strides = tuple(stride * part.stride if isinstance(part, Strided) else stride
                    for stride, part in zip(machine_model.identity_strides(memref.shape),
                                            operand.region))
    return tuple(memref.shape), strides, element_bytes(memref.element_type)


def dma_cycles(operand: OperandTile, tiles, target: NpuTarget) -> int:
    """The DMA of the operand's first tile (its DRAM view from the buffer's
    start), timed by the machine model as the simulator times it."""
    _, strides, itemsize = dma_view(operand)
    return machine_model.dma_cycles(tuple(operand.extents(tiles)), strides, itemsize, 0, target)


def given_schedule(op, problem: TilingProblem, target: NpuTarget, stages: int):
    """The schedule written on the op (`npu.tile_sizes`, `npu.loop_order`), as
    (Schedule or None if it does not fit, its working set); (None, None) when
    the attributes do not match the op's loops."""
    if TILE_SIZES_ATTR not in op.attributes or LOOP_ORDER_ATTR not in op.attributes \
            or not all(isinstance(op.attributes[name], ir.DenseI64ArrayAttr)
                       for name in (TILE_SIZES_ATTR, LOOP_ORDER_ATTR)):
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


def sram_left(op, problem: TilingProblem, target: NpuTarget, budgets: dict) -> NpuTarget:
    """The target with the SRAM an op's tiles may use: below the tensors kept in
    SRAM (npu-keep-in-sram) that live across it, and below those its problem
    writes (an int8 result the op's folded requantisation writes is allocated
    after the op)."""
    outer = op.operation
    while outer.parent is not None and outer.parent.name != "func.func":
        outer = outer.parent
    block = outer.block
    if block not in budgets:
        budgets[block] = resident_budgets(block, target.max_sram_bytes)
    budget = budgets[block].get(outer, target.max_sram_bytes)
    for operand in problem.operands:
        alloc = root_buffer(operand.value).owner
        if operand.resident and alloc.name == "npu.alloc" and "offset" in alloc.attributes:
            budget = min(budget, ir.IntegerAttr(alloc.attributes["offset"]).value)
    if budget == target.max_sram_bytes:
        return target
    return dataclasses.replace(target, max_sram_bytes=budget)


def matrix_dataflow(problem, tiles, target: NpuTarget) -> str | None:
    """The dataflow of a matrix-unit op, chosen on its full tile by the machine
    model (the target's when it names one); None for other ops."""
    gemm = problem.details.get("gemm")
    if gemm is None:
        return None
    m, n, k, int8 = gemm(tiles)
    return machine_model.gemm_schedule(m, n, k, target, int8)[1]


@dataclass(frozen=True)
class NpuTile(ModulePass):
    argument = "npu-tile"
    summary = "Choose tile sizes and loop order of each linalg op from the SRAM budget " \
              "and a cost model"

    tile_sizes: list[int] = field(default_factory=list)

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            diagnostics = context.diagnostics
            stages = context.target.pipeline_stages
            budgets = {}
            problems = []
            with unchanged_blocks():
                for op in linalg_ops(module):
                    refused = refused_element_type(op)
                    if refused is not None:
                        diagnostics.error(op.location, f"'{op.name}': {refused}")
                        continue
                    try:
                        problems.append((op, tiling_problem(op, context.target), None))
                    except Malformed as reason:
                        diagnostics.error(op.location, f"'{op.name}': {reason}")
                    except Unsupported as reason:
                        problems.append((op, None, str(reason)))
            # Fills and padded copies folded into the op that reads them.
            absorbed = [a for _, problem, _ in problems if problem for a in problem.absorbed_ops]
            problems = [entry for entry in problems if entry[0] not in absorbed]
            for op, problem, reason in problems:
                if problem is None:
                    diagnostics.remark(op.location, f"'{op.name}' stays on the fallback "
                                                    f"engine: {reason}")
                    failed = split_epilogue(op) if ACTIVATION_ATTR in op.attributes else None
                    if failed is not None:
                        diagnostics.error(op.location, f"'{op.name}': {failed}")
                    continue
                target = sram_left(op, problem, context.target, budgets)
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
                relaxed, op_stages = "", stages
                tuned = context.tuned_schedule(problem) if context.tuned_schedule else None
                if tuned is not None and not tuned.fits(problem, target):
                    diagnostics.remark(op.location, f"'{op.name}': the tuned schedule does not "
                                                    f"fit the SRAM left here; searching")
                    tuned = None
                if tuned is not None:
                    tuned.write(op)
                if TILE_SIZES_ATTR in op.attributes or LOOP_ORDER_ATTR in op.attributes:
                    # A schedule given on the op (or tuned) may name its stages and dataflow.
                    try:
                        op_stages = given_stages(op) or op_stages
                        flow = dataflow_of(op)
                    except Malformed as reason:
                        diagnostics.error(op.location, f"'{op.name}': {reason}")
                        continue
                    if flow is not None:
                        target = dataclasses.replace(target, dataflow=flow)
                        problem = tiling_problem(op, target)
                    schedule, smallest = given_schedule(op, problem, target, op_stages)
                    if schedule is None and smallest is None:
                        diagnostics.error(op.location, f"'{op.name}' has malformed "
                                                       f"{TILE_SIZES_ATTR}/{LOOP_ORDER_ATTR}")
                        continue
                    refusal = f"working set {smallest} B exceeds SRAM budget " \
                              f"{target.max_sram_bytes} B"
                else:
                    outcome = search(problem, target, stages, explicit)
                    if outcome.schedule is None and problem.details.get(SEPARABLE):
                        # The scratch tile of a separable pool does not fit: whole windows.
                        op.attributes[WHOLE_WINDOW_ATTR] = ir.UnitAttr.get()
                        problem = tiling_problem(op, target)
                        outcome = search(problem, target, stages, explicit)
                        if outcome.schedule is not None:
                            diagnostics.remark(op.location, f"'{op.name}' pools its whole "
                                               f"window at once: a row pool after a column "
                                               f"pool needs a scratch tile that does not fit")
                    schedule, refusal = outcome.schedule, outcome.refusal
                    relaxed, op_stages = outcome.relaxed, outcome.stages
                if schedule is None:
                    diagnostics.error(op.location, f"'{op.name}' does not fit in SRAM: {refusal}")
                    continue
                if not reads_resident_whole(problem, schedule.tiles):
                    diagnostics.error(op.location, f"'{op.name}' cannot compute on its operands "
                                                   f"kept in SRAM whole")
                    continue
                with op.context:
                    op.attributes[TILE_SIZES_ATTR] = ir.DenseI64ArrayAttr.get(list(schedule.tiles))
                    op.attributes[LOOP_ORDER_ATTR] = ir.DenseI64ArrayAttr.get(list(schedule.order))
                    if op_stages != stages:
                        op.attributes[STAGES_ATTR] = ir.IntegerAttr.get(
                            ir.IntegerType.get_signless(64), op_stages)
                    dataflow = matrix_dataflow(problem, schedule.tiles, target)
                    if dataflow is not None:
                        op.attributes[DATAFLOW_ATTR] = ir.StringAttr.get(dataflow)
                relaxed = f"; fits only with {relaxed}" if relaxed else ""
                dataflow = f"; dataflow {dataflow}" if dataflow is not None else ""
                origin = f"; tuned: {tuned.describe()}" if tuned is not None else \
                    "; schedule from the heuristic (no tuned record)" \
                    if context.tuned_schedule else ""
                remark = diagnostics.remark(op.location, f"'{op.name}': "
                                            f"{describe(problem, schedule)}{relaxed}{dataflow}"
                                            f"{origin}")
                remark.facts["estimated_cycles"] = int(schedule.cycles)
                remark.facts["schedule"] = "tuned" if tuned is not None else "heuristic"
                if tuned is not None:
                    remark.facts["op_key"] = tuned.op_key
                prologue = problem.details.get(PROLOGUE)
                if prologue is not None:
                    folded = machine_model.type_bytes(ir.MemRefType(prologue.source.type))
                    diagnostics.remark(op.location, f"{name_of(prologue.generic)} folded into "
                                       f"this op as a prologue on its input tiles, applied in "
                                       f"SRAM after each load (saves {2 * folded} B of DRAM "
                                       f"traffic)")
                tile_with_loops(op, *loop_tiles(problem, schedule))
