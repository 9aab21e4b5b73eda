"""npu-fold-transposes: fold a layout transform into the elementwise op next to
it, which then writes or reads the other layout itself.

Runs on tensors, after npu-propagate-layout, at -fusion=1 and up. A
`linalg.transpose` left between two ops (a producer emitting NCHW before a
conv that wants NHWC, a conv's NHWC result before an op that reads NCHW) is an
explicit transform: the vector unit transposes the whole tensor, which goes
to DRAM and back once more. It is folded:

  * into its producer, an elementwise linalg.generic whose only reader it is:
    the generic's output map is permuted so that it writes the transposed
    layout (its output tiles are transposed in SRAM before their store);
  * else into its readers, when every one is an elementwise linalg.generic
    reading it by the identity or a permutation: each reads the transform's
    source by the composed map (its input tiles are transposed in SRAM after
    their load).

Either way the transposed tensor never exists in DRAM. A transform whose
neighbours are not elementwise (a conv, a reduction, a reshape, the function's
arguments and results) stays, with a remark saying why.

A transform that moves only dims of size 1 (a squeeze-excitation's 1xCx1x1
gate to 1x1x1xC) keeps every element where it is: it becomes a reshape, a view
of its source, under any layout preference.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import tensor

from .. import machine_model
from ..recipes.elementwise import broadcast_region, loops_of, permutation_of
from ..recipes.problem import Unsupported, indexing_maps, input_count
from ..recipes.vector_body import body_program
from ..frontend.builders import reshape
from . import ModulePass, PassContext, erase_if_unused, ops_where, tensor_bytes
from .layout_elementwise import remapped


def set_maps(op, maps: list[ir.AffineMap]) -> None:
    op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])


def dim_map(n_dims: int, positions: list[int]) -> ir.AffineMap:
    return ir.AffineMap.get(n_dims, 0, [ir.AffineDimExpr.get(p) for p in positions])


def elementwise(op) -> bool:
    """A linalg.generic the vector unit runs as a chain of steps: parallel loops,
    one output whose initial value it never reads, each input broadcast or
    indexed by the identity or a permutation, and a body of vector steps."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return False
    if any(str(t) != "#linalg.iterator_type<parallel>" for t in op.attributes["iterator_types"]):
        return False
    inputs = input_count(op)
    block = op.regions[0].blocks[0]
    if list(block.arguments[inputs].uses):
        return False
    maps = indexing_maps(op)
    if loops_of(maps[-1]) is None:
        return False
    for affine_map, value in zip(maps[:inputs], list(op.operands)[:inputs]):
        if not isinstance(value.type, ir.RankedTensorType):
            return False
        if loops_of(affine_map) is None and \
                broadcast_region(affine_map, ir.RankedTensorType(value.type).shape) is None:
            return False
    try:
        body_program(block, inputs)
    except Unsupported:
        return False
    return True


def transposes_in_sram(op) -> int:
    """How many of the op's tiles the vector unit transposes (inputs and output)."""
    return sum(1 for m in indexing_maps(op) if permutation_of(m) is not None)


def in_fewest_transposes(op) -> None:
    """Number the loops of a parallel generic in its output's order when that
    leaves fewer of its tiles to transpose in SRAM (an input and output
    permuted alike then both take the identity)."""
    maps = indexing_maps(op)
    loops = loops_of(maps[-1])
    new_loop = [loops.index(d) for d in range(len(loops))]
    candidate = [remapped(m, new_loop) for m in maps]
    if sum(permutation_of(m) is not None for m in candidate) \
            < sum(permutation_of(m) is not None for m in maps):
        set_maps(op, candidate)


def fold_into_producer(transpose, producer) -> None:
    """The producer writes the transposed layout: result dim i of the transpose
    is producer dim permutation[i], which is loop loops[permutation[i]]."""
    permutation = list(ir.DenseI64ArrayAttr(transpose.attributes["permutation"]))
    maps = indexing_maps(producer)
    loops = loops_of(maps[-1])
    maps[-1] = dim_map(maps[-1].n_dims, [loops[p] for p in permutation])
    result_type = ir.RankedTensorType(transpose.results[0].type)
    inputs = input_count(producer)
    with producer.location, ir.InsertionPoint(producer):
        init = tensor.EmptyOp(result_type.shape, result_type.element_type).result
    old_init = producer.operands[inputs]
    producer.operands[inputs] = init
    set_maps(producer, maps)
    producer.results[0].set_type(result_type)
    in_fewest_transposes(producer)
    transpose.results[0].replace_all_uses_with(producer.results[0])
    transposed_init = transpose.operands[1]
    transpose.erase()
    erase_if_unused(old_init)
    erase_if_unused(transposed_init)


def fold_into_readers(transpose) -> None:
    """Each reader reads the source: its dim j is transposed dim inverse[j]."""
    permutation = list(ir.DenseI64ArrayAttr(transpose.attributes["permutation"]))
    inverse = [permutation.index(j) for j in range(len(permutation))]
    source, result = transpose.operands[0], transpose.results[0]
    for use in list(result.uses):
        reader, number = use.owner, use.operand_number
        maps = indexing_maps(reader)
        loops = loops_of(maps[number])
        maps[number] = dim_map(maps[number].n_dims, [loops[inverse[j]] for j in range(len(inverse))])
        reader.operands[number] = source
        set_maps(reader, maps)
        in_fewest_transposes(reader)
    init = transpose.operands[1]
    transpose.erase()
    erase_if_unused(init)


