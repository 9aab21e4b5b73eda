"""npu-pack-groups: a grouped conv whose groups leave most of the matrix unit
idle runs several groups at a time, as one conv with block-diagonal weights.

Runs on tensors, at every fusion level, before npu-fuse-epilogue. The importer
runs a grouped conv as one conv per group, their results concatenated along
the channels. A group of f filters over k = kh*kw*c products per output pixel
fills at most f of the array's columns (k of its rows), and a fold costs the
whole array whatever it holds (machine_model): RegNet's groups of 8 channels
fill a quarter of a 32-wide array, ResNeXt's first groups of 4 an eighth. P
consecutive groups run as one conv over their P*c input channels with P*f
filters, whose weights are block-diagonal (each group's filters are zero on the
other groups' channels): P times the multiply-accumulates, in fewer folds,
and P times the weight bytes. The machine model chooses P by a conv's GEMM
cycles (or its activations' DRAM cycles, when larger) plus its weights' DRAM
cycles, summed over the convs (the last takes the groups left), and packs
only when that saves at least MIN_GAIN; each packing is a remark with both
estimates. Float and int8 convs whose weights and bias (or start value) are
constants only; the numerics are those of the groups (the zeros add
nothing).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir
from mlir.dialects import linalg, tensor

from ..frontend.builders import constant_tensor, empty, fill
from ..machine_model import gemm_cycles
from ..recipes.ir_queries import made_by, type_name
from ..recipes.problem import constant_value, ints, npu_attribute_names
from ..recipes.tile_ir import static
from . import ModulePass, PassContext, erase_if_unused, ops_where
from .npu_select_conv_strategy import tensor_shape

# The least share of the groups' estimated cycles packing must save: the
# estimate prices each conv whole, not the tiles the search will take.
MIN_GAIN = 0.05
# The most of the SRAM a packed conv's weights may take.
WEIGHT_SHARE = 0.25


# (input and weights, output) element types of the convs packed: float, and
# int8 accumulating in i32 (the input's zero point is folded into the bias per
# filter, which a group's zero weights on the other groups' channels keep).
TYPES = {("f32", "f32"), ("f16", "f16"), ("f16", "f32"), ("i8", "i32")}


def constant_elements(value: ir.Value) -> np.ndarray | None:
    """The elements of an arith.constant tensor of floats or integers, when
    they are readable (npu_pool_before_conv.constant_array reads floats only,
    for the passes that scale or permute float weights)."""
    if not isinstance(value, ir.OpResult) or value.owner.name != "arith.constant":
        return None
    for kind in (ir.DenseFPElementsAttr, ir.DenseIntElementsAttr):
        try:
            return np.array(kind(value.owner.attributes["value"]))
        except (ValueError, TypeError):   # another kind, a resource blob
            continue
    return None


@dataclass
class Group:
    """One group's conv: its input's first channel, weights and start (a bias
    per filter, or one value)."""
    insert: ir.Operation
    conv: ir.Operation
    first_channel: int
    weights: np.ndarray
    start: np.ndarray | float


def _static_slice(op) -> tuple[list, list] | None:
    """(offsets, sizes) of an extract or insert slice with static unit-stride
    offsets and sizes."""
    if len(op.operands) != (1 if op.name == "tensor.extract_slice" else 2) \
            or any(s != 1 for s in static(op, "static_strides")):
        return None
    return static(op, "static_offsets"), static(op, "static_sizes")


def _start(init: ir.Value) -> np.ndarray | float | None:
    """The conv's start: a constant per filter (a broadcast bias, sliced from a
    constant or not) or a constant fill value."""
    fill_op = made_by(init, "linalg.fill")
    if fill_op is not None:
        return constant_value(fill_op.operands[0])
    broadcast = made_by(init, "linalg.broadcast")
    if broadcast is None or ints(broadcast.attributes["dimensions"], ()) != [0, 1, 2]:
        return None
    source = broadcast.operands[0]
    sliced = made_by(source, "tensor.extract_slice")
    if sliced is None:
        return constant_elements(source)
    whole, box = constant_elements(sliced.operands[0]), _static_slice(sliced)
    if whole is None or box is None:
        return None
    (offset,), (size,) = box
    return whole[offset:offset + size]


def _group(insert, source) -> Group | None:
    """The group a concatenation's insert_slice writes: a conv of a channel
    slice of `source` (None: any), with constant weights and start, read by
    nothing else."""
    conv = made_by(insert.operands[0], "linalg.conv_2d_nhwc_hwcf")
    if conv is None or len(list(conv.results[0].uses)) != 1 or npu_attribute_names(conv):
        return None
    sliced = made_by(conv.operands[0], "tensor.extract_slice")
    box = _static_slice(sliced) if sliced is not None else None
    shape = tensor_shape(sliced.operands[0]) if sliced is not None else None
    if box is None or shape is None or (source is not None and sliced.operands[0] != source):
        return None
    offsets, sizes = box
    if offsets[:3] != [0, 0, 0] or sizes[:3] != shape[:3]:
        return None
    weights, start = constant_elements(conv.operands[1]), _start(conv.operands[2])
    image, weight_type, output = (type_name(v) for v in conv.operands)
    if weights is None or start is None or image != weight_type \
            or (image, output) not in TYPES:
        return None
    return Group(insert, conv, offsets[3], weights, start)


def grouped_conv(last) -> list[Group] | None:
    """The groups of a grouped conv ending at the insert_slice `last`: an
    empty tensor, then each group's result inserted at the next run of
    channels, all alike (shapes, strides, dilations), reading consecutive
    channel slices of one tensor."""
    inserts = []
    op = last
    while op is not None and op.name == "tensor.insert_slice":
        inserts.append(op)
        dest = op.operands[1]
        if made_by(dest, "tensor.empty") is not None:
            break
        op = made_by(dest, "tensor.insert_slice")
        if op is not None and len(list(op.results[0].uses)) != 1:
            return None
    else:
        return None
    inserts.reverse()
    if len(inserts) < 2:
        return None
    first = _group(inserts[0], None)
    if first is None:
        return None
    groups = [first] + [_group(i, first.conv.operands[0].owner.operands[0]) for i in inserts[1:]]
    if None in groups:
        return None
    out_shape = tensor_shape(last.results[0])
    if out_shape is None:
        return None
    filters = first.weights.shape[3]
    channels = first.weights.shape[2]
    for index, group in enumerate(groups):
        box = _static_slice(group.insert)
        if box is None or group.weights.shape != first.weights.shape \
                or box[0] != [0, 0, 0, index * filters] or box[1][3] != filters \
                or box[1][:3] != out_shape[:3] \
                or group.first_channel != first.first_channel + index * channels \
                or type(group.start) is not type(first.start) \
                or any(str(group.conv.attributes[a]) != str(first.conv.attributes[a])
                       for a in ("strides", "dilations")):
            return None
    if len(groups) * filters != out_shape[3]:
        return None
    return groups


def pack_sizes(count: int, best: int) -> list[int]:
    """`count` groups in packs of `best`, the last one taking those left."""
    sizes = [best] * (count // best)
    return sizes + ([count % best] if count % best else [])


def packed_weight_bytes(groups: list[Group], pack: int) -> int:
    """Bytes of one conv's block-diagonal weights over `pack` groups."""
    kh, kw, channels, filters = groups[0].weights.shape
    return kh * kw * pack * channels * pack * filters * groups[0].weights.itemsize


