"""npu-tile: choose tile sizes and a loop order for every linalg op the NPU runs.

Runs on memrefs (after bufferization). For each linalg op it builds a
`TilingProblem` -- the op's loop dimensions and, per operand, which part of the
operand a tile of the loops touches (with the input halo of convolutions and
pooling) -- then picks tile sizes and a loop order with the cost model below,
records them on the op (`npu.tile_sizes`, `npu.loop_order`; `npu.pipeline_stages`
when only fewer stages than the target's fit) and says why in a remark.
`npu-promote-to-sram` reads them to build the tiled program. Ops the
NPU cannot run stay as they are (the fallback engine runs them) with a remark
giving the reason.

Cost model (one tile = one iteration of the flattened tile loop):
  compute(tile)  matrix ops: SCALE-Sim's closed form for a GEMM M x N x K on the
                 R x C array (weight-stationary: ceil(K/R)*ceil(N/C) folds, each
                 2R + C + M - 2 cycles; output-stationary: M on rows, K streamed);
                 vector ops: elements * taps / lanes.
  dma(tile)      per operand: setup + bursts * burst / bandwidth, divided by the
                 number of consecutive iterations that reuse the tile (an operand
                 that does not depend on the innermost loops is loaded once per
                 change: weights stay resident, accumulators stay in SRAM across
                 the reduction loop).
  iteration      max(compute, dma) with pipeline-stages >= 2 (the next tile's DMA
                 overlaps this tile's compute), compute + dma with 1 stage.
  working set    sum over operands of tile bytes x buffers (pipeline-stages for
                 tiles that change, 1 for resident ones) + SRAM temporaries;
                 must fit max-sram-bytes.
Candidates per dimension: the full size, multiples of the array size up to
tile-max and, below that, powers of two down to tile-min (dims that map onto
the array: M/N/K, output/input channels); output rows of convolutions take
every balanced split. The streamed dimension (matmul M, conv output pixels)
is not capped by tile-max: a longer stream amortises the array's weight fill.
The cheapest candidate that fits wins; ties go to fewer, larger tiles. The
search (tile_search.py) evaluates all candidates at once, memoises schedules
per op signature, and tries fewer stages and tiles below tile-min before it
refuses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from mlir import ir

from ..target import NpuTarget
from . import ModulePass, PassContext
from .block_order import ops_before, unchanged_blocks  # noqa: F401
# The search over tile sizes and loop orders; its names stay importable from here.
from .tile_search import (MAX_CANDIDATES, Schedule, buffer_count, candidates,  # noqa: F401
                          choose_schedule, describe, estimate, loop_orders, reuse_period,
                          search, trip_counts, working_set)

TILE_SIZES_ATTR = "npu.tile_sizes"
LOOP_ORDER_ATTR = "npu.loop_order"
STAGES_ATTR = "npu.pipeline_stages"    # set when an op fits only with fewer stages
STRATEGY_ATTR = "npu.conv_strategy"
ACTIVATION_ATTR = "npu.activation"

MATRIX_TYPES = ("f16", "bf16", "f32", "i8")
ACCUMULATOR_TYPES = {"f16": ("f16", "f32"), "bf16": ("bf16", "f32"), "f32": ("f32",),
                     "i8": ("i8", "i32")}
VECTOR_TYPES = ("f16", "bf16", "f32", "i8", "i32")

# Per-element binary ops of linalg.generic bodies and named elementwise ops.
BINARY_KINDS = {"arith.addf": "add", "arith.addi": "add", "arith.subf": "sub",
                "arith.subi": "sub", "arith.mulf": "mul", "arith.muli": "mul",
                "arith.maximumf": "max", "arith.maxnumf": "max", "arith.maxsi": "max",
                "arith.minimumf": "min", "arith.minnumf": "min", "arith.minsi": "min"}
NAMED_BINARY = {"linalg.add": "add", "linalg.sub": "sub", "linalg.mul": "mul",
                "linalg.max": "max", "linalg.min": "min"}
COMMUTATIVE = {"add", "mul", "max", "min"}


# ---------------------------------------------------------------------------
# The tiling problem of one op
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class LoopDim:
    name: str
    size: int
    reduction: bool = False
    # How candidates are generated: "array" (mapped onto the array, capped by
    # tile-max), "stream" (uncapped), "rows" (balanced splits), "one" (always 1),
    # "full" (never tiled).
    candidates: str = "array"


# What one operand dimension covers for a tile of the loops.
@dataclass(frozen=True)
class Tiled:          # [offset, offset + size) of loop dim `dim`
    dim: int


@dataclass(frozen=True)
class Whole:          # the whole dimension
    size: int


@dataclass(frozen=True)
class Window:         # the input rows/cols that output tile of loop dim `dim` reads
    dim: int
    stride: int
    dilation: int
    kernel: int
    pad_low: int
    input_size: int   # of the unpadded source

    def extent(self, tile: int) -> int:
        return (tile - 1) * self.stride + (self.kernel - 1) * self.dilation + 1


@dataclass(frozen=True)
class Strided:        # every `stride`-th element for the output tile of `dim`
    dim: int
    stride: int


@dataclass
class OperandTile:
    role: str
    value: ir.Value                 # the DRAM memref (the source of a padded input)
    region: tuple                   # one of Tiled/Whole/Window/Strided per memref dim
    is_output: bool = False
    dropped: tuple = ()             # memref dims dropped from the SRAM tile
    pad_value: float | None = None  # value of the padding a Window reads outside the source

    def extents(self, tiles) -> list[int]:
        """Static SRAM tile shape (before dropping dims) for tile sizes `tiles`."""
        shape = []
        for part in self.region:
            if isinstance(part, (Tiled, Strided)):
                shape.append(tiles[part.dim])
            elif isinstance(part, Whole):
                shape.append(part.size)
            else:
                shape.append(part.extent(tiles[part.dim]))
        return shape

    def sram_shape(self, tiles) -> list[int]:
        return [n for i, n in enumerate(self.extents(tiles)) if i not in self.dropped]

    def loop_dims(self) -> set[int]:
        return {part.dim for part in self.region if not isinstance(part, Whole)}

    @property
    def element_type(self) -> ir.Type:
        return ir.MemRefType(self.value.type).element_type


@dataclass
class TilingProblem:
    op: ir.Operation
    kind: str
    dims: list[LoopDim]
    operands: list[OperandTile]
    compute_cycles: Callable          # tiles -> cycles of one tile's compute
    temporary_bytes: Callable = lambda tiles: 0
    details: dict = field(default_factory=dict)
    # Extra ops writing the output buffer before the op (a fill) or making a
    # padded copy of an input, erased once the op is lowered.
    absorbed_ops: list = field(default_factory=list)
    init_value: float | None = None   # the output starts as this constant (a folded fill)

    @property
    def output(self) -> OperandTile:
        return next(o for o in self.operands if o.is_output)

    def operand(self, role: str) -> OperandTile:
        return next(o for o in self.operands if o.role == role)


class Unsupported(Exception):
    """The NPU cannot run this op; the message says why."""


def element_bytes(element_type: ir.Type) -> int:
    if isinstance(element_type, ir.IndexType):
        return 8
    return max(1, ir.IntegerType(element_type).width // 8) \
        if isinstance(element_type, ir.IntegerType) else ir.FloatType(element_type).width // 8


def type_name(value: ir.Value) -> str:
    return str(ir.MemRefType(value.type).element_type)


def static_shape(value: ir.Value, what: str) -> list[int]:
    if not isinstance(value.type, ir.MemRefType):
        raise Unsupported(f"{what} is not a memref (run bufferization first)")
    memref = ir.MemRefType(value.type)
    if not memref.has_static_shape:
        raise Unsupported(f"{what} has a dynamic shape")
    if memref.memory_space is not None:
        raise Unsupported(f"{what} is not in DRAM")
    return list(memref.shape)


def gemm_cycles(m: int, n: int, k: int, target: NpuTarget, int8: bool = False) -> int:
    """SCALE-Sim's compute cycles of an M x N x K GEMM on the array: every fold
    spans the whole array, so a partial fold costs as much as a full one (which
    is why tiles that are multiples of the array size win)."""
    rows, cols = target.array_rows, target.array_cols
    speedup = target.int8_speedup if int8 else 1

    def fold_sum(sr, sc, streamed, row_weight):
        folds = -(-sr // rows) * -(-sc // cols)
        return folds * (row_weight * rows + cols + streamed - 2)
    ws = fold_sum(k, n, -(-m // speedup), 2)
    os_ = fold_sum(m, n, -(-k // speedup), 1)
    return {"ws": ws, "os": os_}.get(target.dataflow, min(ws, os_))


def vector_cycles(elements: int, target: NpuTarget, taps: int = 1) -> int:
    return -(-elements * taps // target.vector_lanes) + 8


def ints(attribute, default) -> list[int]:
    if attribute is None:
        return list(default)
    if isinstance(attribute, ir.DenseI64ArrayAttr):
        return list(attribute)
    return [int(v) for v in ir.DenseIntElementsAttr(attribute)]


def optional_attr(op, name):
    return op.attributes[name] if name in op.attributes else None


def ins_outs(op) -> tuple[list, list]:
    view = op.opview
    if hasattr(view, "inputs"):
        return list(view.inputs), list(view.outputs)
    operands = list(op.operands)
    return operands[:-1], operands[-1:]


# ---------------------------------------------------------------------------
# Recognising the buffers around an op (after bufferization)
# ---------------------------------------------------------------------------

def constant_value(value: ir.Value):
    if isinstance(value, ir.OpResult) and value.owner.name == "arith.constant":
        attribute = value.owner.attributes["value"]
        if isinstance(attribute, ir.FloatAttr):
            return attribute.value
        if isinstance(attribute, ir.IntegerAttr):
            return attribute.value
    return None


def init_fill(op, output: ir.Value):
    """The linalg.fill with a constant that initialises `output` before `op`.

    Only a fill of a fresh buffer (memref.alloc) that nothing else touches
    between the fill and the op is folded.
    """
    if not isinstance(output, ir.OpResult) or output.owner.name != "memref.alloc":
        return None
    for previous in ops_before(op):
        if previous.name == "linalg.fill" and ins_outs(previous)[1][0] == output:
            value = constant_value(ins_outs(previous)[0][0])
            return None if value is None else (previous, float(value))
        if any(operand == output for operand in previous.operands) or len(previous.regions):
            return None
    return None


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
    others = [use.owner for use in value.uses if use.owner not in (fill, subview, consumer)]
    return source, low, high, float(pad), [fill, copy, subview], others


# ---------------------------------------------------------------------------
# Problems per op
# ---------------------------------------------------------------------------

MATMUL_MAPS = ["affine_map<(d0, d1, d2) -> (d0, d2)>", "affine_map<(d0, d1, d2) -> (d2, d1)>",
               "affine_map<(d0, d1, d2) -> (d0, d1)>"]
BATCH_MATMUL_MAPS = ["affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>",
                     "affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>",
                     "affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>"]


def default_maps(op, expected: list[str]) -> bool:
    if "indexing_maps" not in op.attributes:
        return True
    return [str(m) for m in ir.ArrayAttr(op.attributes["indexing_maps"])] == expected


def check_matrix_types(lhs, rhs, out) -> None:
    a, b, c = type_name(lhs), type_name(rhs), type_name(out)
    if a != b or a not in MATRIX_TYPES:
        raise Unsupported(f"the matrix unit takes fp16/bf16/fp32/int8 operands of one type, "
                          f"got {a} and {b}")
    if c not in ACCUMULATOR_TYPES[a]:
        raise Unsupported(f"the matrix unit cannot produce {c} from {a} inputs")


def init_bias(op, output: ir.Value, channels: int):
    """(broadcast, bias) when a linalg.broadcast of a per-channel bias[C] fills
    the fresh NHWC `output` right before `op` (how the importer adds a conv bias)."""
    if not isinstance(output, ir.OpResult) or output.owner.name != "memref.alloc":
        return None
    for previous in ops_before(op):
        if previous.name == "linalg.broadcast" and ins_outs(previous)[1][0] == output:
            (bias,), _ = ins_outs(previous)
            added = list(ir.DenseI64ArrayAttr(previous.attributes["dimensions"]))
            if added != [0, 1, 2] or list(ir.MemRefType(bias.type).shape) != [channels] \
                    or type_name(bias) != type_name(output):
                return None
            return previous, bias
        if any(operand == output for operand in previous.operands) or len(previous.regions):
            return None
    return None


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
    (0 for sums, the lowest value for max; f16's lowest finite value counts)."""
    init = problem.init_value
    lowest = init is not None and identity == float("-inf") and init <= -65504.0
    if init is None or not (init == identity or lowest):
        raise Unsupported(f"the output must start as {identity} (a fill folded into the op)")
    return problem


