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

from .. import machine_model
from ..machine_model import (element_bytes, gemm_cycles, vector_cycles,  # noqa: F401 (the costs)
                             vector_kind_cycles)
from ..target import NpuTarget

TILE_SIZES_ATTR = "npu.tile_sizes"


LOOP_ORDER_ATTR = "npu.loop_order"


STRATEGY_ATTR = "npu.conv_strategy"
CONV_STRATEGIES = ("implicit-gemm", "direct", "im2col")


ACTIVATION_ATTR = "npu.activation"
TILE_LOOP_ATTR = "npu.tile_loop"   # the outermost loop of a tile nest
INIT_ATTR = "npu.init"             # the initial value of an SRAM tile, folded into its op
RESIDENT_ATTR = "npu.resident"     # an SRAM buffer holding a whole intermediate tensor
DATAFLOW_ATTR = "npu.dataflow"     # the matrix-unit dataflow chosen for a tiled op
RESIDUAL_START_ATTR = "npu.residual_start"  # skip + bias: a conv/matmul's initial value

MATRIX_TYPES = machine_model.MATRIX_INPUT_TYPES
ACCUMULATOR_TYPES = {name: machine_model.matrix_output_types(name) for name in MATRIX_TYPES}
VECTOR_TYPES = machine_model.VECTOR_TYPES


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
    # A tensor kept in SRAM (npu-keep-in-sram): its tile is never moved by DMA,
    # and its loop dims are never tiled (the op reads or writes it whole).
    resident: bool | None = None
    # Inputs sharing one window tile (npu-share-input-windows): this input's
    # shift in it, and the input whose SRAM tile holds the window (None for
    # that input itself, whose region is the window).
    shift: int | None = None
    window_owner: str | None = None

    def __post_init__(self):
        if self.resident is None:
            self.resident = is_resident(self.value)

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

    def permuted(self) -> bool:
        """Whether the tile's dims are the loops out of order: a transposed operand,
        which the op transposes in SRAM."""
        dims = [part.dim for part in self.region if isinstance(part, Tiled)]
        return dims != sorted(dims)

    @property
    def element_type(self) -> ir.Type:
        return ir.MemRefType(self.value.type).element_type

    def identity_layout(self) -> bool:
        return has_identity_layout(self.value)


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

    def loads(self, operand: OperandTile) -> bool:
        """Whether the operand's tiles come from DRAM: inputs (but those read
        from another input's window tile), and the output of a matrix op or
        reduction that accumulates onto its initial contents."""
        if not operand.is_output:
            return operand.window_owner is None
        return self.recipe.accumulates and not self.starts_output

    @property
    def starts_output(self) -> bool:
        """Whether the op writes its output's initial value itself: a folded fill
        or a folded bias broadcast (otherwise it accumulates onto the contents)."""
        return self.init_value is not None or any(o.role == "bias" for o in self.operands)


REQUANTIZE = "requantize"   # the key of problem.details: a requantising epilogue's QuantizeStep

# Recipes whose npu ops take a strided view of a resident buffer as it is (a
# GEMM-form conv views the buffer under it as a matrix, so it does not).
STRIDED_IN_PLACE = ("conv2d", "depthwise_conv2d", "pool2d", "fill", "elementwise", "transpose")


def conv_strategy(op) -> str:
    """The op's `npu.conv_strategy`; "direct" without one."""
    return checked_attr(op, STRATEGY_ATTR, ir.StringAttr, CONV_STRATEGIES.__contains__,
                        "one of " + ", ".join(f'"{name}"' for name in CONV_STRATEGIES)) \
        or "direct"


def views_buffer_as_matrix(problem: TilingProblem) -> bool:
    return problem.recipe.name == "conv2d" and conv_strategy(problem.op) != "direct"


def takes_strided_view(problem: TilingProblem) -> bool:
    """Whether the op's npu op computes on a strided view of a resident buffer."""
    return problem.recipe.name in STRIDED_IN_PLACE and not views_buffer_as_matrix(problem)


def computes_on_strided_view(problem: TilingProblem, operand: OperandTile) -> bool:
    """Whether the op computes on a strided view of a resident buffer in the
    operand's place: the ops that take one, and a requantising epilogue
    writing its int8 result (the matrix unit writes the int32 accumulator)."""
    return takes_strided_view(problem) or (operand.is_output and REQUANTIZE in problem.details)


def rows_of_contiguous_elements(value: ir.Value) -> bool:
    """A view whose innermost dim is contiguous (the interior of a padded
    buffer, a channel slice of a concatenation), with static strides."""
    strides, _ = ir.MemRefType(value.type).get_strides_and_offset()
    return bool(strides) and strides[-1] == 1 and all(s >= 0 for s in strides)


