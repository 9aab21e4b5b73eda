"""Run-time values of the simulator: buffers and strided memref views.

A memref value is a descriptor, as in MLIR's own lowering: a buffer plus an
element offset, sizes and strides. The numpy array is a view built from that
descriptor on demand, so subviews, casts and reshapes are index arithmetic and
the machine model can reason about the byte ranges an op touches (DMA bursts,
hazards, SRAM overlap). In timing-only mode buffers hold no data at all.
"""

from __future__ import annotations

import numpy as np

from atvoss_mlir.machine_model import identity_strides  # noqa: F401 (views use it)
from atvoss_mlir.machine_model import refused_type_reason

DRAM = 0
SRAM = 1

_DTYPES = {
    "f16": np.dtype(np.float16), "f32": np.dtype(np.float32), "f64": np.dtype(np.float64),
    "i1": np.dtype(np.bool_), "i8": np.dtype(np.int8), "i16": np.dtype(np.int16),
    "i32": np.dtype(np.int32), "i64": np.dtype(np.int64), "index": np.dtype(np.int64),
    "ui8": np.dtype(np.uint8), "ui16": np.dtype(np.uint16), "ui32": np.dtype(np.uint32),
    "ui64": np.dtype(np.uint64), "si8": np.dtype(np.int8), "si32": np.dtype(np.int32),
}


def numpy_dtype(element_type) -> np.dtype | None:
    """The numpy dtype holding an MLIR element type (None if there is none)."""
    return _DTYPES.get(str(element_type))


def unsupported_element(element_type) -> str:
    """Why the simulator cannot hold `element_type` (numpy_dtype gave None)."""
    return refused_type_reason(element_type) or f"element type {element_type} is not supported"


class Buffer:
    """One allocation: a function argument or memref.alloc in DRAM, or an SRAM buffer.

    `address` is the byte address of the buffer in its memory: SRAM buffers are
    placed in the one SRAM address space; each DRAM buffer is taken to start
    on a burst boundary, so its address is 0 and ranges are per buffer.
    """

    __slots__ = ("data", "nbytes", "space", "address", "name", "origin", "live", "touched",
                 "range_key", "written")

    def __init__(self, nbytes: int, space: int, name: str, origin=None, numerics: bool = True,
                 address: int = 0):
        self.nbytes = int(nbytes)
        self.space = space
        self.address = address
        self.name = name
        self.origin = origin  # OpInfo of the allocating op, or None for arguments
        self.data = np.zeros(self.nbytes, np.uint8) if numerics else None
        self.live = True
        # Function arguments: which bytes were read (bit 0) and written (bit 1),
        # the compulsory DRAM traffic of the roofline.
        self.touched = None
        # Key of the address space that byte ranges of this buffer live in.
        self.range_key = SRAM if space == SRAM else self
        # SRAM buffers with numerics: which bytes some op has written since the
        # allocation (reading others is an uninitialised read); None: not tracked.
        self.written = np.zeros(self.nbytes, np.bool_) if space == SRAM and numerics else None


