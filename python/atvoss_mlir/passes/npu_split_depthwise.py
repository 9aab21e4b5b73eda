"""npu-split-depthwise: a depthwise conv whose result is read in channel
slices (a grouped conv's groups) runs slice by slice, each beside the matrix
work of the slice before.

Runs on tensors, at -fusion=2, after npu-cascade-rows. ShuffleNet's unit is a
grouped 1x1 conv, a channel shuffle, a depthwise conv and a second grouped
1x1 conv: each group of the second conv reads a slice of the depthwise conv's
channels. Whole, the depthwise conv runs on the vector unit while the matrix
unit waits, then the groups run while the vector unit waits. A depthwise conv
works channel by channel, so it splits into one conv per slice (a slice of
its weights, bias and padded input), and group k of the grouped conv needs
only slice k. The slices are ordered so that slice k + 1 comes before group
k: the vector unit filters the next slice while the matrix unit runs this
group (the compute units order the ops by the buffers they use), and only
the first slice waits. Each split is a remark at the depthwise conv.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..diagnostics import name_of
from ..frontend.builders import shape_of
from ..recipes.ir_queries import ints
from . import ModulePass, PassContext, erase_if_unused, function_bodies, top_level
from .cascade_chains import (copy_at_shape, init_of, member_of, producer_of, read_only_by,
                             slice_along)
from .npu_cascade_channels import DEPTHWISE, group_init, per_channel_init


@dataclass
class Piece:
    """A channel slice [first, first + count) of the depthwise conv's result
    and the extract_slice ops reading it."""
    first: int
    count: int
    slices: list


def _channel_slice(op, shape) -> tuple[int, int] | None:
    """(first, count) when `op` is an extract_slice of whole rows, columns and
    batch and a run of channels of a tensor of `shape`."""
    if op.name != "tensor.extract_slice" or len(op.operands) != 1:
        return None
    offsets = ints(op.attributes["static_offsets"], [])
    sizes = ints(op.attributes["static_sizes"], [])
    strides = ints(op.attributes["static_strides"], [])
    if len(sizes) != 4 or offsets[:3] != [0, 0, 0] or sizes[:3] != shape[:3] \
            or strides != [1, 1, 1, 1]:
        return None
    return offsets[3], sizes[3]


def pieces_of(depthwise) -> tuple[list[Piece] | None, str | None]:
    """The channel slices read of `depthwise`'s result (at least two, none
    overlapping), else None and why not (None when it is not read in slices)."""
    shape = shape_of(depthwise.results[0])
    by_range, whole = {}, []
    for use in depthwise.results[0].uses:
        reader = use.owner.operation
        span = _channel_slice(reader, shape)
        if span is None:
            whole.append(reader)
        else:
            by_range.setdefault(span, []).append(reader)
    spans = sorted(by_range)
    if len(spans) < 2:
        return None, None
    if whole:
        return None, f"{name_of(whole[0])} also reads it whole"
    if any(a[0] + a[1] > b[0] for a, b in zip(spans, spans[1:])):
        return None, "its slices overlap"
    return [Piece(first, count, by_range[(first, count)]) for first, count in spans], None


def _first_reader(piece: Piece, order: dict, body: ir.Block):
    """The op of `body` reading `piece` first (through its slices); `order`
    maps the ops of `body` to their positions."""
    return min((top_level(use.owner.operation, body).operation
                for op in piece.slices for use in op.results[0].uses), key=order.get)


def split(depthwise, pieces: list[Piece], body: ir.Block) -> None:
    """Replace `depthwise` by one conv per piece, in the order the pieces are
    first read: piece k + 1 made right before the first reader of piece k,
    piece 0 before that too."""
    pad = producer_of(depthwise.operands[0])
    if pad is not None and (pad.name != "tensor.pad" or
                            not read_only_by(pad.results[0], depthwise)):
        pad = None
    source = pad.operands[0] if pad is not None else depthwise.operands[0]
    order = {op.operation: index for index, op in enumerate(body.operations)}
    firsts = sorted(((_first_reader(piece, order, body), piece) for piece in pieces),
                    key=lambda pair: order[pair[0]])
    anchors, pieces = [anchor for anchor, _ in firsts], [piece for _, piece in firsts]
    for index, piece in enumerate(pieces):
        anchor = anchors[max(index - 1, 0)]
        first, count = piece.first, piece.count
        with ir.InsertionPoint(anchor), depthwise.location:
            value = slice_along(source, 3, first, first + count)
            if pad is not None:
                value = copy_at_shape(pad, {0: value}, shape_of(pad.results[0])[:3] + [count],
                                      anchor).results[0]
            weights = slice_along(depthwise.operands[1], 2, first, first + count)
            init = group_init(depthwise, first, count, anchor)
            result = copy_at_shape(depthwise, {0: value, 1: weights, 2: init},
                                   shape_of(depthwise.results[0])[:3] + [count],
                                   anchor).results[0]
        for op in piece.slices:
            op.results[0].replace_all_uses_with(result)
            op.erase()
    init = init_of(depthwise)
    depthwise.erase()
    erase_if_unused(init)
    if pad is not None:
        pad.erase()


@dataclass(frozen=True)
class NpuSplitDepthwise(ModulePass):
    argument = "npu-split-depthwise"
    summary = "Run a depthwise conv read in channel slices slice by slice, each beside " \
              "the matrix work of the slice before (-fusion=2)"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        if context.target.fusion < 2:
            return
        with module.context:
            for body in function_bodies(module):
                # Listed first: a split erases ops (slices, pads) after it.
                depthwise = [op.operation for op in body.operations
                             if op.operation.name == DEPTHWISE]
                for op in depthwise:
                    if member_of(op) is None or not per_channel_init(op):
                        continue
                    pieces, reason = pieces_of(op)
                    if pieces is None:
                        if reason is not None:
                            context.diagnostics.remark(
                                op.location,
                                f"{name_of(op)} read in slices of channels "
                                f"not split: {reason}")
                        continue
                    context.diagnostics.remark(
                        op.location,
                        f"{name_of(op)} split into {len(pieces)} slices of "
                        f"channels, each read by its own ops: a slice is filtered beside the "
                        f"matrix work of the slice before")
                    split(op, pieces, body)
