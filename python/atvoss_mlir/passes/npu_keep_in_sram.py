"""npu-keep-in-sram: the graph-level buffer plan (-fusion=2). Decides, for
each intermediate tensor, whether it stays in SRAM from its producer to its
last reader instead of going through DRAM (buffer_plan.py: the candidates,
their cost and the choice), and puts those kept there.

Runs on DRAM memrefs, after bufferization and before `npu-tile`. A kept
tensor becomes an `npu.alloc` in SRAM with its `offset` and `npu.resident`,
released by `npu.dealloc` after its last reader; the ops (and their views)
then read and write it there. `npu-tile` gives each op the SRAM below the
kept tensors live across it (`resident_budgets`), and never tiles a kept
operand's dims: the op computes on the whole tensor in place, or copies it to
or from an SRAM tile on the vector unit (a padded or strided window, a
broadcast input, a slice of a concatenation).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from ..diagnostics import name_of
from ..dialects import npu
from ..recipes.problem import PADDED_INTERIOR_ATTR, RESIDENT_ATTR, RESIDENT_VIEWS
from ..recipes.tile_ir import static, subview
from . import ModulePass, PassContext, function_bodies
from .buffer_plan import Candidate, PaddedReaders, Plan, first_user
from .npu_pad_in_place import halo


def keep(plan: Plan, candidate: Candidate) -> None:
    """Put the kept tensor in SRAM: an npu.alloc at its offset from its first
    user, released after its last reader, which its ops and views use in
    place of the DRAM buffer."""
    alloc = candidate.alloc
    old = alloc.results[0]
    padded = candidate.padded
    buffer_type = ir.MemRefType((padded.padded if padded else alloc).results[0].type)
    space = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), npu.SRAM_MEMORY_SPACE)
    # Allocated at its first use: the DRAM buffer may be made long before
    # (a concatenation its pieces are computed in), its SRAM is only
    # reserved from its first writer on.
    with alloc.location, ir.InsertionPoint(first_user(alloc)):
        new = npu.AllocOp(npu.sram_memref(list(buffer_type.shape),
                                          buffer_type.element_type)).result
        new.owner.attributes["offset"] = ir.IntegerAttr.get(
            ir.IntegerType.get_signless(64), candidate.offset)
        new.owner.attributes[RESIDENT_ATTR] = ir.UnitAttr.get()
        tensor = pad_in_sram(plan, padded, new, plan.ops[candidate.readers[0]]) if padded \
            else new
    retype_uses(old, tensor, space)
    last = plan.ops[candidate.last]
    with last.location, ir.InsertionPoint.after(last):
        npu.DeallocOp(new)
    # The producer computes the tensor: a fill before it only initialises the
    # buffer (the border of a padded buffer its producer writes the interior
    # of, the zeros a pool sums onto).
    computing = [i for i in candidate.readers if plan.ops[i].name != "linalg.fill"] \
        or candidate.readers
    producer = plan.ops[computing[0]]
    # A node lowered to several ops (a grouped conv's groups) is named once,
    # and the producer's own node only when nothing else reads the tensor.
    names = list(dict.fromkeys(name_of(plan.ops[i]) for i in computing[1:]))
    others = [name for name in names if name != name_of(producer)]
    readers = ", ".join(others or names)
    plan.context.diagnostics.remark(
        producer.location, f"kept '{producer.name}' output in SRAM for {readers} "
        f"({candidate.size} B at offset {candidate.offset}; saves {candidate.saving} "
        f"estimated cycles)")
    alloc.erase()


def pad_in_sram(plan: Plan, padded: PaddedReaders, buffer: ir.Value, producer) -> ir.Value:
    """Fill the halo of the SRAM buffer, let the readers of the padded copy
    read it and drop the copy; the interior view, which the tensor's ops
    then write and read in place of the tensor's buffer."""
    offsets = static(padded.interior, "static_offsets")
    sizes = static(padded.interior, "static_sizes")
    shape = list(ir.MemRefType(buffer.type).shape)
    with padded.fill.location:
        for slab_offsets, slab_sizes in halo(shape, offsets, sizes):
            linalg.fill(padded.value, outs=[subview(buffer, slab_offsets, slab_sizes)])
    interior = subview(buffer, offsets, sizes)
    interior.owner.attributes[PADDED_INTERIOR_ATTR] = ir.UnitAttr.get()
    padded.copy.erase()
    padded.fill.erase()
    padded.interior.erase()
    padded.padded.results[0].replace_all_uses_with(buffer)
    padded.padded.erase()
    readers = ", ".join(name_of(user) for user in {
        use.owner.operation: None for use in buffer.uses
        if use.owner.operation.name.startswith("linalg.")
        and use.owner.operation.name != "linalg.fill"})
    plan.context.diagnostics.remark(
        producer.location, f"'{producer.name}' writes the interior of the "
        f"{'x'.join(map(str, shape))} padded buffer {readers} read in SRAM: no "
        f"copy into it")
    return interior


def retype_uses(old: ir.Value, new: ir.Value, space) -> None:
    """Replace `old` by `new` (the same buffer in SRAM), rebuilding the views of it."""
    for use in list(old.uses):
        user = use.owner.operation
        if user.name in RESIDENT_VIEWS and use.operand_number == 0:
            result_type = ir.MemRefType(user.results[0].type)
            with user.location, ir.InsertionPoint(user):
                view = ir.Operation.create(
                    user.name, results=[ir.MemRefType.get(
                        result_type.shape, result_type.element_type, result_type.layout, space)],
                    operands=[new] + list(user.operands)[1:],
                    attributes={name: user.attributes[name] for name in user.attributes})
            retype_uses(user.results[0], view.results[0], space)
            user.erase()
        else:
            user.operands[use.operand_number] = new


@dataclass(frozen=True)
class NpuKeepInSram(ModulePass):
    argument = "npu-keep-in-sram"
    summary = "Keep intermediate tensors in SRAM between their producer and readers " \
              "when the cost model says it pays (-fusion=2)"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            if context.target.fusion < 2:
                return
            for body in function_bodies(module):
                plan = Plan(body, context.target, context)
                for candidate in plan.choose():
                    keep(plan, candidate)
