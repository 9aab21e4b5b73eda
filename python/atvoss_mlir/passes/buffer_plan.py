"""The buffer plan of `npu-keep-in-sram`: which intermediate tensors stay in
SRAM from their producer to their last reader instead of going through DRAM,
and where.

A candidate is a `memref.alloc` of the function's body that only NPU ops
touch (the ops a recipe tiles, and the fills and padded copies folded into
them), directly or through views. Candidates are taken in order of the
estimated cycles they save; each is placed in SRAM from the top down (below
the tensors already kept that live at the same time), so every op in its live
range keeps the space below the lowest kept tensor for its own tiles. The
tensor is kept when every op in that range still fits the smaller budget and
the ops' estimated cycles (the cost model of `npu-tile`, with the kept
tensors moved by no DMA) go down; otherwise it stays in DRAM and a remark
gives the numbers. Then each kept tensor, largest first, gives its space to
the refused tensors live beside it when that lowers the estimated cycles of
the ops across them.
"""

from __future__ import annotations

import bisect
import dataclasses
from dataclasses import dataclass

from mlir import ir

from ..block_order import unchanged_blocks
from ..diagnostics import name_of
from ..machine_model import type_bytes
from ..recipes import tiling_problem
from ..recipes.problem import (RESIDENT_VIEWS, Tiled, Unsupported, Whole, Window,
                               computes_on_strided_view, root_buffer)
from . import PassContext, top_level
from .npu_allocate_sram import resident_offset
from .npu_pad_in_place import fill_value, padded_copy_target
from .tile_cost import aligned
from .tile_candidates import reads_resident_whole
from .tile_search import search
from ..recipes.prologue import PROLOGUE


def resident_budgets(block: ir.Block, capacity: int) -> dict:
    """For each op of the block, the SRAM below the resident tensors live across
    it: the lowest offset among them (`capacity` when none is)."""
    live, budgets = {}, {}
    for op in block.operations:
        op = op.operation
        if op.name == "npu.alloc" and resident_offset(op) is not None:
            live[op.results[0]] = resident_offset(op)
        elif op.name == "npu.dealloc":
            live.pop(op.operands[0], None)
        budgets[op] = min(live.values(), default=capacity)
    return budgets


# The least share of the estimated cycles across them an exchange of kept
# tensors must save: the estimate does not see what the passes after the plan
# make of it (loads issued early, ops overlapping); exchanges estimated below
# 2% were measured to lose, and 3% keeps those measured to gain.
MIN_EXCHANGE_GAIN = 0.03


@dataclass
class PaddedReaders:
    """The zero- or pad-valued copy of a tensor that convs or pools read (a
    bufferized tensor.pad they fold into their loads)."""
    copy: ir.Operation        # memref.copy of the tensor into the interior
    interior: ir.Operation    # memref.subview of the padded buffer
    padded: ir.Operation      # the padded buffer's memref.alloc
    fill: ir.Operation        # its fill with the pad value
    value: ir.Value           # the pad value


def first_user(alloc) -> ir.Operation:
    """The first op of `alloc`'s block that uses its buffer (the alloc itself
    when none does)."""
    block = alloc.operation.block
    first = None
    for use in alloc.results[0].uses:
        op = top_level(use.owner.operation, block)
        if first is None or op.is_before_in_block(first):
            first = op
    return first if first is not None else alloc.operation


@dataclass
class Candidate:
    alloc: ir.Operation
    size: int                 # bytes, aligned
    readers: list             # indices of the ops touching it
    saving: int = 0
    offset: int | None = None
    # Kept in SRAM padded: its producer writes the interior, the readers of the
    # padded copy read the padded buffer, with no copy into it.
    padded: PaddedReaders | None = None
    # The first op it is live across when an op folded into a reader (a fill
    # or bias broadcast of its init) uses it before an earlier op: its SRAM
    # is allocated at that first use (npu-keep-in-sram).
    live_from: int | None = None

    def __post_init__(self):
        # Asked for each op and each kept tensor by the cost model: computed once.
        self.first, self.last = min(self.readers), max(self.readers)
        if self.live_from is not None:
            self.first = min(self.first, self.live_from)


