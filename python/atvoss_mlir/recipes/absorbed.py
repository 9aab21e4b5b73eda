"""Ops folded into the tiled op that reads their result: a constant fill of the
output buffer, the padded copy bufferization makes of a tensor.pad, and the
broadcast of a per-channel bias. They run on the NPU as part of the op's tile
program (a fill of the SRAM accumulator, pad values in the SRAM halo, a bias
operand) and are erased once the op is lowered."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

from .. import block_order
from ..frontend.builders import generic
from .problem import (RESIDENT_ATTR, RESIDUAL_START_ATTR, OperandTile, Tiled, TilingProblem, Unsupported,
                      constant_value, ins_outs, static_shape, tile_nest_root, type_name)


def ops_before(op) -> list:
    """The ops before `op` (before its tile nest, when tiled) in its block, nearest first."""
    return block_order.ops_before(tile_nest_root(op.operation))


VIEWS = ("memref.subview", "memref.cast", "memref.collapse_shape", "memref.expand_shape",
         "memref.reinterpret_cast")


def touches(op, buffer: ir.Value) -> bool:
    """Whether `op` or an op nested in it (a tile loop's body) uses `buffer` or
    a view of it."""
    pending, seen = [buffer], []
    while pending:
        value = pending.pop()
        seen.append(value)
        for use in value.uses:
            user = use.owner.operation
            ancestor = user
            while ancestor is not None:
                if ancestor == op.operation:
                    return True
                ancestor = ancestor.parent
            if user.name in VIEWS:
                pending.extend(r for r in user.results if r not in seen)
    return False


def fresh_buffer(value: ir.Value) -> bool:
    """A buffer allocated for one tensor: in DRAM, or kept in SRAM (npu-keep-in-sram),
    whole or as the interior of its padded buffer (npu-pad-in-place, or padded
    in SRAM; a strip of a cascade writes a view of such a view)."""
    while isinstance(value, ir.OpResult) and value.owner.name == "memref.subview" \
            and len(value.owner.operands) == 1:
        value = value.owner.operands[0]
    return isinstance(value, ir.OpResult) and (value.owner.name == "memref.alloc" or (
        value.owner.name == "npu.alloc" and RESIDENT_ATTR in value.owner.attributes))


def writer_before(op, output: ir.Value, name: str):
    """The `name` op that writes the fresh buffer `output` (`fresh_buffer`) right
    before `op`, nothing else touching it in between; else None."""
    if not fresh_buffer(output):
        return None
    for previous in ops_before(op):
        if previous.name == name and ins_outs(previous)[1][0] == output:
            return previous
        if touches(previous, output):
            return None
    return None


def init_fill(op, output: ir.Value):
    """(fill, value) when a linalg.fill with a constant initialises `output`
    right before `op` (`writer_before`)."""
    fill = writer_before(op, output, "linalg.fill")
    if fill is None:
        return None
    value = constant_value(ins_outs(fill)[0][0])
    return None if value is None else (fill, float(value))


def padded_source(value: ir.Value, consumer):
    """(source, low pads, high pads, pad value, ops) when `value` is the padded
    copy bufferization makes of a tensor.pad: alloc; fill/map with a constant;
    memref.copy source -> subview. Otherwise None."""
    if not isinstance(value, ir.OpResult) or value.owner.name != "memref.alloc":
        return None
    fill = copy = subview = None
    for use in value.uses:
        user = use.owner
        if user.name in ("linalg.map", "linalg.fill"):
            fill = user
        elif user.name == "memref.subview":
            subview = user
    if fill is None or subview is None:
        return None
    for use in subview.results[0].uses:
        if use.owner.name == "memref.copy" and use.operand_number == 1:
            copy = use.owner
    if copy is None or len(list(subview.results[0].uses)) != 1:
        return None
    if fill.name == "linalg.fill":
        pad = constant_value(ins_outs(fill)[0][0])
    else:
        body = fill.regions[0].blocks[0]
        terminator = list(body.operations)[-1]
        pad = constant_value(terminator.operands[0]) if len(list(body.operations)) == 1 else None
    if pad is None:
        return None
    offsets = list(ir.DenseI64ArrayAttr(subview.attributes["static_offsets"]))
    if any(o == ir.ShapedType.get_dynamic_stride_or_offset() for o in offsets):
        return None
    source = copy.operands[0]
    low = offsets
    high = [p - s - lo for p, s, lo in zip(ir.MemRefType(value.type).shape,
                                          ir.MemRefType(source.type).shape, low)]
    # The views tiling made of the padded buffer read it for the consumer.
    tiled = tile_nest_root(consumer.operation) != consumer.operation
    others = [use.owner for use in value.uses if use.owner not in (fill, subview, consumer)
              and not (tiled and use.owner.operation.block == consumer.operation.block)]
    return source, low, high, float(pad), [fill, copy, subview], others


def init_bias(op, output: ir.Value, channels: int):
    """(broadcast, bias) when a linalg.broadcast of a per-channel bias[C] (the
    output's last dim) fills the fresh `output` right before `op` (how the
    importer adds a conv or Gemm bias)."""
    broadcast = writer_before(op, output, "linalg.broadcast")
    if broadcast is None:
        return None
    (bias,), _ = ins_outs(broadcast)
    added = list(ir.DenseI64ArrayAttr(broadcast.attributes["dimensions"]))
    rank = ir.MemRefType(output.type).rank
    if added != list(range(rank - 1)) or list(ir.MemRefType(bias.type).shape) != [channels] \
            or type_name(bias) != type_name(output):
        return None
    return broadcast, bias


def residual_start(residual: ir.Value, bias: ir.Value, init: ir.Value):
    """residual + bias[C] (over the last dim) into `init`: where a conv or matmul
    that accumulates onto a residual starts. npu-fuse-epilogue writes it on
    tensors (marked RESIDUAL_START_ATTR, folded into the op here), the tile
    program on the output tile of the op's first reduction step."""
    rank = ir.ShapedType(init.type).rank
    identity = ir.AffineMap.get_identity(rank)
    channel = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(rank - 1)])
    return generic([residual, bias], [identity, channel], init, identity, ["parallel"] * rank,
                   lambda args: arith.AddFOp(args[0], args[1]).result)


