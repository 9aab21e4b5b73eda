"""npu-propagate-layout: move layout transposes below elementwise ops, so that
a transpose back to NCHW meets the transpose to NHWC of the next op and both
cancel.

Runs on tensors, after npu-convert-layout. That pass leaves every NHWC conv or
pooling between transposes (NCHW -> NHWC before it, NHWC -> NCHW after it), so
a bias, a batch-norm scale and shift, a relu or a residual add between two convs
runs in NCHW behind two transposes of its tensor. An elementwise
`linalg.generic` whose full-size inputs are all transposes by the same
permutation is rewritten to run in the layout before the transpose:

    %x = linalg.transpose ins(%y : NHWC) permutation = [0, 3, 1, 2]
    %r = linalg.generic ins(%x, %bias ...)           // NCHW
  becomes
    %r' = linalg.generic ins(%y, %bias ...)          // NHWC; broadcast maps remapped
    %r = linalg.transpose ins(%r' : NHWC) permutation = [0, 3, 1, 2]

A concatenation (insert_slices into an empty tensor) of tensors transposed by
one permutation is built in their layout and transposed once, the same way;
a piece computed from no full-size input (DeepLab's pooled image-level
feature broadcast over the image) is computed in that layout.
A static pad or slice of a transposed tensor pads or slices its source (the
amounts and offsets permuted) and is transposed after: LRN's window over
channels (shifted slices of the zero-padded squares) then runs between two
NHWC convs without leaving NHWC.

A reshape does not stop a transpose: an expand_shape of a transposed tensor
expands the source and transposes the result (the split dims move together),
a collapse_shape of one whose merged dims are runs in the source too
collapses the source, and a transpose of a collapse_shape transposes the
groups before collapsing them. A nearest upsampling (a broadcast into a unit
dim after each repeated dim, merged by a collapse_shape) of a transposed
tensor broadcasts the source, each added dim after the dim it follows, when
the collapse then moves too: a U-Net's decoder stays in NHWC up to its
concatenation with the skip tensor. A channel shuffle's collapse (the swapped
groups merged: no run in NHWC) read by a Split's slices is collapsed in NHWC,
the channel group last, so that the shuffle is one transpose of the groups
there and the transpose back to NCHW moves on below the slices
(ShuffleNetV2). A channel shuffle written for NCHW (reshape, transpose, reshape) between
two NHWC convs thus becomes one transpose of the channel groups in NHWC, as
the consecutive transposes compose.

`-layout-pref` says which layout the tensors between layers take: NHWC, the
convs', with every move above; NCHW, the model's, with none (each conv and
pool transforms its input and output); auto, each move that the cost model
says moves no more bytes than it saves (on this machine that is every move:
each one transposes a tensor no larger than the one it replaces).

A reduction whose one full-size input is transposed (a global average pool
of a conv's result) reads the transpose's source instead: its loops follow
that layout and its output map is remapped, so its result is unchanged and
the transpose goes. Neither a reduction nor an elementwise op moves where a
remapped map would take its dims out of order (a layer norm over the last
dim of windows cut from an NHWC feature map: its sums would come out as
(n, c, h), which the vector unit's tiles do not write).

Ops are visited in program order, so the transpose moves down a chain of
elementwise ops until it reaches an op that wants NCHW (a reshape, the
function's result) or the transpose to NHWC of the next conv, with which
canonicalization folds it away. A transpose that undoes the one it reads is
bypassed at once (its readers read that one's source): a grouped conv's
input, padded in NHWC and sliced per group, then stays in NHWC rather than
taking the pad above it, into NCHW. Broadcast operands (per-channel parameters) are
not moved: only their indexing maps change.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from . import ModulePass, PassContext, ops_where
from .layout_elementwise import Candidate, iterate_in_source_layout, reduction_source, \
    transpose_source
from .layout_moves import (MOVED_THROUGH, POSITIONS, cancels, collapse_in_nhwc, collapse_moves,
                           concat_chain, is_concat_start, movable_below, move_above_collapse,
                           move_below_broadcast, move_below_collapse, move_below_concat,
                           move_below_expand, move_below_positioned, shuffle_collapse,
                           static_shaped, upsampling_broadcast)


@dataclass(frozen=True)
class NpuPropagateLayout(ModulePass):
    argument = "npu-propagate-layout"
    summary = "Move layout transposes below elementwise ops so inverse pairs cancel"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        if context.target.layout_pref == "NCHW":
            return
        with module.context:
            # In program order: a moved transpose reaches the ops after it.
            for op in ops_where(module, lambda op: op.name in MOVED_THROUGH
                                or is_concat_start(op)):
                if op.name == "tensor.expand_shape":
                    if transpose_source(op.operands[0]) is not None \
                            and static_shaped(op.operands[0], op.results[0]):
                        context.diagnostics.remark(
                            op.location, "'tensor.expand_shape' expands the source of its "
                                         "transposed input: the transpose moves below it")
                        move_below_expand(op)
                    continue
                if op.name == "linalg.broadcast":
                    if upsampling_broadcast(op):
                        context.diagnostics.remark(
                            op.location, "'linalg.broadcast' repeats the source of its "
                                         "transposed input: the transpose moves below it")
                        move_below_broadcast(op)
                    continue
                if op.name == "tensor.collapse_shape":
                    found = transpose_source(op.operands[0])
                    if found is not None and collapse_moves(op, found[1]):
                        context.diagnostics.remark(
                            op.location, "'tensor.collapse_shape' merges dims of the source of "
                                         "its transposed input: the transpose moves below it")
                        move_below_collapse(op)
                    elif found is not None and shuffle_collapse(op):
                        context.diagnostics.remark(
                            op.location, "'tensor.collapse_shape' merges a channel shuffle's "
                                         "groups in NHWC: the shuffle is one transpose there, "
                                         "and the transpose back to NCHW moves below it")
                        collapse_in_nhwc(op)
                    continue
                if op.name == "linalg.transpose":
                    source = op.operands[0]
                    if isinstance(source, ir.OpResult) \
                            and source.owner.name == "tensor.collapse_shape" \
                            and len(list(source.uses)) == 1 and static_shaped(source) \
                            and transpose_source(source.owner.operands[0]) is not None:
                        context.diagnostics.remark(
                            op.location, "transpose of a collapsed transposed tensor moves "
                                         "above 'tensor.collapse_shape', where the two compose")
                        move_above_collapse(op)
                    elif cancels(op):
                        # Its readers read the source of the transpose it
                        # undoes (a moved one meeting the next op's), so that
                        # a pad or slice after it stays in that layout.
                        op.results[0].replace_all_uses_with(transpose_source(source)[0])
                    continue
                if op.name in POSITIONS:
                    if movable_below(op):
                        context.diagnostics.remark(
                            op.location, f"'{op.name}' applies to the source of its transposed "
                                         f"input: the transpose moves below it")
                        move_below_positioned(op)
                    continue
                if op.name == "tensor.insert_slice":
                    chain = concat_chain(op)
                    if chain is not None:
                        computed = sum(transpose_source(c.operands[0]) is None for c in chain)
                        pieces = f"{len(chain) - computed} transposed tensors" + (
                            f" and {computed} computed in their layout" if computed else "")
                        context.diagnostics.remark(
                            op.location, f"concatenation of {pieces} runs in their layout: "
                                         f"the transpose moves below it")
                        move_below_concat(chain)
                    continue
                if not all(isinstance(v.type, ir.RankedTensorType) for v in op.operands):
                    continue
                reduction = reduction_source(op)
                if reduction is not None:
                    context.diagnostics.remark(
                        op.location, f"reduction reads the source of its transposed input "
                                     f"#{reduction[0]}: its loops follow that layout, and the "
                                     f"transpose goes")
                    iterate_in_source_layout(op, *reduction)
                    continue
                candidate = Candidate(op)
                if candidate.permutation is not None:
                    inputs = ", ".join(f"#{index}" for index in sorted(candidate.sources))
                    context.diagnostics.remark(
                        op.location, f"'linalg.generic' runs in the layout of its transposed "
                                     f"input {inputs}: the transpose moves below it")
                    candidate.rewrite()
                elif candidate.refusal is not None:
                    context.diagnostics.remark(
                        op.location, f"'linalg.generic' keeps its transposed inputs: "
                                     f"{candidate.refusal}")
