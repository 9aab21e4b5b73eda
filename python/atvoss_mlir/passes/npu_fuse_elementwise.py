"""npu-fuse-elementwise: merge a chain of elementwise ops into one (-fusion=2).

Runs on tensors, after npu-fuse-epilogue and npu-fold-transposes. An
elementwise `linalg.generic` whose result only one other elementwise generic
reads, by the identity, is merged into that reader: one generic computes both
bodies, so the intermediate tensor is neither written to DRAM nor read back
(a pre-activation batch-norm and its relu, as in DenseNet, become one pass of
the vector unit over the tensor; a quantised model's DequantizeLinear, Sigmoid
and QuantizeLinear one pass from int8 to int8, recipes/vector_body.py). The
merged op keeps the reader's output and
takes the producer's inputs by their own maps. A merge whose body the vector
unit cannot run as a chain of steps is undone, with a remark. An intermediate
of at most a quarter of the SRAM is left to the buffer plan (npu-keep-in-sram),
which keeps it in SRAM between the two ops when it fits; not where the reader
is a conv's or pool's input, which the conv applies as a prologue to its
input tiles (recipes/prologue.py): the plan keeps no tensor such a prologue
reads, so the intermediate would go through DRAM. A merged chain that
computes one of the vector unit's activations of a matmul or conv result (an
exported gelu) then becomes that op's epilogue, as npu-fuse-epilogue folds
one op.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg

from ..recipes.problem import Unsupported, indexing_maps, input_count, npu_attribute_names
from ..recipes.elementwise import check_broadcasts, is_broadcast
from ..recipes.vector_body import body_program
from . import ModulePass, PassContext, left_to_buffer_plan, ops_where, tensor_bytes
from .cascade_chains import read_as_prologue
from .npu_fold_transposes import elementwise
from .npu_fuse_epilogue import fold_activations


def fusable_producer(op, number: int):
    """The elementwise generic producing input `number` of `op`, when `op`
    reads it by the identity and is its only reader; else None."""
    value = op.operands[number]
    if not isinstance(value, ir.OpResult) or len(list(value.uses)) != 1:
        return None
    producer = value.owner
    if not elementwise(producer) or npu_attribute_names(producer):
        return None
    rank = indexing_maps(op)[number].n_dims
    if indexing_maps(op)[number] != ir.AffineMap.get_identity(rank) \
            or indexing_maps(producer)[-1] != ir.AffineMap.get_identity(rank):
        return None
    return producer


def clone_body(block: ir.Block, arguments: list, into: ir.Block) -> ir.Value:
    """Clone `block`'s ops but its yield into `into`, its arguments standing for
    `arguments`; returns the value it yields."""
    mapping = list(zip(block.arguments, arguments))

    def mapped(value):
        for old, new in mapping:
            if old == value:
                return new
        return value
    yielded = None
    for op in block.operations:
        if op.name == "linalg.yield":
            yielded = mapped(op.operands[0])
            break
        with ir.InsertionPoint(into):
            clone = op.clone()
        for index, operand in enumerate(clone.operands):
            clone.operands[index] = mapped(operand)
        mapping.extend(zip(op.results, clone.results))
    return yielded


def merged(producer, consumer, number: int):
    """One generic computing `consumer` with its input `number` computed inline
    by `producer`: the consumer's other inputs, then the producer's, each
    tensor read by one map taken once (x * sigmoid(x) reads x once)."""
    consumer_inputs = list(consumer.operands)[:input_count(consumer)]
    producer_inputs = list(producer.operands)[:input_count(producer)]
    consumer_maps, producer_maps = indexing_maps(consumer), indexing_maps(producer)
    kept = [index for index in range(len(consumer_inputs)) if index != number]
    inputs = [consumer_inputs[index] for index in kept]
    maps = [consumer_maps[index] for index in kept]
    consumer_block = consumer.regions[0].blocks[0]
    producer_block = producer.regions[0].blocks[0]
    types = [consumer_block.arguments[index].type for index in kept]
    slots = []   # the merged op's input each producer input is
    for value, affine_map, argument in zip(producer_inputs, producer_maps,
                                           producer_block.arguments):
        slot = next((i for i, (v, m) in enumerate(zip(inputs, maps))
                     if v == value and m == affine_map), None)
        if slot is None:
            inputs.append(value), maps.append(affine_map), types.append(argument.type)
            slot = len(inputs) - 1
        slots.append(slot)
    maps.append(consumer_maps[-1])
    init = consumer.operands[input_count(consumer)]
    with consumer.location, ir.InsertionPoint(consumer):
        fused = linalg.GenericOp([consumer.results[0].type], inputs, [init],
                                 ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps]),
                                 consumer.attributes["iterator_types"])
    with consumer.location:
        block = fused.regions[0].blocks.append(
            *types, consumer_block.arguments[len(consumer_inputs)].type)
    arguments = list(block.arguments)
    computed = clone_body(producer_block, [arguments[slot] for slot in slots] + [None], block)
    consumer_arguments = []
    for index in range(len(consumer_inputs)):
        consumer_arguments.append(computed if index == number
                                  else arguments[kept.index(index)])
    consumer_arguments.append(arguments[-1])
    result = clone_body(consumer_block, consumer_arguments, block)
    with consumer.location, ir.InsertionPoint(block):
        linalg.YieldOp([result])
    return fused


@dataclass(frozen=True)
class NpuFuseElementwise(ModulePass):
    argument = "npu-fuse-elementwise"
    summary = "Merge chains of elementwise ops into one (-fusion=2)"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        if context.target.fusion < 2:
            return
        with module.context:
            # In program order, each op taking in its producers one by one.
            for consumer in ops_where(module, elementwise):
                while consumer is not None:
                    consumer = self.merge_one(consumer, context)
            # A merged chain may be an activation of a matmul or conv result
            # (an exported gelu: Div, Erf, Add, Mul, Mul): its epilogue.
            fold_activations(module, context, refusals=False)

    def merge_one(self, consumer, context: PassContext):
        """Merge one producer into `consumer`; the merged op, or None."""
        for number in range(input_count(consumer)):
            producer = fusable_producer(consumer, number)
            if producer is None:
                continue
            size = tensor_bytes(producer.results[0])
            if left_to_buffer_plan(producer.results[0], context.target) \
                    and not read_as_prologue(consumer):
                context.diagnostics.remark(
                    consumer.location, f"elementwise producer not merged: its {size} B result "
                                       f"is left to the buffer plan (at most a quarter of the "
                                       f"SRAM)")
                continue
            fused = merged(producer, consumer, number)
            try:
                steps = body_program(fused.regions[0].blocks[0], input_count(fused))
                check_broadcasts(steps, {i for i, m in enumerate(indexing_maps(fused)[:-1])
                                         if is_broadcast(m)})
            except Unsupported as refusal:
                fused.erase()
                context.diagnostics.remark(consumer.location,
                                           f"elementwise producer not merged: {refusal}")
                continue
            saved = 2 * size
            consumer.results[0].replace_all_uses_with(fused.results[0])
            consumer.erase()
            producer.erase()
            context.diagnostics.remark(
                fused.location, f"elementwise producer merged into this op (saves {saved} B "
                                f"of DRAM traffic)")
            return fused
        return None

