"""npu-cascade-rows: run a chain of convolutions in strips of rows (cascading).

Runs on tensors, at -fusion=2, before npu-select-conv-strategy. A tensor
between two ops that the buffer plan cannot keep in SRAM goes through DRAM:
its producer writes it whole, its reader reads it back whole. When the ops of
a chain are row-local (convolutions, depthwise convolutions, pools and their
paddings, and elementwise ops between them, such as a swish, on NHWC
tensors), the chain can run strip by strip instead: R rows
of the last op's result need a window of rows of each op before it (a k-row
kernel at stride s reads (R - 1) * s + k rows), computed for that strip alone.
The tensors of a strip are small enough for the buffer plan (npu-keep-in-sram)
to keep in SRAM, and the last op of each strip writes its rows of the result
in place. The chain may start at a transpose into NHWC (a model's NCHW
input: each strip transposes its rows in SRAM), and its last op may
accumulate onto a skip tensor (a residual add folded into it): each strip
starts from its rows of the skip. It may also start at an elementwise op only
its first conv reads (a squeeze-excitation's gate times its input), which
that conv whole folds into its loads as a prologue: in strips the conv reads
rows of the op's result, which would be made whole and go through DRAM, so
each strip runs the op on its rows instead, and the strip's conv folds them.
The estimate counts the prologue as its reader's loads, whole or in strips,
and a chain that starts at the reader loses it: the op then runs whole.

Where a strip's ops take turns on the two units, the strips are pipelined:
the lead of the chain (its first ops, up to a matrix op) of strip k + 1 runs
before the rest of strip k, so the matrix unit computes the next strip while
the vector unit finishes this one (MobileNetV2's expand conv beside the
depthwise conv before it). Two strips' lead results are then live at once.
Where the chain ends on the matrix unit after a vector op (the project conv
after the depthwise conv), that last op of strip k may also run after the
middle of strip k + 1, so that it too runs beside a depthwise conv: the
estimate takes this lag where it saves more, and two strips' middle results
are then live at once.

Neighbouring strips' windows overlap (the halo): a strip makes only the rows
of each op that the strip before did not, and copies the rows both read from
that strip's result (a rolling window; a vector-unit copy of a row or two in
SRAM). An op whose result is padded for its reader writes straight into the
padded strip, whose border alone is filled. Still, every strip loads the
weights again, and each op of a strip starts and drains its own tile
pipeline. The pass estimates each op as the larger of its
compute and its DRAM traffic (machine model), whole and in strips, and takes
the chain (ending at its last op) and strip height that save the most, when
they save at least MIN_GAIN of the chain's cycles. Each cascade is a remark at
the last op with both estimates; a chain holding a tensor the buffer plan
cannot keep that stays whole gets a remark saying why.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg, tensor

from ..frontend.builders import element_of, empty, extract_slice, shape_of
from ..recipes.ir_queries import RESIDUAL_START_ATTR, ints
from . import ModulePass, PassContext, erase_if_unused, function_bodies
from .cascade_chains import (Member, chain_ending_at, copy_at_shape, init_of, member_of,
                             node_names, padded_in_place, padding_value, producer_of,
                             readers_of, slice_along, tensor_bytes)
from .cascade_estimate import MIN_GAIN, STRIP_SHARE, Plan, best_plan, whole_cycles
from ..diagnostics import name_of
from .npu_pad_in_place import halo as border_slabs


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
            operands[0] = slice_along(init_op.operands[0], 1, first, first + shape[1])
        return copy_at_shape(init_op, operands, shape, anchor).results[0]


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
    ordered = list(reversed(members))   # first to last

    # Per member (first to last): where the rows of its previous strip's result
    # that the next strip reads again (its halo) are.
    halos = {}

    def emit(number: int, start: int, stop: int, value):
        """Copies of the members ordered[start:stop] at the rows of strip
        `number`, fed `value` (the strip's input rows when start is 0); the
        last one's value."""
        nonlocal result
        ranges = list(reversed(plan.strips[number]))
        following = list(reversed(plan.strips[number + 1])) \
            if number + 1 < len(plan.strips) else None
        if start == 0:
            with ir.InsertionPoint(anchor):
                _, end, made = ranges[0]
                value = slice_along(chain_input, ordered[0].source_rows_dim,
                                    *ordered[0].input_rows(made, end))
        padded = None   # a pad the member before wrote its strip into
        for index in range(start, stop):
            member, (first, end, made) = ordered[index], ranges[index]
            op = member.op
            if padded is not None:
                value, padded = padded, None
                continue
            shape = shape_of(op.results[0])
            shape = [shape[0], end - first] + shape[2:]
            if member.is_pad:
                copy = copy_at_shape(op, {0: value}, shape, anchor)
                source_height = shape_of(op.operands[0])[1]
                low = ints(op.attributes["static_low"], [])
                high = ints(op.attributes["static_high"], [])
                low[1] = max(member.pad_low - first, 0)
                high[1] = max(end - member.pad_low - source_height, 0)
                copy.attributes["static_low"] = ir.DenseI64ArrayAttr.get(low)
                copy.attributes["static_high"] = ir.DenseI64ArrayAttr.get(high)
                value = copy.results[0]
                continue
            if op == last:
                with ir.InsertionPoint(anchor):
                    if result is None:
                        # Made where the first strip writes it: its buffer is
                        # live from there (the buffer plan sees it from there).
                        result = empty(shape_of(last.results[0]), element_of(last.results[0]))
                    into = extract_slice(result, _rows_at(offsets, first), shape)
                value = _op_at_rows(op, value, shape, anchor, into, first)
                continue
            # The next strip copies its halo rows of this op's result from this one.
            halo_next = following is not None and following[index][2] > following[index][0]
            if made > first or halo_next:
                pad = ordered[index + 1] if index + 1 < stop and ordered[index + 1].is_pad \
                    else None
                with op.location:
                    buffer, at = _strip_buffer(member, (first, end), pad,
                                               ranges[index + 1] if pad else None, anchor)
                    value = _rolled(member, value, (first, end, made), halos.pop(index, None),
                                    buffer, at, anchor)
                if pad is not None:
                    padded = value
                if halo_next:
                    kept = following[index][0] - first
                    halos[index] = (value, [0, at[1] + kept, at[2], 0],
                                    [shape[0], end - first - kept] + shape[2:])
                continue
            value = _op_at_rows(op, value, shape, anchor, None, first)
        return value

    # Software pipelining: the lead of strip k + 1 runs before the rest of
    # strip k, so the two run side by side on the two units.
    lead, lag = plan.lead, plan.lag
    middle_end = len(ordered) - lag

    def finish(index: int, value) -> None:
        """The tail of strip `index` (fed its middle's `value`) and its rows
        inserted into the result."""
        nonlocal result
        if lag:
            value = emit(index, middle_end, len(ordered), value)
        with ir.InsertionPoint(anchor):
            result = tensor.InsertSliceOp(value, result, [], [], [],
                                          _rows_at(offsets, plan.strips[index][0][0]),
                                          shape_of(value), [1, 1, 1, 1]).result

    leads = {0: emit(0, 0, lead, None)} if lead else {}
    middle = None   # the middle's value of the strip before, whose tail lags
    for index in range(len(plan.strips)):
        if lead and index + 1 < len(plan.strips):
            leads[index + 1] = emit(index + 1, 0, lead, None)
        value = emit(index, lead, middle_end, leads.pop(index, None))
        if not lag:
            finish(index, value)
            continue
        if middle is not None:
            finish(index - 1, middle)
        middle = value
    if lag:
        finish(len(plan.strips) - 1, middle)
    if destination is not None:
        destination[0].results[0].replace_all_uses_with(result)
        destination[0].erase()
    else:
        last.results[0].replace_all_uses_with(result)
    for member in members:
        init = None if member.is_pad else init_of(member.op)
        member.op.erase()
        if init is not None:
            start = producer_of(init)
            if start is not None and RESIDUAL_START_ATTR in start.attributes \
                    and not list(init.uses):
                init = init_of(start)
                start.erase()
            erase_if_unused(init)


def _op_at_rows(op, value, shape, anchor, into: ir.Value | None, first: int) -> ir.Value:
    """A copy of `op` making its output rows from `first` at `shape` from its
    input rows in `value`, starting from its initial value made again at that
    shape (writing into `into` when given)."""
    init = _init_at_shape(producer_of(init_of(op)), shape, anchor, into, first)
    last = len(op.operands) - 1
    # An elementwise op may read its source as several operands (x * sigmoid(x)).
    operands = {index: value for index in range(last) if op.operands[index] == op.operands[0]}
    operands[last] = init
    return copy_at_shape(op, operands, shape, anchor).results[0]


def _strip_buffer(member: Member, rows: tuple, pad: Member | None, pad_rows, anchor):
    """The tensor a rolled member's strip (rows [first, end) of its result)
    is written into, and the offsets of its rows there: a tensor of its own,
    or the padded strip `pad` makes of it (pad_rows: the pad's (first, end,
    _)) with only the border filled, so the reader of the pad reads it as
    the member writes it, no copy between."""
    op = member.op
    first, end = rows
    shape = shape_of(op.results[0])
    shape = [shape[0], end - first] + shape[2:]
    with ir.InsertionPoint(anchor):
        if pad is None:
            return empty(shape, element_of(op.results[0])), [0, 0, 0, 0]
        pad_first, pad_end, _ = pad_rows
        padded_shape = shape_of(pad.op.results[0])
        padded_shape = [padded_shape[0], pad_end - pad_first] + padded_shape[2:]
        at = [0, first + pad.pad_low - pad_first, ints(pad.op.attributes["static_low"], [])[2],
              0]
        buffer = empty(padded_shape, element_of(op.results[0]))
        value = padding_value(pad.op)
        for offsets, sizes in border_slabs(padded_shape, at, shape):
            border = linalg.fill(value, outs=[extract_slice(buffer, offsets, sizes)])
            buffer = tensor.InsertSliceOp(border, buffer, [], [], [], offsets, sizes,
                                          [1, 1, 1, 1]).result
    return buffer, at


def _rolled(member: Member, value, rows: tuple, halo_rows, buffer, at: list,
            anchor) -> ir.Value:
    """`member`'s `rows` (first, end, made) written into `buffer` from
    offsets `at`: rows [first, made), which the strip before made too, are
    copied from its result (`halo_rows`: the tensor, the offsets and sizes of
    those rows there); the op makes rows [made, end) from its input rows in
    `value`, in place."""
    op = member.op
    first, end, made = rows
    shape = shape_of(op.results[0])
    held = made - first
    making = [shape[0], end - made] + shape[2:]
    if making == shape_of(buffer):
        # Nothing held, nothing padded: the op makes the strip's tensor whole.
        erase_if_unused(buffer)
        return _op_at_rows(op, value, making, anchor, None, made)
    with ir.InsertionPoint(anchor):
        offsets = [at[0], at[1] + held] + at[2:]
        into = extract_slice(buffer, offsets, making)
    result = _op_at_rows(op, value, making, anchor, into, made)
    with ir.InsertionPoint(anchor):
        buffer = tensor.InsertSliceOp(result, buffer, [], [], [], offsets, making,
                                      [1, 1, 1, 1]).result
        if held:   # after the op: the op's input loads follow the op before
            source, offsets, sizes = halo_rows
            buffer = tensor.InsertSliceOp(extract_slice(source, offsets, sizes), buffer, [], [],
                                          [], at, sizes, [1, 1, 1, 1]).result
    return buffer


def _rows_at(offsets: list, row: int) -> list:
    """`offsets` moved down `row` rows."""
    return [offsets[0], offsets[1] + row] + offsets[2:]


@dataclass(frozen=True)
class NpuCascadeRows(ModulePass):
    argument = "npu-cascade-rows"
    summary = "Run chains of convolutions whose tensors exceed the SRAM in strips of rows " \
              "(-fusion=2)"

    # Software pipelining of the strips where it pays (false: strips one after another).
    pipeline: bool = True

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
                    pad = padded_in_place(op) if chain else None
                    if chain and pad is None:
                        self.remark_shared(chain[-1], shared, context)
                    large = [tensor_bytes(m.op.results[0]) for m in chain[1:]
                             if not (m.is_pad or m.is_prologue)
                             and tensor_bytes(m.op.results[0]) > kept]
                    if not large or sum(1 for m in chain if not m.is_pad) < 2:
                        continue
                    if pad is not None:   # only a chain the pass would weigh is priced
                        self.remark_in_place(chain, pad, context)
                        continue
                    plan = best_plan(chain, target, self.pipeline)
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
                    between = sum(tensor_bytes(m.op.results[0]) for m in plan.members[1:]
                                  if not m.is_pad)
                    pipelined = ""
                    if plan.lead:   # the members are last first
                        lead = plan.members[len(plan.members) - plan.lead:]
                        pipelined = f", pipelined: {node_names(lead)} of the next strip runs " \
                            f"beside the rest of each strip"
                    if plan.lag:
                        pipelined += f", and {node_names(plan.members[:plan.lag])} of each " \
                            f"strip after the next strip's middle"
                    context.diagnostics.remark(
                        last.location,
                        f"cascaded {node_names(plan.members)} in {len(plan.strips)} strips of "
                        f"{plan.rows} rows{pipelined}: the {between} B between them stay in SRAM "
                        f"a strip at a time (estimated {plan.whole} -> {plan.cascaded} cycles)")
                    with last.location:
                        cascade(plan)

    def remark_in_place(self, chain: list, pad, context: PassContext) -> None:
        """Say why a chain that would pay stays whole: its last op's result is
        padded in place for an op that is not a conv or pool."""
        plan = best_plan(chain, context.target, self.pipeline)
        if plan is None:
            return
        last = chain[0].op
        reader = next(use.owner.operation for use in pad.results[0].uses)
        context.diagnostics.remark(
            last.location, f"{node_names(plan.members)} not cascaded: {name_of(reader)} reads "
            f"the result padded and does not fold the padding into its loads, so "
            f"{name_of(last)} writes the padded buffer's interior whole (in strips estimated "
            f"{plan.whole} -> {plan.cascaded} cycles)")

    @staticmethod
    def remark_shared(member: Member, seen: set, context: PassContext) -> None:
        """Say why a large result a chain reads is not cascaded with it: other
        ops read it too (once per result)."""
        producer = producer_of(member.source)
        if producer is None or producer in seen or member_of(producer) is None \
                or tensor_bytes(producer.results[0]) <= context.target.max_sram_bytes * STRIP_SHARE:
            return
        readers = len(readers_of(producer.results[0]))
        if readers < 2:
            return
        seen.add(producer)
        context.diagnostics.remark(
            producer.location, f"{name_of(producer)} not cascaded with its readers: its "
            f"{tensor_bytes(producer.results[0])} B result goes through DRAM whole, {readers} ops "
            f"read it")