def matmul_problem(op, target) -> TilingProblem:
    (lhs, rhs), (out,) = ins_outs(op)
    if not default_maps(op, MATMUL_MAPS):
        raise Unsupported("linalg.matmul with non-default indexing maps (transposed operands)")
    (m, k), (_, n) = static_shape(lhs, "lhs"), static_shape(rhs, "rhs")
    static_shape(out, "output")
    check_matrix_types(lhs, rhs, out)
    int8 = type_name(lhs) == "i8"
    dims = [LoopDim("m", m, candidates="stream"), LoopDim("n", n), LoopDim("k", k, True)]
    operands = [OperandTile("lhs", lhs, (Tiled(0), Tiled(2))),
                OperandTile("rhs", rhs, (Tiled(2), Tiled(1))),
                OperandTile("output", out, (Tiled(0), Tiled(1)), is_output=True)]
    return output_init(TilingProblem(
        op, "matmul", dims, operands,
        lambda t: gemm_cycles(t[0], t[1], t[2], target, int8)))


def batch_matmul_problem(op, target) -> TilingProblem:
    (lhs, rhs), (out,) = ins_outs(op)
    if not default_maps(op, BATCH_MATMUL_MAPS):
        raise Unsupported("linalg.batch_matmul with non-default indexing maps")
    (b, m, k), (_, _, n) = static_shape(lhs, "lhs"), static_shape(rhs, "rhs")
    static_shape(out, "output")
    check_matrix_types(lhs, rhs, out)
    int8 = type_name(lhs) == "i8"
    dims = [LoopDim("b", b, candidates="one"), LoopDim("m", m, candidates="stream"),
            LoopDim("n", n), LoopDim("k", k, True)]
    operands = [OperandTile("lhs", lhs, (Tiled(0), Tiled(1), Tiled(3)), dropped=(0,)),
                OperandTile("rhs", rhs, (Tiled(0), Tiled(3), Tiled(2)), dropped=(0,)),
                OperandTile("output", out, (Tiled(0), Tiled(1), Tiled(2)), is_output=True,
                            dropped=(0,))]
    return output_init(TilingProblem(
        op, "batch_matmul", dims, operands,
        lambda t: gemm_cycles(t[1], t[2], t[3], target, int8)))


