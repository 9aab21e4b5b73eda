"""The tiling problem of one op, and the recipe interface.

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
from .ir_queries import (  # noqa: F401 (recipes and passes import them from here too)
    TILE_SIZES_ATTR, LOOP_ORDER_ATTR, STRATEGY_ATTR, CONV_STRATEGIES, ACTIVATION_ATTR,
    TILE_LOOP_ATTR, INIT_ATTR, RESIDENT_ATTR, PADDED_INTERIOR_ATTR, DATAFLOW_ATTR,
    RESIDUAL_START_ATTR, Unsupported,
    Malformed, is_reduction, type_name, static_shape, root_buffer, is_resident, RESIDENT_VIEWS,
    same_view,
    ints, optional_attr, checked_attr, built_op, copy_npu_attributes, npu_attribute_names,
    ins_outs, indexing_maps,
    input_count, tile_nest_root, untiled, constant_value)

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
    # A resident operand the buffer plan keeps padded: its producer writes the
    # padded buffer's interior (a view), whole; its readers but the padding
    # one read that view.
    padded_interior: bool = False

    def __post_init__(self):
        if self.resident is None:
            self.resident = is_resident(self.value)
        if isinstance(self.value, ir.OpResult) and \
                PADDED_INTERIOR_ATTR in self.value.owner.attributes:
            self.padded_interior = True

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
        """Whether the operand is a whole buffer: not a view into one, nor the
        interior of a buffer kept padded (which the buffer plan prices before
        that view exists)."""
        return not self.padded_interior and has_identity_layout(self.value)


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


def skip_into_output(problem: TilingProblem, operand: OperandTile, tiles):
    """Whether a folded residual's skip tile loads straight into the output
    tile at these tiles (numbers, or arrays over candidates), or already is it
    (a resident skip the output is written over): where each output tile is one
    whole reduction, the matrix op accumulates onto it and adds the bias in its
    epilogue, so the skip needs no buffers of its own and no vector-unit add."""
    output = problem.output
    if operand.role != "residual" or not problem.recipe.matrix_unit \
            or REQUANTIZE in problem.details or operand.element_type != output.element_type:
        return False
    # A resident skip the output is written over (npu-reuse-dead-inputs) is
    # already in the output tile: the op accumulates onto it in place.
    if operand.resident != output.resident or (
            operand.resident and not same_view(operand.value, output.value)):
        return False
    whole = True
    for d, dim in enumerate(problem.dims):
        if dim.reduction:
            whole = whole & (tiles[d] >= dim.size)
    return whole


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
            # A GEMM-form conv reads (or writes) a channel slice as a matrix
            # with a row stride.
            views_buffer_as_matrix(problem) and operand.role in ("input", "output")
            and pixels_collapse_to_rows(operand.value) and not (
                # Priced by the buffer plan before the padded buffer exists:
                # its interior's rows are strided by the padding.
                operand.padded_interior and has_identity_layout(operand.value))) and not (
            # The skip a residual start adds on the vector unit, a row at a time.
            operand.role == "residual" and not operand.permuted()
            and rows_of_contiguous_elements(operand.value)):
        return False
    if operand.is_output or not problem.recipe.broadcast_inputs(problem):
        return True
    return operand.region == tuple(Tiled(d) for d in range(len(problem.dims)))


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