def moves_unit_dims_only(transpose) -> bool:
    """Whether the transpose keeps the order of the dims larger than 1 (it
    moves only dims of size 1): the same elements in the same order."""
    permutation = list(ir.DenseI64ArrayAttr(transpose.attributes["permutation"]))
    shape = ir.RankedTensorType(transpose.operands[0].type).shape
    if any(ir.ShapedType.is_dynamic_size(size) for size in shape):
        return False
    kept = [d for d in permutation if shape[d] != 1]
    return kept == sorted(kept)


def reads_by_loops(use) -> bool:
    """A use as an elementwise generic's input indexed by the identity or a permutation."""
    reader = use.owner
    if not elementwise(reader):
        return False
    inputs = input_count(reader)
    return use.operand_number < inputs and loops_of(indexing_maps(reader)[use.operand_number]) is not None


def shape_text(value: ir.Value) -> str:
    return "x".join(str(n) for n in ir.RankedTensorType(value.type).shape)


def explicit_cycles(source: ir.Value, target) -> int:
    """The estimated cycles of the transform as an op of its own: the tensor
    read from DRAM and written back (one DMA each way), transposed between."""
    source_type = ir.RankedTensorType(source.type)
    shape = tuple(source_type.shape)
    itemsize = machine_model.element_bytes(source_type.element_type) or 4
    dma = machine_model.dma_cycles(shape, machine_model.identity_strides(shape), itemsize, 0,
                                   target)
    return 2 * dma + machine_model.vector_cycles(math.prod(shape), target)


@dataclass(frozen=True)
class NpuFoldTransposes(ModulePass):
    argument = "npu-fold-transposes"
    summary = "Fold layout transposes into the elementwise op that produces or reads them"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        if context.target.fusion < 1:
            return
        with module.context:
            for transpose in ops_where(module, lambda op: op.name == "linalg.transpose"):
                self.fold(transpose, context)

    def fold(self, transpose, context: PassContext) -> None:
        target = context.target
        if len(transpose.results) != 1:   # on buffers: bufferized already
            return
        source, result = transpose.operands[0], transpose.results[0]
        if not isinstance(source.type, ir.RankedTensorType):
            return
        transpose_location = transpose.location
        what = f"transpose of the {shape_text(source)} tensor"
        if moves_unit_dims_only(transpose):
            with transpose.location, ir.InsertionPoint(transpose):
                view = reshape(source, ir.RankedTensorType(result.type).shape)
            result.replace_all_uses_with(view)
            init = transpose.operands[1]
            transpose.erase()
            erase_if_unused(init)
            context.diagnostics.remark(transpose_location, f"{what} is a reshape: it moves only "
                                                            f"dims of size 1")
            return
        if target.layout_pref == "NCHW":
            context.diagnostics.remark(transpose.location, f"{what} stays: -layout-pref=NCHW "
                                                           f"keeps tensors between layers NCHW")
            return
        producer = source.owner if isinstance(source, ir.OpResult) else None
        uses = list(result.uses)
        into_producer = producer is not None and len(list(source.uses)) == 1 \
            and elementwise(producer)
        into_readers = not into_producer and uses and all(reads_by_loops(use) for use in uses)
        if not into_producer and not into_readers:
            why = ("its producer is read by other ops too" if producer is not None
                   and elementwise(producer) else
                   "neither its producer nor all of its readers are elementwise ops")
            context.diagnostics.remark(transpose.location, f"{what} stays: {why}")
            return
        # The folded transform costs a vector transpose of the tensor per op doing it.
        elements = math.prod(ir.RankedTensorType(source.type).shape)
        doers = 1 if into_producer else len({use.owner for use in uses})
        folded = doers * machine_model.vector_cycles(elements, target)
        explicit = explicit_cycles(source, target)
        costs = f"{folded} estimated cycles in SRAM against {explicit} as an op"
        if target.layout_pref == "auto" and folded >= explicit:
            context.diagnostics.remark(transpose.location, f"{what} stays: folding it costs "
                                                           f"more ({costs})")
            return
        # The transposed tensor is no longer written to DRAM and read back.
        costs += f", saves {2 * tensor_bytes(source)} B of DRAM traffic"
        if into_producer:
            fold_into_producer(transpose, producer)
            context.diagnostics.remark(
                producer.location, f"{what} folded into its producer 'linalg.generic': it "
                                   f"writes the transposed layout{in_sram_note(producer)}; "
                                   f"{costs}")
            return
        readers = {use.owner for use in uses}
        fold_into_readers(transpose)
        for reader in readers:
            context.diagnostics.remark(
                reader.location, f"{what} folded into its reader 'linalg.generic': it reads "
                                 f"the source layout{in_sram_note(reader)}; {costs}")


def in_sram_note(op) -> str:
    count = transposes_in_sram(op)
    if count == 0:
        return " (the transforms cancel)"
    return f" (its tiles are transposed in SRAM: {count} per tile)" if count > 1 \
        else " (its tiles are transposed in SRAM)"
