"""One op's own program: the op, as `npu-tile` sees it in the whole model,
alone in a function, so a schedule can be compiled and simulated in
isolation.

The model is compiled up to `npu-tile` (`pre_tile_module`). For each op
`npu-tile` would tile, `op_program` builds a module holding the op and the
ops folded into it (`TilingProblem.absorbed_ops`: the fill or bias broadcast
that starts its output), with the view ops between them and their buffers.
The function's arguments and the weights (`memref.get_global`) become
arguments; buffers the model allocates (in DRAM, or kept in SRAM by the
buffer plan at their offsets) are allocated again, so the op and the ops
folded into it see the same buffers as in the model. `measure` forces a
schedule through the attributes `npu-tile` reads (`npu.tile_sizes`,
`npu.loop_order`, `npu.pipeline_stages`, `npu.dataflow`), runs the rest of
the pipeline and simulates timing-only.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..context import make_context
from ..passes import PassContext
from ..passes.npu_tile import STAGES_ATTR
from ..pipeline import named_pipeline, parse_pipeline, run_pipeline
from ..recipes import linalg_ops
from ..recipes.absorbed import VIEWS
from ..recipes.ir_queries import defined_within
from ..recipes.problem import DATAFLOW_ATTR, LOOP_ORDER_ATTR, TILE_SIZES_ATTR
from ..target import NpuTarget

CLONED_ROOTS = {"arith.constant"}


def _split_pipeline() -> tuple[str, str]:
    """The named pipeline's elements before npu-tile, and from npu-tile on."""
    elements = [element.text for element in parse_pipeline(named_pipeline("npu-pipeline"))]
    at = elements.index("npu-tile")
    return (f"builtin.module({', '.join(elements[:at])})",
            f"builtin.module({', '.join(elements[at:])})")


BEFORE_TILE, FROM_TILE = _split_pipeline()


def pre_tile_module(model, target: NpuTarget):
    """The model compiled up to npu-tile: (module, source name)."""
    from ..compiler import load_module
    context = make_context()
    pass_context = PassContext(target=target)
    loaded = load_module(model, context, pass_context.diagnostics, target.fusion)
    run_pipeline(loaded.module, BEFORE_TILE, pass_context)
    return loaded.module, loaded.source


def op_program(op, problem) -> str:
    """The text of a module running `op` (and its absorbed ops) alone."""
    ops = list(problem.absorbed_ops) + [op]
    roots: list = []            # values that become function arguments
    order: list = []            # ops to clone, operands first

    def collect(value):
        owner = value.owner
        if isinstance(owner, ir.Block) or owner is None:
            if value not in roots:
                roots.append(value)
            return
        operation = owner.operation if hasattr(owner, "operation") else owner
        if operation in order:
            return
        if operation.name in VIEWS or operation.name in CLONED_ROOTS:
            for operand in operation.operands:
                collect(operand)
            order.append(operation)
        elif operation.name in ("memref.alloc", "npu.alloc"):
            order.append(operation)
        elif value not in roots:
            roots.append(value)

    for operation in ops:
        for operand in operation.operands:
            collect(operand)
        for operand in _captured(operation.operation):
            collect(operand)
    order += [o.operation for o in ops if o.operation not in order]
    mapping: dict = {}
    with op.context, ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            function_type = ir.FunctionType.get([v.type for v in roots], [])
            function = ir.Operation.create("func.func", attributes={
                "sym_name": ir.StringAttr.get("main"),
                "function_type": ir.TypeAttr.get(function_type)}, regions=1)
            block = function.regions[0].blocks.append(*[v.type for v in roots])
        for value, argument in zip(roots, block.arguments):
            mapping[value] = argument
        with ir.InsertionPoint(block):
            for operation in order:
                clone = operation.clone()
                for i, operand in enumerate(operation.operands):
                    clone.operands[i] = mapping[operand]
                _remap_captured(clone, mapping)
                for old, new in zip(operation.results, clone.results):
                    mapping[old] = new
            ir.Operation.create("func.return")
        return module.operation.get_asm(enable_debug_info=True)


def _nested(operation):
    for region in operation.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from _nested(inner.operation)


def _captured(operation) -> list:
    """Values the op's regions use that are defined outside the op (a constant
    a body yields)."""
    return [operand for inner in _nested(operation) for operand in inner.operands
            if not defined_within(operand, operation)]


def _remap_captured(clone, mapping) -> None:
    for inner in _nested(clone):
        for i, operand in enumerate(inner.operands):
            if operand in mapping:
                inner.operands[i] = mapping[operand]


@dataclass(frozen=True)
class Measured:
    cycles: int
    dram_bytes: int
    sram_peak_bytes: int
    estimated_cycles: int | None   # the cost model's, from npu-tile's remark


def measure(program: str, target: NpuTarget, tiles=None, order=None, stages=None,
            dataflow=None) -> Measured:
    """Compile the op's program from npu-tile on with the schedule forced
    (None: npu-tile's own choice) and simulate it timing-only."""
    from ..sim import simulate
    context = make_context()
    module = ir.Module.parse(program, context)
    with context:
        # The last linalg op is the one measured: the ops folded into it come first.
        target_op = linalg_ops(module.operation)[-1]
        if tiles is not None:
            target_op.attributes[TILE_SIZES_ATTR] = ir.DenseI64ArrayAttr.get(list(tiles))
            target_op.attributes[LOOP_ORDER_ATTR] = ir.DenseI64ArrayAttr.get(list(order))
        if stages is not None:
            target_op.attributes[STAGES_ATTR] = ir.IntegerAttr.get(
                ir.IntegerType.get_signless(64), stages)
        if dataflow is not None:
            target_op.attributes[DATAFLOW_ATTR] = ir.StringAttr.get(dataflow)
    pass_context = PassContext(target=target)
    run_pipeline(module, FROM_TILE, pass_context)
    estimates = [d.facts["estimated_cycles"] for d in pass_context.diagnostics.diagnostics
                 if "estimated_cycles" in d.facts]
    report = simulate(module, None, target=target, timing_only=True).report
    return Measured(report["total_cycles"], report["dram_read_bytes"] + report["dram_write_bytes"],
                    report["sram_peak_bytes"], estimates[-1] if estimates else None)

