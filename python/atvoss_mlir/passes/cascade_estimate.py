"""npu-cascade-rows' estimate: each op of a chain as the larger of its compute
and its DRAM traffic (machine model), whole and in strips of rows, and the
chain suffix and strip height that save the most."""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..frontend.builders import shape_of
from ..machine_model import gemm_cycles, type_bytes, vector_cycles
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


def compute_cycles(member: Member, rows: int, target) -> int:
    """Estimated compute cycles of `member` making `rows` rows of its output."""
    op = member.op
    if member.is_pad:
        return 0
    n, _, width, channels = shape_of(op.results[0])
    if member.is_transpose:
        return vector_cycles(n * rows * width * channels, target)
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

    @property
    def gain(self) -> int:
        return self.whole - self.cascaded


def strip_ranges(members: list, first: int, last: int) -> list:
    """The output rows each member makes for rows [first, last) of the last one."""
    ranges = []
    for member in members:
        ranges.append((first, last))
        first, last = member.input_rows(first, last)
    return ranges


def skip_bytes(member: Member, target, rows: int | None = None) -> int:
    """Bytes of the skip tensor `member` accumulates onto (or of `rows` of its
    rows) read from DRAM: none when the buffer plan can keep it."""
    skip = None if member.is_pad else skip_of(member.op)
    if skip is None or tensor_bytes(skip) <= target.max_sram_bytes * STRIP_SHARE:
        return 0
    return tensor_bytes(skip, rows)


def whole_cycles(members: list, target) -> int:
    """Estimated cycles of the members whole: a tensor over STRIP_SHARE of the
    SRAM goes through DRAM (the buffer plan keeps smaller ones)."""
    kept = target.max_sram_bytes * STRIP_SHARE
    cycles = 0
    for member in members:
        traffic = weight_bytes(member) + skip_bytes(member, target) + sum(
            size for size in (member.source_bytes(), tensor_bytes(member.op.results[0]))
            if size > kept)
        cycles += member_cycles(member, shape_of(member.op.results[0])[1], traffic, target)
    return cycles


def evaluate(members: list, rows: int, target) -> Plan | None:
    """The plan of `members` in strips of `rows` output rows; None when an op
    of a strip would need more than STRIP_SHARE of the SRAM for its input,
    output and weights."""
    height = shape_of(members[0].op.results[0])[1]
    strips = [strip_ranges(members, start, min(start + rows, height))
              for start in range(0, height, rows)]
    share = target.max_sram_bytes * STRIP_SHARE
    cycles = 0
    for ranges in strips:
        loads = 0   # the chain's input rows, read by its first op that is not a pad
        for i in range(len(members) - 1, -1, -1):
            member, (first, last) = members[i], ranges[i]
            out = tensor_bytes(member.op.results[0], last - first)
            source_first, source_last = member.input_rows(first, last)
            inputs = member.source_bytes(source_last - source_first)
            if i + 1 == len(members):
                loads = inputs
            # Its input and output kept in SRAM, and its weights beside them.
            live = (out if i else 0) + weight_bytes(member) + (
                inputs if i + 1 < len(members) and not member.is_pad else 0)
            if live > share:
                return None
            if member.is_pad:
                continue
            traffic = weight_bytes(member) + (out if i == 0 else 0) + loads + \
                skip_bytes(member, target, last - first)
            loads = 0
            cycles += member_cycles(member, last - first, traffic, target) + \
                OP_START_SETUPS * target.dma_setup_cycles
    return Plan(members, rows, strips, whole_cycles(members, target), cycles)


def best_plan(chain: list, target) -> Plan | None:
    """The chain (a suffix of `chain`, ending at its last op) and strip height
    that save the most estimated cycles; None when none saves MIN_GAIN."""
    best = None
    height = shape_of(chain[0].op.results[0])[1]
    heights = sorted({-(-height // count) for count in range(2, min(height, MAX_STRIPS) + 1)})
    for length in range(2, len(chain) + 1):
        members = chain[:length]
        if producer_is_pad(members[-1]) or sum(1 for m in members if not m.is_pad) < 2:
            continue
        for rows in heights:
            plan = evaluate(members, rows, target)
            if plan is not None and plan.gain >= MIN_GAIN * plan.whole and \
                    (best is None or plan.gain > best.gain):
                best = plan
    return best
