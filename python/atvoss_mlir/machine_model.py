"""The machine model: what the compiler's cost model and the simulator's timing
both know about the NPU, written once. `npu-tile` and `npu-select-conv-strategy`
estimate with these functions, the simulator (sim/) times every op with them,
`npu-allocate-sram` and the simulator place SRAM buffers with `first_fit`, and
`npu-verify`, `npu-tile` and the frontend check element types against the
tables below. A tile's estimated cycles therefore equal its simulated cycles.

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

Vector unit: elements (times window taps) / lanes + a pipeline latency.
Fallback engine: elements (times ops per element) * the scalar rate.

DMA: setup + the whole aligned bursts the DRAM side touches / bandwidth. The
setup is the channel's own; the transfer uses DRAM, whose bandwidth
(`-dram-bytes-per-cycle`) is the total of all channels: `SharedDram` books the
transfers of concurrent DMAs one after another on one DRAM timeline.
"""

from __future__ import annotations

import bisect
import math
import re
from functools import lru_cache

import numpy as np

# -- element types -------------------------------------------------------------------------

# Inputs the matrix unit multiplies, and the type it accumulates each in. It may
# write either the input type or the accumulator type.
MATRIX_INPUT_TYPES = ("f16", "f32", "i8")
ACCUMULATOR_TYPE = {"f16": "f32", "f32": "f32", "i8": "i32"}
# Element types of the vector unit's operands.
VECTOR_TYPES = ("f16", "f32", "i8", "i32")
# Types MLIR accepts that the NPU flow refuses, with the reason.
REFUSED_TYPES = {"bf16": "bf16 is not supported (the simulator has no bf16 arithmetic: "
                         "numpy has no bfloat16); use f16 or f32"}

_SIZED_TYPE = re.compile(r"(?:[su]?i|bf|f)(\d+)(?:E\w+)?")


