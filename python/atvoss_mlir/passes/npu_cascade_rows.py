"""npu-cascade-rows: run a chain of convolutions in strips of rows (cascading).

Runs on tensors, at -fusion=2, before npu-select-conv-strategy. A tensor
between two ops that the buffer plan cannot keep in SRAM goes through DRAM:
its producer writes it whole, its reader reads it back whole. When the ops of
a chain are row-local (convolutions, depthwise convolutions, pools and their
paddings, on NHWC tensors), the chain can run strip by strip instead: R rows
of the last op's result need a window of rows of each op before it (a k-row
kernel at stride s reads (R - 1) * s + k rows), computed for that strip alone.
The tensors of a strip are small enough for the buffer plan (npu-keep-in-sram)
to keep in SRAM, and the last op of each strip writes its rows of the result
in place. The chain may start at a transpose into NHWC (a model's NCHW
input: each strip transposes its rows in SRAM), and its last op may
accumulate onto a skip tensor (a residual add folded into it): each strip
starts from its rows of the skip.

Neighbouring strips' windows overlap (the halo), so rows are computed again,
every strip loads the weights again, and each op of a strip starts and drains
its own tile pipeline. The pass estimates each op as the larger of its
compute and its DRAM traffic (machine model), whole and in strips, and takes
the chain (ending at its last op) and strip height that save the most, when
they save at least MIN_GAIN of the chain's cycles. Each cascade is a remark at
the last op with both estimates; a chain holding a tensor the buffer plan
cannot keep that stays whole gets a remark saying why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import tensor

from ..frontend.builders import element_of, empty, extract_slice, shape_of, tensor_type
from ..machine_model import element_bytes, gemm_cycles, type_bytes, vector_cycles
from ..recipes.ir_queries import RESIDUAL_START_ATTR, ints, optional_attr
from . import ModulePass, PassContext, erase_if_unused, function_bodies
from .npu_keep_in_sram import name_of
from .npu_select_conv_strategy import tensor_shape

WINDOW_OPS = ("linalg.conv_2d_nhwc_hwcf", "linalg.depthwise_conv_2d_nhwc_hwc",
              "linalg.pooling_nhwc_max", "linalg.pooling_nhwc_sum")
# Ops making an op's initial value, which a strip makes again at its own shape.
INIT_OPS = ("tensor.empty", "linalg.fill", "linalg.broadcast")
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


@dataclass
class Member:
    """One op of a chain and how its output rows map to its input rows."""
    op: ir.Operation
    kernel: int = 1      # rows of the window (dilated)
    stride: int = 1
    pad_low: int = 0     # tensor.pad: rows added above
    source_rows_dim: int = 1   # the dim of the source its rows are (a transpose's)

    @property
    def source(self) -> ir.Value:
        return self.op.operands[0]

    @property
    def is_transpose(self) -> bool:
        return self.op.name == "linalg.transpose"

    def source_bytes(self, rows: int | None = None) -> int:
        """Bytes of the source, or of `rows` of its rows."""
        return _bytes(self.source, rows, self.source_rows_dim)

    @property
    def is_pad(self) -> bool:
        return self.op.name == "tensor.pad"

    def input_rows(self, first: int, last: int) -> tuple[int, int]:
        """The rows of the op's input that its output rows [first, last) read
        (for a pad: those of its source, clipped to it)."""
        if self.is_pad:
            height = shape_of(self.source)[1]
            return max(first - self.pad_low, 0), min(last - self.pad_low, height)
        return first * self.stride, (last - 1) * self.stride + self.kernel


def _producer(value: ir.Value):
    return value.owner.operation if isinstance(value, ir.OpResult) else None


def _static_nhwc(value: ir.Value) -> bool:
    shape = tensor_shape(value)
    return shape is not None and len(shape) == 4


def _bytes(value: ir.Value, rows: int | None = None, rows_dim: int = 1) -> int:
    """Bytes of a static 4-d tensor value, or of `rows` of its rows (dim
    `rows_dim`: 1 in NHWC)."""
    shape = shape_of(value)
    if rows is not None:
        shape = shape[:rows_dim] + [rows] + shape[rows_dim + 1:]
    return math.prod(shape) * (element_bytes(element_of(value)) or 0)


def _init_of(op) -> ir.Value:
    return op.operands[len(op.operands) - 1]


def _remakeable_init(op) -> bool:
    """Whether `op`'s initial value is an empty, a fill, a per-channel
    broadcast or a residual start (skip + bias, which a strip makes from its
    rows of the skip) that only it reads (a strip makes its own)."""
    init = _producer(_init_of(op))
    if init is None or len(list(init.results[0].uses)) != 1:
        return False
    if RESIDUAL_START_ATTR in init.attributes:
        return shape_of(init.operands[0]) == shape_of(op.results[0])
    if init.name not in INIT_OPS:
        return False
    return init.name != "linalg.broadcast" or \
        ints(init.attributes["dimensions"], []) == [0, 1, 2]


def _skip_of(op) -> ir.Value | None:
    """The skip tensor `op` accumulates onto (its residual start's), else None."""
    init = _producer(_init_of(op))
    return init.operands[0] if init is not None and RESIDUAL_START_ATTR in init.attributes \
        else None


def member_of(op) -> Member | None:
    """`op` as a chain member: a window op on static NHWC tensors making its own
    initial value, a tensor.pad of rows and columns, or a transpose into NHWC
    that keeps the batch dim (the model's NCHW input: its strips transpose
    rows of it in SRAM)."""
    if len(op.results) != 1 or not len(op.operands) or not _static_nhwc(op.results[0]) \
            or not _static_nhwc(op.operands[0]):
        return None
    if op.name in WINDOW_OPS:
        if not _remakeable_init(op):
            return None
        dilation = ints(optional_attr(op, "dilations"), [1, 1])[0]
        stride = ints(optional_attr(op, "strides"), [1, 1])[0]
        kernel = shape_of(op.operands[1])[0]
        return Member(op, kernel=(kernel - 1) * dilation + 1, stride=stride)
    if op.name == "linalg.transpose" and _remakeable_init(op):
        permutation = ints(op.attributes["permutation"], [])
        if permutation[0] == 0:
            return Member(op, source_rows_dim=permutation[1])
    if op.name == "tensor.pad" and len(op.operands) == 1 and _constant_padding(op):
        low = ints(op.attributes["static_low"], [])
        high = ints(op.attributes["static_high"], [])
        if low[0] == high[0] == low[3] == high[3] == 0:
            return Member(op, pad_low=low[1])
    return None


def _constant_padding(pad) -> bool:
    """Whether the pad yields one value everywhere (not one computed from the
    indices, which a strip would shift)."""
    body = pad.regions[0].blocks[0]
    value = list(body.operations)[-1].operands[0]
    owner = value.owner
    return not isinstance(owner, ir.Block) and owner.operation.parent != pad


def chain_ending_at(last, claimed: set) -> list[Member]:
    """The longest chain of members ending at the window op `last`, last first:
    each member's operand 0 is made by the one after it, read by nothing else.
    A result a pad reads stays whole: its producer writes the padded buffer's
    interior, and a conv or pool folds the padding into its loads."""
    first = member_of(last)
    if first is None or first.is_pad or any(
            use.owner.operation.name == "tensor.pad" for use in last.results[0].uses):
        return []
    chain = [first]
    while not chain[-1].is_transpose:   # a transpose's source rows are another dim
        producer = _producer(chain[-1].source)
        if producer is None or producer in claimed \
                or len(list(producer.results[0].uses)) != 1:
            break
        member = member_of(producer)
        if member is None:
            break
        chain.append(member)
    return chain


def _producer_is_pad(member: Member) -> bool:
    producer = _producer(member.source)
    return producer is not None and producer.name == "tensor.pad"


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
    skip = None if member.is_pad else _skip_of(member.op)
    if skip is None or _bytes(skip) <= target.max_sram_bytes * STRIP_SHARE:
        return 0
    return _bytes(skip, rows)


def whole_cycles(members: list, target) -> int:
    """Estimated cycles of the members whole: a tensor over STRIP_SHARE of the
    SRAM goes through DRAM (the buffer plan keeps smaller ones)."""
    kept = target.max_sram_bytes * STRIP_SHARE
    cycles = 0
    for member in members:
        traffic = weight_bytes(member) + skip_bytes(member, target) + sum(
            size for size in (member.source_bytes(), _bytes(member.op.results[0]))
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
            out = _bytes(member.op.results[0], last - first)
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
        if _producer_is_pad(members[-1]) or sum(1 for m in members if not m.is_pad) < 2:
            continue
        for rows in heights:
            plan = evaluate(members, rows, target)
            if plan is not None and plan.gain >= MIN_GAIN * plan.whole and \
                    (best is None or plan.gain > best.gain):
                best = plan
    return best


def node_names(members: list) -> str:
    """The members' model nodes (or op names and lines), first to last."""
    return ", ".join(dict.fromkeys(name_of(m.op) for m in reversed(members) if not m.is_pad))


def _copy_at_shape(op, operands: dict, shape, anchor) -> ir.Operation:
    """A copy of `op` before `anchor` with operands replaced (index -> value)
    and a result of `shape`."""
    with ir.InsertionPoint(anchor):
        copy = op.clone()
    for index, value in operands.items():
        copy.operands[index] = value
    copy.results[0].set_type(tensor_type(shape, element_of(op.results[0])))
    return copy


def _init_at_shape(init_op, shape, anchor, into: ir.Value | None = None,
                   first: int = 0) -> ir.Value:
    """`init_op` (an empty, a fill, a broadcast or a residual start) made again
    at `shape` for output rows from `first`, writing into `into` when given (a
    slice of the chain's result)."""
    with ir.InsertionPoint(anchor), init_op.location:
        destination = into if into is not None else empty(shape, element_of(init_op.results[0]))
        if init_op.name == "tensor.empty":
            return destination
        operands = {len(init_op.operands) - 1: destination}
        if RESIDUAL_START_ATTR in init_op.attributes:
            operands[0] = _slice_rows(init_op.operands[0], first, first + shape[1])
        return _copy_at_shape(init_op, operands, shape, anchor).results[0]


def _slice_rows(value: ir.Value, first: int, last: int, dim: int = 1) -> ir.Value:
    shape = shape_of(value)
    offsets, sizes = [0] * len(shape), list(shape)
    offsets[dim], sizes[dim] = first, last - first
    return extract_slice(value, offsets, sizes)


def _destination(last):
    """Where the last op's result is inserted whole, when only a
    tensor.insert_slice reads it (a slice of a concatenation): (insert op, its
    static offsets), else None. The strips then write their rows of that
    tensor in place, where the insert was."""
    uses = list(last.results[0].uses)
    if len(uses) != 1 or uses[0].owner.operation.name != "tensor.insert_slice" \
            or uses[0].operand_number != 0:
        return None
    insert = uses[0].owner.operation
    strides = ints(insert.attributes["static_strides"], [])
    if list(insert.operands)[2:] or any(stride != 1 for stride in strides):
        return None   # dynamic offsets, sizes or strides
    return insert, ints(insert.attributes["static_offsets"], [])


def cascade(plan: Plan) -> None:
    """Replace the members by their strips: each strip slices the chain's input
    rows, runs a copy of each member at its rows and inserts the last one's rows
    into the result, whose slice the last op of the strip writes in place (or
    into the tensor the result was inserted into whole)."""
    members = plan.members
    last = members[0].op
    anchor = last
    chain_input = members[-1].source
    destination = _destination(last)
    result, offsets = None, [0, 0, 0, 0]
    if destination is not None:
        anchor, result, offsets = destination[0], destination[0].operands[1], destination[1]
    for ranges in plan.strips:
        with ir.InsertionPoint(anchor):
            value = _slice_rows(chain_input, *members[-1].input_rows(*ranges[-1]),
                                members[-1].source_rows_dim)
        for member, (first, end) in reversed(list(zip(members, ranges))):
            op = member.op
            shape = shape_of(op.results[0])
            shape = [shape[0], end - first] + shape[2:]
            if member.is_pad:
                copy = _copy_at_shape(op, {0: value}, shape, anchor)
                source_height = shape_of(op.operands[0])[1]
                low = ints(op.attributes["static_low"], [])
                high = ints(op.attributes["static_high"], [])
                low[1] = max(member.pad_low - first, 0)
                high[1] = max(end - member.pad_low - source_height, 0)
                copy.attributes["static_low"] = ir.DenseI64ArrayAttr.get(low)
                copy.attributes["static_high"] = ir.DenseI64ArrayAttr.get(high)
                value = copy.results[0]
                continue
            into = None
            if op == last:
                with ir.InsertionPoint(anchor):
                    if result is None:
                        # Made where the first strip writes it: its buffer is
                        # live from there (the buffer plan sees it from there).
                        result = empty(shape_of(last.results[0]), element_of(last.results[0]))
                    into = extract_slice(result, _rows_at(offsets, first), shape)
            init = _init_at_shape(_producer(_init_of(op)), shape, anchor, into, first)
            value = _copy_at_shape(op, {0: value, len(op.operands) - 1: init}, shape,
                                   anchor).results[0]
        with ir.InsertionPoint(anchor):
            result = tensor.InsertSliceOp(value, result, [], [], [],
                                          _rows_at(offsets, ranges[0][0]), shape_of(value),
                                          [1, 1, 1, 1]).result
    if destination is not None:
        destination[0].results[0].replace_all_uses_with(result)
        destination[0].erase()
    else:
        last.results[0].replace_all_uses_with(result)
    for member in members:
        init = None if member.is_pad else _init_of(member.op)
        member.op.erase()
        if init is not None:
            start = _producer(init)
            if start is not None and RESIDUAL_START_ATTR in start.attributes \
                    and not list(init.uses):
                init = _init_of(start)
                start.erase()
            erase_if_unused(init)


def _rows_at(offsets: list, row: int) -> list:
    """`offsets` moved down `row` rows."""
    return [offsets[0], offsets[1] + row] + offsets[2:]


@dataclass(frozen=True)
class NpuCascadeRows(ModulePass):
    argument = "npu-cascade-rows"
    summary = "Run chains of convolutions whose tensors exceed the SRAM in strips of rows " \
              "(-fusion=2)"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        target = context.target
        if target.fusion < 2:
            return
        kept = target.max_sram_bytes * STRIP_SHARE
        with module.context:
            for body in function_bodies(module):
                plans, claimed, shared, refused = [], set(), set(), set()
                for op in reversed([op.operation for op in body.operations]):
                    if op in claimed:
                        continue
                    chain = chain_ending_at(op, claimed)
                    if chain:
                        self.remark_shared(chain[-1], shared, context)
                    large = [_bytes(m.op.results[0]) for m in chain[1:]
                             if not m.is_pad and _bytes(m.op.results[0]) > kept]
                    if not large or sum(1 for m in chain if not m.is_pad) < 2:
                        continue
                    plan = best_plan(chain, target)
                    if plan is None:
                        # A chain ending before may still pay; said once.
                        if op in refused:
                            continue
                        refused.update(m.op for m in chain)
                        context.diagnostics.remark(
                            op.location, f"{node_names(chain)} not cascaded: the "
                            f"{max(large)} B between them go through DRAM; in strips whose "
                            f"tensors take at most {int(STRIP_SHARE * 100)}% of the SRAM, "
                            f"none saves {int(MIN_GAIN * 100)}% of their estimated "
                            f"{whole_cycles(chain, target)} cycles")
                        continue
                    claimed.update(m.op for m in plan.members)
                    plans.append(plan)
                for plan in plans:
                    last = plan.members[0].op
                    between = sum(_bytes(m.op.results[0]) for m in plan.members[1:]
                                  if not m.is_pad)
                    context.diagnostics.remark(
                        last.location,
                        f"cascaded {node_names(plan.members)} in {len(plan.strips)} strips of "
                        f"{plan.rows} rows: the {between} B between them stay in SRAM a strip "
                        f"at a time (estimated {plan.whole} -> {plan.cascaded} cycles)")
                    with last.location:
                        cascade(plan)

    @staticmethod
    def remark_shared(member: Member, seen: set, context: PassContext) -> None:
        """Say why a large result a chain reads is not cascaded with it: other
        ops read it too (once per result)."""
        producer = _producer(member.source)
        if producer is None or producer in seen or member_of(producer) is None \
                or _bytes(producer.results[0]) <= context.target.max_sram_bytes * STRIP_SHARE:
            return
        readers = len(list(producer.results[0].uses))
        if readers < 2:
            return
        seen.add(producer)
        context.diagnostics.remark(
            producer.location, f"{name_of(producer)} not cascaded with its readers: its "
            f"{_bytes(producer.results[0])} B result goes through DRAM whole, {readers} ops "
            f"read it")
