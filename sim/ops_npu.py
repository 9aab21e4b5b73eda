"""The npu ops: SRAM buffers, DMA, synchronisation, matrix and vector units.

Every handler checks its operands (memories, shapes) at run time, issues the
op on its engine (timing and hazards, machine.py) and, unless in timing-only
mode, computes the result with numpy.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from atvoss_mlir import machine_model

from . import numerics
from .interpreter import impl
from .machine import Token
from .ops_memref import allocate, memref_dtype, memory_space
from .values import DRAM, SRAM, MemRef, format_view


def _attr(op, name, default=None):
    attributes = op.attributes
    if name not in attributes:
        return default
    attr = attributes[name]
    if isinstance(attr, ir.BoolAttr):
        return bool(attr.value)
    if isinstance(attr, ir.IntegerAttr):
        return attr.value
    if isinstance(attr, ir.FloatAttr):
        return attr.value
    if isinstance(attr, ir.StringAttr):
        return attr.value
    if isinstance(attr, ir.DenseI64ArrayAttr):
        return tuple(attr)
    raise ValueError(f"unsupported attribute {name} = {attr}")


def _require_sram(info, **operands) -> None:
    for name, memref in operands.items():
        if memref is not None and memref.space != SRAM:
            raise info.error(f"operand '{name}' is not an SRAM tile (memory space 1)")


def _shape_error(info, message: str, **operands):
    shapes = ", ".join(f"{name} {format_view(m)}" for name, m in operands.items() if m is not None)
    return info.error(f"{message} ({shapes})")


def _epilogue(op):
    return (_attr(op, "activation", "none"), _attr(op, "clip_min"), _attr(op, "clip_max"))


# -- SRAM buffers ---------------------------------------------------------------------

@impl("npu.alloc")
def npu_alloc(t, op, info):
    result_type = ir.MemRefType(op.results[0].type)
    if memory_space(result_type) != SRAM:
        raise info.error("result is not in SRAM (memory space 1)")
    if not result_type.has_static_shape:
        raise info.error("SRAM buffers must have a static shape")
    dtype, shape = memref_dtype(info, result_type), list(result_type.shape)
    offset = _attr(op, "offset")
    (r,) = t.slots(op.results)

    def run(regs):
        regs[r] = allocate(t, info, shape, dtype, SRAM, offset)
    return run


@impl("npu.dealloc")
def npu_dealloc(t, op, info):
    (a,) = t.slots(op.operands)
    machine = t.machine

    def run(regs):
        machine.sram_free(info, regs[a].buffer)
    return run


# -- DMA and synchronisation ------------------------------------------------------------

def _dma(t, op, info, load: bool):
    (a, b), (r,) = t.slots(op.operands), t.slots(op.results)
    channel = _attr(op, "channel")
    machine, target = t.machine, t.target
    engine = machine.dma_engine(info, channel)
    src_space, dst_space = (DRAM, SRAM) if load else (SRAM, DRAM)
    transfer_of = {}  # (shape, strides, itemsize, first byte mod burst) -> transfer cycles
    burst, setup = target.dma_burst_bytes, target.dma_setup_cycles
    issue = machine.run

    def run(regs):
        src, dst = regs[a], regs[b]
        if src.buffer.space != src_space or dst.buffer.space != dst_space:
            raise info.error("copies DRAM -> SRAM" if load else "copies SRAM -> DRAM")
        if src.shape != dst.shape or src.dtype != dst.dtype:
            raise _shape_error(info, "source and target differ in shape or element type",
                               source=src, target=dst)
        for view in (src, dst):
            low, high = view._range or view.byte_range()
            if (low < 0 or high > view.buffer.nbytes) and high > low:
                try:
                    view.check_bounds("source" if view is src else "target")
                except ValueError as failure:
                    raise info.error(str(failure)) from None
        dram = src if load else dst
        key = (dram.shape, dram.strides, dram.dtype.itemsize,
               (dram.buffer.address + dram.start_byte) % burst)
        transfer = transfer_of.get(key)
        if transfer is None:
            transfer = transfer_of[key] = machine_model.dma_transfer_cycles(*key, target)
        nbytes = dram.nbytes
        if load:
            token = issue(info, engine, setup, (src,), (dst,), dram_read=nbytes, dma=True,
                          transfer=transfer)
        else:
            token = issue(info, engine, setup, (src,), (dst,), dram_write=nbytes, dma=True,
                          transfer=transfer)
        if t.numerics:
            dst.array()[...] = src.array()
        regs[r] = token
    return run


@impl("npu.dma_load")
def npu_dma_load(t, op, info):
    return _dma(t, op, info, load=True)


@impl("npu.dma_store")
def npu_dma_store(t, op, info):
    return _dma(t, op, info, load=False)


@impl("npu.wait")
def npu_wait(t, op, info):
    tokens = t.slots(op.operands)
    machine = t.machine

    def run(regs):
        values = [regs[s] for s in tokens]
        for value in values:
            if value.__class__ is not Token:
                raise info.error("waits on a value that is not a DMA token")
        machine.wait(values)
    return run


@impl("npu.barrier")
def npu_barrier(t, op, info):
    machine = t.machine
    if _attr(op, "engines") == "compute":
        def run(regs):
            machine.compute_barrier()
    else:
        def run(regs):
            machine.barrier()
    return run


# -- matrix unit --------------------------------------------------------------------------

def _finish(t, info, out: MemRef, acc: np.ndarray, accumulate: bool, bias, epilogue,
            inputs) -> None:
    """Add the bias to `acc` (which starts from the output's value when
    `accumulate`), apply the activation, store."""
    target = out.array()
    inputs = [m.array() for m in inputs]
    if accumulate:
        inputs.append(target.copy())
    if bias is not None:
        inputs.append(bias.array())
        acc = acc + bias.array().astype(acc.dtype)
    _store(t, info, target, numerics.activation(acc, *epilogue), inputs)


def _store(t, info, target: np.ndarray, value, inputs) -> None:
    """Store a result, counting overflow and underflow (numeric_safety.py)."""
    numerics.store(target, value)
    t.machine.numeric_events.check_float(info, target, value, inputs)


@impl("npu.matmul")
def npu_matmul(t, op, info):
    slots = t.slots(op.operands)
    accumulate, epilogue = _attr(op, "accumulate"), _epilogue(op)
    machine, target = t.machine, t.target
    cycles_of = {}  # (m, n, k, int8) -> cycles
    bias_slot = slots[3] if len(slots) > 3 else None

    def run(regs):
        lhs, rhs, out = regs[slots[0]], regs[slots[1]], regs[slots[2]]
        bias = regs[bias_slot] if bias_slot is not None else None
        if (lhs.buffer.space != SRAM or rhs.buffer.space != SRAM or out.buffer.space != SRAM
                or (bias is not None and bias.buffer.space != SRAM)):
            _require_sram(info, lhs=lhs, rhs=rhs, output=out, bias=bias)
        if (len(lhs.shape) != 2 or len(rhs.shape) != 2 or lhs.shape[1] != rhs.shape[0]
                or out.shape != (lhs.shape[0], rhs.shape[1])
                or (bias is not None and bias.shape != (rhs.shape[1],))):
            raise _shape_error(info, "shapes do not form [M,K] x [K,N] -> [M,N] (+ bias [N])",
                               lhs=lhs, rhs=rhs, output=out, bias=bias)
        (m, k), n = lhs.shape, rhs.shape[1]
        key = (m, n, k, lhs.dtype == np.int8)
        cycles = cycles_of.get(key)
        if cycles is None:
            cycles = cycles_of[key] = machine_model.gemm_cycles(m, n, k, target, key[3])
        reads = [lhs, rhs]
        if accumulate:
            reads.append(out)
        if bias is not None:
            reads.append(bias)
        machine.run(info, "matrix", cycles, reads, (out,), macs=m * n * k, int8=key[3])
        if t.numerics:
            acc = numerics.accumulator_dtype(lhs.dtype)
            result = numerics.matmul(lhs.array(), rhs.array(), acc,
                                     out.array() if accumulate else None)
            _finish(t, info, out, result, accumulate, bias, epilogue, (lhs, rhs))
    return run


def _window_output(info, form: str, x, w, out, bias, filter_rank: int, strides, dilations):
    """(OH, OW) of a conv of NHWC `x` with a KH x KW x C (x F) filter; a located
    error unless the shapes form `form` for these strides and dilations."""
    ok = len(x.shape) == 4 and len(w.shape) == filter_rank and w.shape[2] == x.shape[3]
    if ok:
        kh, kw, channels = w.shape[0], w.shape[1], w.shape[-1]
        oh = numerics.conv_output_size(x.shape[1], kh, strides[0], dilations[0])
        ow = numerics.conv_output_size(x.shape[2], kw, strides[1], dilations[1])
        ok = out.shape == (x.shape[0], oh, ow, channels) and \
            (bias is None or bias.shape == (channels,))
    if not ok:
        raise _shape_error(info, f"shapes do not form {form} for these strides and "
                           "dilations", input=x, filter=w, output=out, bias=bias)
    return oh, ow


@impl("npu.conv2d")
def npu_conv2d(t, op, info):
    slots = t.slots(op.operands)
    strides, dilations = _attr(op, "strides"), _attr(op, "dilations")
    accumulate, epilogue = _attr(op, "accumulate"), _epilogue(op)
    machine, target = t.machine, t.target

    def run(regs):
        x, w, out = regs[slots[0]], regs[slots[1]], regs[slots[2]]
        bias = regs[slots[3]] if len(slots) > 3 else None
        _require_sram(info, input=x, filter=w, output=out, bias=bias)
        oh, ow = _window_output(info, "NHWC * HWCF -> NHWC", x, w, out, bias, 4,
                                strides, dilations)
        kh, kw, c, f = w.shape
        m, k = x.shape[0] * oh * ow, kh * kw * c
        int8 = x.dtype == np.int8
        cycles = machine_model.gemm_cycles(m, f, k, target, int8)
        reads = [x, w] + ([out] if accumulate else []) + ([bias] if bias else [])
        machine.run(info, "matrix", cycles, reads, [out], macs=m * f * k, int8=int8)
        if t.numerics:
            acc = numerics.accumulator_dtype(x.dtype)
            result = numerics.conv2d(x.array(), w.array(), oh, ow, strides, dilations, acc,
                                     out.array() if accumulate else None)
            _finish(t, info, out, result, accumulate, bias, epilogue, (x, w))
    return run


# -- vector unit ---------------------------------------------------------------------------

@impl("npu.depthwise_conv2d")
def npu_depthwise_conv2d(t, op, info):
    slots = t.slots(op.operands)
    strides, dilations, epilogue = _attr(op, "strides"), _attr(op, "dilations"), _epilogue(op)
    machine, target = t.machine, t.target

    def run(regs):
        x, w, out = regs[slots[0]], regs[slots[1]], regs[slots[2]]
        bias = regs[slots[3]] if len(slots) > 3 else None
        _require_sram(info, input=x, filter=w, output=out, bias=bias)
        oh, ow = _window_output(info, "NHWC * HWC -> NHWC", x, w, out, bias, 3,
                                strides, dilations)
        kh, kw, c = w.shape
        taps = kh * kw
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target, taps),
                    [x, w] + ([bias] if bias else []), [out], macs=out.size * taps,
                    int8=x.dtype == np.int8)
        if t.numerics:
            acc = numerics.accumulator_dtype(x.dtype)
            result = numerics.depthwise_conv2d(x.array(), w.array(), oh, ow, strides,
                                               dilations, acc)
            _finish(t, info, out, result, False, bias, epilogue, (x, w))
    return run


@impl("npu.elementwise")
def npu_elementwise(t, op, info):
    (a, b, c) = t.slots(op.operands)
    kind = _attr(op, "kind")
    fn = numerics.BINARY[kind]
    machine, target = t.machine, t.target

    def run(regs):
        lhs, rhs, out = regs[a], regs[b], regs[c]
        _require_sram(info, lhs=lhs, rhs=rhs, output=out)
        try:
            ok = np.broadcast_shapes(lhs.shape, rhs.shape, out.shape) == out.shape
        except ValueError:
            ok = False
        if not ok:
            raise _shape_error(info, "operands do not broadcast to the output shape",
                               lhs=lhs, rhs=rhs, output=out)
        machine.run(info, "vector", machine_model.vector_kind_cycles(kind, out.size, target),
                    [lhs, rhs], [out])
        if t.numerics:
            acc = numerics.accumulator_dtype(out.dtype)
            _store(t, info, out.array(), fn(lhs.array().astype(acc), rhs.array().astype(acc)),
                   (lhs.array(), rhs.array()))
    return run


@impl("npu.activation")
def npu_activation(t, op, info):
    (a, b) = t.slots(op.operands)
    epilogue = (_attr(op, "kind"), _attr(op, "clip_min"), _attr(op, "clip_max"))
    machine, target = t.machine, t.target

    def run(regs):
        x, out = regs[a], regs[b]
        _require_sram(info, input=x, output=out)
        if x.shape != out.shape:
            raise _shape_error(info, "input and output shapes differ", input=x, output=out)
        machine.run(info, "vector", machine_model.vector_kind_cycles(epilogue[0], out.size, target),
                    [x], [out])
        if t.numerics:
            _store(t, info, out.array(), numerics.activation(x.array(), *epilogue), (x.array(),))
    return run


@impl("npu.compare")
def npu_compare(t, op, info):
    (a, b, c) = t.slots(op.operands)
    fn = numerics.COMPARE[_attr(op, "kind")]
    machine, target = t.machine, t.target

    def run(regs):
        lhs, rhs, out = regs[a], regs[b], regs[c]
        _require_sram(info, lhs=lhs, rhs=rhs, output=out)
        if not _broadcasts(out.shape, lhs, rhs):
            raise _shape_error(info, "operands do not broadcast to the output shape",
                               lhs=lhs, rhs=rhs, output=out)
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target), [lhs, rhs],
                    [out])
        if t.numerics:
            numerics.store(out.array(), fn(lhs.array(), rhs.array()))
    return run


@impl("npu.select")
def npu_select(t, op, info):
    slots = t.slots(op.operands)
    machine, target = t.machine, t.target

    def run(regs):
        condition, on_true, on_false, out = (regs[s] for s in slots)
        _require_sram(info, condition=condition, on_true=on_true, on_false=on_false, output=out)
        if not _broadcasts(out.shape, condition, on_true, on_false):
            raise _shape_error(info, "operands do not broadcast to the output shape",
                               condition=condition, on_true=on_true, on_false=on_false,
                               output=out)
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target),
                    [condition, on_true, on_false], [out])
        if t.numerics:
            _store(t, info, out.array(),
                   np.where(condition.array().astype(bool), on_true.array(), on_false.array()),
                   (on_true.array(), on_false.array()))
    return run


def _broadcasts(shape, *operands) -> bool:
    try:
        return np.broadcast_shapes(*(m.shape for m in operands), shape) == shape
    except ValueError:
        return False


@impl("npu.reduce")
def npu_reduce(t, op, info):
    (a, b) = t.slots(op.operands)
    kind, reduced, accumulate = _attr(op, "kind"), _attr(op, "dims"), _attr(op, "accumulate")
    machine, target = t.machine, t.target

    def run(regs):
        x, out = regs[a], regs[b]
        _require_sram(info, input=x, output=out)
        kept = tuple(n for d, n in enumerate(x.shape) if d not in reduced)
        if list(reduced) != sorted(set(reduced)) or any(not 0 <= d < len(x.shape)
                                                          for d in reduced) or kept != out.shape:
            raise _shape_error(info, f"output is not the input without dims {list(reduced)}",
                               input=x, output=out)
        machine.run(info, "vector", machine_model.vector_cycles(x.size, target), [x], [out])
        if t.numerics:
            acc = numerics.accumulator_dtype(x.dtype) if kind == "sum" else x.dtype
            value = numerics.REDUCE[kind](x.array().astype(acc), axis=tuple(reduced))
            inputs = (x.array(),)
            if accumulate:
                previous = out.array().astype(acc)
                value = previous + value if kind == "sum" else \
                    numerics.BINARY[kind](previous, value)
                inputs += (out.array().copy(),)
            _store(t, info, out.array(), np.asarray(value), inputs)
    return run


@impl("npu.pool2d")
def npu_pool2d(t, op, info):
    (a, b) = t.slots(op.operands)
    kind, window, strides = _attr(op, "kind"), _attr(op, "window"), _attr(op, "strides")
    machine, target = t.machine, t.target

    def run(regs):
        x, out = regs[a], regs[b]
        _require_sram(info, input=x, output=out)
        ok = len(x.shape) == 4
        if ok:
            oh = numerics.conv_output_size(x.shape[1], window[0], strides[0], 1)
            ow = numerics.conv_output_size(x.shape[2], window[1], strides[1], 1)
            ok = out.shape == (x.shape[0], oh, ow, x.shape[3])
        if not ok:
            raise _shape_error(info, "output shape does not follow from the window and "
                               "strides", input=x, output=out)
        taps = window[0] * window[1]
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target, taps), [x], [out])
        if t.numerics:
            _store(t, info, out.array(),
                   numerics.pool2d(x.array(), kind, oh, ow, window, strides), (x.array(),))
    return run


@impl("npu.transpose")
def npu_transpose(t, op, info):
    (a, b) = t.slots(op.operands)
    permutation = _attr(op, "permutation")
    machine, target = t.machine, t.target

    def run(regs):
        x, out = regs[a], regs[b]
        _require_sram(info, input=x, output=out)
        if (sorted(permutation) != list(range(len(x.shape)))
                or out.shape != tuple(x.shape[p] for p in permutation)):
            raise _shape_error(info, f"output is not the input permuted by {list(permutation)}",
                               input=x, output=out)
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target), [x], [out])
        if t.numerics:
            out.array()[...] = np.transpose(x.array(), permutation)
    return run


@impl("npu.im2col")
def npu_im2col(t, op, info):
    (a, b) = t.slots(op.operands)
    window, strides = _attr(op, "window"), _attr(op, "strides")
    dilations = _attr(op, "dilations")
    machine, target = t.machine, t.target

    def run(regs):
        x, out = regs[a], regs[b]
        _require_sram(info, input=x, output=out)
        ok = len(x.shape) == 4
        if ok:
            oh = numerics.conv_output_size(x.shape[1], window[0], strides[0], dilations[0])
            ow = numerics.conv_output_size(x.shape[2], window[1], strides[1], dilations[1])
            ok = out.shape == (x.shape[0] * oh * ow, window[0] * window[1] * x.shape[3])
        if not ok:
            raise _shape_error(info, "output is not N*OH*OW x KH*KW*C for this window",
                               input=x, output=out)
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target), [x], [out])
        if t.numerics:
            out.array()[...] = numerics.im2col(x.array(), oh, ow, window, strides, dilations)
    return run


@impl("npu.fill")
def npu_fill(t, op, info):
    (a,) = t.slots(op.operands)
    value = _attr(op, "value")
    machine, target = t.machine, t.target

    def run(regs):
        out = regs[a]
        _require_sram(info, output=out)
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target), [], [out])
        if t.numerics:
            numerics.store(out.array(), np.asarray(value))
    return run


@impl("npu.requantize")
def npu_requantize(t, op, info):
    (a, b) = t.slots(op.operands)
    scale, zero_point = _attr(op, "scale"), _attr(op, "zero_point")
    machine, target = t.machine, t.target

    def run(regs):
        x, out = regs[a], regs[b]
        _require_sram(info, input=x, output=out)
        if x.shape != out.shape or x.dtype != np.int32 or out.dtype != np.int8:
            raise _shape_error(info, "expects an i32 input and an i8 output of one shape",
                               input=x, output=out)
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target), [x], [out])
        if t.numerics:
            out.array()[...] = numerics.requantize(x.array(), scale, zero_point)
            machine.numeric_events.check_requantize(info, x.array(), scale, zero_point)
    return run