def has_identity_layout(value: ir.Value) -> bool:
    """Whether a memref value's layout is the identity (a buffer, not a view into one)."""
    memref = ir.MemRefType(value.type)
    return isinstance(memref.layout, ir.AffineMapAttr) \
        and memref.layout.value == ir.AffineMap.get_identity(memref.rank)


def pixels_collapse_to_rows(value: ir.Value) -> bool:
    """A view whose leading dims (the pixels) collapse into one uniformly
    strided dim over contiguous channels, with static strides: a channel slice
    of a tensor, which a GEMM reads as a matrix with a row stride."""
    memref = ir.MemRefType(value.type)
    strides, _ = memref.get_strides_and_offset()
    if not strides or strides[-1] != 1 \
            or ir.ShapedType.get_dynamic_stride_or_offset() in strides:
        return False
    rows = [(size, stride) for size, stride in zip(memref.shape[:-1], strides[:-1]) if size != 1]
    return all(outer == size * stride for (_, outer), (size, stride) in zip(rows, rows[1:]))


def unit_stride(part) -> bool:
    """A 1x1 conv's rows or columns: the output tile's own, as a Tiled dim's."""
    return isinstance(part, Strided) and part.stride == 1


def in_place(problem: TilingProblem, operand: OperandTile) -> bool:
    """Whether the op computes on a resident operand's SRAM buffer itself: a
    tensor read or written whole, at the shape its SRAM tile would have, or a
    window of an unpadded one (a conv's input padded in SRAM by its producer).
    Strided views of a resident buffer qualify for the ops that take them. Other
    resident operands (a padded window of the source, a strided input, a
    broadcast input, a transposed view) are copied to or from an SRAM tile on
    the vector unit instead of by DMA."""
    if operand.window_owner is not None:
        return True    # a view of another input's window tile
    if not operand.resident:
        return False
    windows = [part for part in operand.region if isinstance(part, Window)]
    if windows and (operand.pad_value is not None or any(w.pad_low for w in windows)
                    or views_buffer_as_matrix(problem) or not operand.identity_layout()):
        return False
    if not all(isinstance(part, (Tiled, Whole, Window)) or unit_stride(part)
               for part in operand.region):
        return False
    if not operand.identity_layout() and not (
            computes_on_strided_view(problem, operand) and not operand.permuted()
            and rows_of_contiguous_elements(operand.value)) and not (
            # A GEMM-form conv reads a channel slice as a matrix with a row stride.
            views_buffer_as_matrix(problem) and operand.role == "input"
            and pixels_collapse_to_rows(operand.value)):
        return False
    if operand.is_output or not problem.recipe.broadcast_inputs(problem):
        return True
    return operand.region == tuple(Tiled(d) for d in range(len(problem.dims)))


class Unsupported(Exception):
    """The NPU cannot run this op; the message says why."""


class Malformed(Unsupported):
    """An npu attribute on the op that is not of the form the passes read: an
    error at the op, not a reason to leave it on the fallback engine."""


def matrix_cycles(gemm, target):
    """A matrix-unit op's cycles per tile from its GEMM shape per tile,
    `gemm(tiles)` = (M, N, K, int8): also `details["gemm"]`, from which npu-tile
    chooses the op's dataflow."""
    def cycles(tiles):
        m, n, k, int8 = gemm(tiles)
        return gemm_cycles(m, n, k, target, int8)
    return cycles


def with_fp32_accumulator(problem: TilingProblem, stages: int) -> TilingProblem:
    """Count the fp32 SRAM accumulator an fp16/bf16 output needs when the
    reduction is split into several tiles (one per output buffer)."""
    if str(problem.output.element_type) not in ("f16", "bf16"):
        return problem
    base = problem.temporary_bytes
    output_dims = [part.dim for part in problem.output.region]
    reductions = [d for d, dim in enumerate(problem.dims) if dim.reduction]

    def temporaries(tiles):
        if all(tiles[d] >= problem.dims[d].size for d in reductions):
            return base(tiles)
        elements = 1
        for d in output_dims:
            elements *= tiles[d]
        return base(tiles) + stages * elements * 4
    problem.temporary_bytes = temporaries
    return problem


class Recipe:
    """One op family: recognition and tiling problem (`problem`), and the npu
    ops computing one tile (`emit`). Registered in `recipes.RECIPES`."""

    name: ClassVar[str]
    ops: ClassVar[tuple[str, ...]]      # linalg op names the recipe may recognise
    sram_only_ops: ClassVar[tuple[str, ...]] = ()   # also rewritten on SRAM tiles
    # Runs on the matrix unit: accumulates across the reduction loop, with the
    # activation epilogue on the last step, and its loop order is searched.
    matrix_unit: ClassVar[bool] = False
    # Accumulates into its output tile across the reduction loop: the tile is
    # started on the first reduction step and stays in SRAM until the last.
    accumulates: ClassVar[bool] = False

    def recognises(self, op) -> bool:
        """Whether the op is of this family (several share linalg.generic)."""
        return True

    def problem(self, op, target: NpuTarget) -> TilingProblem:
        raise NotImplementedError

    def loop_positions(self, problem: TilingProblem) -> tuple[int, list[int]]:
        """The linalg op's number of loops, and the loop each problem dim is."""
        return len(problem.dims), list(range(len(problem.dims)))

    def build_on_tiles(self, op, inputs: list, out: ir.Value):
        """The op on SRAM tiles with an output of another element type (an fp32
        accumulator): built anew, since the op's body depends on its types."""
        raise Unsupported(f"'{op.name}' has no accumulator form")

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


