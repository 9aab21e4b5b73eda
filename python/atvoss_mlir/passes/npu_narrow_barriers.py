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
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from . import ModulePass, PassContext, function_bodies
from .npu_overlap_ops import compute_barrier, on_fallback, orders_compute, roots
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
        if op.name != "npu.barrier":
            for buffer, use in compute_uses(op):
                running.setdefault(buffer, []).append(use)
            continue
        if compute_barrier(op):
            unit = narrowed_unit(running, ops, index)
            if unit is not None:
                op.attributes["engines"] = ir.StringAttr.get(unit)
        if orders_compute(op):
            running = {}
        else:
            running = running_after_unit_barrier(running, barrier_engines(op))


def narrowed_unit(running: dict, ops: list, index: int) -> str | None:
    """The unit the compute barrier ops[index] may wait for alone (None: both)."""
    accesses = []
    for op in ops[index + 1:]:
        if orders_compute(op):
            break
        accesses += dma_accesses(op)
    fits = []
    for unit in ("vector", "matrix"):
        left = running_after_unit_barrier(running, unit)
        if not any(writes or dma_writes for buffer, dma_writes in accesses
                   for user, writes in left.get(buffer, [])):
            fits.append(unit)
    # Both: nothing after it needs the compute done (npu-overlap-ops kept it
    # for the SRAM); it stays.
    return fits[0] if len(fits) == 1 else None
