"""The npu ops of the vector unit: depthwise convolution, elementwise,
activation, compare, select, reduce, pooling, transpose, im2col, fill and
requantisation, each at the vector lanes' throughput
(machine_model.vector_cycles)."""

from __future__ import annotations

import numpy as np

from atvoss_mlir import machine_model

from . import numerics
from .interpreter import impl
from .npu_operands import (attr, broadcasts, epilogue_of, finish, require_sram, shape_error,
                           store_checked, window_output)


@impl("npu.depthwise_conv2d")
def npu_depthwise_conv2d(t, op, info):
    slots = t.slots(op.operands)
    strides, dilations, epilogue = attr(op, "strides"), attr(op, "dilations"), epilogue_of(op)
    machine, target = t.machine, t.target

    def run(regs):
        x, w, out = regs[slots[0]], regs[slots[1]], regs[slots[2]]
        bias = regs[slots[3]] if len(slots) > 3 else None
        require_sram(info, input=x, filter=w, output=out, bias=bias)
        oh, ow = window_output(info, "NHWC * HWC -> NHWC", x, w, out, bias, 3,
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
            finish(t, info, out, result, False, bias, epilogue, (x, w))
    return run


@impl("npu.elementwise")
def npu_elementwise(t, op, info):
    (a, b, c) = t.slots(op.operands)
    kind = attr(op, "kind")
    fn = numerics.BINARY[kind]
    epilogue = epilogue_of(op)   # one pass of the lanes: applied on the way out
    machine, target = t.machine, t.target

    def run(regs):
        lhs, rhs, out = regs[a], regs[b], regs[c]
        require_sram(info, lhs=lhs, rhs=rhs, output=out)
        if not broadcasts(out.shape, lhs, rhs):
            raise shape_error(info, "operands do not broadcast to the output shape",
                              lhs=lhs, rhs=rhs, output=out)
        machine.run(info, "vector", machine_model.vector_kind_cycles(kind, out.size, target),
                    [lhs, rhs], [out])
        if t.numerics:
            acc = numerics.accumulator_dtype(out.dtype)
            with np.errstate(over="ignore", invalid="ignore"):  # counted by numeric_safety.py
                result = numerics.activation(
                    fn(lhs.array().astype(acc), rhs.array().astype(acc)), *epilogue)
            store_checked(t, info, out.array(), result, (lhs.array(), rhs.array()))
    return run


@impl("npu.activation")
def npu_activation(t, op, info):
    (a, b) = t.slots(op.operands)
    epilogue = (attr(op, "kind"), attr(op, "clip_min"), attr(op, "clip_max"))
    machine, target = t.machine, t.target

    def run(regs):
        x, out = regs[a], regs[b]
        require_sram(info, input=x, output=out)
        if x.shape != out.shape:
            raise shape_error(info, "input and output shapes differ", input=x, output=out)
        machine.run(info, "vector", machine_model.vector_kind_cycles(epilogue[0], out.size, target),
                    [x], [out])
        if t.numerics:
            store_checked(t, info, out.array(), numerics.activation(x.array(), *epilogue),
                          (x.array(),))
    return run


@impl("npu.compare")
def npu_compare(t, op, info):
    (a, b, c) = t.slots(op.operands)
    fn = numerics.COMPARE[attr(op, "kind")]
    machine, target = t.machine, t.target

    def run(regs):
        lhs, rhs, out = regs[a], regs[b], regs[c]
        require_sram(info, lhs=lhs, rhs=rhs, output=out)
        if not broadcasts(out.shape, lhs, rhs):
            raise shape_error(info, "operands do not broadcast to the output shape",
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
        require_sram(info, condition=condition, on_true=on_true, on_false=on_false, output=out)
        if not broadcasts(out.shape, condition, on_true, on_false):
            raise shape_error(info, "operands do not broadcast to the output shape",
                              condition=condition, on_true=on_true, on_false=on_false,
                              output=out)
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target),
                    [condition, on_true, on_false], [out])
        if t.numerics:
            chosen = np.where(condition.array().astype(bool), on_true.array(), on_false.array())
            store_checked(t, info, out.array(), chosen, (on_true.array(), on_false.array()))
    return run


@impl("npu.reduce")
def npu_reduce(t, op, info):
    (a, b) = t.slots(op.operands)
    kind, reduced, accumulate = attr(op, "kind"), attr(op, "dims"), attr(op, "accumulate")
    machine, target = t.machine, t.target

    def run(regs):
        x, out = regs[a], regs[b]
        require_sram(info, input=x, output=out)
        kept = tuple(n for d, n in enumerate(x.shape) if d not in reduced)
        if list(reduced) != sorted(set(reduced)) or any(not 0 <= d < len(x.shape)
                                                          for d in reduced) or kept != out.shape:
            raise shape_error(info, f"output is not the input without dims {list(reduced)}",
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
            store_checked(t, info, out.array(), np.asarray(value), inputs)
    return run


@impl("npu.pool2d")
def npu_pool2d(t, op, info):
    (a, b) = t.slots(op.operands)
    kind, window, strides = attr(op, "kind"), attr(op, "window"), attr(op, "strides")
    machine, target = t.machine, t.target

    def run(regs):
        x, out = regs[a], regs[b]
        require_sram(info, input=x, output=out)
        ok = len(x.shape) == 4
        if ok:
            oh = numerics.conv_output_size(x.shape[1], window[0], strides[0], 1)
            ow = numerics.conv_output_size(x.shape[2], window[1], strides[1], 1)
            ok = out.shape == (x.shape[0], oh, ow, x.shape[3])
        if not ok:
            raise shape_error(info, "output shape does not follow from the window and "
                              "strides", input=x, output=out)
        taps = window[0] * window[1]
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target, taps), [x], [out])
        if t.numerics:
            store_checked(t, info, out.array(),
                          numerics.pool2d(x.array(), kind, oh, ow, window, strides), (x.array(),))
    return run