class Plan:
    """The ops of one block with their tiling problems, and the cost model."""

    def __init__(self, block: ir.Block, target, context: PassContext):
        self.block = block
        self.target = target
        self.context = context
        self.ops, self.problems = [], []
        absorbed = []
        with unchanged_blocks():
            for op in block.operations:
                op = op.operation
                if not op.name.startswith("linalg."):
                    continue
                try:
                    problem = tiling_problem(op, target)
                except Unsupported:
                    continue
                self.ops.append(op)
                self.problems.append(problem)
                absorbed += [a.operation for a in problem.absorbed_ops]
        # Fills, padded copies and bias broadcasts folded into the op reading them.
        absorbed = set(absorbed)
        kept = [i for i, op in enumerate(self.ops) if op not in absorbed]
        self.ops = [self.ops[i] for i in kept]
        self.problems = [self.problems[i] for i in kept]
        self.absorbed = absorbed
        self.index = {op: i for i, op in enumerate(self.ops)}
        # The op whose problem an absorbed op is folded into (a requantisation
        # writes the int8 buffer of its conv's problem).
        self.owner = {a.operation: i for i, problem in enumerate(self.problems)
                      for a in problem.absorbed_ops}
        self.kept: list[Candidate] = []
        self.padded = set()     # the tensors of candidates kept padded
        self._cost = {}   # (op, resident, budget) -> (cycles or None, whether it has a schedule)
        self._problems = {}   # (op, resident) -> its problem, searched at many budgets
        self._live = {}   # op -> the kept tensors live across it (kept_changed)

    # -- the cost model --------------------------------------------------------------
    def cycles(self, i: int, resident: frozenset, budget: int):
        """Estimated cycles of op i with the buffers in `resident` kept in SRAM and
        `budget` bytes for its tiles; None when it does not fit, or would read a
        kept tensor a tile at a time neither whole nor in place."""
        key = (i, resident, budget)
        if key not in self._cost:
            problem = self._problems.get((i, resident))
            if problem is None:
                problem = self.problems[i]
                operands = [self.kept_operand(o) if root_buffer(o.value) in resident else o
                            for o in problem.operands]
                problem = self._problems[(i, resident)] = dataclasses.replace(
                    problem, operands=operands)
            target = dataclasses.replace(self.target, max_sram_bytes=budget)
            outcome = search(problem, target, self.target.pipeline_stages)
            fits = outcome.schedule is not None
            self._cost[key] = (outcome.schedule.cycles if fits and reads_resident_whole(
                problem, outcome.schedule.tiles) else None, fits)
        return self._cost[key][0]

    def has_schedule(self, i: int, resident: frozenset, budget: int) -> bool:
        """Whether op i fits `budget` at all (`cycles` is None too when it
        would read a kept tensor neither whole nor in place)."""
        self.cycles(i, resident, budget)
        return self._cost[(i, resident, budget)][1]

    def kept_operand(self, operand):
        """The operand of a tensor kept in SRAM; a tensor kept padded is read
        through no padding: its padded buffer is in SRAM. Its writer and its
        other readers use the interior view of that buffer."""
        padded = root_buffer(operand.value) in self.padded
        if operand.pad_value is None or not padded:
            return dataclasses.replace(operand, resident=True, padded_interior=padded)
        region = tuple(dataclasses.replace(part, pad_low=0) if isinstance(part, Window) else part
                       for part in operand.region)
        return dataclasses.replace(operand, resident=True, pad_value=None, region=region)

    def resident_of(self, i: int, extra: Candidate | None = None) -> frozenset:
        """The kept tensors op i reads (and `extra`'s, when it reads it)."""
        resident, _ = self.around(i)
        if extra is not None and i in extra.readers:
            resident = resident | {extra.alloc.results[0]}
        return resident

    def budget(self, i: int, extra: Candidate | None = None) -> int:
        """The SRAM below the kept tensors (and `extra`) live across op i."""
        _, budget = self.around(i)
        if extra is not None and extra.first <= i <= extra.last:
            budget = min(budget, extra.offset)
        return budget

    def around(self, i: int) -> tuple[frozenset, int]:
        """(resident_of(i), budget(i)) with the tensors kept now, from the
        kept tensors live across op i (`kept_changed`)."""
        live = self._live.get(i, ())
        return (frozenset(c.alloc.results[0] for c in live if i in c.readers),
                min((c.offset for c in live), default=self.target.max_sram_bytes))

    def kept_changed(self) -> None:
        """Said after each change of self.kept: the kept tensors live across
        each op, which the cost model asks for every op of every decision."""
        self._live = {}
        for c in self.kept:
            for i in range(c.first, c.last + 1):
                self._live.setdefault(i, []).append(c)

    # -- candidates ------------------------------------------------------------------
    def candidates(self) -> list[Candidate]:
        found = []
        problem_buffers = {}
        for i, problem in enumerate(self.problems):
            for operand in problem.operands:
                problem_buffers.setdefault(root_buffer(operand.value), set()).add(i)
        # The inputs of elementwise ops folded into their readers' input loads:
        # kept in SRAM, the reader would compute on them in place and the
        # elementwise op would run alone.
        prologue_sources = {root_buffer(problem.details[PROLOGUE].source): i
                            for i, problem in enumerate(self.problems)
                            if PROLOGUE in problem.details}
        position = {op.operation: k for k, op in enumerate(self.block.operations)}
        op_positions = [position[op] for op in self.ops]
        for op in self.block.operations:
            op = op.operation
            if op.name != "memref.alloc" or op.results[0] not in problem_buffers:
                continue
            size = type_bytes(ir.MemRefType(op.results[0].type))
            if size is None:
                continue
            other = self.other_use(op)
            if other is None and op.results[0] in prologue_sources:
                reader = self.ops[prologue_sources[op.results[0]]]
                other = f"{name_of(reader)} applies the elementwise op reading it to each " \
                        f"tile it loads"
            if other is not None:
                producer = self.ops[min(problem_buffers[op.results[0]])]
                self.context.diagnostics.remark(
                    producer.location, f"'{producer.name}' output stays in DRAM: {other}")
                continue
            padded = self.padded_readers(op)
            if padded is not None:
                size = type_bytes(ir.MemRefType(padded.padded.results[0].type))
                self.padded.add(op.results[0])
            bytes_ = aligned(size, self.target.sram_alignment)
            live_from = bisect.bisect_left(op_positions, position[first_user(op)])
            found.append(Candidate(op, bytes_, sorted(problem_buffers[op.results[0]]),
                                   padded=padded, live_from=live_from))
        return found

    def padded_readers(self, alloc) -> PaddedReaders | None:
        """The one padded copy of the buffer, when only ops of the plan read the
        padded buffer and every other use of the buffer is an op taking a strided
        view (no view of it: the buffer becomes the padded buffer's interior)."""
        copies = [use.owner.operation for use in alloc.results[0].uses
                  if use.owner.operation.name == "memref.copy"]
        if len(copies) != 1 or copies[0] not in self.absorbed:
            return None
        copy = copies[0]
        if any(use.owner.operation.name in RESIDENT_VIEWS or
               not (use.owner.operation.name.startswith("linalg.") or use.owner.operation == copy)
               for use in alloc.results[0].uses):
            return None
        # Its ops then take a strided view of the padded buffer: one that would
        # compute on the tensor in place must take such a view too, in its own
        # order (a transposing op copies a strided view whole through a tile).
        for use in alloc.results[0].uses:
            user = use.owner.operation
            if user not in self.index and user not in self.owner:
                continue
            problem = self.problems[self.index[user] if user in self.index else self.owner[user]]
            if any(root_buffer(o.value) == alloc.results[0]
                   and all(isinstance(part, (Tiled, Whole)) for part in o.region)
                   and (not computes_on_strided_view(problem, o) or o.permuted())
                   for o in problem.operands):
                return None
        found = padded_copy_target(copy, self.block)
        if found is None:
            return None
        interior, padded, fill = found
        if len(list(interior.results[0].uses)) != 1 or fill not in self.absorbed:
            return None
        for use in padded.uses:
            user = use.owner.operation
            if user not in (interior, fill) and user not in self.index:
                return None
        value = fill_value(fill, padded)
        # The halo is filled where the buffer is allocated: the value must be there.
        if isinstance(value, ir.OpResult) and value.owner.operation.block == self.block \
                and not value.owner.operation.is_before_in_block(alloc):
            return None
        return PaddedReaders(copy, interior, padded.owner.operation, fill, value)

    def other_use(self, alloc) -> str | None:
        """Why the buffer must stay in DRAM: a use, through views, by an op that
        is neither an NPU op nor folded into one (None when there is none)."""
        pending = [alloc.results[0]]
        while pending:
            value = pending.pop()
            for use in value.uses:
                user = use.owner.operation
                if user.name in RESIDENT_VIEWS and use.operand_number == 0:
                    pending.extend(user.results)
                    continue
                if user in self.absorbed:
                    continue
                outer = top_level(user, self.block)
                if outer is None or outer not in self.index or outer != user:
                    if user.name == "func.return":
                        return "it is a result of the function"
                    return f"{name_of(user)} uses it off the NPU's tiled ops"
        return None

    # -- the plan --------------------------------------------------------------------
    def place(self, candidate: Candidate) -> int | None:
        """The highest aligned offset where the candidate overlaps no kept tensor
        live at the same time."""
        alignment = self.target.sram_alignment
        taken = [(c.offset, c.offset + c.size) for c in self.kept
                 if c.first <= candidate.last and candidate.first <= c.last]
        top = self.target.max_sram_bytes
        while True:
            offset = (top - candidate.size) // alignment * alignment
            if offset < 0:
                return None
            below = [low for low, high in taken if low < offset + candidate.size and offset < high]
            if not below:
                return offset
            top = min(below)

    def decide(self, candidate: Candidate) -> str | None:
        """Keep the candidate (None) or say why not."""
        offset = self.place(candidate)
        if offset is None:
            return f"{candidate.size} B do not fit beside the tensors already kept in SRAM"
        candidate.offset = offset
        before = after = 0
        for i in range(candidate.first, candidate.last + 1):
            old = self.cycles(i, self.resident_of(i), self.budget(i))
            resident, budget = self.resident_of(i, candidate), self.budget(i, candidate)
            new = self.cycles(i, resident, budget)
            if old is None:
                continue
            if new is None:
                if not self.has_schedule(i, resident, budget):
                    return f"{name_of(self.ops[i])} would not fit in the {budget} B left below it"
                return f"{name_of(self.ops[i])} would read it a tile at a time, neither whole " \
                       f"nor in place"
            before, after = before + old, after + new
        if after >= before:
            return f"the ops reading it would take {after} estimated cycles instead of {before}"
        candidate.saving = before - after
        self.kept.append(candidate)
        self.kept_changed()
        return None

    def choose(self) -> list:
        """Decide every candidate, with a remark for each one refused; the
        candidates kept, each with its offset."""
        diagnostics = self.context.diagnostics
        candidates = self.candidates()
        for candidate in candidates:   # the saving of each alone, to order them
            if candidate.size > self.target.max_sram_bytes:
                continue   # refused whatever the order: no need to cost it
            old = sum(self.cycles(i, frozenset(), self.target.max_sram_bytes) or 0
                      for i in candidate.readers)
            new = sum(self.cycles(i, frozenset([candidate.alloc.results[0]]),
                                  self.target.max_sram_bytes) or 0 for i in candidate.readers)
            candidate.saving = old - new
        # Those that save nothing alone may pay once their neighbours are kept
        # (an op then computes untiled anyway): all are decided in context.
        refusals = {}
        for candidate in sorted(candidates, key=lambda c: -c.saving):
            refusal = self.decide(candidate)
            if refusal is not None:
                refusals[id(candidate)] = (candidate, refusal)
        self.exchange(refusals)
        for candidate, refusal in refusals.values():
            producer = self.ops[candidate.readers[0]]
            diagnostics.remark(producer.location, f"'{producer.name}' output "
                               f"({candidate.size} B) not kept in SRAM: {refusal}")
        return self.kept

    def estimated_cycles(self, first: int, last: int) -> list:
        """The estimated cycles of ops first..last with the tensors kept so far
        (None for one that does not fit)."""
        return [self.cycles(i, self.resident_of(i), self.budget(i))
                for i in range(first, last + 1)]

    def exchange(self, refusals: dict) -> None:
        """Taking tensors by their saving alone can keep a large one where the
        smaller ones it leaves no room for save more together (a concatenation
        read a tile at a time): give each kept tensor's space, largest first, to
        the refused tensors live beside it when the ops across them then take
        fewer estimated cycles."""
        for kept in sorted(self.kept, key=lambda c: -c.size):
            rivals = [c for c, _ in refusals.values()
                      if c.first <= kept.last and kept.first <= c.last]
            if not rivals:
                continue
            first = min(c.first for c in rivals + [kept])
            last = max(c.last for c in rivals + [kept])
            before = self.estimated_cycles(first, last)
            state = [(c, c.offset, c.saving) for c in self.kept]
            self.kept.remove(kept)
            self.kept_changed()
            taken = [c for c in sorted(rivals, key=lambda c: -c.saving) if self.decide(c) is None]
            after = self.estimated_cycles(first, last)
            fits = all(new is not None for old, new in zip(before, after) if old is not None)
            pairs = [(old, new) for old, new in zip(before, after) if old is not None]
            before, after = sum(old for old, _ in pairs), sum(new or 0 for _, new in pairs)
            if taken and fits and after < before * (1 - MIN_EXCHANGE_GAIN):
                for c in taken:
                    del refusals[id(c)]
                names = ", ".join(dict.fromkeys(name_of(self.ops[c.readers[0]]) for c in taken))
                refusals[id(kept)] = (kept, f"its space is worth more to the outputs of "
                                            f"{names}: {after} estimated cycles instead of "
                                            f"{before} across them")
                continue
            self.kept = [c for c, _, _ in state]
            for c, offset, saving in state:
                c.offset, c.saving = offset, saving
            self.kept_changed()
