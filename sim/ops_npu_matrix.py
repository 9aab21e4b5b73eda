"""The npu ops of the matrix unit: npu.matmul and npu.conv2d, timed by the
systolic array's cycle model (machine_model.gemm_cycles) and computed with
numpy in the accumulator type."""

from __future__ import annotations

import numpy as np

from atvoss_mlir import machine_model

from . import numerics
from .interpreter import impl
from .npu_operands import attr, epilogue_of, finish, require_sram, shape_error, window_output
from .values import SRAM


@impl("npu.matmul")
def npu_matmul(t, op, info):
    slots = t.slots(op.operands)
    accumulate, epilogue = attr(op, "accumulate"), epilogue_of(op)
    dataflow = attr(op, "dataflow")  # the op's own, else the target's
    machine, target = t.machine, t.target
    cycles_of = {}  # (m, n, k, int8) -> cycles
    bias_slot = slots[3] if len(slots) > 3 else None

    def run(regs):
        lhs, rhs, out = regs[slots[0]], regs[slots[1]], regs[slots[2]]
        bias = regs[bias_slot] if bias_slot is not None else None
        if (lhs.buffer.space != SRAM or rhs.buffer.space != SRAM or out.buffer.space != SRAM
                or (bias is not None and bias.buffer.space != SRAM)):
            require_sram(info, lhs=lhs, rhs=rhs, output=out, bias=bias)
        if (len(lhs.shape) != 2 or len(rhs.shape) != 2 or lhs.shape[1] != rhs.shape[0]
                or out.shape != (lhs.shape[0], rhs.shape[1])
                or (bias is not None and bias.shape != (rhs.shape[1],))):
            raise shape_error(info, "shapes do not form [M,K] x [K,N] -> [M,N] (+ bias [N])",
                              lhs=lhs, rhs=rhs, output=out, bias=bias)
        (m, k), n = lhs.shape, rhs.shape[1]
        key = (m, n, k, lhs.dtype == np.int8)
        cycles = cycles_of.get(key)
        if cycles is None:
            cycles = cycles_of[key] = machine_model.gemm_cycles(m, n, k, target, key[3],
                                                                dataflow)
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
            finish(t, info, out, result, accumulate, bias, epilogue, (lhs, rhs))
    return run


@impl("npu.conv2d")
def npu_conv2d(t, op, info):
    slots = t.slots(op.operands)
    strides, dilations = attr(op, "strides"), attr(op, "dilations")
    accumulate, epilogue = attr(op, "accumulate"), epilogue_of(op)
    dataflow = attr(op, "dataflow")
    machine, target = t.machine, t.target

    def run(regs):
        x, w, out = regs[slots[0]], regs[slots[1]], regs[slots[2]]
        bias = regs[slots[3]] if len(slots) > 3 else None
        require_sram(info, input=x, filter=w, output=out, bias=bias)
        oh, ow = window_output(info, "NHWC * HWCF -> NHWC", x, w, out, bias, 4,
                               strides, dilations)
        kh, kw, c, f = w.shape
        m, k = x.shape[0] * oh * ow, kh * kw * c
        int8 = x.dtype == np.int8
        cycles = machine_model.gemm_cycles(m, f, k, target, int8, dataflow)
        reads = [x, w] + ([out] if accumulate else []) + ([bias] if bias else [])
        machine.run(info, "matrix", cycles, reads, [out], macs=m * f * k, int8=int8)
        if t.numerics:
            acc = numerics.accumulator_dtype(x.dtype)
            result = numerics.conv2d(x.array(), w.array(), oh, ow, strides, dilations, acc,
                                     out.array() if accumulate else None)
            finish(t, info, out, result, accumulate, bias, epilogue, (x, w))
    return run
