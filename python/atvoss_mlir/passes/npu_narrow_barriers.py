"""npu-narrow-barriers: a barrier that orders DMAs after the compute of one unit
waits for that unit only.

An op's tile program ends with `npu.barrier {engines = "compute"}`, which
npu-overlap-ops keeps where a DMA after it needs the op's compute done (the
store of its result). The barrier waits for both units: when the op ran on
one unit beside an op of the other (a strip's pool on the vector unit beside
the next strip's conv on the matrix unit), its result is stored only after
the other op ends too, and every op after the store waits for it.

A top-level `npu.barrier {engines = "compute"}` becomes `{engines = "vector"}`
(or `"matrix"`) when no DMA after it, up to the next top-level barrier that
waits for both units, touches a buffer that an op issued since the last
barrier and not on that unit uses, unless that op's result is read by an op
of the unit after it (the units scoreboard each other: the barrier waits for
it too) — npu-verify's rule. Buffers are followed through views, the selects
that pick a multi-buffered tile and loop results and iter_args. Space freed
after the barrier is reused by a DMA only after a barrier on both units
(npu-allocate-sram).

A tile loop's barriers (each orders the load into a tile after the compute
that last used it) wait for the loop's unit alone on the same rule, taken
over every iteration, when an op of the other unit issued before the loop may
still run beside it (npu-overlap-ops let the loop pass the barrier after that
op): what runs there is that op and the loop's own compute, the DMAs after
the barriers are the loop's and those after it up to the next barrier on
both units. The loop then computes beside that op.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from . import ModulePass, PassContext, function_bodies
from .npu_overlap_ops import (compute_barrier, is_tile_loop, on_fallback, orders_compute, roots,
                              units_of)
from .npu_verify_common import COMPUTE_OPS, DMA_OPS, walk_ops
from .npu_verify_tokens import barrier_engines, memory_accesses, running_after_unit_barrier
from .npu_verify_rules import dma_sram_operand


def dma_accesses(op) -> list:
    """(buffer, writes) of each DMA in `op` (itself or nested): its SRAM side."""
    return [(buffer, dma.name == "npu.dma_load")
            for dma in [op, *walk_ops(op)] if dma.name in DMA_OPS
            for buffer in roots(dma.operands[dma_sram_operand(dma)])]


def compute_uses(op) -> list:
    """(buffer, (op, writes)) of every compute op in `op` (itself or nested)."""
    return [(buffer, (compute, writes))
            for compute in [op, *walk_ops(op)] if compute.name in COMPUTE_OPS
            for index, _, writes in memory_accesses(compute)
            for buffer in roots(compute.operands[index])]


@dataclass(frozen=True)
class NpuNarrowBarriers(ModulePass):
    argument = "npu-narrow-barriers"
    summary = "Make a barrier that orders DMAs after one unit's compute wait for that unit only"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            for block in function_bodies(module):
                narrow_in(block)


def narrow_in(block: ir.Block) -> None:
    ops = [op.operation for op in block.operations]
    if any(on_fallback(op) for op in ops):
        return   # buffers the fallback engine uses are not followed
    running: dict = {}   # buffer -> [(compute op, writes)] since the last barrier
    for index, op in enumerate(ops):
        if is_tile_loop(op):
            narrow_in_loop(op, running, ops, index)
        elif compute_barrier(op):
            unit = narrowed_unit(running, ops, index)
            if unit is not None:
                op.attributes["engines"] = ir.StringAttr.get(unit)
        running = issued(running, op)


def issued(running: dict, op) -> dict:
    """What runs (buffer -> [(compute op, writes)]) once `op` is issued after
    `running`: less what a barrier waits for, or with `op`'s compute added
    (to `running` itself)."""
    if op.name == "npu.barrier":
        return {} if orders_compute(op) else \
            running_after_unit_barrier(running, barrier_engines(op))
    for buffer, use in compute_uses(op):
        running.setdefault(buffer, []).append(use)
    return running


def with_compute_of(running: dict, loops) -> dict:
    """A copy of `running` with the compute of `loops` added: what runs beside
    their barriers, of any iteration."""
    both = {buffer: list(users) for buffer, users in running.items()}
    for loop in loops:
        for buffer, use in compute_uses(loop):
            both.setdefault(buffer, []).append(use)
    return both


def narrow_in_loop(loop, running: dict, ops: list, index: int) -> None:
    """Narrow the compute barriers inside the tile loop ops[index] (those
    ordering a tile's next load after the compute that last used its buffer)
    as one: what runs there is what ran since the last barrier before the
    loop and the loop's own compute, of any iteration; the DMAs after them
    are the loop's and those after it up to the next barrier on both units."""
    barriers = [op for op in walk_ops(loop) if compute_barrier(op)]
    beside = set().union(*(units_of(compute) for users in running.values()
                           for compute, _ in users)) - units_of(loop)
    if not barriers or not beside:
        return   # nothing of the other unit runs beside the loop: waiting for both costs nothing
    accesses = dma_accesses(loop) + accesses_after(ops, index)
    unit = unit_for(with_compute_of(running, [loop]), accesses)
    if unit is not None:
        for barrier in barriers:
            barrier.attributes["engines"] = ir.StringAttr.get(unit)


def accesses_after(ops: list, index: int) -> list:
    """The DMA accesses of ops[index + 1:] up to the next barrier on both units."""
    accesses = []
    for op in ops[index + 1:]:
        if orders_compute(op):
            break
        accesses += dma_accesses(op)
    return accesses


def narrowed_unit(running: dict, ops: list, index: int) -> str | None:
    """The unit the compute barrier ops[index] may wait for alone (None: both)."""
    return unit_for(running, accesses_after(ops, index))


def suffices(unit: str, running: dict, accesses: list) -> bool:
    """Whether a barrier before `accesses` may wait for `unit`'s compute
    alone, given what runs: none of them touches a buffer what still runs
    after it uses (one of the two writing)."""
    left = running_after_unit_barrier(running, unit)
    return not any(writes or dma_writes for buffer, dma_writes in accesses
                   for user, writes in left.get(buffer, []))


def unit_for(running: dict, accesses: list) -> str | None:
    """The one unit whose compute a barrier before `accesses` may wait for
    alone, given what runs (None: both)."""
    fits = [unit for unit in ("vector", "matrix") if suffices(unit, running, accesses)]
    # Both: nothing after it needs the compute done (npu-overlap-ops kept it
    # for the SRAM); it stays.
    return fits[0] if len(fits) == 1 else None
