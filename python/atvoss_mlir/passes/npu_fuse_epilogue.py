"""npu-fuse-epilogue: fold an activation that directly follows a matmul or
convolution into it, so the matrix unit applies it as its epilogue; a bias
add after a matmul into its start (epilogue_bias.py); from -fusion=2, also a
residual add.

Runs on tensors, before bufferization. A `linalg.generic` whose body is
`max(x, 0)` (relu), `min(max(x, lo), hi)` (clip) or one of the vector unit's
activations (sigmoid, exact gelu, tanh: recipes/activation_body.py), applied
elementwise to the only use of a linalg.matmul / batch_matmul /
conv_2d_nhwc_hwcf / depthwise_conv_2d_nhwc_hwc result of the same type (or of
its rows reshaped, a linear layer's on a 3-d input), is removed; the producer
gets `npu.activation` (and `npu.clip_min` / `npu.clip_max`), which
`npu-promote-to-sram` turns into the npu op's `activation` on the last
reduction step. Disabled by the target's `-fusion=0`.

A residual add (a ResNet block's `conv + skip`, then its relu) is folded first,
at -fusion=2: a conv or matmul that starts from its bias broadcast and whose
result only that add reads starts from `skip + bias` instead (linalg's
accumulation into the output's initial value), computed by a generic marked
`npu.residual_start`, which the recipe folds into its first reduction step:
the skip tile is loaded into the output tile, the bias added, and the matrix
unit accumulates onto it. The conv's result is then neither written to DRAM
nor read back, and the relu after the add becomes its epilogue. A result of
at most a quarter of the SRAM is left to the buffer plan (npu-keep-in-sram),
which keeps such a tensor in SRAM between the conv and the add when it fits.
But a group's result (a grouped conv's, ShuffleNet's) folds all the same when
its whole skip is over half the SRAM (the plan could not keep the skip beside
the ops around the add), or over a quarter with the sum not padded for a
window op: npu-reuse-dead-inputs then writes the sum over the skip, so each
group's conv accumulates onto its slice where it is (in place when the buffer
plan keeps it), and the add and relu leave the vector unit.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from mlir.dialects import tensor

from . import ModulePass, PassContext, erase_if_unused, left_to_buffer_plan, tensor_bytes
from .epilogue_bias import adds_two_inputs, bias_add, fold_bias, start_from
from .npu_share_concatenations import concatenation
from ..recipes import linalg_ops
from ..recipes.absorbed import residual_start
from ..frontend.builders import concat, empty, extract_slice
from ..recipes.problem import (ACTIVATION_ATTR, RESIDUAL_START_ATTR, Unsupported,
                               indexing_maps, ins_outs, is_reduction)
from ..recipes.activation_body import body_activation
from ..recipes.vector_body import body_program
from ..recipes.vector_steps import ActivationStep, Ref

PRODUCERS = ("linalg.matmul", "linalg.batch_matmul", "linalg.conv_2d_nhwc_hwcf",
             "linalg.depthwise_conv_2d_nhwc_hwc")


def scalar_constant(value: ir.Value):
    """The float a 0-d constant tensor holds, or None."""
    if not isinstance(value, ir.OpResult) or value.owner.name != "arith.constant" \
            or not isinstance(value.type, ir.RankedTensorType) or value.type.rank != 0:
        return None
    attribute = value.owner.attributes["value"]
    if not isinstance(attribute, ir.DenseFPElementsAttr) or not attribute.is_splat:
        return None
    return ir.FloatAttr(attribute.get_splat_value()).value


def activation_of(op):
    """(kind, clip_min, clip_max, source) when `op` is an elementwise activation
    of one tensor, its source: relu or clip, or one of the vector unit's
    activations (recipes/activation_body.py) written with scalar constants as
    0-d inputs (as an exported gelu is once merged into one op)."""
    if op.name != "linalg.generic":
        return None
    inputs, outputs = ins_outs(op)
    if len(outputs) != 1 or len(op.results) != 1 or not inputs:
        return None
    scalars = {number: scalar_constant(value) for number, value in enumerate(inputs)}
    tensors = [number for number, scalar in scalars.items() if scalar is None]
    if len(tensors) != 1 or not isinstance(inputs[tensors[0]].type, ir.RankedTensorType):
        return None
    x = tensors[0]
    rank = ir.RankedTensorType(inputs[x].type).rank
    maps = indexing_maps(op)
    if maps[x] != ir.AffineMap.get_identity(rank) or maps[-1] != maps[x]:
        return None
    block = op.regions[0].blocks[0]
    if len(inputs) > 1:
        kind = body_activation(block, x, {n: v for n, v in scalars.items() if v is not None})
        return (kind, None, None, inputs[x]) if kind is not None else None
    try:
        steps = body_program(block, 1)
    except Unsupported:
        return None
    if len(steps) != 1 or not isinstance(steps[0], ActivationStep) \
            or steps[0].source != Ref("in", 0):
        return None
    return steps[0].kind, steps[0].clip_min, steps[0].clip_max, inputs[0]


RESIDUAL_PRODUCERS = ("linalg.matmul", "linalg.conv_2d_nhwc_hwcf")


def concatenated_results(value: ir.Value):
    """(pieces, chain, dim) when `value`, read by one op, is the concatenation
    (npu_share_concatenations.concatenation) of matmul or conv results (a
    grouped conv's, or the elementwise ops distributed over them) used by it
    alone; a piece that is such a concatenation along the same dim counts as
    its pieces. pieces = [(result, offsets, sizes)] in order along dim;
    chain = the insert_slice ops, last first, and the empty; dim = the dim
    they are concatenated along."""
    concat = concatenation(value)
    if concat is None or len(list(value.uses)) != 1:
        return None
    chain = concat.inserts[::-1] + [concat.empty]
    pieces = flattened(concat.pieces, chain, concat.dim)
    for result, _, _ in pieces:
        if not isinstance(result, ir.OpResult) \
                or result.owner.name not in PRODUCERS + ("linalg.generic",) \
                or len(list(result.uses)) != 1:
            return None
    return sorted(pieces, key=lambda piece: piece[1][concat.dim]), chain, concat.dim


def flattened(pieces: list, chain: list, dim: int) -> list:
    """`pieces` with each one that is itself a concatenation along `dim` (a
    grouped conv's results, concatenated again with a shortcut) replaced by its
    own pieces; its insert_slice ops and empty join `chain`."""
    found = []
    for result, offsets, sizes in pieces:
        inner = None
        if isinstance(result, ir.OpResult) and result.owner.name == "tensor.insert_slice" \
                and len(list(result.uses)) == 1:
            inner = concatenated_results(result)
        if inner is None or inner[2] != dim:
            found.append((result, offsets, sizes))
            continue
        found += [(piece, [a + b for a, b in zip(offsets, inner_offsets)], inner_sizes)
                  for piece, inner_offsets, inner_sizes in inner[0]]
        chain += inner[1]
    return found


def distribute_over_concatenation(op, number: int, pieces, chain, dim: int) -> None:
    """Replace the elementwise `op`, whose input `number` is the concatenation
    `pieces`, by the concatenation of `op` on each piece (its other inputs
    sliced alike): each then directly follows the matmul or conv it reads."""
    inputs, (init,) = ins_outs(op)
    element = ir.RankedTensorType(op.results[0].type).element_type
    parts = []
    with op.location, ir.InsertionPoint(op):
        for result, offsets, sizes in pieces:
            operands = [result if n == number else extract_slice(value, offsets, sizes)
                        for n, value in enumerate(inputs)] + [empty(sizes, element)]
            body = op.clone()
            part = ir.Operation.create(
                "linalg.generic", results=[ir.RankedTensorType.get(sizes, element)],
                operands=operands, attributes={name: op.attributes[name] for name in op.attributes},
                regions=1)
            body.regions[0].blocks[0].append_to(part.regions[0])
            body.erase()
            parts.append(part.results[0])
        joined = concat(parts, dim)
    op.results[0].replace_all_uses_with(joined)
    op.erase()
    erase_if_unused(init)
    for link in chain:
        link.erase()


def distribute_activations_and_adds(module, fusion: int) -> None:
    """An activation (from -fusion=1) or a residual add (-fusion=2) of a grouped
    conv's concatenated results is applied to each group's result instead, so
    that it folds into that conv (its epilogue, its start) below."""
    for op in linalg_ops(module):
        if op.name != "linalg.generic" or len(op.results) != 1 or is_reduction(op):
            continue
        inputs, _ = ins_outs(op)
        rank = ir.RankedTensorType(op.results[0].type).rank
        if any(m != ir.AffineMap.get_identity(rank) for m in indexing_maps(op)) \
                or any(value.type != op.results[0].type for value in inputs):
            continue
        if activation_of(op) is None and not (fusion >= 2 and len(inputs) == 2):
            continue
        for number, value in enumerate(inputs):
            found = concatenated_results(value)
            if found is not None and (len(inputs) == 1 or all(
                    piece.owner.name in PRODUCERS for piece, _, _ in found[0])):
                distribute_over_concatenation(op, number, *found)
                break


def bias_start(producer):
    """The per-channel bias a matmul or conv starts from (a linalg.broadcast of
    bias[C] over the other dims, read by it alone), or None."""
    init = producer.operands[len(producer.operands) - 1]
    if not isinstance(init, ir.OpResult) or init.owner.name != "linalg.broadcast" \
            or len(list(init.uses)) != 1:
        return None
    broadcast = init.owner
    (bias,), _ = ins_outs(broadcast)
    rank = ir.RankedTensorType(init.type).rank
    if list(ir.DenseI64ArrayAttr(broadcast.attributes["dimensions"])) != list(range(rank - 1)):
        return None
    return bias


def residual_add(op):
    """(the matmul or conv result, the residual) when `op` is an elementwise add
    of two tensors of its type, one of them the only use of a matmul's or conv's
    result that starts from a bias broadcast."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return None
    inputs, _ = ins_outs(op)
    if len(inputs) != 2 or any(value.type != op.results[0].type for value in inputs):
        return None
    if not isinstance(ir.RankedTensorType(op.results[0].type).element_type,
                      (ir.F32Type, ir.F16Type, ir.BF16Type)):
        return None
    rank = ir.RankedTensorType(op.results[0].type).rank
    maps = indexing_maps(op)
    if any(m != ir.AffineMap.get_identity(rank) for m in maps) or not adds_two_inputs(op):
        return None
    for number in (0, 1):
        result, residual = inputs[number], inputs[1 - number]
        if isinstance(result, ir.OpResult) and result.owner.name in RESIDUAL_PRODUCERS \
                and len(list(result.uses)) == 1 \
                and ACTIVATION_ATTR not in result.owner.attributes \
                and bias_start(result.owner) is not None:
            return result, residual
    return None


def start_from_residual(add, result, residual) -> None:
    """The matmul/conv starts from residual + bias instead of the bias (a
    generic marked RESIDUAL_START_ATTR, which the recipe folds into its first
    step) and replaces the add; it moves next to the add, after the residual."""
    producer = result.owner
    bias = bias_start(producer)
    result_type = ir.RankedTensorType(result.type)
    with add.location, ir.InsertionPoint(add):
        empty = tensor.EmptyOp(result_type.shape, result_type.element_type).result
        start = residual_start(residual, bias, empty)
        start.owner.attributes[RESIDUAL_START_ATTR] = ir.UnitAttr.get()
    start_from(add, producer, start)


def whole_skip(residual: ir.Value) -> ir.Value:
    """The skip tensor a residual add reads (the whole one, when it reads a
    slice of it: a grouped conv's group)."""
    if isinstance(residual, ir.OpResult) and residual.owner.name == "tensor.extract_slice":
        return residual.owner.operands[0]
    return residual


def skip_bytes(residual: ir.Value) -> int | None:
    return tensor_bytes(whole_skip(residual))


def folds_small_result(add, residual: ir.Value, target) -> bool:
    """Whether a group's add of at most a quarter of the SRAM folds all the
    same: when its whole skip exceeds half the SRAM (the buffer plan cannot
    keep it beside the ops around the add, which would read it from DRAM and
    write the sum back for the relu), or a quarter with the sum written over
    it (npu-reuse-dead-inputs: the conv then accumulates onto it in place)."""
    size = skip_bytes(residual)
    if size is None:
        return False
    return 2 * size > target.max_sram_bytes or \
        (4 * size > target.max_sram_bytes and not sum_padded(add))


def sum_padded(add) -> bool:
    """Whether the add's sum, through the concatenation of the groups' sums and
    an activation, is padded for a window op (a pool of the unit's output):
    npu-reuse-dead-inputs then keeps the sum's own buffer, which the buffer
    plan pads, instead of writing it over the skip."""
    values = [add.results[0]]
    while values:
        value = values.pop()
        for use in value.uses:
            owner = use.owner
            if owner.name == "tensor.pad":
                return True
            if owner.name == "tensor.insert_slice" or activation_of(owner) is not None:
                values.append(owner.results[0])
    return False


def skip_note(add, residual: ir.Value, target) -> str:
    """What a refusal adds about the skip of a grouped conv's add."""
    if whole_skip(residual) == residual:
        return ""
    size = skip_bytes(residual)
    if 4 * size > target.max_sram_bytes:
        return f", and the {size} B skip at most half, its sum padded for a window op"
    return f", and the {size} B skip too"


@dataclass(frozen=True)
class NpuFuseEpilogue(ModulePass):
    argument = "npu-fuse-epilogue"
    summary = "Fold a bias add and an activation following a matmul or convolution into it"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            if context.target.fusion < 1:
                return
            for op in linalg_ops(module):
                found = bias_add(op)
                if found is not None:
                    matmul = found[0]
                    fold_bias(op, *found)
                    context.diagnostics.remark(matmul.location, f"'{matmul.name}': bias add "
                                                                f"folded in: the matrix unit "
                                                                f"adds it")
            distribute_activations_and_adds(module, context.target.fusion)
            if context.target.fusion >= 2:
                for op in linalg_ops(module):
                    found = residual_add(op)
                    if found is None:
                        continue
                    result, residual = found
                    producer = result.owner
                    if left_to_buffer_plan(result, context.target) \
                            and not folds_small_result(op, residual, context.target):
                        context.diagnostics.remark(
                            op.location, f"residual add not folded into '{producer.name}': "
                                         f"its {tensor_bytes(result)} B result is left to the "
                                         f"buffer plan (at most a quarter of the SRAM"
                                         f"{skip_note(op, residual, context.target)})")
                        continue
                    start_from_residual(op, result, residual)
                    context.diagnostics.remark(
                        producer.location, f"'{producer.name}': residual add folded in: it "
                                           f"accumulates onto the skip tensor (saves "
                                           f"{2 * tensor_bytes(result)} B of DRAM traffic)")
                # The activations after adds folded into the groups' convs.
                distribute_activations_and_adds(module, 1)
            fold_activations(module, context)


def fold_activations(module, context: PassContext, refusals: bool = True) -> None:
    """Each activation that directly follows a matmul or conv, read by nothing
    else, becomes its epilogue (npu-fuse-elementwise calls it again on the
    chains it merges, without remarking again on those this pass refused)."""
    for op in linalg_ops(module):
        found = activation_of(op)
        if found is None:
            continue
        kind, clip_min, clip_max, source = found
        if not isinstance(source, ir.OpResult):
            continue
        producer, replacement = source.owner, source
        if producer.name == "tensor.expand_shape" and len(list(source.uses)) == 1 \
                and isinstance(producer.operands[0], ir.OpResult) \
                and producer.operands[0].owner.name in PRODUCERS:
            # A matmul's rows reshaped (a linear layer on a 3-d input): the
            # activation of the reshape is the reshape of the activation.
            source = producer.operands[0]
            producer = source.owner
        if producer.name not in PRODUCERS or ACTIVATION_ATTR in producer.attributes:
            continue
        if len(list(source.uses)) != 1 or replacement.type != op.results[0].type:
            # Another reader needs the value before the activation.
            if refusals:
                context.diagnostics.remark(op.location, f"{kind} not folded into "
                                           f"'{producer.name}': its result has other "
                                           f"uses or another type")
            continue
        with op.location:
            producer.attributes[ACTIVATION_ATTR] = ir.StringAttr.get(kind)
            f64 = ir.F64Type.get()
            if clip_min is not None:
                producer.attributes["npu.clip_min"] = ir.FloatAttr.get(f64, clip_min)
                producer.attributes["npu.clip_max"] = ir.FloatAttr.get(f64, clip_max)
        op.results[0].replace_all_uses_with(replacement)
        op.erase()
        context.diagnostics.remark(producer.location, f"'{producer.name}': {kind} folded "
                                                      f"into its epilogue")
