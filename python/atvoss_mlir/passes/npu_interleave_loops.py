"""npu-interleave-loops: two independent tile loops on different units run
as one loop, a tile of each per iteration.

The sequencer issues in program order and stops at a barrier until the units
it names are done. A tile loop has a barrier in each iteration (the next load
into a tile waits for the compute that last used it), so the ops after a loop
are issued only once its tiles before the last are computed: two tile loops
run one after the other even on different units with nothing in common (a
depthwise conv's slice on the vector unit and the grouped conv of the slice
before on the matrix unit; a shortcut pool beside a conv).

Two top-level tile loops of constant trip counts, one on each unit, with no
barrier between them (npu-overlap-ops took it) and no buffer one's compute
writes used by the other's compute or DMAs, become one loop of the larger
trip count whose iteration runs a tile of the first (while it has one) and
a tile of the second. The ops between them not reading the first loop's
results (the second's allocations and first loads) go before the loop. Each
loop's barriers then wait for its own unit only (npu-narrow-barriers' rule:
the other loop's compute runs beside them, and the DMAs after them touch none
of its buffers), so the units run a tile of each at once.

Runs after npu-narrow-barriers, before npu-allocate-sram, at -fusion=2.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, scf

from . import ModulePass, PassContext, function_bodies
from ..recipes.ir_queries import TILE_LOOP_ATTR, constant_value
from .npu_narrow_barriers import (accesses_after, compute_uses, dma_accesses, issued, suffices,
                                  with_compute_of)
from .npu_overlap_ops import compute_barrier, is_tile_loop, units_of
from .npu_verify_common import DMA_OPS, SCF_FOR_INIT_OPERANDS, VIEW_OPS, walk_ops

# Ops that may stand between the two loops (they issue no compute and wait for
# no unit): they go before the first loop, but waits on its last DMAs, which go
# after the new one. No deallocation: it would free a buffer before the loop.
BETWEEN = frozenset({"npu.alloc", "npu.wait", "arith.constant",
                     "index.constant", "memref.get_global"}) | DMA_OPS | VIEW_OPS


def trip_count(loop) -> int | None:
    """The constant trip count of an scf.for from 0 by 1, else None."""
    lower, upper, step = (constant_value(v) for v in list(loop.operands)[:SCF_FOR_INIT_OPERANDS])
    return upper if (lower, step) == (0, 1) and isinstance(upper, int) and upper > 0 else None


def _reads_results(op, loop) -> bool:
    """Whether `op` (or an op nested in it) reads a result of `loop`."""
    results = set(loop.results)
    return any(operand in results for nested in [op, *walk_ops(op)]
               for operand in nested.operands)


@dataclass
class Pair:
    first: ir.Operation
    between: list
    second: ir.Operation
    at: int     # the second loop's position in the block


def independent(first, second) -> bool:
    """No buffer either loop's compute writes is used by the other's compute
    or DMAs, and neither loop's DMAs touch a buffer the other computes on."""
    uses_a, uses_b = compute_uses(first), compute_uses(second)
    written_a = {buffer for buffer, (_, writes) in uses_a if writes}
    written_b = {buffer for buffer, (_, writes) in uses_b if writes}
    computed_a = {buffer for buffer, _ in uses_a}
    computed_b = {buffer for buffer, _ in uses_b}
    dma_a = {buffer for buffer, _ in dma_accesses(first)}
    dma_b = {buffer for buffer, _ in dma_accesses(second)}
    return not (written_a & (computed_b | dma_b) or written_b & (computed_a | dma_a)
                or dma_a & computed_b or dma_b & computed_a)


def pair_at(ops: list, index: int) -> Pair | None:
    """The tile loop ops[index] and the next, when one runs on each unit and
    only BETWEEN ops stand between them; else None."""
    first = ops[index]
    if not is_tile_loop(first):
        return None
    for at in range(index + 1, len(ops)):
        if is_tile_loop(ops[at]):
            break
        if ops[at].name not in BETWEEN:
            return None
    else:
        return None
    second = ops[at]
    units_a, units_b = units_of(first), units_of(second)
    if len(units_a) != 1 or len(units_b) != 1 or units_a == units_b:
        return None
    return Pair(first, ops[index + 1:at], second, at)


def why_apart(pair: Pair) -> str | None:
    """Why the pair's loops may not run as one, else None."""
    first, second = pair.first, pair.second
    if trip_count(first) is None or trip_count(second) is None:
        return "a trip count is not constant"
    if not independent(first, second):
        return "one loop's compute writes a buffer the other uses"
    # What reads the first loop's results may only wait for its last DMAs
    # (it goes after the new loop); the rest goes before it.
    if _reads_results(second, first) or any(
            _reads_results(op, first) and op.name != "npu.wait" for op in pair.between):
        return "it reads what the loop before yields"
    return None