def window_input(op, value: ir.Value, what: str):
    """(source, low pads, high pads, pad value, absorbed ops) of a conv/pool input."""
    found = padded_source(value, op)
    if found is not None:
        source, low, high, pad, ops, others = found
        if not others and low[0] == 0 and low[3] == 0 and high[0] == 0 and high[3] == 0:
            return source, low, high, pad, ops
    shape = static_shape(value, what)
    return value, [0] * len(shape), [0] * len(shape), None, []


def conv_strategy(op) -> str:
    attribute = optional_attr(op, STRATEGY_ATTR)
    return ir.StringAttr(attribute).value if attribute is not None else "direct"


def conv_problem(op, target) -> TilingProblem:
    (image, weights), (out,) = ins_outs(op)
    strides = ints(optional_attr(op, "strides"), (1, 1))
    dilations = ints(optional_attr(op, "dilations"), (1, 1))
    source, low, high, pad, absorbed = window_input(op, image, "input")
    batch, height, width, channels = static_shape(source, "input")
    kh, kw, _, filters = static_shape(weights, "filter")
    _, oh, ow, _ = static_shape(out, "output")
    check_matrix_types(image, weights, out)
    int8 = type_name(image) == "i8"
    strategy = conv_strategy(op)
    if strategy == "implicit-gemm" and (kh, kw) == (1, 1) and not any(low + high):
        image_region = (Tiled(0), Strided(1, strides[0]), Strided(2, strides[1]), Tiled(4))
    else:
        strategy = "im2col" if strategy == "im2col" else "direct"
        image_region = (Tiled(0),
                        Window(1, strides[0], dilations[0], kh, low[1], height),
                        Window(2, strides[1], dilations[1], kw, low[2], width), Tiled(4))
    dims = [LoopDim("n", batch, candidates="one"), LoopDim("oh", oh, candidates="rows"),
            LoopDim("ow", ow, candidates="full"), LoopDim("f", filters),
            LoopDim("c", channels, True, candidates="full" if strategy == "im2col" else "array")]
    operands = [OperandTile("input", source, image_region, pad_value=pad),
                OperandTile("filter", weights, (Whole(kh), Whole(kw), Tiled(4), Tiled(3))),
                OperandTile("output", out, (Tiled(0), Tiled(1), Tiled(2), Tiled(3)),
                            is_output=True)]

    def cycles(t):
        pixels = t[0] * t[1] * t[2]
        matrix = gemm_cycles(pixels, t[3], kh * kw * t[4], target, int8)
        if strategy == "im2col":
            matrix += vector_cycles(pixels * kh * kw * t[4], target)
        return matrix

    def temporaries(t):
        if strategy != "im2col":
            return 0
        return t[0] * t[1] * t[2] * kh * kw * t[4] * element_bytes(operands[0].element_type)

    problem = TilingProblem(op, "conv2d", dims, operands, cycles, temporaries,
                            {"strides": strides, "dilations": dilations, "kernel": (kh, kw),
                             "strategy": strategy})
    problem.absorbed_ops += absorbed
    return output_init(problem)


