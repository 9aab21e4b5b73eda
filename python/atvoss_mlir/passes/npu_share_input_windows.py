"""npu-share-input-windows: an elementwise op's inputs that are shifted slices of
one buffer read it once, as one window.

A window over a dim written as shifted slices (LRN's sum over `size`
channel-shifted slices of the zero-padded squares) bufferizes to one subview
of the buffer per slice, and each is loaded into SRAM on its own: the buffer
crosses the DRAM interface once per slice. This pass reads the slices after
the first through one view, the union of the slices, each indexed at its shift
(`d1 + k`); the first keeps its view (linalg takes the loops' sizes from the
first operand indexing a loop alone). The elementwise recipe then loads a tile
of the window once (wider by the largest shift) and computes on a view of it
per input (recipes/elementwise.shared_windows).

Runs on DRAM memrefs after bufferization, before npu-tile. Inputs qualify when
they are statically shaped unit-stride subviews of one buffer, indexed by the
identity, that differ only in their offset along one dim; the op's loops must
all be parallel.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..recipes.elementwise import static_slice
from ..recipes.problem import indexing_maps, ins_outs, is_reduction
from ..recipes.tile_ir import subview
from . import ModulePass, PassContext, function_bodies


def shifted_groups(op) -> list:
    """[(dim, [(input number, offsets, sizes)])]: the inputs that slice one buffer
    and differ only in their offset along `dim`, two or more."""
    inputs, _ = ins_outs(op)
    maps = indexing_maps(op)
    by_source = {}
    for number, value in enumerate(inputs):
        found = static_slice(value)
        if found is None or maps[number] != ir.AffineMap.get_identity(maps[number].n_dims):
            continue
        source, offsets, sizes = found
        by_source.setdefault(source, []).append((number, offsets, sizes))
    groups = []
    for members in by_source.values():
        if len(members) < 2 or len({tuple(sizes) for _, _, sizes in members}) != 1:
            continue
        differing = {d for _, offsets, _ in members for d in range(len(offsets))
                     if offsets[d] != members[0][1][d]}
        if len(differing) == 1:
            groups.append((differing.pop(), members))
    return groups


def share(op, dim: int, members: list) -> None:
    """Read the group's inputs through one union view, each at its shift; the
    first slice keeps its own view, from which linalg takes the loop's size."""
    members = sorted(members, key=lambda member: member[1][dim])
    low, high = members[0][1][dim], members[-1][1][dim]
    number, offsets, sizes = members[0]
    source = op.operands[number].owner.operands[0]
    union_offsets, union_sizes = list(offsets), list(sizes)
    union_sizes[dim] = sizes[dim] + high - low
    with op.location, ir.InsertionPoint(op):
        union = subview(source, union_offsets, union_sizes)
    maps = indexing_maps(op)
    for number, offsets, _ in members[1:]:
        identity = maps[number]
        results = list(identity.results)
        results[dim] = results[dim] + ir.AffineConstantExpr.get(offsets[dim] - low)
        maps[number] = ir.AffineMap.get(identity.n_dims, 0, results)
        slice_ = op.operands[number]
        op.operands[number] = union
        if not list(slice_.uses):
            slice_.owner.erase()
    op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])


@dataclass(frozen=True)
class NpuShareInputWindows(ModulePass):
    argument = "npu-share-input-windows"
    summary = "Read an elementwise op's shifted slices of one buffer as one window"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            for body in function_bodies(module):
                for op in [op.operation for op in body.operations]:
                    if op.name != "linalg.generic" or is_reduction(op):
                        continue
                    for dim, members in shifted_groups(op):
                        share(op, dim, members)
                        context.diagnostics.remark(
                            op.location, f"{len(members)} inputs slicing one buffer at "
                                         f"shifts along dim {dim} read it once, as one window")
