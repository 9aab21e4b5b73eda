"""npu-forward-copies: the op that makes a buffer only copied, through a
reshape, into a view writes that view itself.

A nearest upsampling is a broadcast into a buffer with a unit dim after each
repeated one, merged back by a collapse_shape. When its result is a piece of
a concatenation (a U-Net's decoder), bufferization writes the broadcast into
a buffer of its own and copies the collapsed buffer into the slice of the
concatenation: the copy reads and writes the whole upsampled tensor in DRAM
again. (eliminate-empty-tensors, which makes the other pieces write their
slices, does not look through a reshape.)

Runs on DRAM memrefs after bufferization, before npu-convert-copies. A
`memref.copy` whose source is the collapse_shape of a statically shaped
buffer of the block goes when that buffer is written whole by one op before
the copy (a broadcast, fill, copy, transpose or elementwise generic), read by
nothing else, and no op between that write and the copy touches the buffer
the target views: the writer writes the expand_shape of the target instead
(an expansion of a strided view always is one), and the buffer goes.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import memref

from ..frontend.builders import reassociation_attr
from ..machine_model import type_bytes
from . import ModulePass, PassContext
from .layout_moves import reassociation
from .npu_pad_in_place import block_alloc, operation, rewrite_copies
from .npu_verify_tokens import root_buffer

# Structured ops that write all of their one output without reading it.
WHOLE_WRITERS = ("linalg.broadcast", "linalg.fill", "linalg.copy", "linalg.transpose")


def writes_whole(op, buffer: ir.Value) -> bool:
    """Whether `op` writes all of `buffer`, its one output, and reads none of it."""
    if op.name not in WHOLE_WRITERS and op.name != "linalg.generic":
        return False
    outputs = list(op.operands)[-1:]
    if outputs != [buffer] or any(operand == buffer for operand in list(op.operands)[:-1]):
        return False
    if op.name != "linalg.generic":
        return True
    if any(str(t) != "#linalg.iterator_type<parallel>" for t in op.attributes["iterator_types"]):
        return False
    maps = [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    body = op.regions[0].blocks[0]
    return maps[-1] == ir.AffineMap.get_identity(maps[-1].n_dims) and \
        not list(body.arguments[len(body.arguments) - 1].uses)


def expanded_type(target: ir.Value, groups: list[list[int]], shape: list[int]) -> ir.MemRefType:
    """The type of the expand_shape of the strided view `target` into `shape`:
    each dim split as `groups` say, the inner parts keeping its stride."""
    target_type = ir.MemRefType(target.type)
    strides, offset = target_type.get_strides_and_offset()
    expanded = [0] * len(shape)
    for group, stride in zip(groups, strides):
        for dim in reversed(group):
            expanded[dim] = stride
            stride *= shape[dim]
    layout = ir.StridedLayoutAttr.get(offset, expanded)
    return ir.MemRefType.get(shape, target_type.element_type, layout,
                             target_type.memory_space)


@dataclass
class ForwardedCopy:
    copy: ir.Operation
    collapse: ir.Operation
    buffer: ir.Value         # the memref.alloc the writer fills
    writer: ir.Operation


def is_static_view(value: ir.Value) -> bool:
    """A memref with a static shape, strides and offset."""
    memref_type = ir.MemRefType(value.type)
    if not memref_type.has_static_shape:
        return False
    strides, offset = memref_type.get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    return offset != dynamic and dynamic not in strides


def match(copy, block: ir.Block, order: dict) -> ForwardedCopy | None:
    source, target = copy.operands
    if not (isinstance(source, ir.OpResult) and source.owner.name == "memref.collapse_shape"
            and len(list(source.uses)) == 1 and is_static_view(target)):
        return None
    collapse = operation(source.owner)
    buffer = collapse.operands[0]
    if not block_alloc(buffer, block) or collapse.block != block:
        return None
    others = [operation(use.owner) for use in buffer.uses if operation(use.owner) != collapse]
    if len(others) != 1 or others[0].block != block or not writes_whole(others[0], buffer):
        return None
    writer = others[0]
    if not order[writer] < order[copy]:
        return None
    # The target's buffer is defined before the writer and untouched until the copy.
    root = root_buffer(target)
    if isinstance(root, ir.OpResult) and operation(root.owner).block == block \
            and order[operation(root.owner)] > order[writer]:
        return None
    views = target_views(target)
    if any(len(view.operands) != 1 for view in views):
        return None   # dynamic offsets: computed where they are
    for op in list(block.operations)[order[writer] + 1:order[copy]]:
        op = operation(op)
        if op in views or op == collapse or (
                op.name == "memref.copy" and op.operands[0] == op.operands[1]):
            continue   # (a copy onto itself: a piece bufferization wrote in place)
        if any(isinstance(v.type, ir.MemRefType) and root_buffer(v) == root
               for v in op.operands):
            return None
    return ForwardedCopy(copy, collapse, buffer, writer)


def target_views(target: ir.Value) -> list:
    """The memref.subview ops making `target`, innermost first."""
    views = []
    while isinstance(target, ir.OpResult) and target.owner.name == "memref.subview":
        views.append(operation(target.owner))
        target = target.owner.operands[0]
    return views


def forward(found: ForwardedCopy, order: dict) -> int:
    """Rewrite one copy; the DRAM bytes it no longer moves."""
    target = found.copy.operands[1]
    for view in reversed(target_views(target)):   # outermost first, above the writer
        if view in order and order[view] > order[found.writer]:
            view.move_before(found.writer)
    buffer_type = ir.MemRefType(found.buffer.type)
    groups = reassociation(found.collapse)
    shape = list(buffer_type.shape)
    with found.writer.location, ir.InsertionPoint(found.writer):
        expanded = memref.ExpandShapeOp(expanded_type(target, groups, shape), target,
                                        reassociation_attr(groups), [], shape).result
    saved = 2 * type_bytes(buffer_type)
    found.copy.erase()
    found.collapse.erase()
    found.buffer.replace_all_uses_with(expanded)
    operation(found.buffer.owner).erase()
    return saved


@dataclass(frozen=True)
class NpuForwardCopies(ModulePass):
    argument = "npu-forward-copies"
    summary = "Let the writer of a buffer copied through a reshape into a view write the view"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        rewrite_copies(module, context, match, self.rewrite)

    @staticmethod
    def rewrite(found: ForwardedCopy, block: ir.Block, order: dict) -> tuple:
        location, name = found.writer.location, found.writer.name
        saved = forward(found, order)
        return location, (f"'{name}' writes the view its reshaped result was copied into: "
                          f"no copy (saves {saved} B of DRAM traffic)")
