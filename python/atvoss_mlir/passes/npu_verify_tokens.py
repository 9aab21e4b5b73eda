"""npu-verify's checks of DMA tokens and hazards: every token reaches an
`npu.wait`; no op touches a buffer a pending DMA fills or reads (an
`npu.barrier` completes every DMA, one with `engines = "compute"`,
`"matrix"` or `"vector"` none); no DMA touches a buffer a compute op issued
since the last `npu.barrier` of any kind uses (since a `"matrix"` one: a matrix
op, or a vector op whose result a matrix op after it reads; and conversely)."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..block_order import block_ops
from .npu_verify_common import (COMPUTE_OPS, DMA_OPS, MATRIX_OPS, OUTPUT_OPERAND, Reporter,
                                SCF_FOR_INIT_OPERANDS, VIEW_OPS, YIELDS_TO_RESULTS, is_memref,
                                is_token, operand_name)
from .npu_verify_rules import dma_sram_operand


def loop_body(loop) -> ir.Block:
    return loop.regions[0].blocks[0]


def yielded(region: ir.Region, index: int) -> ir.Value | None:
    """Operand `index` of the terminator of a single-block region."""
    operations = region.blocks[0].operations
    terminator = operations[len(operations) - 1]
    return terminator.operands[index] if index < len(terminator.operands) else None


def token_destinations(user, operand_number: int) -> list[ir.Value]:
    """Where a token operand of `user` flows on through scf control flow."""
    if user.name == "scf.yield" and user.parent.name in YIELDS_TO_RESULTS:
        parent = user.parent
        destinations = [parent.results[operand_number]]
        if parent.name == "scf.for":  # also the next iteration's iter_arg
            destinations.append(loop_body(parent).arguments[1 + operand_number])
        return destinations
    if user.name == "scf.for" and operand_number >= SCF_FOR_INIT_OPERANDS:
        index = operand_number - SCF_FOR_INIT_OPERANDS
        return [user.results[index], loop_body(user).arguments[1 + index]]
    return []


def token_reaches_wait(token: ir.Value) -> bool:
    seen, work = set(), [token]
    while work:
        value = work.pop()
        if value in seen:
            continue
        seen.add(value)
        for use in value.uses:
            if use.owner.operation.name == "npu.wait":
                return True
            work.extend(token_destinations(use.owner, use.operand_number))
    return False


def check_token_waited(op, report: Reporter) -> None:
    if op.name in DMA_OPS and not token_reaches_wait(op.results[0]):
        report.error(op, "DMA token is never waited on (no npu.wait receives it)")


def token_sources(token: ir.Value) -> list:
    """The DMA ops whose token may be `token`, through scf.for/scf.if results and iter_args."""
    sources, seen, work = [], set(), [token]
    while work:
        value = work.pop(0)  # breadth first: sources in program order
        if value is None or value in seen:
            continue
        seen.add(value)
        if isinstance(value, ir.OpResult):
            owner, index = value.owner.operation, value.result_number
            if owner.name in DMA_OPS:
                sources.append(owner)
            elif owner.name == "scf.for":
                work += [owner.operands[SCF_FOR_INIT_OPERANDS + index],
                         yielded(owner.regions[0], index)]
            elif owner.name in ("scf.if", "scf.execute_region"):
                work += [yielded(region, index) for region in owner.regions
                         if len(region.blocks)]
        elif isinstance(value, ir.BlockArgument):
            loop = value.owner.owner.operation
            if loop.name == "scf.for" and value.arg_number >= 1:
                index = value.arg_number - 1
                work += [loop.operands[SCF_FOR_INIT_OPERANDS + index],
                         yielded(loop.regions[0], index)]
    return sources


def root_buffer(value: ir.Value) -> ir.Value:
    """The buffer a memref value views: an npu.alloc result or a block argument."""
    while isinstance(value, ir.OpResult) and value.owner.operation.name in VIEW_OPS:
        value = value.owner.operands[0]
    return value


@dataclass
class PendingDma:
    dma: object           # the npu.dma_load / npu.dma_store op
    buffer: ir.Value      # root of its SRAM side

    @property
    def is_load(self) -> bool:
        return self.dma.name == "npu.dma_load"


def pending_dma(dma) -> PendingDma:
    return PendingDma(dma, root_buffer(dma.operands[dma_sram_operand(dma)]))


def memory_accesses(op) -> list[tuple[int, bool, bool]]:
    """(operand index, reads, writes) of each memref operand `op` touches."""
    if op.name in COMPUTE_OPS:
        output = OUTPUT_OPERAND[op.name]
        # An accumulating matmul/conv2d reads its output too.
        accumulate = op.attributes["accumulate"] if "accumulate" in op.attributes else None
        accumulates = isinstance(accumulate, ir.BoolAttr) and accumulate.value
        return [(index, index != output or accumulates, index == output)
                for index in range(len(op.operands))]
    if op.name == "npu.dma_load":
        return [(1, False, True)]
    if op.name == "npu.dma_store":
        return [(0, True, False)]
    if op.name.startswith("npu.") or op.name in VIEW_OPS or op.name == "arith.select" \
            or len(op.regions):
        return []   # a select picks one of a tile's buffers: it touches none
    # Any other op given a buffer (a call, memref.copy) may read and write it.
    return [(index, True, True) for index, value in enumerate(op.operands) if is_memref(value)]


def check_access(op, index: int, reads: bool, writes: bool,
                 pending: dict[ir.Value, PendingDma], report: Reporter) -> None:
    buffer = root_buffer(op.operands[index])
    on_buffer = [entry for entry in pending.values() if entry.buffer == buffer]
    loads = [entry.dma for entry in on_buffer if entry.is_load]
    stores = [entry.dma for entry in on_buffer if not entry.is_load]
    if not loads and not (stores and writes):
        return
    # get_name() prints the function to number values: only for an error.
    described = f"SRAM buffer {buffer.get_name()} ({operand_name(op, index)})"
    if loads:
        verb = "reads" if reads else "writes"
        report.error(op, f"{verb} {described} before waiting on the DMA that fills it",
                     [(dma, "the DMA filling it, not yet waited on") for dma in loads])
    if stores and writes:
        report.error(op, f"writes {described} while a DMA storing it is pending",
                     [(dma, "the DMA reading it, not yet waited on") for dma in stores])


def check_dealloc(op, pending: dict[ir.Value, PendingDma], report: Reporter) -> None:
    buffer = root_buffer(op.operands[0])
    using = [entry.dma for entry in pending.values() if entry.buffer == buffer]
    if using:
        report.error(op, f"releases SRAM buffer {buffer.get_name()} while a DMA using it "
                         f"is pending", [(dma, "the pending DMA, not yet waited on") for dma in using])


def add_pending(pending: dict[ir.Value, PendingDma], token: ir.Value) -> None:
    for dma in token_sources(token):
        pending[dma.results[0]] = pending_dma(dma)


def update_pending(op, pending: dict[ir.Value, PendingDma]) -> None:
    if op.name == "npu.wait":
        for token in op.operands:
            for dma in token_sources(token):
                pending.pop(dma.results[0], None)
    elif op.name == "npu.barrier" and not waits_for_compute_only(op):
        pending.clear()
    else:
        # A DMA's own token, or a loop/if result carrying DMAs started inside it.
        for result in op.results:
            if is_token(result):
                add_pending(pending, result)


def defined_in(value: ir.Value, block: ir.Block) -> bool:
    """Whether `value` is computed in `block` or in a region nested in it."""
    if not isinstance(value, ir.OpResult):
        return value.owner == block
    op = value.owner.operation
    while op.parent is not None:   # the module has no block
        if op.block == block:
            return True
        op = op.parent.operation
    return False


def barrier_engines(barrier) -> str:
    engines = barrier.attributes["engines"] if "engines" in barrier.attributes else None
    return engines.value if isinstance(engines, ir.StringAttr) else "all"


def waits_for_compute_only(barrier) -> bool:
    """`npu.barrier {engines = "compute" | "matrix" | "vector"}`: orders later
    DMAs after earlier compute, but completes no DMA."""
    return barrier_engines(barrier) in ("compute", "matrix", "vector")


def finished_at_unit_barrier(running: dict[ir.Value, list], unit: str) -> set:
    """The compute ops of `running` an `npu.barrier {engines = unit}` waits for
    ("matrix" or "vector"): that unit's ops, and the other unit's ops whose
    result one of them issued after it reads (the units scoreboard each other)."""
    def on_unit(op) -> bool:
        return (op.name in MATRIX_OPS) == (unit == "matrix")
    finished = {id(op) for users in running.values() for op, _ in users if on_unit(op)}
    for users in running.values():
        for position, (op, writes) in enumerate(users):
            if not on_unit(op) and writes and any(
                    id(later) in finished and on_unit(later) and not later_writes
                    for later, later_writes in users[position + 1:]):
                finished.add(id(op))
    return finished


def check_dma_hazards(block: ir.Block, inherited: dict[ir.Value, PendingDma],
                      report: Reporter) -> None:
    """Walk `block` in program order with the DMAs pending at each op.

    Pending DMAs are keyed by their token; a loop body starts with the DMAs
    its token iter_args carry (started before the loop or by the previous
    iteration), which a wait on the iter_arg completes.
    """
    pending = dict(inherited)
    if block.owner is not None and block.owner.operation.name == "scf.for":
        for argument in list(block.arguments)[1:]:
            if is_token(argument):
                add_pending(pending, argument)
        # A DMA of an earlier iteration into a buffer chosen in the loop body
        # (one of a tile's buffers) names this iteration's choice by the same
        # value, not the same buffer: the simulator checks those on addresses.
        pending = {token: entry for token, entry in pending.items()
                   if not defined_in(entry.buffer, block) or token in inherited}
    for op in block_ops(block):
        if op.name == "npu.dealloc":
            check_dealloc(op, pending, report)
        for index, reads, writes in memory_accesses(op):
            check_access(op, index, reads, writes, pending, report)
        for region in op.regions:
            for nested in region.blocks:
                check_dma_hazards(nested, pending, report)
        update_pending(op, pending)


def running_after_unit_barrier(running: dict[ir.Value, list], unit: str) -> dict:
    """`running` (buffer -> [(compute op, writes)]) less the ops an
    `npu.barrier {engines = unit}` waits for (finished_at_unit_barrier)."""
    finished = finished_at_unit_barrier(running, unit)
    return {buffer: kept for buffer, users in running.items()
            if (kept := [(user, writes) for user, writes in users if id(user) not in finished])}


def check_dma_after_compute(block: ir.Block, running: dict[ir.Value, list], report: Reporter
                            ) -> dict[ir.Value, list]:
    """DMA engines do not wait for compute: a DMA touching an SRAM buffer that a
    compute op issued since the last npu.barrier reads or writes (one of them
    writing) races with it. `running` maps buffer roots to (op, writes) pairs;
    returns the state at the end of the block."""
    running = {buffer: list(users) for buffer, users in running.items()}
    for op in block_ops(block):
        if op.name == "npu.barrier" and barrier_engines(op) in ("matrix", "vector"):
            running = running_after_unit_barrier(running, barrier_engines(op))
        elif op.name == "npu.barrier":
            running.clear()
        elif op.name in DMA_OPS:
            sram_index = dma_sram_operand(op)
            buffer = root_buffer(op.operands[sram_index])
            dma_writes = op.name == "npu.dma_load"
            racing = [user for user, writes in running.get(buffer, []) if writes or dma_writes]
            if racing:
                verb = "overwrites" if dma_writes else "reads"
                report.error(op, f"{verb} SRAM buffer {buffer.get_name()} that a compute op "
                                 f"issued before it may still be using: DMA engines do not wait "
                                 f"for compute, put an npu.barrier between them",
                             [(user, "the compute op, with no npu.barrier after it")
                              for user in racing])
        elif op.name in COMPUTE_OPS:
            for index, reads, writes in memory_accesses(op):
                running.setdefault(root_buffer(op.operands[index]), []).append((op, writes))
        for region in op.regions:
            for nested in region.blocks:
                for buffer, users in check_dma_after_compute(nested, running, report).items():
                    known = running.setdefault(buffer, [])
                    known.extend(user for user in users if user not in known)
    return running


