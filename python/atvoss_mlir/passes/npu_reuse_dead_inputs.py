"""npu-reuse-dead-inputs: a residual add writes its result over its skip
tensor when nothing reads the skip after it (-fusion=2).

Runs on DRAM memrefs, after bufferization and before the buffer plan. A
residual block's add (or the residual start a conv accumulates onto) is the
last of the skip tensor's readers: ShuffleNet's units, each
`relu(x + conv(...))` at 752 KB, would otherwise hold the skip and the result
as two buffers, which do not fit in the SRAM together. Written over the skip,
a chain of units is one buffer, which the buffer plan (npu-keep-in-sram) can
keep in SRAM across the units; in DRAM it changes no traffic.

The op is a `linalg.generic` of parallel loops whose body does not read its
output, reading and writing every operand of the output's rank through the
identity map. It writes a view of one `memref.alloc` (the output buffer) and
reads the same view of another of the same float type (the input buffer),
which other ops read before it; the two are each more than a quarter of the
SRAM (smaller ones the buffer plan keeps as they are). The output buffer becomes the input buffer
when no use of the input buffer's elements follows a use of the output
buffer's same elements in the block (views are compared by their static
boxes; any other view counts as the whole buffer), but the op's own read of
what it writes. Left as they are:
- a tensor copied into a padded buffer (kept padded by the buffer plan,
  written in the interior by its one producer);
- an op a conv or pool folds as its input prologue (it writes no buffer);
- an add whose other input a conv of the skip makes: npu-tile folds the add
  into that conv, which would then write over the skip it is still reading.
Each reuse is a remark at the op.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..machine_model import type_bytes
from ..recipes.ir_queries import RESIDENT_VIEWS, indexing_maps, input_count, root_buffer
from ..recipes.prologue import input_prologue
from ..recipes.tile_ir import static
from . import ModulePass, PassContext, function_bodies, top_level
from .cascade_chains import WINDOW_OPS
from ..diagnostics import name_of


def _alloc_of(value: ir.Value, block: ir.Block):
    root = root_buffer(value)
    if isinstance(root, ir.OpResult) and root.owner.operation.name == "memref.alloc" \
            and root.owner.operation.block == block:
        return root
    return None


def region_of(value: ir.Value):
    """The box of its buffer a value views: (offsets, sizes) of one static
    subview with unit strides, None for the whole buffer."""
    owner = value.owner.operation if isinstance(value, ir.OpResult) else None
    if owner is None or owner.name != "memref.subview":
        return None
    if not isinstance(owner.operands[0], ir.OpResult) or \
            owner.operands[0].owner.operation.name != "memref.alloc" or \
            len(owner.operands) != 1 or any(s != 1 for s in static(owner, "static_strides")):
        return None
    return tuple(static(owner, "static_offsets")), tuple(static(owner, "static_sizes"))


def _overlap(a, b) -> bool:
    if a is None or b is None:
        return True
    return all(oa < ob + sb and ob < oa + sa
               for oa, sa, ob, sb in zip(a[0], a[1], b[0], b[1]))


def _view_uses(buffer: ir.Value):
    """(use, region) of each use of `buffer` through views (not the views'
    own): the region is the box of a single static subview, else None (the
    whole buffer: no view, or more than one, or a reshaping one)."""
    pending = [(buffer, None, True)]
    while pending:
        value, region, direct = pending.pop()
        for use in value.uses:
            user = use.owner.operation
            if user.name in RESIDENT_VIEWS and use.operand_number == 0:
                view = user.results[0]
                pending.append((view, region_of(view) if direct else None, False))
            else:
                yield use, region


def uses_of(buffer: ir.Value, block: ir.Block) -> list:
    """(op of `block`, region) of each use of `buffer` (`_view_uses`)."""
    return [(top_level(use.owner.operation, block).operation, region)
            for use, region in _view_uses(buffer)]


def _copied(uses: list) -> bool:
    return any(user.name == "memref.copy" for user, _ in uses)


def _accesses(buffer: ir.Value) -> list:
    """(op, whether it reads) for each linalg op or copy using `buffer`
    (through views): a linalg op reads its inputs and writes its inits, a
    copy reads its source."""
    found = []
    for use, _ in _view_uses(buffer):
        user = use.owner.operation
        if user.name == "memref.copy":
            found.append((user, use.operand_number == 0))
        elif "operandSegmentSizes" in user.attributes:
            found.append((user, use.operand_number < input_count(user)))
    return found


def readers_of(buffer: ir.Value) -> list:
    return [op for op, reads in _accesses(buffer) if reads]


def writers_of(buffer: ir.Value) -> list:
    return [op for op, reads in _accesses(buffer) if not reads]


def _identity_operands(op) -> list:
    """The operand indices of `op` read or written through the identity map."""
    return [i for i, m in enumerate(indexing_maps(op))
            if m == ir.AffineMap.get_identity(m.n_dims)]


def pointwise(op) -> bool:
    """A linalg.generic of parallel loops on buffers, whose body does not read
    its output, reading and writing every operand of the output's rank
    through the identity map: it reads each element before writing it."""
    if op.name != "linalg.generic" or len(op.results) or len(op.regions) != 1:
        return False
    if any("parallel" not in str(it) for it in ir.ArrayAttr(op.attributes["iterator_types"])):
        return False
    output_index = len(op.operands) - 1
    body = op.regions[0].blocks[0]
    if len(body.arguments) != len(op.operands) or list(body.arguments[output_index].uses):
        return False
    rank = ir.MemRefType(op.operands[output_index].type).rank
    identity = _identity_operands(op)
    return all(i in identity for i, value in enumerate(op.operands)
               if ir.MemRefType(value.type).rank == rank)


def reusable_input(op, block: ir.Block, position: dict, target):
    """(input index, input buffer, output buffer) when the pointwise `op`'s
    output buffer can become an input's, else None."""
    if not pointwise(op):
        return None
    output_index = len(op.operands) - 1
    output = op.operands[output_index]
    identity = _identity_operands(op)
    out_buffer = _alloc_of(output, block)
    # Float results only: an int8 add is folded into its conv's requantising
    # epilogue, whose in-place writes of a kept tensor this was not made for.
    # And large ones: the buffer plan keeps two tensors of at most a quarter
    # of the SRAM each as they are (one buffer would only tie their lives).
    if out_buffer is None or not isinstance(ir.MemRefType(out_buffer.type).element_type,
                                            (ir.F32Type, ir.F16Type)) \
            or 4 * type_bytes(ir.MemRefType(out_buffer.type)) <= target.max_sram_bytes:
        return None
    # A tensor copied into a padded buffer (a conv's or pool's padded input)
    # keeps its buffer: the buffer plan keeps such a tensor padded, written by
    # its one producer in the padded buffer's interior.
    out_uses = uses_of(out_buffer, block)
    if _copied(out_uses):
        return None
    # An op a conv or pool folds as a prologue on its input tiles writes no
    # buffer at all there.
    if any(reader.name in WINDOW_OPS and reader.operands[0] == out_buffer
           and input_prologue(reader, out_buffer, target) is not None
           for reader in readers_of(out_buffer)):
        return None
    out_region = region_of(output)
    for index in identity[:-1]:
        value = op.operands[index]
        in_buffer = _alloc_of(value, block)
        if in_buffer is None or in_buffer == out_buffer or in_buffer.type != out_buffer.type \
                or value.type != output.type \
                or region_of(value) != out_region \
                or sum(1 for operand in op.operands if operand == value) != 1:
            continue
        # The last of several readers (a skip tensor): one only this op reads
        # is a chain's, which other passes fold (a pool's divisor, a conv's
        # prologue) and the buffer plan gains nothing from.
        readers = readers_of(in_buffer)
        in_uses = uses_of(in_buffer, block)
        if all(reader == op for reader in readers) or _copied(in_uses):
            continue
        # An op making another input from this one (a conv of the skip) takes
        # the add as its epilogue later (npu-tile): the fused op would then
        # write over rows of the skip its next tiles still read.
        others = [_alloc_of(other, block) for other in op.operands[:output_index]
                  if other != value and isinstance(other.type, ir.MemRefType)]
        if any(writer in readers for other in others if other is not None
               for writer in writers_of(other)):
            continue
        # The input's buffer must exist where the output's is first used.
        if any(not in_buffer.owner.operation.is_before_in_block(user) for user, _ in out_uses):
            continue
        if _conflict_free(in_uses, out_uses, position):
            return index, in_buffer, out_buffer
    return None