def depthwise_problem(op, target) -> TilingProblem:
    (image, weights), (out,) = ins_outs(op)
    strides = ints(optional_attr(op, "strides"), (1, 1))
    dilations = ints(optional_attr(op, "dilations"), (1, 1))
    source, low, high, pad, absorbed = window_input(op, image, "input")
    batch, height, width, channels = static_shape(source, "input")
    kh, kw, _ = static_shape(weights, "filter")
    _, oh, ow, _ = static_shape(out, "output")
    types = {type_name(image), type_name(weights), type_name(out)}
    if len(types) != 1 or types.pop() not in VECTOR_TYPES:
        raise Unsupported("the vector unit runs depthwise convolutions with one element type "
                          "for input, filter and output")
    dims = [LoopDim("n", batch, candidates="one"), LoopDim("oh", oh, candidates="rows"),
            LoopDim("ow", ow, candidates="full"), LoopDim("c", channels)]
    operands = [OperandTile("input", source,
                            (Tiled(0), Window(1, strides[0], dilations[0], kh, low[1], height),
                             Window(2, strides[1], dilations[1], kw, low[2], width), Tiled(3)),
                            pad_value=pad),
                OperandTile("filter", weights, (Whole(kh), Whole(kw), Tiled(3))),
                OperandTile("output", out, (Tiled(0), Tiled(1), Tiled(2), Tiled(3)),
                            is_output=True)]
    problem = TilingProblem(
        op, "depthwise_conv2d", dims, operands,
        lambda t: vector_cycles(t[0] * t[1] * t[2] * t[3], target, kh * kw),
        details={"strides": strides, "dilations": dilations})
    problem.absorbed_ops += absorbed
    bias = init_bias(op, out, channels)
    if bias is not None:
        # The output starts as the broadcast bias: npu.depthwise_conv2d adds it.
        problem.absorbed_ops.append(bias[0])
        problem.operands.insert(2, OperandTile("bias", bias[1], (Tiled(3),)))
        return problem
    return overwriting_output(output_init(problem), 0.0)


