"""npu-cascade-channels: run an inverted bottleneck in groups of channels.

Runs on tensors, at -fusion=2, before npu-cascade-rows. In an inverted
bottleneck (MobileNetV2's block) a conv expands the channels on the matrix
unit, a depthwise conv filters each channel alone on the vector unit, and a
conv projects the channels back on the matrix unit. Whole, the three run one
after another, so one unit always waits; the expanded tensors may also exceed
what the buffer plan keeps in SRAM.

A depthwise conv reads only its own channels and the project conv sums over
channels, so the block runs in groups of channels instead: the expand conv
makes a group's channels (a slice of its filters and bias), the depthwise
conv filters them, and the project conv adds their contribution to its result
(a slice of its weights' input channels). The result accumulates over the
groups from its initial value (the bias); the project conv must have no
activation, which would apply to a partial sum. The groups are pipelined: the
expand conv of group k + 1 and the project conv of group k - 1 run on the
matrix unit beside the depthwise conv of group k on the vector unit (the
compute units order the ops by the buffers they use), and a group's tensors
are small enough for the buffer plan to keep in SRAM.

A group is a multiple of the vector lanes and of the array's rows and columns
(a group fills the units as the whole does). The pass estimates each op as the
larger of its compute and its DRAM traffic (machine model), the ops of one
step beside each other on the two units, and takes the group that saves the
most, when it saves MIN_GAIN of the block's cycles and the tensors live in a
step (two groups' expanded and filtered channels, the expand conv's input and
the project conv's result) take at most GROUP_SHARE of the SRAM. Each cascade
is a remark at the project conv with both estimates; a block that stays whole
gets a remark saying why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir

from ..frontend.builders import element_of, empty, shape_of
from ..machine_model import gemm_cycles, vector_cycles
from ..recipes.ir_queries import ACTIVATION_ATTR, ints
from . import ModulePass, PassContext, erase_if_unused, function_bodies
from .cascade_chains import (copy_at_shape, init_of, member_of, node_names, producer_of,
                             read_only_by, slice_along, tensor_bytes)
from .cascade_estimate import MIN_GAIN, OP_START_SETUPS, STRIP_SHARE, weight_bytes, whole_cycles

CONV = "linalg.conv_2d_nhwc_hwcf"
DEPTHWISE = "linalg.depthwise_conv_2d_nhwc_hwc"
# The most of the SRAM the tensors live in one step of the groups may take:
# the buffer plan keeps them there beside the ops' tiles.
GROUP_SHARE = 0.6


@dataclass
class Block:
    """An inverted bottleneck: expand conv, its padding (or None), depthwise
    conv, project conv."""
    expand: ir.Operation
    pad: ir.Operation | None
    depthwise: ir.Operation
    project: ir.Operation

    @property
    def members(self) -> list:
        """As npu-cascade-rows' chain members, last first (for their estimate)."""
        ops = [self.project, self.depthwise, self.pad, self.expand]
        return [member_of(op) for op in ops if op is not None]

    @property
    def channels(self) -> int:
        return shape_of(self.depthwise.results[0])[3]


def per_channel_init(op) -> bool:
    """Whether `op` starts from an empty, a fill or a broadcast of a bias over
    its channels that only it reads (a group makes its own)."""
    init = producer_of(init_of(op))
    if init is None or not read_only_by(init.results[0], op):
        return False
    if init.name in ("tensor.empty", "linalg.fill"):
        return True
    return init.name == "linalg.broadcast" and ints(init.attributes["dimensions"], []) == [0, 1, 2]


def block_ending_at(project) -> Block | None:
    """The inverted bottleneck whose project conv is `project`, else None:
    each op reads the one before alone, on static NHWC tensors."""
    if project.name != CONV or ACTIVATION_ATTR in project.attributes \
            or member_of(project) is None or not per_channel_init(project):
        return None
    depthwise = producer_of(project.operands[0])
    if depthwise is None or depthwise.name != DEPTHWISE \
            or not read_only_by(depthwise.results[0], project) \
            or member_of(depthwise) is None or not per_channel_init(depthwise):
        return None
    pad, expand = None, producer_of(depthwise.operands[0])
    if expand is not None and expand.name == "tensor.pad":
        if not read_only_by(expand.results[0], depthwise) or member_of(expand) is None:
            return None
        pad, expand = expand, producer_of(expand.operands[0])
    if expand is None or expand.name != CONV or member_of(expand) is None \
            or not read_only_by(expand.results[0], depthwise if pad is None else pad) \
            or not per_channel_init(expand):
        return None
    return Block(expand, pad, depthwise, project)