def packed_cycles(groups: list[Group], size: int, target) -> int:
    """Estimated cycles of the groups in packs of `size`: per conv the larger
    of its GEMM cycles and its input's and output's DRAM cycles (a conv
    bound by its activations' traffic gains nothing from fewer folds), plus
    its weights' DRAM cycles (a small conv's weights load before it
    computes: measured, they add up rather than overlap)."""
    kh, kw, channels, filters = groups[0].weights.shape
    n, oh, ow, _ = tensor_shape(groups[0].conv.results[0])
    image = tensor_shape(groups[0].conv.operands[0])
    element = groups[0].weights.dtype.itemsize
    out_element = ir.RankedTensorType(groups[0].conv.results[0].type).element_type.width // 8
    total = 0
    for pack in pack_sizes(len(groups), size):
        weight_bytes = packed_weight_bytes(groups, pack)
        activation_bytes = image[0] * image[1] * image[2] * pack * channels * element + \
            n * oh * ow * pack * filters * out_element
        gemm = gemm_cycles(n * oh * ow, pack * filters, kh * kw * pack * channels, target,
                           int8=groups[0].weights.dtype == np.int8)
        total += max(gemm, -(-activation_bytes // target.dram_bytes_per_cycle)) \
            + -(-weight_bytes // target.dram_bytes_per_cycle)
    return total


def block_diagonal(groups: list[Group]) -> np.ndarray:
    kh, kw, channels, filters = groups[0].weights.shape
    packed = np.zeros((kh, kw, len(groups) * channels, len(groups) * filters),
                      groups[0].weights.dtype)
    for i, group in enumerate(groups):
        packed[:, :, i * channels:(i + 1) * channels, i * filters:(i + 1) * filters] = \
            group.weights
    return packed


@dataclass(frozen=True)
class NpuPackGroups(ModulePass):
    argument = "npu-pack-groups"
    summary = "Run a grouped conv's small groups several at a time, as one conv with " \
              "block-diagonal weights"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            for last in ops_where(module, lambda op: op.name == "tensor.insert_slice"):
                if any(use.owner.name == "tensor.insert_slice" and use.operand_number == 1
                       for use in last.results[0].uses):
                    continue   # not the end of its concatenation
                groups = grouped_conv(last)
                if groups is None:
                    continue
                size = self.weigh(groups, context)
                if size is not None:
                    self.pack(last, groups, size)

    @staticmethod
    def weigh(groups: list[Group], context: PassContext) -> int | None:
        """The groups per conv that save the most estimated cycles (with a
        remark), None when none saves MIN_GAIN."""
        alone = packed_cycles(groups, 1, context.target)
        kh, kw, channels, filters = groups[0].weights.shape
        # A conv's weights take at most WEIGHT_SHARE of the SRAM: the estimate
        # sees no tiling, and weights tiled down to fit are loaded again.
        sizes = [size for size in range(2, len(groups) + 1)
                 if packed_weight_bytes(groups, size)
                 <= context.target.max_sram_bytes * WEIGHT_SHARE]
        if not sizes:
            return None
        best = min(sizes, key=lambda size: packed_cycles(groups, size, context.target))
        packed = packed_cycles(groups, best, context.target)
        if packed > alone * (1 - MIN_GAIN):
            return None
        convs = len(pack_sizes(len(groups), best))
        context.diagnostics.remark(
            groups[0].conv.location,
            f"{len(groups)} groups of {filters} filters over {kh * kw * channels} inputs run "
            f"{best} at a time, as {convs} conv{'s' if convs > 1 else ''} with "
            f"block-diagonal weights ({best}x the MACs and weight bytes, estimated {alone} -> "
            f"{packed} cycles)")
        return best

    @staticmethod
    def pack(last, groups: list[Group], size: int) -> None:
        first = groups[0]
        source = first.conv.operands[0].owner.operands[0]
        out_type = ir.RankedTensorType(last.results[0].type)
        n, oh, ow, _ = list(out_type.shape)
        element = ir.RankedTensorType(first.conv.results[0].type).element_type
        filters = first.weights.shape[3]
        channels = first.weights.shape[2]
        source_shape = tensor_shape(source)
        old = [(g.insert, g.conv) for g in groups]
        with ir.InsertionPoint(groups[0].insert), first.conv.location:
            result = empty(list(out_type.shape), element)
            done = 0
            for count in pack_sizes(len(groups), size):
                pack = groups[done:done + count]
                x = tensor.extract_slice(
                    ir.RankedTensorType.get(source_shape[:3] + [count * channels],
                                            ir.RankedTensorType(source.type).element_type),
                    source, [], [], [], [0, 0, 0, pack[0].first_channel],
                    source_shape[:3] + [count * channels], [1, 1, 1, 1])
                weights = constant_tensor(block_diagonal(pack))
                shape = [n, oh, ow, count * filters]
                if isinstance(first.start, np.ndarray):
                    bias = constant_tensor(np.concatenate([g.start for g in pack]).astype(
                        first.start.dtype))
                    start = linalg.broadcast(bias, outs=[empty(shape, element)],
                                             dimensions=[0, 1, 2])
                else:
                    start = fill(first.start, shape, element)
                conv = linalg.conv_2d_nhwc_hwcf(
                    x, weights, outs=[start],
                    strides=ir.DenseIntElementsAttr(first.conv.attributes["strides"]),
                    dilations=ir.DenseIntElementsAttr(first.conv.attributes["dilations"]))
                result = tensor.insert_slice(conv, result, [], [], [],
                                             [0, 0, 0, done * filters], shape, [1, 1, 1, 1])
                done += count
        last.results[0].replace_all_uses_with(result)
        for insert, conv in reversed(old):
            dest = insert.operands[1]
            insert.erase()
            erase_if_unused(dest)
            image, weights, init = conv.operands
            bias = init.owner.operands[0] if init.owner.name == "linalg.broadcast" else None
            conv.erase()
            erase_if_unused(init)
            # The group's slices and constants, unless another op reads them.
            for value in (image, weights, bias):
                if isinstance(value, ir.OpResult) and not list(value.uses) and \
                        value.owner.name in ("tensor.extract_slice", "arith.constant"):
                    value.owner.erase()