def bias_onto(bias: ir.Value, tile: ir.Value):
    """tile += bias[C] (over the last dim), in place: the start of a matrix op
    whose skip was loaded into its output tile, folded into the op as its bias
    epilogue (marked INIT_ATTR by the caller)."""
    rank = ir.ShapedType(tile.type).rank
    identity = ir.AffineMap.get_identity(rank)
    channel = ir.AffineMap.get(rank, 0, [ir.AffineDimExpr.get(rank - 1)])
    return generic([bias], [channel], tile, identity, ["parallel"] * rank,
                   lambda args: arith.AddFOp(args[1], args[0]).result)


def init_residual(op, output: ir.Value, channels: int):
    """(generic, residual, bias) when the generic npu-fuse-epilogue writes for a
    residual add (skip + bias[C], marked RESIDUAL_START_ATTR) fills the fresh
    `output` right before `op`."""
    start = writer_before(op, output, "linalg.generic")
    if start is None or RESIDUAL_START_ATTR not in start.attributes:
        return None
    (residual, bias), _ = ins_outs(start)
    if list(ir.MemRefType(bias.type).shape) != [channels] \
            or ir.MemRefType(residual.type).shape != ir.MemRefType(output.type).shape:
        return None
    return start, residual, bias


def output_init_or_bias(problem: TilingProblem, channel_dim: int,
                        fold_bias: bool = True) -> TilingProblem:
    """Fold the broadcast of a bias over the output's last dim (loop dim
    `channel_dim`) into the op as its `bias` operand (when `fold_bias`), else a
    constant fill. A residual start (skip + bias) folds as both a `residual`
    operand, tiled as the output, and the `bias`."""
    output = problem.output.value
    channels = ir.MemRefType(output.type).shape[-1]
    residual = init_residual(problem.op, output, channels) if fold_bias else None
    if residual is not None:
        generic, skip, bias = residual
        problem.absorbed_ops.append(generic)
        problem.operands.insert(len(problem.operands) - 1,
                                OperandTile("residual", skip, problem.output.region))
        problem.operands.insert(len(problem.operands) - 1,
                                OperandTile("bias", bias, (Tiled(channel_dim),)))
        return problem
    found = init_bias(problem.op, output, channels) if fold_bias else None
    if found is None:
        return output_init(problem)
    broadcast, bias = found
    problem.absorbed_ops.append(broadcast)
    problem.operands.insert(len(problem.operands) - 1,
                            OperandTile("bias", bias, (Tiled(channel_dim),)))
    return problem


def output_init(problem: TilingProblem) -> TilingProblem:
    """Fold a constant fill of the output buffer into the tiled op."""
    found = init_fill(problem.op, problem.output.value)
    if found is not None:
        fill, value = found
        problem.absorbed_ops.append(fill)
        problem.init_value = value
    return problem


def overwriting_output(problem: TilingProblem, identity: float) -> TilingProblem:
    """Vector-unit ops overwrite their output, so linalg's accumulation into the
    initial value is only preserved when that value is the reduction's identity
    (0 for sums, the lowest value for max; f16's lowest finite value and an
    integer type's minimum count)."""
    init = problem.init_value
    element = problem.output.element_type
    minimum = -(1 << (ir.IntegerType(element).width - 1)) \
        if isinstance(element, ir.IntegerType) else -65504.0
    lowest = init is not None and identity == float("-inf") and init <= minimum
    if init is None or not (init == identity or lowest):
        raise Unsupported(f"the output must start as {identity} (a fill folded into the op)")
    return problem


def window_input(op, value: ir.Value, what: str):
    """(source, low pads, high pads, pad value, absorbed ops) of a conv/pool input."""
    found = padded_source(value, op)
    if found is not None:
        source, low, high, pad, ops, others = found
        if not others and low[0] == 0 and low[3] == 0 and high[0] == 0 and high[3] == 0:
            return source, low, high, pad, ops
    shape = static_shape(value, what)
    return value, [0] * len(shape), [0] * len(shape), None, []