@impl("npu.transpose")
def npu_transpose(t, op, info):
    (a, b) = t.slots(op.operands)
    permutation = attr(op, "permutation")
    machine, target = t.machine, t.target

    def run(regs):
        x, out = regs[a], regs[b]
        require_sram(info, input=x, output=out)
        if (sorted(permutation) != list(range(len(x.shape)))
                or out.shape != tuple(x.shape[p] for p in permutation)):
            raise shape_error(info, f"output is not the input permuted by {list(permutation)}",
                              input=x, output=out)
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target), [x], [out])
        info.moved_bytes += out.size * out.dtype.itemsize
        if t.numerics:
            out.array()[...] = np.transpose(x.array(), permutation)
    return run


@impl("npu.im2col")
def npu_im2col(t, op, info):
    (a, b) = t.slots(op.operands)
    window, strides = attr(op, "window"), attr(op, "strides")
    dilations = attr(op, "dilations")
    machine, target = t.machine, t.target

    def run(regs):
        x, out = regs[a], regs[b]
        require_sram(info, input=x, output=out)
        ok = len(x.shape) == 4
        if ok:
            oh = numerics.conv_output_size(x.shape[1], window[0], strides[0], dilations[0])
            ow = numerics.conv_output_size(x.shape[2], window[1], strides[1], dilations[1])
            ok = out.shape == (x.shape[0] * oh * ow, window[0] * window[1] * x.shape[3])
        if not ok:
            raise shape_error(info, "output is not N*OH*OW x KH*KW*C for this window",
                              input=x, output=out)
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target), [x], [out])
        if t.numerics:
            out.array()[...] = numerics.im2col(x.array(), oh, ow, window, strides, dilations)
    return run


@impl("npu.fill")
def npu_fill(t, op, info):
    (a,) = t.slots(op.operands)
    value = attr(op, "value")
    machine, target = t.machine, t.target

    def run(regs):
        out = regs[a]
        require_sram(info, output=out)
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target), [], [out])
        if t.numerics:
            numerics.store(out.array(), np.asarray(value))
    return run


@impl("npu.requantize")
def npu_requantize(t, op, info):
    slots = t.slots(op.operands)
    a, b = slots[0], slots[1]
    c = slots[2] if len(slots) > 2 else None
    scale, zero_point = attr(op, "scale"), attr(op, "zero_point")
    divide = "divide" in op.attributes and bool(attr(op, "divide"))
    offset = attr(op, "offset", 0.0)
    machine, target = t.machine, t.target

    def run(regs):
        x, out = regs[a], regs[b]
        require_sram(info, input=x, output=out)
        if x.shape != out.shape or x.dtype not in (np.int32, np.float32) \
                or out.dtype != np.int8:
            raise shape_error(info, "expects an i32 or f32 input and an i8 output of one shape",
                              input=x, output=out)
        inputs = [x]
        factor = scale
        if c is not None:
            scales = regs[c]
            require_sram(info, scales=scales)
            if scales.dtype != np.float32 or not broadcasts(out.shape, scales):
                raise shape_error(info, "expects f32 scales that broadcast to the output",
                                  scales=scales, output=out)
            inputs.append(scales)
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target), inputs, [out])
        if t.numerics:
            if c is not None:
                factor = regs[c].array()
            out.array()[...] = numerics.requantize(x.array(), factor, zero_point, divide,
                                                   offset)
            machine.numeric_events.check_requantize(info, x.array(), factor, zero_point, divide,
                                                    offset)
    return run


@impl("npu.quantized_add")
def npu_quantized_add(t, op, info):
    (a, b, c) = t.slots(op.operands)
    scales = attr(op, "lhs_scale"), attr(op, "rhs_scale")
    offset, shift, zero_point = attr(op, "offset"), attr(op, "input_shift"), attr(op, "zero_point")
    machine, target = t.machine, t.target

    def run(regs):
        lhs, rhs, out = regs[a], regs[b], regs[c]
        require_sram(info, lhs=lhs, rhs=rhs, output=out)
        if lhs.shape != out.shape or not broadcasts(out.shape, rhs) or \
                {lhs.dtype, rhs.dtype, out.dtype} != {np.dtype(np.int8)}:
            raise shape_error(info, "expects i8 inputs and output, the rhs broadcast to the "
                              "output's shape", lhs=lhs, rhs=rhs, output=out)
        # two fused multiply-adds per element
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target, 2),
                    [lhs, rhs], [out])
        if t.numerics:
            out.array()[...] = numerics.quantized_add(lhs.array(), rhs.array(), *scales, offset,
                                                      shift, zero_point)
    return run


@impl("npu.dequantize")
def npu_dequantize(t, op, info):
    (a, b) = t.slots(op.operands)
    scale, zero_point = attr(op, "scale"), attr(op, "zero_point")
    machine, target = t.machine, t.target

    def run(regs):
        x, out = regs[a], regs[b]
        require_sram(info, input=x, output=out)
        if x.shape != out.shape or x.dtype != np.int8 or out.dtype not in (np.float32,
                                                                           np.float16):
            raise shape_error(info, "expects an i8 input and an f32 or f16 output of one shape",
                              input=x, output=out)
        machine.run(info, "vector", machine_model.vector_cycles(out.size, target), [x], [out])
        if t.numerics:
            out.array()[...] = numerics.dequantize(x.array(), scale, zero_point, out.dtype)
    return run
