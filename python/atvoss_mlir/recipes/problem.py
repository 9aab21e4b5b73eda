"""The tiling problem of one op, and what every recipe shares.

A `TilingProblem` names an op's loop dimensions and, per operand, which part of
the operand a tile of the loops touches (`Tiled`, `Whole`, `Window` with the
input halo of convolutions and pooling, `Strided`). The search in `npu-tile`
chooses tile sizes and a loop order for it; `npu-promote-to-sram` builds the
tiled program from it and asks the op's `Recipe` for the compute of one tile.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar

from mlir import ir

from ..target import NpuTarget

TILE_SIZES_ATTR = "npu.tile_sizes"


LOOP_ORDER_ATTR = "npu.loop_order"


STRATEGY_ATTR = "npu.conv_strategy"


ACTIVATION_ATTR = "npu.activation"
TILE_LOOP_ATTR = "npu.tile_loop"   # the outermost loop of a tile nest
INIT_ATTR = "npu.init"             # the initial value of an SRAM tile, folded into its op

MATRIX_TYPES = ("f16", "bf16", "f32", "i8")


ACCUMULATOR_TYPES = {"f16": ("f16", "f32"), "bf16": ("bf16", "f32"), "f32": ("f32",),
                     "i8": ("i8", "i32")}


VECTOR_TYPES = ("f16", "bf16", "f32", "i8", "i32")


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
    recipe: "Recipe"
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
    def kind(self) -> str:
        return self.recipe.name

    @property
    def output(self) -> OperandTile:
        return next(o for o in self.operands if o.is_output)

    def operand(self, role: str) -> OperandTile:
        return next(o for o in self.operands if o.role == role)


class Unsupported(Exception):
    """The NPU cannot run this op; the message says why."""


class Recipe:
    """One op family: recognition and tiling problem (`problem`), and the npu
    ops computing one tile (`emit`). Registered in `recipes.RECIPES`."""

    name: ClassVar[str]
    ops: ClassVar[tuple[str, ...]]      # linalg op names the recipe may recognise
    # Runs on the matrix unit: accumulates across the reduction loop, with the
    # activation epilogue on the last step, and its loop order is searched.
    matrix_unit: ClassVar[bool] = False

    def problem(self, op, target: NpuTarget) -> TilingProblem:
        raise NotImplementedError

    def loop_positions(self, problem: TilingProblem) -> tuple[int, list[int]]:
        """The linalg op's number of loops, and the loop each problem dim is."""
        return len(problem.dims), list(range(len(problem.dims)))

    def on_sram_tiles(self, compute, problem: TilingProblem) -> None:
        """Adapt the op computing one SRAM tile (`compute`, a clone of the tiled op)."""

    def reads_output(self, problem: TilingProblem) -> bool:
        """Whether the output tile is loaded from DRAM before the compute."""
        return False

    def broadcast_inputs(self, problem: TilingProblem) -> bool:
        """Whether input tiles are kept at the output's rank with unit dims."""
        return False

    def rewrite(self, op, rewriter):
        """The rewrite pattern of `npu-convert-linalg-to-npu`: replace `op`, a
        linalg op on SRAM tiles, with npu ops. Returns True when it does not match
        (the pattern API's convention)."""
        raise NotImplementedError


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
    """The op's inputs and outputs; for an op tiled by `npu-tile`, the DRAM
    buffers its tiles are views of."""
    view = op.opview
    if hasattr(view, "inputs"):
        inputs, outputs = list(view.inputs), list(view.outputs)
    else:
        operands = list(op.operands)
        inputs, outputs = operands[:-1], operands[-1:]
    return [untiled(v) for v in inputs], [untiled(v) for v in outputs]


def tile_nest_root(op):
    """The outermost loop of the tile nest `op` is in (itself when untiled)."""
    root, parent = op, op.parent
    while parent is not None and parent.name == "scf.for":
        if TILE_LOOP_ATTR in parent.attributes:
            return parent
        parent = parent.parent
    return root


def untiled(value):
    """The buffer a tile of a tiled op views: the source of the memref.subview
    that upstream tiling made inside the tile loop; any other value itself."""
    if isinstance(value, ir.OpResult) and value.owner.name == "memref.subview":
        owner = value.owner
        if tile_nest_root(owner) != owner:
            return owner.operands[0]
    return value


def constant_value(value: ir.Value):
    if isinstance(value, ir.OpResult) and value.owner.name == "arith.constant":
        attribute = value.owner.attributes["value"]
        if isinstance(attribute, ir.FloatAttr):
            return attribute.value
        if isinstance(attribute, ir.IntegerAttr):
            return attribute.value
    return None
