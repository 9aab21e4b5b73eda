"""npu-pad-in-place: the producer of a padded tensor writes the interior of the
padded buffer itself.

Bufferization turns a `tensor.pad` of an op's result into a new buffer filled
with the pad value (`linalg.map`) and a `memref.copy` of the result into its
interior: the result goes through DRAM three times more than it needs to (the
fill writes the interior, the copy reads and writes it again). Where no
convolution or pooling reads the padded buffer (those fold the padding into
their own loads, npu-convert-copies), the copy's source is replaced by the
interior view: the producing ops write there, only the halo is filled, and
the copy and the source buffer go. LRN's window over channels (five shifted
slices of the zero-padded squares) is the case met in practice.

Runs on DRAM memrefs after bufferization, before npu-convert-copies. The
rewrite applies when every use of the source is a structured op or the copy
(a view of a strided interior may not be a reshape), the padded buffer is
written only by its fill and the copy and read only after the copy, and the
pad value is defined before the source's first use.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from ..machine_model import type_bytes
from ..recipes.ir_queries import defined_within
from ..recipes.tile_ir import static, subview
from . import ModulePass, PassContext, function_bodies, top_level
from .npu_convert_copies import into_padded_window_input


def operation(op) -> ir.Operation:
    """The ir.Operation of an op or of its OpView."""
    return op.operation if isinstance(op, ir.OpView) else op


def fill_value(op, buffer: ir.Value) -> ir.Value | None:
    """The value `op` fills all of `buffer` with (a linalg.fill, or the linalg.map
    yielding one value that bufferization writes for tensor.pad), else None."""
    if op.name == "linalg.fill" and op.operands[1] == buffer:
        return op.operands[0]
    if op.name == "linalg.map" and len(op.operands) == 1 and op.operands[0] == buffer:
        body = op.regions[0].blocks[0]
        terminator = list(body.operations)[-1]
        value = terminator.operands[0] if len(terminator.operands) == 1 else None
        # One value from outside the body; one computed in it (from the
        # element's index) differs per element.
        if value is not None and not defined_within(value, operation(op)):
            return value
    return None


def position(op, block: ir.Block, order: dict) -> int:
    """The index in `block` of `op` or of its ancestor there."""
    return order[operation(top_level(operation(op), block))]


def halo(padded_shape: list[int], offsets: list[int], sizes: list[int]) -> list:
    """(offsets, sizes) of the slabs of the padded buffer outside the interior:
    per dim, the rows before and after it (corners are filled twice)."""
    slabs = []
    for dim, (extent, low, size) in enumerate(zip(padded_shape, offsets, sizes)):
        for start, length in ((0, low), (low + size, extent - low - size)):
            if length > 0:
                slab_offsets = [0] * len(padded_shape)
                slab_sizes = list(padded_shape)
                slab_offsets[dim], slab_sizes[dim] = start, length
                slabs.append((slab_offsets, slab_sizes))
    return slabs


@dataclass
class PaddedCopy:
    copy: ir.Operation
    source: ir.Value         # the producer's buffer (a memref.alloc)
    interior: ir.Operation   # the subview of the padded buffer the copy writes
    padded: ir.Value         # the padded buffer (a memref.alloc)
    fill: ir.Operation
    value: ir.Value          # the pad value


def block_alloc(value: ir.Value, block: ir.Block) -> bool:
    """Whether `value` is a statically shaped memref.alloc of `block`."""
    return isinstance(value, ir.OpResult) and value.owner.name == "memref.alloc" \
        and operation(value.owner).block == block and ir.MemRefType(value.type).has_static_shape


def padded_copy_target(copy, block: ir.Block):
    """(interior, padded buffer, fill) when `copy` writes the interior of a padded
    buffer (bufferization's tensor.pad): a unit-stride memref.subview of a
    statically shaped memref.alloc of `block`, written whole by one fill with
    the pad value (fill_value); else None."""
    target = copy.operands[1]
    if not (isinstance(target, ir.OpResult) and target.owner.name == "memref.subview"
            and len(target.owner.operands) == 1):
        return None
    interior = operation(target.owner)
    padded = interior.operands[0]
    if not block_alloc(padded, block) or any(s != 1 for s in static(interior, "static_strides")):
        return None
    fills = [operation(use.owner) for use in padded.uses
             if fill_value(use.owner, padded) is not None]
    return (interior, padded, fills[0]) if len(fills) == 1 else None


def match(copy, block: ir.Block, order: dict) -> PaddedCopy | None:
    source = copy.operands[0]
    found = padded_copy_target(copy, block)
    if found is None or not block_alloc(source, block) \
            or into_padded_window_input(copy.operands[1]):
        return None
    interior, padded, fill = found
    at_copy = order[copy]
    # The padded buffer: filled, then the copy, then only read (through views).
    for use in padded.uses:
        user = operation(use.owner)
        if user == fill or user == interior:
            continue
        if position(user, block, order) < at_copy:
            return None
        if user.name == "memref.subview":
            for view_use in user.results[0].uses:
                if position(view_use.owner, block, order) < at_copy:
                    return None
    # The source: written and read by structured ops only, besides the copy.
    users = [operation(use.owner) for use in source.uses]
    if any(user != copy and not user.name.startswith("linalg.") for user in users):
        return None
    if any(position(user, block, order) > at_copy for user in users if user != copy):
        return None    # read after the copy: keep it simple, leave such a source alone
    first = min(position(user, block, order) for user in users)
    value = fill_value(fill, padded)
    # The halo fills move to the source's first use: the pad value must be there
    # already (a block argument or a value from outside the block always is).
    if isinstance(value, ir.OpResult) and operation(value.owner).block == block \
            and order[operation(value.owner)] >= first:
        return None
    if order[fill] > at_copy:
        return None
    return PaddedCopy(copy, source, interior, padded, fill, value)


def write_in_place(found: PaddedCopy, block: ir.Block, order: dict) -> int:
    """Rewrite one padded copy; the DRAM bytes it no longer moves."""
    source_alloc = operation(found.source.owner)
    padded_alloc = operation(found.padded.owner)
    padded_type = ir.MemRefType(found.padded.type)
    source_bytes = type_bytes(ir.MemRefType(found.source.type))
    # The padded buffer and its interior view take the source's place.
    padded_alloc.move_before(source_alloc)
    found.interior.move_after(padded_alloc)
    offsets, sizes = static(found.interior, "static_offsets"), static(found.interior,
                                                                      "static_sizes")
    with found.fill.location, ir.InsertionPoint(found.interior):
        for slab_offsets, slab_sizes in halo(list(padded_type.shape), offsets, sizes):
            linalg.fill(found.value, outs=[subview(found.padded, slab_offsets, slab_sizes)])
    found.copy.erase()
    found.fill.erase()
    found.source.replace_all_uses_with(found.interior.results[0])
    source_alloc.erase()
    # Saved: the fill's write of the interior, the copy's read and write.
    return 3 * source_bytes


def rewrite_copies(module: ir.Operation, context: PassContext, match, rewrite) -> None:
    """Each memref.copy of a function body that `match(copy, block, order)`
    takes, rewritten by `rewrite(found, block, order)`, which returns (the
    location, the remark there); the block's order is taken again after each
    (ops moved and erased)."""
    with module.context:
        for block in function_bodies(module):
            order = {op.operation: i for i, op in enumerate(block.operations)}
            for copy in [op for op in order if op.name == "memref.copy"]:
                found = match(copy, block, order)
                if found is None:
                    continue
                location, remark = rewrite(found, block, order)
                order = {op.operation: i for i, op in enumerate(block.operations)}
                context.diagnostics.remark(location, remark)


@dataclass(frozen=True)
class NpuPadInPlace(ModulePass):
    argument = "npu-pad-in-place"
    summary = "Let the producer of a padded tensor write the padded buffer's interior"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        rewrite_copies(module, context, match, self.rewrite)

    @staticmethod
    def rewrite(found: PaddedCopy, block: ir.Block, order: dict) -> tuple:
        # The last op writing the source before the copy computes it (a conv
        # after the fill of its accumulator).
        writer = max((operation(use.owner) for use in found.source.uses
                      if operation(use.owner) != found.copy),
                     key=lambda op: position(op, block, order))
        location = writer.location
        saved = write_in_place(found, block, order)
        return location, (f"'{writer.name}' writes the interior of the padded buffer read "
                          f"after it: no copy into it (saves {saved} B of DRAM traffic)")