def pool_problem(op, target) -> TilingProblem:
    (image, window), (out,) = ins_outs(op)
    kind = "max" if "max" in op.name else "sum"
    if op.name.endswith("_unsigned") or "min" in op.name:
        raise Unsupported("only max and sum pooling run on the vector unit")
    strides = ints(optional_attr(op, "strides"), (1, 1))
    dilations = ints(optional_attr(op, "dilations"), (1, 1))
    if dilations != [1, 1]:
        raise Unsupported("npu.pool2d has no dilation")
    source, low, high, pad, absorbed = window_input(op, image, "input")
    if pad is not None and kind == "sum" and pad != 0.0:
        raise Unsupported("sum pooling over a non-zero padding")
    batch, height, width, channels = static_shape(source, "input")
    kh, kw = static_shape(window, "window")
    _, oh, ow, _ = static_shape(out, "output")
    if type_name(image) != type_name(out) or type_name(out) not in VECTOR_TYPES:
        raise Unsupported("pooling input and output element types differ")
    dims = [LoopDim("n", batch, candidates="one"), LoopDim("oh", oh, candidates="rows"),
            LoopDim("ow", ow, candidates="full"), LoopDim("c", channels)]
    operands = [OperandTile("input", source,
                            (Tiled(0), Window(1, strides[0], 1, kh, low[1], height),
                             Window(2, strides[1], 1, kw, low[2], width), Tiled(3)),
                            pad_value=pad),
                OperandTile("output", out, (Tiled(0), Tiled(1), Tiled(2), Tiled(3)),
                            is_output=True)]
    problem = TilingProblem(
        op, "pool2d", dims, operands,
        lambda t: vector_cycles(t[0] * t[1] * t[2] * t[3], target, kh * kw) * (2 if kind == "sum"
                                                                                else 1),
        details={"strides": strides, "window": (kh, kw), "pool": kind})
    problem.absorbed_ops += absorbed
    return overwriting_output(output_init(problem), float("-inf") if kind == "max" else 0.0)


def elementwise_dims(shape: list[int]) -> list[LoopDim]:
    """Leading dims are tiled freely; the last one stays whole when it can."""
    return [LoopDim(f"d{i}", n, candidates="rows" if i < len(shape) - 1 else "array")
            for i, n in enumerate(shape)]


def broadcast_region(affine_map: ir.AffineMap, rank: int):
    """The operand region of an input indexed by a projected identity map
    (broadcasting drops dims, never permutes), or None."""
    positions = []
    for expr in affine_map.results:
        if not isinstance(expr, ir.AffineDimExpr):
            return None
        positions.append(expr.position)
    if positions != sorted(positions) or len(set(positions)) != len(positions):
        return None
    return tuple(Tiled(p) for p in positions)


def expression(value: ir.Value, block: ir.Block):
    """The expression tree computing `value` in a one-input linalg body: "x" for
    the input, a float for a scalar constant, (op name, operands...) for an op
    of the body, operands of commutative ops sorted; None when it reads
    anything else."""
    if value == block.arguments[0]:
        return "x"
    constant = constant_value(value)
    if constant is not None:
        return float(constant)
    if not isinstance(value, ir.OpResult) or value.owner.parent != block.owner:
        return None
    operands = [expression(operand, block) for operand in value.owner.operands]
    if any(operand is None for operand in operands):
        return None
    if value.owner.name in ("arith.addf", "arith.mulf"):
        operands.sort(key=repr)
    return (value.owner.name, *operands)


# Bodies the vector unit runs as one activation, as the ONNX importer writes
# them. Not the tanh form of Gelu: the vector unit's gelu is the exact one.
ACTIVATION_BODIES = [
    ("sigmoid", ("arith.divf", 1.0, ("arith.addf", 1.0, ("math.exp", ("arith.negf", "x"))))),
    ("gelu", ("arith.mulf", ("arith.mulf", 0.5, "x"),
              ("arith.addf", 1.0, ("math.erf", ("arith.mulf", "x", 1.0 / math.sqrt(2.0)))))),
    ("tanh", ("math.tanh", "x")),
]
FLOAT_TYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def in_type(tree, float_type):
    """`tree` with its constants rounded to the body's float type, as `expression` sees them."""
    if isinstance(tree, float):
        return float(float_type(tree))
    if not isinstance(tree, tuple):
        return tree
    operands = [in_type(operand, float_type) for operand in tree[1:]]
    if tree[0] in ("arith.addf", "arith.mulf"):
        operands.sort(key=repr)
    return (tree[0], *operands)


def body_activation(block: ir.Block) -> str | None:
    """The activation a one-input linalg.generic body computes, if it is one of
    ACTIVATION_BODIES."""
    yielded = list(block.operations)[-1].operands
    float_type = FLOAT_TYPES.get(str(block.arguments[0].type))
    if len(yielded) != 1 or float_type is None:
        return None
    found = expression(yielded[0], block)
    return next((kind for kind, tree in ACTIVATION_BODIES if in_type(tree, float_type) == found),
                None)


