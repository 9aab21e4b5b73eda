"""memref: buffers and views (descriptor arithmetic), copies, loads and stores.

Views never copy: subview, cast, reinterpret_cast, view, collapse_shape and
expand_shape compute a new descriptor on the same buffer. memref.alloc in
memory space 1 is an SRAM buffer placed like an npu.alloc without offset.
memref.copy runs on the fallback engine; memref.load/store are scalar
bookkeeping and cost nothing (in timing-only mode a load reads 0).
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from atvoss_mlir import machine_model

from .interpreter import impl
from .values import (DRAM, SRAM, Buffer, MemRef, identity_strides, numpy_dtype,
                     unsupported_element, written_mask)

DYNAMIC = ir.ShapedType.get_dynamic_size()


def memref_dtype(info, type_: ir.Type) -> np.dtype:
    element = ir.MemRefType(type_).element_type
    dtype = numpy_dtype(element)
    if dtype is None:
        raise info.error(unsupported_element(element))
    return dtype


def memory_space(type_: ir.Type) -> int:
    space = ir.MemRefType(type_).memory_space
    if space is None:
        return DRAM
    if isinstance(space, ir.IntegerAttr):
        return SRAM if space.value == SRAM else DRAM
    raise ValueError(f"unsupported memory space {space}")


def mixed_values(t, static, dynamic_values):
    """A function regs -> list of ints from a static list with DYNAMIC holes
    filled, in order, from SSA operands."""
    static = list(static)
    slots = iter(t.slots(dynamic_values))
    plan = [(True, next(slots)) if v == DYNAMIC else (False, v) for v in static]
    if not any(dynamic for dynamic, _ in plan):
        return lambda regs: static
    return lambda regs: [regs[v] if dynamic else v for dynamic, v in plan]


def _operand_group(op, name: str):
    """Operands of the operand segment `name` of an op with attribute-sized segments."""
    view = op.opview if hasattr(op, "opview") else op
    value = getattr(view, name)
    return list(value) if value is not None else []


def allocate(t, info, shape, dtype, space: int, offset=None) -> MemRef:
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    machine = t.machine
    if space == SRAM:
        previous = t.frame_state.get(id(info))
        if previous is not None and previous.live:
            machine.sram_free(info, previous)  # re-running an alloc ends the old instance
        buffer = machine.sram_alloc(info, nbytes, offset, f"{info.name}@{info.loc}")
        t.frame_state[id(info)] = buffer
    else:
        buffer = Buffer(nbytes, DRAM, f"{info.name}@{info.loc}", info, t.numerics)
    return MemRef(buffer, dtype, shape, identity_strides(shape))


@impl("memref.alloc", "memref.alloca")
def memref_alloc(t, op, info):
    result_type = ir.MemRefType(op.results[0].type)
    dtype, space = memref_dtype(info, result_type), memory_space(result_type)
    shape = mixed_values(t, result_type.shape, _operand_group(op, "dynamicSizes"))
    (r,) = t.slots(op.results)

    def run(regs):
        regs[r] = allocate(t, info, shape(regs), dtype, space)
    return run


@impl("memref.dealloc")
def memref_dealloc(t, op, info):
    (m,) = t.slots(op.operands)
    machine = t.machine

    def run(regs):
        buffer = regs[m].buffer
        if buffer.space == SRAM:
            machine.sram_free(info, buffer)
        else:
            buffer.live = False
    return run


def _dropped_dims(op, static_sizes, static_strides) -> list[int]:
    """Which unit dimensions a rank-reducing subview drops. Like MLIR, the strides
    of the result type decide: a unit dimension is dropped when the result has
    fewer dimensions of its stride than the source ([1, 4, 16, 1] -> [1, 4, 16]
    keeps the leading unit dimension when the result's last stride is 1)."""
    result_type = ir.MemRefType(op.results[0].type)
    drops = len(static_sizes) - result_type.rank
    if drops == 0:
        return []
    source_strides, _ = ir.MemRefType(op.operands[0].type).get_strides_and_offset()
    result_strides, _ = result_type.get_strides_and_offset()
    strides = [stride * step for stride, step in zip(source_strides, static_strides)]
    if DYNAMIC not in source_strides + result_strides + list(static_strides):
        unmatched = {}
        for stride in strides:
            unmatched[stride] = unmatched.get(stride, 0) + 1
        for stride in result_strides:
            unmatched[stride] = unmatched.get(stride, 0) - 1
        dropped = []
        for i, size in enumerate(static_sizes):
            if size == 1 and unmatched.get(strides[i], 0) > 0:
                dropped.append(i)
                unmatched[strides[i]] -= 1
        if len(dropped) == drops:
            return dropped
    return _leftmost_unit_dims(len(static_sizes), static_sizes, result_type.shape)


def _leftmost_unit_dims(source_rank: int, static_sizes, result_shape) -> list[int]:
    """The unit dimensions a rank-reducing subview drops, greedy from the left."""
    drops = source_rank - len(result_shape)
    dropped, j = [], 0
    for i, size in enumerate(static_sizes):
        if drops and size == 1 and (j >= len(result_shape) or result_shape[j] != 1
                                    or source_rank - i > len(result_shape) - j + drops - 1):
            dropped.append(i)
            drops -= 1
        else:
            j += 1
    return dropped


def _subview_error(i: int, o: int, n: int, s: int, size: int):
    return ValueError(f"slice [{o}, +{n}, step {s}] of dimension {i} is out of bounds of "
                      f"size {size}")


@impl("memref.subview")
def memref_subview(t, op, info):
    """Compiled into one specialised Python function per op: the view
    arithmetic of a subview runs in every loop iteration of a tiled program."""
    attrs = op.attributes
    source = t.slot(op.operands[0])
    static_sizes = list(ir.DenseI64ArrayAttr(attrs["static_sizes"]))
    dropped = set(_dropped_dims(op, static_sizes,
                                list(ir.DenseI64ArrayAttr(attrs["static_strides"]))))
    (r,) = t.slots(op.results)

    def terms(static, dynamic_values):
        slots = iter(t.slots(dynamic_values))
        return [f"regs[{next(slots)}]" if v == DYNAMIC else str(v) for v in static]
    offsets = terms(ir.DenseI64ArrayAttr(attrs["static_offsets"]), _operand_group(op, "offsets"))
    sizes = terms(static_sizes, _operand_group(op, "sizes"))
    strides = terms(ir.DenseI64ArrayAttr(attrs["static_strides"]), _operand_group(op, "strides"))
    lines = ["def run(regs):", f"    src = regs[{source}]", "    shp, st = src.shape, src.strides",
             "    offset = src.offset"]
    shape, new_strides = [], []
    for i, (o, n, s) in enumerate(zip(offsets, sizes, strides)):
        lines += [f"    o{i} = {o}", f"    n{i} = {n}", f"    s{i} = {s}",
                  f"    if o{i} < 0 or n{i} < 0 or (n{i} and o{i} + (n{i} - 1) * s{i} >= shp[{i}]):",
                  f"        raise error({i}, o{i}, n{i}, s{i}, shp[{i}])"]
        if o != "0":
            lines.append(f"    offset += o{i} * st[{i}]")
        if i not in dropped:
            shape.append(f"n{i}")
            new_strides.append(f"st[{i}]" if s == "1" else f"s{i} * st[{i}]")
    tuple_of = lambda items: f"({', '.join(items)}{',' if len(items) == 1 else ''})"  # noqa: E731
    lines.append(f"    regs[{r}] = MemRef(src.buffer, src.dtype, {tuple_of(shape)}, "
                 f"{tuple_of(new_strides)}, offset, src.base_byte)")
    namespace = {"MemRef": MemRef, "error": _subview_error}
    exec(compile("\n".join(lines), f"<memref.subview at {info.loc}>", "exec"), namespace)
    return namespace["run"]


@impl("memref.cast", "memref.assume_alignment", "memref.memory_space_cast")
def memref_cast(t, op, info):
    (a,), (r,) = t.slots(op.operands[:1]), t.slots(op.results)

    def run(regs):
        regs[r] = regs[a]
    return run


@impl("memref.reinterpret_cast")
def memref_reinterpret_cast(t, op, info):
    attrs = op.attributes
    source = t.slot(op.operands[0])
    offsets = mixed_values(t, ir.DenseI64ArrayAttr(attrs["static_offsets"]),
                           _operand_group(op, "offsets"))
    sizes = mixed_values(t, ir.DenseI64ArrayAttr(attrs["static_sizes"]),
                         _operand_group(op, "sizes"))
    strides = mixed_values(t, ir.DenseI64ArrayAttr(attrs["static_strides"]),
                           _operand_group(op, "strides"))
    (r,) = t.slots(op.results)

    def run(regs):
        src = regs[source]
        # Bounds are checked where the view is used (the DMA or compute op).
        regs[r] = MemRef(src.buffer, src.dtype, sizes(regs), strides(regs), offsets(regs)[0],
                         src.base_byte)
    return run


@impl("memref.view")
def memref_view(t, op, info):
    result_type = ir.MemRefType(op.results[0].type)
    dtype = memref_dtype(info, result_type)
    source, shift = t.slots(op.operands[:2])
    shape = mixed_values(t, result_type.shape, list(op.operands[2:]))
    (r,) = t.slots(op.results)

    def run(regs):
        src = regs[source]
        shp = shape(regs)
        regs[r] = MemRef(src.buffer, dtype, shp, identity_strides(shp), 0,
                         src.start_byte + regs[shift])
    return run


def _reassociation(op) -> list[list[int]]:
    return [[ir.IntegerAttr(i).value for i in group]
            for group in ir.ArrayAttr(op.attributes["reassociation"])]


@impl("memref.collapse_shape")
def memref_collapse_shape(t, op, info):
    groups = _reassociation(op)
    (a,), (r,) = t.slots(op.operands), t.slots(op.results)

    def run(regs):
        src = regs[a]
        shape, strides = [], []
        for group in groups:
            size, stride = 1, 1
            for k in reversed(group):  # innermost dimension first
                n, s = src.shape[k], src.strides[k]
                if n != 1:
                    if size != 1 and s != stride * size:
                        raise ValueError(f"dimensions {group} are not contiguous")
                    if size == 1:
                        stride = s
                    size *= n
            shape.append(size)
            strides.append(stride)
        regs[r] = MemRef(src.buffer, src.dtype, shape, strides, src.offset, src.base_byte)
    return run


@impl("memref.expand_shape")
def memref_expand_shape(t, op, info):
    groups = _reassociation(op)
    out_shape = mixed_values(t, ir.DenseI64ArrayAttr(op.attributes["static_output_shape"]),
                             list(op.operands[1:]))
    (a,), (r,) = t.slots(op.operands[:1]), t.slots(op.results)

    def run(regs):
        src, shape = regs[a], out_shape(regs)
        strides = [0] * len(shape)
        for group, stride in zip(groups, src.strides):
            for k in reversed(group):
                strides[k] = stride
                stride *= shape[k]
        regs[r] = MemRef(src.buffer, src.dtype, shape, strides, src.offset, src.base_byte)
    return run


@impl("memref.dim")
def memref_dim(t, op, info):
    (a, i), (r,) = t.slots(op.operands), t.slots(op.results)

    def run(regs):
        regs[r] = regs[a].shape[regs[i]]
    return run


def dram_bytes(memref: MemRef) -> int:
    return memref.nbytes if memref.space == DRAM else 0


@impl("memref.copy")
def memref_copy(t, op, info):
    (a, b) = t.slots(op.operands)
    machine, target = t.machine, t.target

    def run(regs):
        src, dst = regs[a], regs[b]
        if src.shape != dst.shape:
            raise ValueError(f"source shape {src.shape} differs from target shape {dst.shape}")
        src.check_bounds("source")
        dst.check_bounds("target")
        machine.run(info, "fallback", machine_model.fallback_cycles(src.size, 1, target), [src], [dst],
                    dram_read=dram_bytes(src), dram_write=dram_bytes(dst))
        if t.numerics:
            dst.array()[...] = src.array()
    return run


@impl("memref.load")
def memref_load(t, op, info):
    (a, *indices), (r,) = t.slots(op.operands), t.slots(op.results)
    to_scalar = bool if str(ir.MemRefType(op.operands[0].type).element_type) == "i1" else None

    def run(regs):
        if not t.numerics:
            regs[r] = 0
            return
        value = regs[a].array()[tuple(regs[i] for i in indices)].item()
        regs[r] = to_scalar(value) if to_scalar else value
    return run


@impl("memref.store")
def memref_store(t, op, info):
    (v, a, *indices) = t.slots(op.operands)

    def run(regs):
        memref = regs[a]
        if memref.buffer.written is not None:
            element = MemRef(memref.buffer, memref.dtype, (), (), memref.offset + sum(
                regs[i] * s for i, s in zip(indices, memref.strides)), memref.base_byte)
            mask = written_mask(element)
            if mask is not None:
                mask[...] = True
        if t.numerics:
            memref.array()[tuple(regs[i] for i in indices)] = regs[v]
    return run


@impl("memref.get_global")
def memref_get_global(t, op, info):
    name = ir.FlatSymbolRefAttr(op.attributes["name"]).value
    result_type = ir.MemRefType(op.results[0].type)
    dtype = memref_dtype(info, result_type)
    shape = list(result_type.shape)
    global_op = t.globals.get(name)
    if global_op is None:
        raise info.error(f"no memref.global named '{name}'")
    initial = global_op.attributes["initial_value"] if "initial_value" in global_op.attributes \
        else None
    (r,) = t.slots(op.results)
    made = []

    def run(regs):
        if not made:  # one buffer per global, made on first use
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            buffer = Buffer(nbytes, DRAM, name, info, t.numerics)
            # The bytes read are compulsory DRAM traffic (the weights), as for arguments.
            buffer.touched = np.zeros(nbytes, np.uint8)
            t.machine.dram_globals.append(buffer)
            memref = MemRef(buffer, dtype, shape, identity_strides(shape))
            if t.numerics and isinstance(initial, ir.DenseElementsAttr):
                memref.array()[...] = dense_to_numpy(initial, dtype, shape)
            elif t.numerics and initial is not None and str(initial).startswith("dense_resource<"):
                memref.array()[...] = resource_to_numpy(t, info, initial, dtype, shape)
            made.append(memref)
        regs[r] = made[0]
    return run


def resource_to_numpy(t, info, attr, dtype: np.dtype, shape) -> np.ndarray:
    key = str(attr)[len("dense_resource<"):].split(">", 1)[0]
    blob = t.resource_blob(key)
    count = int(np.prod(shape, dtype=np.int64))
    # A blob starts with its 4-byte alignment, then the elements.
    if blob is None or len(blob) - 4 != count * dtype.itemsize:
        raise info.error(f"the data of dense_resource<{key}> is missing or has the wrong "
                         f"size for {count} elements of {dtype}")
    return np.frombuffer(blob, dtype, count, offset=4).reshape(shape)


def dense_to_numpy(attr: ir.DenseElementsAttr, dtype: np.dtype, shape) -> np.ndarray:
    if attr.is_splat:
        value = attr.get_splat_value()
        return np.full(shape, value.value, dtype)
    return np.array(attr, copy=True).astype(dtype).reshape(shape)
