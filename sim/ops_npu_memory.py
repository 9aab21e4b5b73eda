"""The npu ops of SRAM buffers, DMA and synchronisation: npu.alloc,
npu.dealloc, npu.dma_load, npu.dma_store, npu.wait and npu.barrier.

Every handler checks its operands at run time and issues the op on its
engine (timing and hazards, machine.py); a DMA copies its data unless in
timing-only mode.
"""

from __future__ import annotations

from mlir import ir

from atvoss_mlir import machine_model

from .interpreter import impl
from .machine import Token
from .npu_operands import attr, shape_error
from .ops_memref import allocate, memref_dtype, memory_space
from .values import DRAM, SRAM


# -- SRAM buffers ---------------------------------------------------------------------

@impl("npu.alloc")
def npu_alloc(t, op, info):
    result_type = ir.MemRefType(op.results[0].type)
    if memory_space(result_type) != SRAM:
        raise info.error("result is not in SRAM (memory space 1)")
    if not result_type.has_static_shape:
        raise info.error("SRAM buffers must have a static shape")
    dtype, shape = memref_dtype(info, result_type), list(result_type.shape)
    offset = attr(op, "offset")
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
    channel = attr(op, "channel")
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
            raise shape_error(info, "source and target differ in shape or element type",
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
def npu_dmastore_checked(t, op, info):
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
    engines = attr(op, "engines")
    if engines in ("compute", "matrix", "vector"):
        unit = None if engines == "compute" else engines

        def run(regs):
            machine.compute_barrier(unit)
    else:
        def run(regs):
            machine.barrier()
    return run
