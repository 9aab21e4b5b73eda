"""npu-cascade-rows' estimate: each op of a chain as the larger of its compute
and its DRAM traffic (machine model), whole and in strips of rows (each
strip making the rows the one before did not, and copying its halo rows),
and the chain suffix and strip height that save the most."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..frontend.builders import shape_of
from ..machine_model import gemm_cycles, type_bytes, vector_cycles
from ..recipes.elementwise import step_cycles
from ..recipes.vector_body import body_program
from .cascade_chains import Member, producer_is_pad, skip_of, tensor_bytes

# The most strips a chain is cut into.
MAX_STRIPS = 32
# The most of the SRAM a strip's tensors live at one time (an op's input and
# output) may take: the buffer plan keeps them there beside the ops' tiles.
STRIP_SHARE = 0.4
# What an op of a strip costs beyond its compute and traffic, in DMA setups:
# its first loads and last store overlap no compute of its own.
OP_START_SETUPS = 6
# The least share of the chain's estimated cycles a cascade must save: the
# estimate does not see how the buffer plan and the tile search place the
# strips, so a small gain may not be one.
MIN_GAIN = 0.1
# Pipelined, a strip's tensors live beside the next strip's lead result: the
# most of the SRAM they may take then. And the least share of the chain's
# estimated cycles pipelining must save beyond the plain cascade.
PIPELINE_SHARE = 0.5
PIPELINE_MIN_GAIN = 0.05
# The least share of a strip's rows of an op its halo (the rows the strip
# before made too) must be for the strip to copy them rather than compute them
# again: the copy waits for the strip before, whose result lives until then
# (a 1-row halo of 21, copied, cost an inverted residual on 40x40 220 of
# 14,314 cycles).
ROLL_MIN_SHARE = 0.1


def compute_cycles(member: Member, rows: int, target) -> int:
    """Estimated compute cycles of `member` making `rows` rows of its output."""
    op = member.op
    if member.is_pad:
        return 0
    n, _, width, channels = shape_of(op.results[0])
    if member.is_transpose:
        return vector_cycles(n * rows * width * channels, target)
    if member.is_elementwise:
        steps = body_program(op.regions[0].blocks[0], len(op.operands) - 1)
        return step_cycles(steps, n * rows * width * channels, target)
    if op.name == "linalg.conv_2d_nhwc_hwcf":
        kh, kw, cin, _ = shape_of(op.operands[1])
        return gemm_cycles(n * rows * width, channels, kh * kw * cin, target)
    kh, kw = shape_of(op.operands[1])[:2]
    return vector_cycles(n * rows * width * channels, target, kh * kw)


def weight_bytes(member: Member) -> int:
    """Bytes of the weights a conv loads (a pool's second operand only gives
    its window's shape)."""
    op = member.op
    if op.name not in ("linalg.conv_2d_nhwc_hwcf", "linalg.depthwise_conv_2d_nhwc_hwc"):
        return 0
    return type_bytes(ir.RankedTensorType(op.operands[1].type)) or 0


def member_cycles(member: Member, rows: int, dram_bytes: int, target) -> int:
    """The larger of `member`'s compute for `rows` rows and its DRAM traffic
    (they overlap); a pad costs nothing (its producer writes the padded buffer)."""
    if member.is_pad:
        return 0
    return max(compute_cycles(member, rows, target),
               -(-dram_bytes // target.dram_bytes_per_cycle))


@dataclass
class Plan:
    members: list           # last first
    rows: int               # the last op's output rows per strip
    strips: list            # per strip, each member's output rows [first, last)
    whole: int              # estimated cycles of the members whole
    cascaded: int           # and in strips
    lead: int = 0           # members (first first) of strip k + 1 run before the rest of strip k
    lag: int = 0            # members (last first) of strip k - 1 run after the middle of strip k

    @property
    def gain(self) -> int:
        return self.whole - self.cascaded


def rolls(member: Member) -> bool:
    """Whether a strip of `member` (not the chain's last op) makes only the
    rows the strip before did not, taking the rows both need (the halo of
    the window reading them) from a copy of them: every window op; a pad
    makes nothing, a transpose heading the chain is cheap to redo."""
    return not member.is_pad and not member.is_transpose


def on_matrix(member: Member) -> bool:
    return member.op.name == "linalg.conv_2d_nhwc_hwcf"


def beside(units: list) -> int:
    """Cycles the lead and the rest run side by side: `units` is their compute,
    [lead, rest] x [matrix, vector] (with a lagging tail, the lead and the tail
    beside the middle)."""
    return min(units[0][0], units[1][1]) + min(units[0][1], units[1][0])


def pipeline_lag(members: list, lead: int) -> int:
    """How many members (the last ones) of a strip to run after the middle of
    the next strip: the last op when it runs on the matrix unit after a
    vector op (an inverted bottleneck's project conv after its depthwise
    conv), so that it runs beside the next strip's vector op too; else 0."""
    ordered = list(reversed(members))
    if lead and len(ordered) - lead >= 2 and on_matrix(ordered[-1]) \
            and not ordered[-2].is_pad and not on_matrix(ordered[-2]):
        return 1
    return 0


def pipeline_lead(members: list, rows: int, target) -> int:
    """How many members (first to last) of the next strip to run before the
    rest of a strip: the split where the most compute of one unit runs beside
    the other's (0 when none does: every member on one unit)."""
    ordered = list(reversed(members))
    cycles = [compute_cycles(m, rows, target) for m in ordered]
    best, lead = 0, 0
    for split in range(1, len(ordered)):
        if ordered[split].is_pad:
            continue   # a pad goes with the op whose result it pads
        ending = [m for m in ordered[:split] if not m.is_pad][-1:]
        if not ending or not on_matrix(ending[0]):
            continue   # led by a vector op, the next strip's input loads held it back
        units = [[0, 0], [0, 0]]   # [lead, rest] x [matrix, vector]
        for index, (member, spent) in enumerate(zip(ordered, cycles)):
            units[index >= split][0 if on_matrix(member) else 1] += spent
        if beside(units) > best:
            best, lead = beside(units), split
    return lead


def strip_ranges(members: list, first: int, last: int, before: list | None = None) -> list:
    """Per member (last first) for rows [first, last) of the last one: the rows
    of its result the strip reads (first, last) and the first it makes
    (`rolls`: the rows the strip `before` made too are its halo)."""
    ranges = []
    for index, member in enumerate(members):
        made = first
        if index and before is not None and rolls(member) and before[index][1] < last \
                and before[index][1] - first >= ROLL_MIN_SHARE * (last - first):
            made = max(first, before[index][1])
        ranges.append((first, last, made))
        first, last = member.input_rows(made, last)
    return ranges


def all_strips(members: list, rows: int) -> list:
    """strip_ranges of every strip of `rows` rows of the last op, in order."""
    height = shape_of(members[0].op.results[0])[1]
    strips = []
    for start in range(0, height, rows):
        strips.append(strip_ranges(members, start, min(start + rows, height),
                                   strips[-1] if strips else None))
    return strips


def skip_bytes(member: Member, target, rows: int | None = None) -> int:
    """Bytes of the skip tensor `member` accumulates onto (or of `rows` of its
    rows) read from DRAM: none when the buffer plan can keep it."""
    skip = None if member.is_pad else skip_of(member.op)
    if skip is None or tensor_bytes(skip) <= target.max_sram_bytes * STRIP_SHARE:
        return 0
    return tensor_bytes(skip, rows)


def whole_cycles(members: list, target) -> int:
    """Estimated cycles of the members whole: a tensor over STRIP_SHARE of the
    SRAM goes through DRAM (the buffer plan keeps smaller ones), but for a
    prologue's result, which is never made: its reader loads the prologue's
    input, and the prologue's vector work runs beside that reader's."""
    kept = target.max_sram_bytes * STRIP_SHARE
    cycles = 0
    for index, member in enumerate(members):
        if member.is_prologue:
            continue
        source = members[index + 1] if index + 1 < len(members) \
            and members[index + 1].is_prologue else member
        traffic = weight_bytes(member) + skip_bytes(member, target) + sum(
            size for size in (source.source_bytes(), tensor_bytes(member.op.results[0]))
            if size > kept)
        cycles += member_cycles(member, shape_of(member.op.results[0])[1], traffic, target)
    return cycles


def evaluate(members: list, rows: int, target, lead: int = 0, lag: int = 0) -> Plan | None:
    """The plan of `members` in strips of `rows` output rows, the first `lead`
    of them run a strip ahead (0: none), the last `lag` a strip behind; None
    when an op of a strip would need more than STRIP_SHARE of the SRAM for its
    input, output and weights (and the result of the next strip's lead, and
    the middle's result of the strip before, beside the rest)."""
    strips = all_strips(members, rows)
    share = target.max_sram_bytes * STRIP_SHARE
    count = len(members)
    cycles = 0
    for number, ranges in enumerate(strips):
        ahead = 0   # bytes of the next strip's lead result, made during this strip's rest
        if lead and number + 1 < len(strips):
            first, last, _ = strips[number + 1][count - lead]
            ahead = tensor_bytes(members[count - lead].op.results[0], last - first)
        if lag and number:   # the middle's result of the strip before, its tail still to run
            first, last, _ = strips[number - 1][lag]
            ahead += tensor_bytes(members[lag].op.results[0], last - first)
        # Compute of [lead and tail, rest] x [matrix, vector].
        units = [[0, 0], [0, 0]]
        loads = 0   # the chain's input rows, read by its first op that is not a pad
        for i in range(count - 1, -1, -1):
            member, (first, last, made) = members[i], ranges[i]
            in_rest = count - 1 - i >= lead
            out = tensor_bytes(member.op.results[0], last - first)
            source_first, source_last = member.input_rows(made, last)
            inputs = member.source_bytes(source_last - source_first)
            if i + 1 == count:
                loads = inputs
            if member.is_prologue:
                continue   # no op: its reader loads its input rows (`loads`)
            # A strip makes the rows the one before did not, and copies the
            # halo rows from that strip's result (vector unit); the halos of
            # the strips before and after are counted beside its result.
            held = made - first
            following = 0
            if number + 1 < len(strips):
                after = strips[number + 1][i]
                following = after[2] - after[0]
            halos = tensor_bytes(member.op.results[0], held + following)
            # Its input and output kept in SRAM, and its weights beside them
            # (an elementwise op writes over its input, of its element type,
            # which nothing reads after it: npu-reuse-dead-inputs).
            # A prologue heading the strip folds into its reader's loads: the
            # reader keeps no rows of its result.
            folded = i + 2 == count and members[-1].is_prologue
            live = (out + halos if i else 0) + weight_bytes(member) + (
                inputs if i + 1 < count and not (member.is_pad or member.is_elementwise or folded)
                else 0) + (ahead if in_rest else 0)
            if live > (PIPELINE_SHARE * target.max_sram_bytes if ahead else share):
                return None
            if member.is_pad:
                continue
            # A transpose heading a pipelined chain transposes rows that load
            # while the strip before computes: its reader's loads, as if it
            # loaded them itself. The weights are loaded by the first strip;
            # the later ones read that tile (npu-share-constant-tiles).
            passes_loads_on = member.is_transpose and not in_rest
            traffic = (weight_bytes(member) if number == 0 else 0) + \
                (out if i == 0 else 0) + (0 if passes_loads_on else loads) + \
                skip_bytes(member, target, last - first)
            if not passes_loads_on:
                loads = 0
            cycles += member_cycles(member, last - first - held, traffic, target) + \
                OP_START_SETUPS * target.dma_setup_cycles
            if held:
                n, _, width, channels = shape_of(member.op.results[0])
                cycles += vector_cycles(n * held * width * channels, target)
            if ahead:
                group = int(in_rest and i >= lag)   # the tail runs beside the middle
                units[group][0 if on_matrix(member) else 1] += \
                    compute_cycles(member, last - first - held, target)
        if ahead:   # the next strip's lead (about this one's) beside this rest
            cycles -= beside(units)
    return Plan(members, rows, strips, whole_cycles(members, target), cycles, lead, lag)


def lost_prologue(members: list, chain: list, target) -> int:
    """Estimated cycles a plan of `members` adds outside them: where the chain
    is headed by a prologue (an elementwise op its reader folds into its
    loads) and `members` end at that reader, its strips read rows of the
    prologue's result, which then runs as an op of its own, through DRAM."""
    if len(members) + 1 != len(chain) or not chain[-1].is_prologue:
        return 0
    prologue = chain[-1]
    traffic = prologue.source_bytes() + tensor_bytes(prologue.op.results[0])
    return member_cycles(prologue, shape_of(prologue.op.results[0])[1], traffic, target)


def best_plan(chain: list, target, pipeline: bool = True) -> Plan | None:
    """The chain (a suffix of `chain`, ending at its last op) and strip height
    that save the most estimated cycles; None when none saves MIN_GAIN. With
    `pipeline`, the chain found runs pipelined, at the height that then saves
    the most, when that saves PIPELINE_MIN_GAIN more; when no chain saves
    MIN_GAIN plainly, the pipelined chain and height that save the most, when
    they save MIN_GAIN."""
    def saved(plan: Plan) -> int:
        return plan.gain - lost_prologue(plan.members, chain, target)

    best = None
    height = shape_of(chain[0].op.results[0])[1]
    heights = sorted({-(-height // count) for count in range(2, min(height, MAX_STRIPS) + 1)})
    suffixes = [chain[:length] for length in range(2, len(chain) + 1)
                if not producer_is_pad(chain[length - 1])
                and sum(1 for m in chain[:length] if not (m.is_pad or m.is_prologue)) >= 2]
    for members in suffixes:
        for rows in heights:
            plan = evaluate(members, rows, target)
            if plan is not None and saved(plan) >= MIN_GAIN * plan.whole and \
                    (best is None or saved(plan) > saved(best)):
                best = plan
    if not pipeline:
        return best
    pipelined = None
    for members in [best.members] if best is not None else suffixes:
        for rows in heights:
            lead = pipeline_lead(members, rows, target)
            for lag in {0, pipeline_lag(members, lead)}:
                plan = evaluate(members, rows, target, lead, lag) if lead else None
                if plan is not None and (pipelined is None or saved(plan) > saved(pipelined)):
                    pipelined = plan
    if pipelined is None:
        return best
    if best is None:
        return pipelined if saved(pipelined) >= MIN_GAIN * pipelined.whole else None
    return pipelined if saved(pipelined) - saved(best) >= PIPELINE_MIN_GAIN * best.whole \
        else best
