"""Builders for the index arithmetic, conditions and SRAM views of tile
programs. Offsets and sizes are Python ints where they are known at compile
time (folded here) and index values otherwise."""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, memref, scf

DYNAMIC = ir.ShapedType.get_dynamic_size()


def index(value):
    if isinstance(value, ir.Value):
        return value
    return arith.ConstantOp(ir.IndexType.get(), value).result


def add(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a + b
    if b == 0:
        return a
    if a == 0:
        return b
    return arith.AddIOp(index(a), index(b)).result


def sub(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a - b
    if b == 0:
        return a
    return arith.SubIOp(index(a), index(b)).result


def mul(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return a * b
    if b == 1:
        return a
    if a == 1:
        return b
    return arith.MulIOp(index(a), index(b)).result


def div(a, b):
    if isinstance(a, int):
        return a // b
    return a if b == 1 else arith.DivUIOp(a, index(b)).result


def rem(a, b):
    if isinstance(a, int):
        return a % b
    return 0 if b == 1 else arith.RemUIOp(a, index(b)).result


def minimum(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    return arith.MinSIOp(index(a), index(b)).result


def maximum(a, b):
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    return arith.MaxSIOp(index(a), index(b)).result


def compare(predicate: str, a, b):
    """An i1 value, or a Python bool when both sides are ints."""
    if isinstance(a, int) and isinstance(b, int):
        return {"eq": a == b, "ne": a != b, "ult": a < b, "slt": a < b}[predicate]
    kind = getattr(arith.CmpIPredicate, predicate)
    return arith.CmpIOp(kind, index(a), index(b)).result


def both(a, b):
    if a is False or b is False:
        return False
    if a is True:
        return b
    if b is True:
        return a
    return arith.AndIOp(a, b).result


def when(condition, emit) -> None:
    """Run `emit()` under `condition` (a Python bool or an i1 value)."""
    if condition is False:
        return
    if condition is True:
        emit()
        return
    branch = scf.IfOp(condition)
    with ir.InsertionPoint(branch.then_block):
        emit()
        scf.YieldOp([])


def choose(condition, then_emit, else_emit) -> None:
    if condition is True or condition is False:
        (then_emit if condition else else_emit)()
        return
    branch = scf.IfOp(condition, has_else=True)
    with ir.InsertionPoint(branch.then_block):
        then_emit()
        scf.YieldOp([])
    with ir.InsertionPoint(branch.else_block):
        else_emit()
        scf.YieldOp([])


def when_yielding(condition, emit, otherwise: list) -> list:
    """The values `emit()` returns where `condition` holds, `otherwise` elsewhere
    (an scf.if with results when the condition is an i1 value)."""
    if condition is False:
        return list(otherwise)
    if condition is True:
        return list(emit())
    branch = scf.IfOp(condition, [value.type for value in otherwise], has_else=True)
    with ir.InsertionPoint(branch.then_block):
        scf.YieldOp(list(emit()))
    with ir.InsertionPoint(branch.else_block):
        scf.YieldOp(list(otherwise))
    return list(branch.results)


def subview(source: ir.Value, offsets, sizes, dropped=(), steps=None) -> ir.Value:
    """memref.subview with mixed static/dynamic offsets and sizes; `dropped`
    dims (of static size 1) are removed from the result."""
    source_type = ir.MemRefType(source.type)
    strides, offset = source_type.get_strides_and_offset()
    steps = steps or [1] * len(sizes)
    if all(isinstance(o, int) for o in offsets) and offset != DYNAMIC:
        result_offset = offset + sum(o * s for o, s in zip(offsets, strides))
    else:
        result_offset = DYNAMIC
    shape = [s if isinstance(s, int) else DYNAMIC for s in sizes]
    result_strides = [s * step for s, step in zip(strides, steps)]
    keep = [i for i in range(len(shape)) if i not in dropped]
    layout = ir.StridedLayoutAttr.get(result_offset, [result_strides[i] for i in keep])
    result_type = ir.MemRefType.get([shape[i] for i in keep], source_type.element_type,
                                    layout, source_type.memory_space)
    return memref.SubViewOp(
        result_type, source,
        [o for o in offsets if isinstance(o, ir.Value)],
        [s for s in sizes if isinstance(s, ir.Value)], [],
        [o if isinstance(o, int) else DYNAMIC for o in offsets],
        shape, list(steps)).result


def collapse_to_matrix(buffer: ir.Value, row_dims: int) -> ir.Value:
    """View an identity-layout SRAM buffer as 2-D: the first `row_dims` dims as rows."""
    return _collapsed(buffer, row_dims, None)


def collapse_view_to_matrix(view: ir.Value, row_dims: int) -> ir.Value:
    """View a strided SRAM view whose first `row_dims` dims collapse into one
    uniformly strided dim (problem.pixels_collapse_to_rows) as 2-D: those dims
    as rows, with their stride, over the contiguous last dim."""
    view_type = ir.MemRefType(view.type)
    shape = list(view_type.shape)
    strides, offset = view_type.get_strides_and_offset()
    row_stride = next((stride for size, stride in zip(shape[row_dims - 1::-1],
                                                      strides[row_dims - 1::-1]) if size != 1),
                      strides[row_dims - 1])
    return _collapsed(view, row_dims, ir.StridedLayoutAttr.get(offset, [row_stride, 1]))


def _collapsed(value: ir.Value, row_dims: int, layout) -> ir.Value:
    """memref.collapse_shape of `value` to (rows, columns), with `layout` (None:
    the identity)."""
    value_type = ir.MemRefType(value.type)
    shape = list(value_type.shape)

    def extent(sizes):   # dynamic when one of the sizes is (a loop's last tile)
        return DYNAMIC if DYNAMIC in sizes else math.prod(sizes)
    result = ir.MemRefType.get([extent(shape[:row_dims]), extent(shape[row_dims:])],
                               value_type.element_type, layout=layout,
                               memory_space=value_type.memory_space)
    groups = [list(range(row_dims)), list(range(row_dims, len(shape)))]
    reassociation = ir.ArrayAttr.get([
        ir.ArrayAttr.get([ir.IntegerAttr.get(ir.IntegerType.get_signless(64), d) for d in g])
        for g in groups])
    return memref.CollapseShapeOp(result, value, reassociation).result


def select_buffer(buffers: list[ir.Value], slot) -> ir.Value:
    if len(buffers) == 1:
        return buffers[0]
    if isinstance(slot, int):
        return buffers[slot]
    chosen = buffers[-1]
    for i in range(len(buffers) - 2, -1, -1):
        chosen = arith.SelectOp(compare("eq", slot, i), buffers[i], chosen).result
    return chosen


def static(op, name: str) -> list[int]:
    """An op's dense i64 array attribute (a subview's static_offsets, ...)."""
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


def mixed(subview_op, name: str) -> list:
    """Offsets or sizes of a memref.subview: ints where static, values otherwise."""
    dynamic = iter(getattr(subview_op.opview, name))
    marker = ir.ShapedType.get_dynamic_size() if name == "sizes" else \
        ir.ShapedType.get_dynamic_stride_or_offset()
    return [next(dynamic) if value == marker else value
            for value in static(subview_op, f"static_{name}")]