def body_program(block: ir.Block, n_inputs: int) -> list[tuple]:
    """Translate a linalg.generic body into vector-unit steps.

    Steps: ("binary", kind, lhs, rhs, result), ("activation", kind, input, result,
    clip_min, clip_max). Operands are ("in", i) for block arguments, ("tmp", i)
    for earlier results and ("const", value) for scalar constants.
    """
    names: dict = {}
    for i, argument in enumerate(block.arguments):
        if i < n_inputs:
            names[argument] = ("in", i)
    if n_inputs == 1:
        kind = body_activation(block)
        if kind is not None:
            return [["activation", kind, ("in", 0), ("tmp", 0), None, None]]
    steps = []
    operations = list(block.operations)
    for op in operations[:-1]:
        name = op.name
        if name == "arith.constant":
            value = constant_value(op.results[0])
            if value is None:
                raise Unsupported("a non-scalar constant in the body")
            names[op.results[0]] = ("const", float(value))
            continue
        if name not in BINARY_KINDS:
            raise Unsupported(f"'{name}' in the body has no vector-unit instruction")
        operands = []
        for value in op.operands:
            if value not in names and constant_value(value) is not None:
                names[value] = ("const", float(constant_value(value)))
            if value not in names:
                raise Unsupported("the body reads the output's old value or a value "
                                  "defined outside it")
            operands.append(names[value])
        kind = BINARY_KINDS[name]
        result = ("tmp", len(steps))
        lhs, rhs = operands
        if lhs[0] == "const" and rhs[0] == "const":
            raise Unsupported("a constant-only expression in the body")
        if lhs[0] == "const":
            if kind not in COMMUTATIVE:
                raise Unsupported(f"'{name}' with a constant left operand")
            lhs, rhs = rhs, lhs
        steps.append(["binary", kind, lhs, rhs, result])
        names[op.results[0]] = result
    yielded = operations[-1].operands
    if len(yielded) != 1 or yielded[0] not in names or names[yielded[0]][0] == "const":
        raise Unsupported("the body must yield one computed value")
    if names[yielded[0]][0] == "in" and not steps:
        steps.append(["copy", names[yielded[0]]])
    elif names[yielded[0]] != ("tmp", len(steps) - 1):
        raise Unsupported("the body's result is not its last operation")
    return fuse_activations(steps)


def fuse_activations(steps: list) -> list:
    """max(x, 0) -> relu; min(max(x, lo), hi) -> clip (vector-unit activations)."""
    fused = []
    for step in steps:
        if step[0] == "binary" and step[1] == "max" and step[3] == ("const", 0.0):
            fused.append(["activation", "relu", step[2], step[4], None, None])
            continue
        previous = fused[-1] if fused else None
        if step[0] == "binary" and step[1] == "min" and step[3][0] == "const" \
                and previous is not None and previous[0] == "binary" and previous[1] == "max" \
                and previous[3][0] == "const" and step[2] == previous[4] \
                and previous[3][1] <= step[3][1]:
            fused[-1] = ["activation", "clip", previous[2], step[4], previous[3][1],
                         step[3][1]]
            continue
        if step[0] == "binary" and step[1] == "min" and step[3][0] == "const" \
                and previous is not None and previous[0] == "activation" \
                and previous[1] == "relu" and step[2] == previous[3] and step[3][1] >= 0:
            fused[-1] = ["activation", "clip", previous[2], step[4], 0.0, step[3][1]]
            continue
        fused.append(step)
    # Renumber temporaries: each step's result is ("tmp", index of the step).
    renamed, mapping = [], {}

    def rename(ref):
        return mapping.get(ref, ref)
    for index, step in enumerate(fused):
        if step[0] == "binary":
            new = ["binary", step[1], rename(step[2]), rename(step[3]), ("tmp", index)]
            mapping[step[4]] = ("tmp", index)
        elif step[0] == "activation":
            new = ["activation", step[1], rename(step[2]), ("tmp", index), step[4], step[5]]
            mapping[step[3]] = ("tmp", index)
        else:
            new = step
        renamed.append(new)
    return renamed