@lru_cache(maxsize=1024)  # the tile search asks for the same few types very often
def element_bytes(element_type) -> int | None:
    """Bytes of one element of an MLIR element type (or its name); None for a
    type without a size (complex, none, ...)."""
    name = str(element_type)
    if name == "index":
        return 8
    match = _SIZED_TYPE.fullmatch(name)
    return max(1, (int(match[1]) + 7) // 8) if match else None


def matrix_output_types(input_type: str) -> tuple[str, ...]:
    """The element types the matrix unit may write for inputs of `input_type`."""
    accumulator = ACCUMULATOR_TYPE[input_type]
    return (input_type,) if accumulator == input_type else (input_type, accumulator)


def refused_type_reason(element_type) -> str | None:
    return REFUSED_TYPES.get(str(element_type))


# -- matrix unit ---------------------------------------------------------------------------

def _fold_sum(rows: int, cols: int, streamed: int, array_rows: int, array_cols: int,
              row_weight: int) -> int:
    """Sum over folds of row_weight*R + C + T - 2 (every fold spans the whole array)."""
    folds = -(-rows // array_rows) * -(-cols // array_cols)
    return folds * (row_weight * array_rows + array_cols + streamed - 2)


def _dataflow_cycles(m: int, n: int, k: int, target, int8: bool) -> tuple[int, int]:
    """(weight-stationary, output-stationary) cycles of an M x N x K GEMM."""
    speedup = target.int8_speedup if int8 else 1
    rows, cols = target.array_rows, target.array_cols
    return (_fold_sum(k, n, -(-m // speedup), rows, cols, row_weight=2),
            _fold_sum(m, n, -(-k // speedup), rows, cols, row_weight=1))


def gemm_schedule(m: int, n: int, k: int, target, int8: bool = False,
                  dataflow: str | None = None) -> tuple[int, str]:
    """(cycles, dataflow used) of an M x N x K GEMM on the matrix unit, in
    `dataflow` when given (an op's own), else the target's."""
    ws, os_ = _dataflow_cycles(m, n, k, target, int8)
    dataflow = dataflow or target.dataflow
    if dataflow == "ws":
        return ws, "ws"
    if dataflow == "os":
        return os_, "os"
    return (ws, "ws") if ws <= os_ else (os_, "os")


def gemm_cycles(m: int, n: int, k: int, target, int8: bool = False,
                dataflow: str | None = None) -> int:
    """gemm_schedule's cycles; for numbers or numpy arrays of GEMM shapes (the
    tile search evaluates whole candidate spaces at once)."""
    ws, os_ = _dataflow_cycles(m, n, k, target, int8)
    dataflow = dataflow or target.dataflow
    if dataflow == "ws":
        return ws
    if dataflow == "os":
        return os_
    return np.minimum(ws, os_) if isinstance(ws, np.ndarray) else min(ws, os_)


def peak_macs_per_cycle(target, int8: bool = False) -> int:
    """MACs per cycle of the whole array: int8 packs `int8_speedup` per slot."""
    return target.array_rows * target.array_cols * (target.int8_speedup if int8 else 1)


def type_bytes(shaped_type) -> int | None:
    """Bytes of a statically shaped tensor or memref type; None when dynamic or unsized."""
    size = element_bytes(shaped_type.element_type)
    if not shaped_type.has_static_shape or size is None:
        return None
    return math.prod(shaped_type.shape) * size


# -- vector unit and fallback engine -------------------------------------------------------

# Cycles from issue to the first result of the vector unit's pipeline.
VECTOR_PIPELINE_LATENCY = 8


def vector_cycles(elements: int, target, taps: int = 1) -> int:
    """One vector-unit op writing `elements`, each reading `taps` inputs (a window)."""
    return -(-elements * taps // target.vector_lanes) + VECTOR_PIPELINE_LATENCY


# Passes through the vector lanes per element of the kinds slower than one:
# division, reciprocal and square roots refine a table seed with Newton-Raphson
# steps (about four multiply-adds); exp, log, erf, tanh and the activations
# built on them reduce the argument's range and evaluate a polynomial (about
# eight). Every other kind takes one pass.
VECTOR_PASSES = {"div": 4, "reciprocal": 4, "rsqrt": 4, "sqrt": 4,
                 "exp": 8, "log": 8, "erf": 8, "tanh": 8, "sigmoid": 8, "gelu": 8}


# The activations the lanes apply in one pass: an npu.elementwise applies one
# of them to its results on their way out, at no cost (its `activation`).
ONE_PASS_ACTIVATIONS = ("none", "relu", "relu6", "clip", "neg", "abs")


def vector_kind_cycles(kind: str, elements: int, target) -> int:
    """One npu.elementwise / npu.activation of `kind` writing `elements`."""
    return vector_cycles(elements, target, VECTOR_PASSES.get(kind, 1))


def fallback_cycles(elements: int, ops_per_element: int, target) -> int:
    return elements * max(1, ops_per_element) * target.fallback_cycles_per_element


# -- DMA -----------------------------------------------------------------------------------

def dma_bursts_many(extents: np.ndarray, strides: tuple, itemsize: int, start_byte: int,
                    burst: int) -> np.ndarray:
    """Whole aligned bursts touched by each of many strided DRAM views of one
    buffer: row i of `extents` (rows x rank) is the shape of view i, `strides`
    (in elements) are the buffer's, every view's first byte is at `start_byte`
    from a burst boundary.

    Per view, the innermost contiguous dimensions form one run of L bytes; a run
    starting at `a` bytes into a burst touches ceil((a + L) / burst) bursts.
    Only `a` matters, so the runs are counted per start position in a burst
    (a histogram per view), not one by one. The positions reachable from the
    first byte are its own plus multiples of g = gcd(burst, steps of the outer
    dimensions), so the histogram has burst / g bins."""
    extents = np.asarray(extents, dtype=np.int64).reshape(len(extents), len(strides))
    rows = extents.shape[0]
    # Merge the innermost contiguous dimensions into the run; the rest are outer.
    merging = np.ones(rows, dtype=bool)
    run = np.ones(rows, dtype=np.int64)
    outer_dims = []  # (step in bytes modulo the burst, extent per view: 1 where merged)
    for axis in range(extents.shape[1] - 1, -1, -1):
        n, stride = extents[:, axis], strides[axis]
        kept = n != 1
        merges = kept & merging & (run == stride)
        run = np.where(merges, run * n, run)
        outer = kept & ~merges
        merging &= ~outer
        if outer.any():
            outer_dims.append((stride * itemsize % burst, np.where(outer, n, 1)))
    grain = math.gcd(burst, *(step for step, _ in outer_dims))
    bins = burst // grain
    runs_at = np.zeros((rows, bins), dtype=np.int64)  # bin j: runs starting at first + j*grain
    runs_at[:, 0] = 1
    for step, n in outer_dims:
        if step == 0:
            runs_at *= n[:, None]
            continue
        shift = step // grain
        period = bins // math.gcd(shift, bins)
        full, rest = np.divmod(n, period)
        moved = np.zeros_like(runs_at)
        # Shifts k*shift (mod bins) are distinct for k < period; past the most
        # runs along this dim (n < period: full is 0) no view has a k-th run.
        for k in range(min(period, int(n.max()))):
            moved += np.roll(runs_at, k * shift % bins, axis=1) * (full + (k < rest))[:, None]
        runs_at = moved
    at = (start_byte % burst + grain * np.arange(bins, dtype=np.int64)) % burst
    per_run = -(-(at[None, :] + run[:, None] * itemsize) // burst)
    bursts = (runs_at * per_run).sum(axis=1)
    return np.where((extents == 0).any(axis=1), 0, bursts)


def dma_transfer_cycles_many(extents: np.ndarray, strides: tuple, itemsize: int,
                             start_byte: int, target) -> np.ndarray:
    """Cycles the DRAM side of each DMA occupies DRAM: its bursts at the bandwidth."""
    burst = target.dma_burst_bytes
    moved = dma_bursts_many(extents, strides, itemsize, start_byte % burst, burst) * burst
    return -(-moved // target.dram_bytes_per_cycle)


def dma_cycles_many(extents: np.ndarray, strides: tuple, itemsize: int, start_byte: int,
                    target) -> np.ndarray:
    """Each DMA alone on the machine: setup, then the transfer of its DRAM view."""
    return target.dma_setup_cycles + dma_transfer_cycles_many(extents, strides, itemsize,
                                                              start_byte, target)


# One view at a time: the functions above on one row, cached (shape and
# strides are tuples; the simulator and the conv strategy ask for few views).

@lru_cache(maxsize=1 << 16)
def dma_bursts(shape: tuple, strides: tuple, itemsize: int, start_byte: int, burst: int) -> int:
    return int(dma_bursts_many(np.array([shape], dtype=np.int64), strides, itemsize,
                               start_byte, burst)[0])


@lru_cache(maxsize=1 << 16)
def dma_transfer_cycles(shape: tuple, strides: tuple, itemsize: int, start_byte: int,
                        target) -> int:
    return int(dma_transfer_cycles_many(np.array([shape], dtype=np.int64), strides, itemsize,
                                        start_byte, target)[0])


@lru_cache(maxsize=1 << 16)
def dma_cycles(shape: tuple, strides: tuple, itemsize: int, start_byte: int, target) -> int:
    return int(dma_cycles_many(np.array([shape], dtype=np.int64), strides, itemsize,
                               start_byte, target)[0])


def identity_strides(shape) -> tuple[int, ...]:
    """Row-major strides (in elements) of a contiguous buffer of `shape`."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return tuple(reversed(strides))


class SharedDram:
    """DRAM as one resource shared by every DMA channel.

    A transfer occupies DRAM at the full bandwidth for its transfer cycles; two
    transfers never overlap, so concurrent channels together move at most
    `dram_bytes_per_cycle`. Each is booked into the earliest gap of the DRAM
    timeline that starts no earlier than it is ready (after its channel's
    setup, which overlaps other transfers freely). Booked intervals that end
    before `horizon` (no op can start earlier any more) are forgotten.
    """

    __slots__ = ("starts", "ends")

    def __init__(self):
        self.starts: list[int] = []  # disjoint intervals [start, end), in time order
        self.ends: list[int] = []

    def book(self, ready: int, cycles: int, horizon: int) -> int:
        """Book `cycles` of DRAM at or after `ready`; returns the start."""
        starts, ends = self.starts, self.ends
        if ends and ends[0] <= horizon:
            past = bisect.bisect_right(ends, horizon)
            del starts[:past], ends[:past]
        index = bisect.bisect_right(ends, ready)
        start = ready
        while index < len(starts) and starts[index] < start + cycles:
            start = max(start, ends[index])
            index += 1
        end = start + cycles
        # Merge with touching neighbours: back-to-back transfers stay one interval.
        joins_previous = index > 0 and ends[index - 1] == start
        joins_next = index < len(starts) and starts[index] == end
        if joins_previous and joins_next:
            ends[index - 1] = ends[index]
            del starts[index], ends[index]
        elif joins_previous:
            ends[index - 1] = end
        elif joins_next:
            starts[index] = start
        else:
            starts.insert(index, start)
            ends.insert(index, end)
        return start


# -- SRAM placement ------------------------------------------------------------------------

def aligned(value: int, alignment: int) -> int:
    return -(-value // alignment) * alignment


def first_fit(live, size: int, alignment: int) -> int:
    """The lowest offset aligned to `alignment` where `size` bytes overlap none
    of the `live` (offset, size) buffers; the caller checks the capacity."""
    offset = 0
    for placed, placed_size in sorted(live):
        if offset + size <= placed:
            break
        offset = max(offset, aligned(placed + placed_size, alignment))
    return offset


# -- roofline ------------------------------------------------------------------------------

def roofline_cycles(macs: int, int8_macs: int, compulsory_bytes: int, target) -> int:
    """max(MACs at the peak of their element type, compulsory bytes at the
    DRAM bandwidth): no schedule of the program can be faster."""
    speedup = target.int8_speedup
    # (other MACs) / peak + (int8 MACs) / (speedup * peak), in integers.
    compute = -(-((macs - int8_macs) * speedup + int8_macs)
                // (peak_macs_per_cycle(target) * speedup))
    return max(compute, -(-compulsory_bytes // target.dram_bytes_per_cycle))