@dataclass
class Plan:
    block: Block
    group: int           # channels per group (the last may have fewer)
    whole: int           # estimated cycles of the block whole
    cascaded: int        # and in groups

    @property
    def gain(self) -> int:
        return self.whole - self.cascaded

    @property
    def groups(self) -> list:
        """(first channel, channels) of each group."""
        channels = self.block.channels
        return [(first, min(self.group, channels - first))
                for first in range(0, channels, self.group)]


def group_unit(target) -> int:
    """The channels a group is a multiple of: it fills the vector lanes and
    the array's rows (the project conv's reduction) and columns (the expand
    conv's filters)."""
    return math.lcm(target.vector_lanes, target.array_rows, target.array_cols)


def _channel_bytes(value: ir.Value, channels: int) -> int:
    return tensor_bytes(value) // shape_of(value)[3] * channels


def evaluate(block: Block, group: int, whole: int, target) -> Plan | None:
    """The plan of `block` in groups of `group` channels; None when the tensors
    of a step would take more than GROUP_SHARE of the SRAM."""
    expand, depthwise, project = block.expand, block.depthwise, block.project
    padded = (expand if block.pad is None else block.pad).results[0]
    source, result = expand.operands[0], project.results[0]
    live = 2 * _channel_bytes(padded, group) + 2 * _channel_bytes(depthwise.results[0], group) \
        + tensor_bytes(source) + tensor_bytes(result)
    if live > GROUP_SHARE * target.max_sram_bytes:
        return None
    kept = STRIP_SHARE * target.max_sram_bytes
    n, height, width, _ = shape_of(depthwise.results[0])
    pixels = math.prod(shape_of(expand.results[0])[:3])
    kh, kw, depth, _ = shape_of(expand.operands[1])
    dh, dw = shape_of(depthwise.operands[1])[:2]
    ph, pw, _, filters = shape_of(project.operands[1])
    # Read again by every group unless kept; written once unless kept.
    source_bytes = tensor_bytes(source) if tensor_bytes(source) > kept else 0
    result_bytes = tensor_bytes(result) if tensor_bytes(result) > kept else 0
    channels = block.channels
    setups = OP_START_SETUPS * target.dma_setup_cycles
    weights = [weight_bytes(member_of(op)) for op in (expand, depthwise, project)]

    def cost(compute: int, traffic: int) -> int:
        return max(compute, -(-traffic // target.dram_bytes_per_cycle)) + setups

    plan = Plan(block, group, whole, 0)
    groups = plan.groups
    matrix, vector = [], []
    for first, count in groups:
        share = count / channels
        matrix.append((
            cost(gemm_cycles(pixels, count, kh * kw * depth, target),
                 int(weights[0] * share) + source_bytes),
            cost(gemm_cycles(n * height * width, filters, ph * pw * count, target),
                 int(weights[2] * share) + (
                     result_bytes if first + count == channels else 0))))
        vector.append(cost(vector_cycles(n * height * width * count, target, dh * dw),
                           int(weights[1] * share)))
    # Step k: the expand conv of group k + 1 and the project conv of group
    # k - 1 on the matrix unit beside the depthwise conv of group k.
    cycles = matrix[0][0]
    for step in range(len(groups) + 1):
        on_matrix = (matrix[step + 1][0] if step + 1 < len(groups) else 0) + \
            (matrix[step - 1][1] if step >= 1 else 0)
        on_vector = vector[step] if step < len(groups) else 0
        cycles += max(on_matrix, on_vector)
    plan.cascaded = cycles
    return plan


def best_plan(block: Block, target) -> tuple[Plan | None, int]:
    """The group that saves the most estimated cycles (None when none saves
    MIN_GAIN), and the block's estimated cycles whole."""
    whole = whole_cycles(block.members, target)
    unit = group_unit(target)
    best = None
    for group in range(unit, block.channels // 2 + 1, unit):
        plan = evaluate(block, group, whole, target)
        if plan is not None and plan.gain >= MIN_GAIN * whole and \
                (best is None or plan.gain > best.gain):
            best = plan
    return best, whole


def _with_channels(op, count: int) -> list:
    """The shape of `op`'s result with `count` channels."""
    return shape_of(op.results[0])[:3] + [count]


def group_init(op, first: int, count: int, anchor) -> ir.Value:
    """`op`'s initial value (an empty, a fill or a bias broadcast) for
    channels [first, first + count), made before `anchor`."""
    init = producer_of(init_of(op))
    destination = empty(_with_channels(op, count), element_of(op.results[0]))
    if init.name == "tensor.empty":
        return destination
    operands = {len(init.operands) - 1: destination}
    if init.name == "linalg.broadcast":
        operands[0] = slice_along(init.operands[0], 0, first, first + count)
    return copy_at_shape(init, operands, _with_channels(op, count), anchor).results[0]


def _init_ops(op) -> list:
    """The ops making `op`'s initial value (a fill or broadcast and the empty
    it writes), first first."""
    ops, value = [], init_of(op)
    while isinstance(value, ir.OpResult):
        ops.insert(0, value.owner.operation)
        value = value.owner.operands[len(value.owner.operands) - 1] \
            if value.owner.name != "tensor.empty" else None
    return ops


def cascade(plan: Plan) -> None:
    """Replace the block by its groups, in pipelined order: the expand conv of
    group k + 1, the depthwise conv of group k, the project conv of group k - 1."""
    block = plan.block
    expand, depthwise, project = block.expand, block.depthwise, block.project
    anchor = project

    def expanded(first, count):
        with ir.InsertionPoint(anchor), expand.location:
            weights = slice_along(expand.operands[1], 3, first, first + count)
            init = group_init(expand, first, count, anchor)
            return copy_at_shape(expand, {1: weights, 2: init}, _with_channels(expand, count),
                                 anchor).results[0]

    def filtered(value, first, count):
        with ir.InsertionPoint(anchor):
            if block.pad is not None:
                value = copy_at_shape(block.pad, {0: value}, _with_channels(block.pad, count),
                                      anchor).results[0]
            with depthwise.location:
                weights = slice_along(depthwise.operands[1], 2, first, first + count)
                init = group_init(depthwise, first, count, anchor)
                return copy_at_shape(depthwise, {0: value, 1: weights, 2: init},
                                     _with_channels(depthwise, count), anchor).results[0]

    def projected(value, first, count, result):
        with ir.InsertionPoint(anchor), project.location:
            if first == 0:
                # The result's buffer is live from where the first group
                # writes it (the buffer plan sees it from there).
                for op in _init_ops(project):
                    op.move_before(anchor)
            weights = slice_along(project.operands[1], 2, first, first + count)
            return copy_at_shape(project, {0: value, 1: weights, 2: result},
                                 shape_of(project.results[0]), anchor).results[0]

    groups = plan.groups
    result = init_of(project)
    ahead = {0: expanded(*groups[0])}
    made = {}
    for step in range(len(groups) + 1):
        if step + 1 < len(groups):
            ahead[step + 1] = expanded(*groups[step + 1])
        if step < len(groups):
            made[step] = filtered(ahead.pop(step), *groups[step])
        if step >= 1:
            result = projected(made.pop(step - 1), *groups[step - 1], result)
    project.results[0].replace_all_uses_with(result)
    inits = [init_of(op) for op in (depthwise, expand)]
    for op in (project, depthwise, block.pad, expand):
        if op is not None:
            op.erase()
    for init in inits:
        erase_if_unused(init)


@dataclass(frozen=True)
class NpuCascadeChannels(ModulePass):
    argument = "npu-cascade-channels"
    summary = "Run inverted bottlenecks (expand, depthwise and project convs) in groups of " \
              "channels, pipelined on the two units (-fusion=2)"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        target = context.target
        if target.fusion < 2:
            return
        with module.context:
            for body in function_bodies(module):
                blocks = [block_ending_at(op.operation) for op in body.operations]
                for block in filter(None, blocks):
                    names = node_names(block.members)
                    unit = group_unit(target)
                    if block.channels < 2 * unit:
                        context.diagnostics.remark(
                            block.project.location,
                            f"{names} not cascaded by channels: its {block.channels} channels "
                            f"make fewer than two groups of {unit} (a group fills the vector "
                            f"lanes and the array's rows and columns)")
                        continue
                    plan, whole = best_plan(block, target)
                    if plan is None:
                        context.diagnostics.remark(
                            block.project.location,
                            f"{names} not cascaded by channels: in groups of a multiple of "
                            f"{unit} channels whose tensors take at most "
                            f"{int(GROUP_SHARE * 100)}% of the SRAM, none saves "
                            f"{int(MIN_GAIN * 100)}% of their estimated {whole} cycles")
                        continue
                    context.diagnostics.remark(
                        block.project.location,
                        f"cascaded {names} in {len(plan.groups)} groups of {plan.group} channels,"
                        f" pipelined: the depthwise conv of a group runs beside the convs of "
                        f"the groups around it (estimated {plan.whole} -> {plan.cascaded} "
                        f"cycles)")
                    with block.project.location:
                        cascade(plan)