def _conflict_free(input_uses: list, output_uses: list, position: dict) -> bool:
    """Whether no use of the input buffer's elements follows a use of the
    output buffer's same elements, but a pointwise op's read of the elements
    it writes."""
    for user, region in output_uses:
        for reader, read in input_uses:
            if position[reader] < position[user] or \
                    (reader == user and read == region and pointwise(user)):
                continue
            if _overlap(region, read):
                return False
    return True


@dataclass(frozen=True)
class NpuReuseDeadInputs(ModulePass):
    argument = "npu-reuse-dead-inputs"
    summary = "A residual add writes over its skip tensor when nothing reads it after " \
              "(-fusion=2)"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        if context.target.fusion < 2:
            return
        with module.context:
            for body in function_bodies(module):
                start = 0
                while start is not None:
                    start = self.reuse_one(body, start, context)

    @staticmethod
    def reuse_one(body: ir.Block, start: int, context: PassContext) -> int | None:
        """Give the output buffer of the first op from `start` on that can to
        its input; where to go on from (erasing an op renews the handles of
        the others: the block is walked again), None when there was none."""
        ops = [op.operation for op in body.operations]
        position = {op: i for i, op in enumerate(ops)}
        for i in range(start, len(ops)):
            found = reusable_input(ops[i], body, position, context.target)
            if found is None:
                continue
            index, in_buffer, out_buffer = found
            size = type_bytes(ir.MemRefType(out_buffer.type))
            context.diagnostics.remark(
                ops[i].location, f"{name_of(ops[i])} writes its result over its input #{index} "
                f"({size} B), which nothing reads after it: one buffer for both")
            out_buffer.replace_all_uses_with(in_buffer)
            out_buffer.owner.erase()
            return i   # the op is one earlier now: go on after it
        return None