def elementwise_problem(op, target) -> TilingProblem:
    inputs, outputs = ins_outs(op)
    if len(outputs) != 1:
        raise Unsupported("more than one output")
    out = outputs[0]
    shape = static_shape(out, "output")
    rank = len(shape)
    if op.name in NAMED_BINARY:
        steps = [["binary", NAMED_BINARY[op.name], ("in", 0), ("in", 1), ("tmp", 0)]]
        maps = [ir.AffineMap.get_identity(rank)] * 2
    else:
        iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
        if any("parallel" not in kind for kind in iterators):
            raise Unsupported("a linalg.generic with reductions")
        all_maps = [ir.AffineMapAttr(m).value
                    for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        if all_maps[-1] != ir.AffineMap.get_identity(rank):
            raise Unsupported("a linalg.generic whose output map is not the identity")
        maps = all_maps[:-1]
        steps = body_program(op.regions[0].blocks[0], len(inputs))
    element = type_name(out)
    if element not in VECTOR_TYPES:
        raise Unsupported(f"element type {element} on the vector unit")
    operands = []
    for i, (value, affine_map) in enumerate(zip(inputs, maps)):
        if not isinstance(value.type, ir.MemRefType):
            raise Unsupported("a scalar input")
        static_shape(value, f"input #{i}")
        if type_name(value) != element:
            raise Unsupported("inputs and output of different element types")
        region = broadcast_region(affine_map, rank)
        if region is None:
            raise Unsupported(f"input #{i} is permuted, not broadcast")
        operands.append(OperandTile(f"in{i}", value, region))
    operands.append(OperandTile("output", out, tuple(Tiled(d) for d in range(rank)),
                                is_output=True))
    check_broadcasts(steps, operands, rank)
    n_steps = max(1, len(steps))
    dims = elementwise_dims(shape)

    def temporaries(t):
        alignment = target.sram_alignment
        tile_bytes = -(-math.prod(t) * element_bytes(operands[-1].element_type) // alignment) \
            * alignment
        constants = sum(1 for s in steps if s[0] == "binary" and s[3][0] == "const")
        return max(0, n_steps - 1) * tile_bytes + constants * target.sram_alignment
    return TilingProblem(op, "elementwise", dims, operands,
                         lambda t: n_steps * vector_cycles(math.prod(t), target),
                         temporaries, {"steps": steps})


def check_broadcasts(steps, operands, rank) -> None:
    """npu.elementwise broadcasts only its rhs; a broadcast lhs must be swappable."""
    for step in steps:
        if step[0] != "binary":
            continue
        for side in (2, 3):
            ref = step[side]
            if ref[0] == "in" and len(operands[ref[1]].region) != rank and side == 2:
                other = step[3]
                full_other = other[0] == "tmp" or (other[0] == "in" and
                                                    len(operands[other[1]].region) == rank)
                if step[1] in COMMUTATIVE and full_other:
                    step[2], step[3] = step[3], step[2]
                else:
                    raise Unsupported("a broadcast left operand of a non-commutative op")
        if step[2][0] == "in" and len(operands[step[2][1]].region) != rank:
            raise Unsupported("an elementwise op between two broadcast operands")
    for step in steps:
        if step[0] in ("activation", "copy") and step[2 if step[0] == "activation" else 1][0] \
                == "in":
            ref = step[2] if step[0] == "activation" else step[1]
            if len(operands[ref[1]].region) != rank and step[0] == "activation":
                raise Unsupported("an activation of a broadcast operand")


def fill_problem(op, target) -> TilingProblem:
    """linalg.fill, or a linalg.map of no inputs yielding a constant (how a
    tensor.pad's padding bufferizes when no window op absorbs it)."""
    if op.name == "linalg.map":
        body = list(op.regions[0].blocks[0].operations)
        if len(op.opview.inputs) or len(body) != 1:
            raise Unsupported("a linalg.map with inputs or a computed value")
        constant, out = constant_value(body[0].operands[0]), op.opview.init
    else:
        (value,), (out,) = ins_outs(op)
        constant = constant_value(value)
    if constant is None:
        raise Unsupported("a fill with a non-constant value")
    shape = static_shape(out, "output")
    if type_name(out) not in VECTOR_TYPES:
        raise Unsupported(f"element type {type_name(out)} on the vector unit")
    operands = [OperandTile("output", out, tuple(Tiled(d) for d in range(len(shape))),
                            is_output=True)]
    return TilingProblem(op, "fill", elementwise_dims(shape), operands,
                         lambda t: vector_cycles(math.prod(t), target),
                         details={"value": float(constant)})


def transpose_problem(op, target) -> TilingProblem:
    (source,), (out,) = ins_outs(op)
    permutation = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    shape = static_shape(out, "output")
    static_shape(source, "input")
    if type_name(source) not in VECTOR_TYPES:
        raise Unsupported(f"element type {type_name(source)} on the vector unit")
    # output dim i = input dim permutation[i]; input dim j is output dim inverse[j].
    inverse = [permutation.index(j) for j in range(len(permutation))]
    operands = [OperandTile("input", source, tuple(Tiled(inverse[j]) for j in range(len(shape)))),
                OperandTile("output", out, tuple(Tiled(d) for d in range(len(shape))),
                            is_output=True)]
    dims = [LoopDim(f"d{i}", n, candidates="rows") for i, n in enumerate(shape)]
    return TilingProblem(op, "transpose", dims, operands,
                         lambda t: vector_cycles(math.prod(t), target),
                         details={"permutation": permutation})


def broadcast_problem(op, target) -> TilingProblem:
    (source,), (out,) = ins_outs(op)
    added = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
    shape = static_shape(out, "output")
    static_shape(source, "input")
    if type_name(source) not in VECTOR_TYPES:
        raise Unsupported(f"element type {type_name(source)} on the vector unit")
    kept = [d for d in range(len(shape)) if d not in added]
    operands = [OperandTile("in0", source, tuple(Tiled(d) for d in kept)),
                OperandTile("output", out, tuple(Tiled(d) for d in range(len(shape))),
                            is_output=True)]
    steps = [["copy", ("in", 0)]]  # the lowering keeps the input tile at the output's rank
    return TilingProblem(op, "elementwise", elementwise_dims(shape), operands,
                         lambda t: vector_cycles(math.prod(t), target), details={"steps": steps})


PROBLEMS = {
    "linalg.matmul": matmul_problem,
    "linalg.batch_matmul": batch_matmul_problem,
    "linalg.conv_2d_nhwc_hwcf": conv_problem,
    "linalg.depthwise_conv_2d_nhwc_hwc": depthwise_problem,
    "linalg.pooling_nhwc_max": pool_problem,
    "linalg.pooling_nhwc_sum": pool_problem,
    "linalg.generic": elementwise_problem,
    "linalg.fill": fill_problem,
    "linalg.map": fill_problem,
    "linalg.transpose": transpose_problem,
    "linalg.broadcast": broadcast_problem,
    **{name: elementwise_problem for name in NAMED_BINARY},
}

# linalg ops the NPU does not run, with the reason given in the remark.
UNSUPPORTED_REASONS = {
    "linalg.conv_2d_nchw_fchw": "NCHW convolutions run on the NPU only after "
                                "npu-convert-layout (on tensors)",
    "linalg.pooling_nchw_max": "NCHW pooling runs on the NPU only after "
                               "npu-convert-layout (on tensors)",
    "linalg.pooling_nchw_sum": "NCHW pooling runs on the NPU only after "
                               "npu-convert-layout (on tensors)",
}


def tiling_problem(op, target: NpuTarget) -> TilingProblem:
    """The op's tiling problem; raises Unsupported with the reason the NPU cannot run it."""
    build = PROBLEMS.get(op.name)
    if build is None:
        raise Unsupported(UNSUPPORTED_REASONS.get(op.name, "no npu lowering for this op"))
    return build(op, target)


# ---------------------------------------------------------------------------
# Cost model
# ---------------------------------------------------------------------------

def dma_cycles(operand: OperandTile, tiles, target: NpuTarget) -> int:
    extents = operand.extents(tiles)
    full = ir.MemRefType(operand.value.type).shape
    itemsize = element_bytes(operand.element_type)
    run = 1
    for extent, size, part in zip(reversed(extents), reversed(full), reversed(operand.region)):
        if isinstance(part, Strided) and part.stride > 1:
            break
        run *= extent
        if extent < size:
            break
    runs = math.prod(extents) // max(run, 1)
    burst = target.dma_burst_bytes
    moved = runs * -(-(run * itemsize) // burst) * burst
    return target.dma_setup_cycles + -(-moved // target.dram_bytes_per_cycle)


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------

def linalg_ops(module: ir.Operation) -> list:
    found = []

    def visit(op):
        if op.name.startswith("linalg.") and op.name not in ("linalg.yield", "linalg.index") \
                and not (op.parent is not None and op.parent.name.startswith("linalg.")):
            found.append(op)
        return ir.WalkResult.ADVANCE
    module.walk(visit)
    return found


@dataclass(frozen=True)
class NpuTile(ModulePass):
    argument = "npu-tile"
    summary = "Choose tile sizes and loop order of each linalg op from the SRAM budget " \
              "and a cost model"

    tile_sizes: list[int] = field(default_factory=list)

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            target, diagnostics = context.target, context.diagnostics
            stages = target.pipeline_stages
            problems = []
            with unchanged_blocks():
                for op in linalg_ops(module):
                    try:
                        problems.append((op, tiling_problem(op, target), None))
                    except Unsupported as reason:
                        problems.append((op, None, str(reason)))
            # Fills and padded copies folded into the op that reads them.
            absorbed = [a for _, problem, _ in problems if problem for a in problem.absorbed_ops]
            problems = [entry for entry in problems if entry[0] not in absorbed]
            for op, problem, reason in problems:
                if problem is None:
                    diagnostics.remark(op.location, f"'{op.name}' stays on the fallback "
                                                    f"engine: {reason}")
                    continue
                explicit = list(self.tile_sizes) or None
                if explicit is not None and len(explicit) != len(problem.dims):
                    names = ", ".join(d.name for d in problem.dims)
                    diagnostics.error(op.location, f"'{op.name}' has {len(problem.dims)} loop "
                                                   f"dimensions ({names}), tile-sizes gives "
                                                   f"{len(explicit)}")
                    continue
                if explicit is not None and min(explicit) < 1:
                    diagnostics.error(op.location, "tile sizes must be positive")
                    continue
                outcome = search(problem, target, stages, explicit)
                schedule = outcome.schedule
                if schedule is None:
                    diagnostics.error(op.location, f"'{op.name}' does not fit in SRAM: "
                                                   f"{outcome.refusal}")
                    continue
                with op.context:
                    op.attributes[TILE_SIZES_ATTR] = ir.DenseI64ArrayAttr.get(list(schedule.tiles))
                    op.attributes[LOOP_ORDER_ATTR] = ir.DenseI64ArrayAttr.get(list(schedule.order))
                    if outcome.stages != stages:
                        op.attributes[STAGES_ATTR] = ir.IntegerAttr.get(
                            ir.IntegerType.get_signless(64), outcome.stages)
                relaxed = f"; fits only with {outcome.relaxed}" if outcome.relaxed else ""
                diagnostics.remark(op.location,
                                   f"'{op.name}': {describe(problem, schedule)}{relaxed}")
