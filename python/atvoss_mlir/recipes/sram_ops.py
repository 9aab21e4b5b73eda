"""What the rewrite patterns of `npu-convert-linalg-to-npu` read from a linalg
op on SRAM tiles: its views and their sizes, the initial value written into
its output tile (an op marked `npu.init`), its activation epilogue, and
scratch SRAM buffers placed around its tile loop."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import memref

from ..dialects import npu
from .ir_queries import ACTIVATIONS, CLIP_ATTRS, RESIDENT_VIEWS, latest
from .problem import (ACTIVATION_ATTR, DATAFLOW_ATTR, INIT_ATTR, checked_attr, constant_value,
                      tile_nest_root)
from .tile_ir import DYNAMIC, index, mixed, subview


def in_sram(value: ir.Value) -> bool:
    if not isinstance(value.type, ir.MemRefType):
        return False
    space = ir.MemRefType(value.type).memory_space
    return space is not None and ir.IntegerAttr(space).value == 1


def view_sizes(view: ir.Value) -> list:
    """The view's sizes: ints where static, memref.dim values otherwise."""
    shape = ir.MemRefType(view.type).shape
    return [size if size != DYNAMIC else memref.dim(view, index(axis))
            for axis, size in enumerate(shape)]


def largest_sizes(view: ir.Value) -> list[int] | None:
    """The largest sizes a subview of tile-loop bounds takes: its static sizes,
    and the constant bound of each `affine.min` giving a dynamic one (None
    when a size has none)."""
    owner = view.owner if isinstance(view, ir.OpResult) else None
    if owner is None or owner.name != "memref.subview":
        return None
    sizes = []
    for bound in mixed(owner, "sizes"):
        if isinstance(bound, int):
            sizes.append(bound)
            continue
        if not isinstance(bound, ir.OpResult) or bound.owner.name != "affine.min":
            return None
        constants = [e.value for e in
                     ir.AffineMapAttr(bound.owner.attributes["map"]).value.results
                     if isinstance(e, ir.AffineConstantExpr)]
        if not constants:
            return None
        sizes.append(max(constants))
    return sizes


def full_rank_view(view: ir.Value) -> ir.Value:
    """A rank-reducing subview of an SRAM buffer, without the dropped unit dims."""
    owner = view.owner if isinstance(view, ir.OpResult) else None
    if owner is None or owner.name != "memref.subview":
        return view
    source = owner.operands[0]
    source_rank = ir.MemRefType(source.type).rank
    if source_rank == ir.MemRefType(view.type).rank:
        return view
    return subview(source, mixed(owner, "offsets"), mixed(owner, "sizes"))


def sram_buffer(view: ir.Value) -> ir.Value:
    """The SRAM buffer a view is a view of (through subviews and casts)."""
    while isinstance(view, ir.OpResult) and view.owner.name in ("memref.subview", "memref.cast"):
        view = view.owner.operands[0]
    return view


def strip_casts(value: ir.Value) -> ir.Value:
    while isinstance(value, ir.OpResult) and value.owner.name == "memref.cast":
        value = value.owner.operands[0]
    return value


def initial_value(op, out: ir.Value):
    """The op marked INIT_ATTR that writes the output tile `out` right before
    `op`: the nearest op of its block touching the tile (variants of one step
    share the tile's view, so only the block's own ops count)."""
    tile = strip_casts(out)
    op = op.operation
    # The ops using the tile or a cast of it, not walking the block (a long
    # one, a whole program's top level, made this quadratic).
    users, values = [], [tile]
    while values:
        for use in values.pop().uses:
            user = use.owner.operation
            if user.name == "memref.cast":
                values.append(user.results[0])
            if user.block == op.block and user.is_before_in_block(op):
                users.append(user)
    nearest = latest(users)
    return nearest if nearest is not None and INIT_ATTR in nearest.attributes else None


def fill_constant(fill) -> float:
    return float(constant_value(fill.operands[0]))


def accumulation_start(op, out: ir.Value, rewriter) -> tuple:
    """(whether a matrix op or depthwise conv adds to its output tile, its bias):
    it does not when the tile's initial value is a zero fill (the op's own start,
    so the fill goes) or a broadcast bias (the op's bias epilogue then adds it);
    a bias added onto the tile's loaded value (absorbed.bias_onto) is its bias
    epilogue too, onto what it accumulates; a non-zero fill is kept as npu.fill."""
    init = initial_value(op, out)
    if init is None:
        return True, None
    if init.name in ("linalg.broadcast", "linalg.generic"):
        bias = init.operands[0]
        rewriter.erase_op(init)
        return init.name == "linalg.generic", bias
    value = fill_constant(init)
    if value != 0.0:
        npu.FillOp(out, value)
    rewriter.erase_op(init)
    return value != 0.0, None


def epilogue(op) -> tuple:
    """(activation, clip_min, clip_max) of the op's `npu.activation` epilogue;
    Malformed when an attribute is not of the form the passes write."""
    operation = op.operation
    activation = checked_attr(operation, ACTIVATION_ATTR, ir.StringAttr,
                              ACTIVATIONS.__contains__, "one of " + ", ".join(ACTIVATIONS))
    if activation is None:
        return "none", None, None
    clip = [checked_attr(operation, name, ir.FloatAttr, lambda value: value == value,
                         "a float") for name in CLIP_ATTRS]
    return activation, clip[0], clip[1]


def dataflow_of(op) -> str | None:
    """The matrix-unit dataflow npu-tile chose for the op (npu.dataflow)."""
    return checked_attr(op.operation, DATAFLOW_ATTR, ir.StringAttr, ("ws", "os").__contains__,
                        '"ws" or "os"')


# The ops between a tile loop and the deallocations of its buffers: the barrier
# and waits ending it, its last store and the views and constants they use.
AFTER_A_LOOP = ("npu.barrier", "npu.wait", "npu.dma_store", "arith.constant",
                "index.constant") + RESIDENT_VIEWS


def scratch(op, shape: list[int], element_type, fill: float | None = None) -> ir.Value:
    """An SRAM buffer live around the tile loop of `op`: allocated (and filled
    with `fill`) before the loop, released with the loop's own buffers after it."""
    root = tile_nest_root(op.operation)
    with ir.InsertionPoint(root):
        buffer = npu.AllocOp(npu.sram_memref(shape, element_type)).result
        if fill is not None:
            npu.FillOp(buffer, fill)
    # The first npu.dealloc of the loop's own buffers after it (stepping from
    # op to op: the bindings have no next-op link, an insertion point after an
    # op has one). Past the ops ending the loop there are none yet (its
    # promotion is under way and adds them after the loop, before this one):
    # a later op's would keep the buffer live across the ops between.
    release = ir.InsertionPoint.after(root).ref_operation
    while release is not None and release.operation.name in AFTER_A_LOOP:
        release = ir.InsertionPoint.after(release).ref_operation
    point = ir.InsertionPoint(release) \
        if release is not None and release.operation.name == "npu.dealloc" \
        else ir.InsertionPoint.after(root)
    with point:
        npu.DeallocOp(buffer)
    return buffer