class MemRef:
    """A strided view: element (i0, ..., in) lives at byte
    `base_byte + (offset + sum(i_k * strides[k])) * itemsize` of `buffer`.

    `base_byte` plays the role of MLIR's aligned pointer (moved by memref.view),
    `offset` is the layout offset (set by subview and reinterpret_cast).
    """

    __slots__ = ("buffer", "dtype", "shape", "strides", "offset", "base_byte", "_array",
                 "_range")

    def __init__(self, buffer: Buffer, dtype: np.dtype, shape, strides, offset: int = 0,
                 base_byte: int = 0):
        self.buffer = buffer
        self.dtype = dtype
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.offset = offset
        self.base_byte = base_byte
        self._array = None
        self._range = None

    @property
    def space(self) -> int:
        return self.buffer.space

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def start_byte(self) -> int:
        """Byte position of element (0, ..., 0) inside the buffer."""
        return self.base_byte + self.offset * self.dtype.itemsize

    def byte_range(self) -> tuple[int, int]:
        """[lo, hi) bytes of the buffer that the view touches (its bounding range)."""
        found = self._range
        if found is not None:
            return found
        start = self.base_byte + self.offset * self.dtype.itemsize
        low = high = 0
        for n, s in zip(self.shape, self.strides):
            if n == 0:
                self._range = (start, start)
                return self._range
            if s >= 0:
                high += (n - 1) * s
            else:
                low += (n - 1) * s
        item = self.dtype.itemsize
        self._range = (start + low * item, start + high * item + item)
        return self._range

    def byte_runs(self) -> tuple[np.ndarray, np.ndarray]:
        """[start, end) bytes of the view's contiguous runs, sorted by start."""
        item = self.dtype.itemsize
        shape, strides = list(self.shape), list(self.strides)
        length = item
        if shape and strides[-1] == 1:   # the innermost dim is one run
            length = shape.pop() * item
            strides.pop()
        starts = np.array([self.start_byte], dtype=np.int64)
        for n, s in zip(shape, strides):
            starts = (starts[:, None] + np.arange(n, dtype=np.int64) * (s * item)).ravel()
        starts.sort()
        return starts, starts + length

    def check_bounds(self, what: str) -> None:
        low, high = self.byte_range()
        if (low < 0 or high > self.buffer.nbytes) and high > low:
            memory = "SRAM" if self.space == SRAM else "DRAM"
            raise ValueError(f"{what} view {format_view(self)} reaches bytes [{low}, {high}) "
                             f"outside its {memory} buffer of {self.buffer.nbytes} B")

    def array(self) -> np.ndarray:
        """The numpy view of the data (shares memory with the buffer)."""
        if self._array is None:
            if self.buffer.data is None:
                raise RuntimeError("no data in timing-only mode")
            self.check_bounds("memref")
            item = self.dtype.itemsize
            self._array = np.ndarray(self.shape, self.dtype, buffer=self.buffer.data,
                                     offset=self.start_byte,
                                     strides=tuple(s * item for s in self.strides))
        return self._array

    def touch_key(self, bit: int) -> tuple:
        """What mark_touched needs, as a hashable key (repeated views collapse)."""
        return (self.buffer, self.start_byte, self.shape, self.strides, self.dtype.itemsize, bit)

    def mark_touched(self, bit: int) -> None:
        """Set `bit` in the argument byte mask for every byte of the view."""
        mark_touched(*self.touch_key(bit))


def mark_touched(buffer: Buffer, start: int, shape: tuple, strides: tuple, item: int,
                 bit: int) -> None:
    bytes_view = np.ndarray(shape + (item,), np.uint8, buffer=buffer.touched, offset=start,
                            strides=tuple(s * item for s in strides) + (1,))
    bytes_view |= bit


def written_mask(memref: MemRef) -> np.ndarray | None:
    """The view's bytes in its buffer's `written` mask (None: untracked or out of bounds)."""
    buffer = memref.buffer
    low, high = memref.byte_range()
    if buffer.written is None or low < 0 or high > buffer.nbytes or high <= low:
        return None
    item = memref.dtype.itemsize
    return np.ndarray(memref.shape + (item,), np.bool_, buffer=buffer.written,
                      offset=memref.start_byte, strides=tuple(s * item for s in memref.strides) + (1,))


def format_view(memref: MemRef) -> str:
    return "x".join(str(n) for n in memref.shape) + f"x{memref.dtype}"


def views_overlap(a: MemRef, b: MemRef) -> bool:
    """Whether two views of one buffer share a byte (their bounding ranges may
    meet while their elements do not: interleaved strided tiles)."""
    if a.size == 0 or b.size == 0:
        return False
    a_starts, a_ends = a.byte_runs()
    b_starts, b_ends = b.byte_runs()
    reach = np.maximum.accumulate(a_ends)      # furthest byte of a's runs so far
    last = np.searchsorted(a_starts, b_ends, side="left") - 1
    meets = last >= 0
    return bool(np.any(reach[last[meets]] > b_starts[meets]))