def _narrowed(pair: Pair, running: dict, ops: list) -> bool:
    """Set each loop's barriers to wait for its own unit, when the rule allows
    it with the other loop's compute running beside them (and the DMAs after
    the second loop after its barriers); else leave them."""
    both = with_compute_of(running, (pair.first, pair.second))
    after = accesses_after(ops, pair.at)
    plan = []
    for loop in (pair.first, pair.second):
        unit = next(iter(units_of(loop)))
        barriers = [op for op in walk_ops(loop) if compute_barrier(op)]
        accesses = dma_accesses(loop) + (after if loop is pair.second else [])
        if barriers and not suffices(unit, both, accesses):
            return False
        plan.append((barriers, unit))
    for barriers, unit in plan:
        for barrier in barriers:
            barrier.attributes["engines"] = ir.StringAttr.get(unit)
    return True


def _move_body(loop, anchor, arguments: list) -> list:
    """Move `loop`'s body before `anchor`, its induction variable and
    iter_args replaced by `arguments`; the values it yielded (its yield
    erased)."""
    body = loop.regions[0].blocks[0]
    for old, new in zip(body.arguments, arguments):
        old.replace_all_uses_with(new)
    ops = list(body.operations)
    yielded = ops[-1]
    for op in ops[:-1]:
        op.move_before(anchor)
    values = list(yielded.operands)
    yielded.erase()
    return values


def interleave(pair: Pair) -> ir.Operation:
    """Replace the two loops by one running a tile of each per iteration (of
    the shorter one while it has tiles); the new loop."""
    first, second = pair.first, pair.second
    after = [op for op in pair.between if _reads_results(op, first)]
    for op in pair.between:
        if op not in after:
            op.move_before(first)
    counts = (trip_count(first), trip_count(second))
    inits = [list(loop.operands)[SCF_FOR_INIT_OPERANDS:] for loop in (first, second)]
    with first.location, ir.InsertionPoint(first):
        index = ir.IndexType.get()
        lower = arith.ConstantOp(index, 0).result
        upper = arith.ConstantOp(index, max(counts)).result
        step = arith.ConstantOp(index, 1).result
        fused = scf.ForOp(lower, upper, step, inits[0] + inits[1])
    fused.operation.attributes[TILE_LOOP_ATTR] = ir.UnitAttr.get()
    arguments = list(fused.body.arguments)
    induction, carried = arguments[0], arguments[1:]
    own = [carried[:len(inits[0])], carried[len(inits[0]):]]
    with ir.InsertionPoint(fused.body), first.location:
        anchor = scf.YieldOp([])
    results = []
    for loop, count, carried_here in zip((first, second), counts, own):
        with loop.location, ir.InsertionPoint(anchor):
            if count == max(counts):
                results += _move_body(loop, anchor, [induction] + carried_here)
                continue
            bound = arith.ConstantOp(index, count).result
            within = arith.CmpIOp(arith.CmpIPredicate.ult, induction, bound).result
            branch = scf.IfOp(within, [v.type for v in loop.results], has_else=True)
            with ir.InsertionPoint(branch.then_block):
                then_anchor = scf.YieldOp([])
            values = _move_body(loop, then_anchor, [induction] + carried_here)
            with ir.InsertionPoint(then_anchor):
                scf.YieldOp(values)
            then_anchor.erase()
            with ir.InsertionPoint(branch.else_block):
                scf.YieldOp(carried_here)
            results += list(branch.results)
    with ir.InsertionPoint(anchor), first.location:
        scf.YieldOp(results)
    anchor.erase()
    for old, new in zip(list(first.results) + list(second.results), fused.results):
        old.replace_all_uses_with(new)
    for op in reversed(after):
        op.move_after(fused.operation)
    first.erase()
    second.erase()
    return fused.operation


@dataclass(frozen=True)
class NpuInterleaveLoops(ModulePass):
    argument = "npu-interleave-loops"
    summary = "Run two independent tile loops of the two units as one loop, a tile of " \
              "each per iteration (-fusion=2)"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        if context.target.fusion < 2:
            return
        with module.context:
            for block in function_bodies(module):
                index = 0
                running: dict = {}
                ops = [op.operation for op in block.operations]
                while index < len(ops):
                    op = ops[index]
                    pair = pair_at(ops, index)
                    if pair is not None:
                        why_not = why_apart(pair) or (
                            None if _narrowed(pair, running, ops)
                            else "a DMA of one loop needs the other's compute done")
                        location = pair.second.location
                        if why_not is None:
                            interleave(pair)
                            context.diagnostics.remark(
                                location, "runs beside the tile loop before it on the other "
                                          "unit: one loop, a tile of each per iteration")
                            # The block changed (listed once per change: a
                            # large block's listing is what takes the time).
                            ops = [op.operation for op in block.operations]
                            continue
                        context.diagnostics.remark(
                            location, f"runs after the tile loop before it on the other "
                                      f"unit, not beside it: {why_not}")
                    running = issued(running, op)
                    index += 1
