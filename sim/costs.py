"""Cycle formulas of the machine's engines.

Matrix unit: the closed form of SCALE-Sim's compute cycles. A GEMM M x N x K
maps onto an R x C array as
  weight-stationary (ws): Sr = K rows, Sc = N columns, T = M rows streamed,
                          each fold costs 2*R + C + T - 2
                          (weight fill, stream, skew and drain);
  output-stationary (os): Sr = M, Sc = N, T = K, each fold R + C + T - 2;
folds = ceil(Sr/R) * ceil(Sc/C). A partial fold (the last one in each
direction) costs as much as a full one: SCALE-Sim 3 maps every fold onto the
whole array, so fill, skew and drain span all R rows and C columns (measured:
GEMM 64x40x48 on 32x32 WS gives 631 = 4 * (64 + 32 + 62) - 1, not the 519 a
partial-fold formula predicts; SCALE-Sim's "Total Cycles" is the sum minus one,
the index of its last cycle, which is not subtracted here). `auto` takes the
cheaper dataflow per op. A convolution is the GEMM with M = N*OH*OW, N = F,
K = KH*KW*C. int8 packs `int8_speedup` MACs into one fp16 MAC slot, so the
streamed part T is divided by it; fill and drain (the array's geometry) are
not.

DMA: setup + the whole aligned bursts the DRAM side touches / bandwidth.
Vector unit: elements (times window taps) / lanes + a pipeline latency.
Fallback: elements (times ops per element) * the scalar rate.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

# Cycles from issue to the first result of the vector unit's pipeline.
VECTOR_PIPELINE_LATENCY = 8


def _fold_sum(rows: int, cols: int, streamed: int, array_rows: int, array_cols: int,
              row_weight: int) -> int:
    """Sum over folds of row_weight*R + C + T - 2 (every fold spans the whole array)."""
    folds = -(-rows // array_rows) * -(-cols // array_cols)
    return folds * (row_weight * array_rows + array_cols + streamed - 2)


@lru_cache(maxsize=4096)
def gemm_cycles(m: int, n: int, k: int, target, int8: bool = False) -> tuple[int, str]:
    """(cycles, dataflow used) of a GEMM on the matrix unit."""
    speedup = target.int8_speedup if int8 else 1
    rows, cols = target.array_rows, target.array_cols
    ws = _fold_sum(k, n, -(-m // speedup), rows, cols, row_weight=2)
    os_ = _fold_sum(m, n, -(-k // speedup), rows, cols, row_weight=1)
    if target.dataflow == "ws":
        return ws, "ws"
    if target.dataflow == "os":
        return os_, "os"
    return (ws, "ws") if ws <= os_ else (os_, "os")


def vector_cycles(elements: int, target, taps: int = 1) -> int:
    return -(-elements * taps // target.vector_lanes) + VECTOR_PIPELINE_LATENCY


def fallback_cycles(elements: int, ops_per_element: int, target) -> int:
    return elements * max(1, ops_per_element) * target.fallback_cycles_per_element


@lru_cache(maxsize=4096)
def _bursts(shape: tuple, strides: tuple, itemsize: int, start_mod: int, burst: int) -> int:
    """Whole aligned bursts touched by a strided view starting at byte `start_mod`."""
    dims = [(n, s) for n, s in zip(shape, strides) if n != 1]
    if any(n == 0 for n, _ in dims):
        return 0
    # Merge the innermost dimensions that are contiguous into one run.
    run_elems = 1
    if dims and dims[-1][1] == 1:
        while dims and dims[-1][1] == run_elems:
            run_elems *= dims.pop()[0]
    run_bytes = run_elems * itemsize
    starts = np.array([start_mod], dtype=np.int64)
    for n, s in dims:
        starts = (starts[:, None] + np.arange(n, dtype=np.int64) * (s * itemsize)).reshape(-1)
    ends = starts + run_bytes
    return int(np.sum(-(-ends // burst) - starts // burst))


def dma_bursts(memref, target) -> int:
    burst = target.dma_burst_bytes
    start = memref.buffer.address + memref.start_byte
    return _bursts(memref.shape, memref.strides, memref.dtype.itemsize, start % burst, burst)


def dma_cycles(dram_view, target) -> int:
    """Setup plus the bursts of the DRAM side at the DRAM bandwidth."""
    moved = dma_bursts(dram_view, target) * target.dma_burst_bytes
    return target.dma_setup_cycles + math.ceil(moved / target.dram_bytes_per_cycle)