def is_reduction(op) -> bool:
    """A linalg.reduce, or a linalg.generic with a reduction loop."""
    op = op.operation
    if op.name == "linalg.reduce":
        return True
    if op.name != "linalg.generic":
        return False
    return any("reduction" in str(kind) for kind in ir.ArrayAttr(op.attributes["iterator_types"]))


def type_name(value: ir.Value) -> str:
    return str(ir.MemRefType(value.type).element_type)


def static_shape(value: ir.Value, what: str) -> list[int]:
    if not isinstance(value.type, ir.MemRefType):
        raise Unsupported(f"{what} is not a memref (run bufferization first)")
    memref = ir.MemRefType(value.type)
    if not memref.has_static_shape:
        raise Unsupported(f"{what} has a dynamic shape")
    if memref.memory_space is not None and not is_resident(value):
        raise Unsupported(f"{what} is not in DRAM")
    return list(memref.shape)


def root_buffer(value: ir.Value) -> ir.Value:
    """The buffer (an alloc's result) a value is a view of, through RESIDENT_VIEWS."""
    while isinstance(value, ir.OpResult) and value.owner.operation.name in RESIDENT_VIEWS:
        value = value.owner.operands[0]
    return value


def is_resident(value: ir.Value) -> bool:
    """Whether `value` is (a view of) a whole tensor kept in SRAM between the ops
    that produce and read it (npu-keep-in-sram): an `npu.alloc` marked RESIDENT_ATTR."""
    value = root_buffer(value)
    return isinstance(value, ir.OpResult) and value.owner.operation.name == "npu.alloc" \
        and RESIDENT_ATTR in value.owner.attributes


# Views through which an op may read a resident tensor.
RESIDENT_VIEWS = ("memref.subview", "memref.cast", "memref.collapse_shape",
                  "memref.expand_shape")


def ints(attribute, default) -> list[int]:
    if attribute is None:
        return list(default)
    if isinstance(attribute, ir.DenseI64ArrayAttr):
        return list(attribute)
    return [int(v) for v in ir.DenseIntElementsAttr(attribute)]


def optional_attr(op, name):
    return op.attributes[name] if name in op.attributes else None


def checked_attr(op, name: str, kind, valid, expected: str):
    """The value of the op's attribute `name` as `kind` (ir.IntegerAttr or
    ir.StringAttr), None without one; Malformed, saying what was `expected`,
    when it is another kind of attribute or its value is not `valid`."""
    attribute = optional_attr(op, name)
    if attribute is None:
        return None
    try:
        value = kind(attribute).value
    except ValueError:   # another kind of attribute
        value = None
    if value is None or not valid(value):
        raise Malformed(f"malformed {name} {attribute}: expected {expected}")
    return value


def built_op() -> ir.Operation:
    """The op just built before the current insertion point (linalg builders on
    memrefs return no result to reach it by)."""
    point = ir.InsertionPoint.current
    operations = list(point.block.operations)
    position = len(operations) if point.ref_operation is None else \
        operations.index(point.ref_operation)
    return operations[position - 1].operation


def copy_npu_attributes(source, built) -> None:
    for named in list(source.attributes):
        name = named if isinstance(named, str) else named.name
        if name.startswith("npu."):
            built.attributes[name] = source.attributes[name]


def ins_outs(op) -> tuple[list, list]:
    """The op's inputs and outputs; for an op tiled by `npu-tile`, the DRAM
    buffers its tiles are views of."""
    view = op.opview
    if hasattr(view, "inputs"):
        inputs = list(view.inputs)
        outputs = list(view.outputs if hasattr(view, "outputs") else view.inits)  # linalg.reduce
    else:
        operands = list(op.operands)
        inputs, outputs = operands[:-1], operands[-1:]
    return [untiled(v) for v in inputs], [untiled(v) for v in outputs]


def indexing_maps(op) -> list[ir.AffineMap]:
    """A structured op's indexing maps (inputs, then outputs)."""
    return [ir.AffineMapAttr(m).value for m in ir.ArrayAttr(op.attributes["indexing_maps"])]


def input_count(op) -> int:
    """How many of a linalg.generic's operands are inputs (the rest are outputs)."""
    return list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))[0]


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
