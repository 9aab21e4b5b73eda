"""The machine model: engine timelines, SRAM placement, hazards and statistics.

Timing model
------------
Ops issue in program order from one sequencer. Issuing costs nothing and never
blocks: every engine has its own command queue. The sequencer's issue time
moves forward only at `npu.wait` (to the completion of the waited tokens) and
`npu.barrier` (to the moment every engine is idle; with `engines = "compute"`,
every compute engine; with `engines = "matrix"` or `"vector"`, that unit). An op starts at
max(its engine's free time, the issue time, the finish of the compute ops it
depends on); it then occupies its engine for its cycles.

Engines: `dma0` .. `dma{N-1}` (the `channel` of a DMA op), `matrix` (matmul,
conv2d), `vector` (everything else the NPU computes) and `fallback` (linalg
ops and memref copies left on DRAM). Scalar and loop bookkeeping cost 0. The
cycles of every op come from atvoss_mlir.machine_model, the functions the
compiler's cost model calls.

DRAM is shared: `-dram-bytes-per-cycle` is the bandwidth of all channels
together. A DMA first spends its setup cycles on its channel alone (setups of
several channels overlap), then its transfer (its bursts at the full
bandwidth) is booked on one DRAM timeline (machine_model.SharedDram): in the
earliest gap, at or after the end of its setup, that no other transfer holds.
The channel stays busy until the transfer ends; the time spent waiting for
DRAM is `dram_wait_cycles` in the report. Two DMAs on two channels issued
together thus finish after setup + (bytes of both) / bandwidth, as on the
hardware, rather than each at the whole bandwidth. The fallback engine's DRAM
accesses are not booked: its scalar rate is far below the bandwidth.

Ordering and hazards (what the hardware interlocks, and what it does not)
-----------------------------------------------------------------------
* DMA completion is signalled only through tokens. An op that touches bytes
  a DMA writes (a load's SRAM tile, a store's DRAM view) before an
  `npu.wait` on that DMA's token, or an `npu.barrier`, is an error
  (read-after-write / write-after-write); so is an op that overwrites bytes an
  outstanding DMA still reads (write-after-read), and releasing a buffer that
  an outstanding DMA uses. DMAs on one channel run in order and never
  conflict with each other.
* The compute units (matrix, vector, fallback) scoreboard each other: a
  compute op that reads what an earlier compute op writes, or writes what it
  reads or writes, starts when that op finishes.
* DMA engines have no interlock with compute: a DMA that reads bytes a
  still-running compute op writes (a store of a result before the matmul
  producing it completes), or writes bytes it reads or writes (a load into a
  tile a matmul still reads), is an error. Programs order them with
  `npu.barrier`; `npu-verify` checks the same rule statically within a block,
  the simulator on the actual addresses and times (views, loop iterations,
  partial tiles).
* Numerics run eagerly in program order; the rules above are what make that
  equal to the timed execution.

SRAM
----
`npu.alloc` with `offset` takes that byte offset (it must be aligned to the
target's SRAM alignment); without it the buffer is placed first-fit. A buffer
is live from its allocation to its dealloc or the end of the entry function;
running the same alloc op again (a loop body) ends the previous instance.
Capacity, alignment and overlap of live buffers are errors at the alloc.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from atvoss_mlir.diagnostics import error_at, location_label, source_position
from atvoss_mlir.machine_model import SharedDram, first_fit

import numpy as np

from .numeric_safety import NumericEvents
from .values import SRAM, Buffer, mark_touched, views_overlap, written_mask

class OpInfo:
    """Static facts about one op, made once when its region is translated,
    plus the statistics aggregated over its executions."""

    __slots__ = ("name", "location", "loc", "node", "count", "cycles", "macs", "dram_read",
                 "dram_write", "engine", "moved_bytes")

    def __init__(self, name: str, location, default_file: str = "-"):
        self.name = name
        self.location = location
        position = source_position(location, default_file)
        self.loc = str(position) if position else "unknown"
        # The model node the op comes from (its name location); else its position.
        self.node = location_label(location) or self.loc
        self.moved_bytes = 0  # bytes an npu.transpose rearranged (layout transforms)
        self.count = self.cycles = self.macs = self.dram_read = self.dram_write = 0
        self.engine = None

    def error(self, message: str):
        return error_at(self.location, f"{self.name}: {message}")


class Token:
    """Completion token of a DMA."""

    __slots__ = ("finish", "info", "engine", "done")

    def __init__(self, finish: int, info: OpInfo, engine: str):
        self.finish = finish
        self.info = info
        self.engine = engine
        self.done = False


class Access(tuple):
    """Bytes [low, high) of one address space that an in-flight op reads or writes:
    (key, low, high, write, engine, finish, info, token, view); token is None for
    compute ops; view is the MemRef (its exact bytes, when bounding ranges meet). The access list holds plain tuples, which the hazard scan
    reads by index; this view names their fields for messages."""

    __slots__ = ()
    key = property(lambda self: self[0])
    low = property(lambda self: self[1])
    high = property(lambda self: self[2])
    write = property(lambda self: self[3])
    engine = property(lambda self: self[4])
    finish = property(lambda self: self[5])
    info = property(lambda self: self[6])
    token = property(lambda self: self[7])
    view = property(lambda self: self[8])


@dataclass
class TraceEvent:
    """One op on its engine. A DMA spends [start, setup_end) in its setup,
    [setup_end, transfer_start) waiting for DRAM held by other channels and
    [transfer_start, finish) transferring; other ops compute from start to finish."""
    engine: str
    name: str
    loc: str
    start: int
    finish: int
    node: str = ""
    setup_end: int = 0
    transfer_start: int = 0


@dataclass
class Machine:
    target: object
    numerics: bool = True
    trace: list | None = None
    filename: str = "-"  # names the input in op locations of messages and reports
    issue_time: int = 0
    engine_free: dict = field(default_factory=dict)
    engine_busy: dict = field(default_factory=dict)
    accesses: list = field(default_factory=list)
    sram_buffers: list = field(default_factory=list)  # live SRAM buffers
    sram_live_bytes: int = 0
    sram_peak_bytes: int = 0
    sram_occupancy: list = field(default_factory=list)  # [cycle, live bytes]
    ops: dict = field(default_factory=dict)  # id -> OpInfo of ops that ran
    touches: set = field(default_factory=set)  # argument bytes read/written, applied at the end
    prune_at: int = 256  # length of the access list that triggers a prune
    dram_read_bytes: int = 0
    dram_write_bytes: int = 0
    macs: int = 0
    int8_macs: int = 0  # of `macs`, those on int8 operands
    dram: SharedDram = field(default_factory=SharedDram)
    dram_wait_cycles: int = 0  # DMAs waiting for DRAM that other channels' transfers hold
    dram_globals: list = field(default_factory=list)  # DRAM buffers of memref.globals read
    numeric_events: NumericEvents = field(default_factory=NumericEvents)

    def __post_init__(self):
        names = ["matrix", "vector"] + [f"dma{i}" for i in range(self.target.dma_channels)]
        names.append("fallback")
        self.engine_free = {name: 0 for name in names}
        self.engine_busy = {name: 0 for name in names}

    # -- time -----------------------------------------------------------------
    @property
    def now(self) -> int:
        """Completion of everything issued so far."""
        return max(self.issue_time, max(self.engine_free.values()))

    def wait(self, tokens) -> None:
        for token in tokens:
            if token.finish > self.issue_time:
                self.issue_time = token.finish
            token.done = True
        self._prune()

    def _prune(self) -> None:
        """Drop accesses that can no longer conflict: waited DMAs, finished compute."""
        now = self.issue_time
        self.accesses = [a for a in self.accesses
                         if (not a[7].done if a[7] is not None else a[5] > now)]
        self.prune_at = max(256, 2 * len(self.accesses))

    def barrier(self) -> None:
        self.issue_time = self.now
        self.accesses = []

    def compute_barrier(self, unit: str | None = None) -> None:
        """`npu.barrier {engines = "compute"}`: wait for the compute engines only
        (with `unit`, "matrix" or "vector", for that one: the other keeps
        running, and a later DMA touching what it still uses is a hazard the
        access check reports); DMAs in flight keep running and stay pending
        until waited."""
        compute = self.engine_free[unit] if unit is not None else \
            max(free for engine, free in self.engine_free.items() if not engine.startswith("dma"))
        if compute > self.issue_time:
            self.issue_time = compute
        self._prune()

    def dma_engine(self, info: OpInfo, channel: int) -> str:
        if not 0 <= channel < self.target.dma_channels:
            raise info.error(f"channel {channel} does not exist: the target has "
                             f"{self.target.dma_channels} DMA channels")
        return f"dma{channel}"

    def flush_touches(self) -> None:
        """Apply the recorded argument reads and writes to the byte masks."""
        for key in self.touches:
            mark_touched(*key)
        self.touches.clear()

    # -- issuing ops -------------------------------------------------------------
    def run(self, info: OpInfo, engine: str, cycles: int, reads=(), writes=(), macs: int = 0,
            dram_read: int = 0, dram_write: int = 0, dma: bool = False, transfer: int = 0,
            int8: bool = False):
        """Issue one op; returns its Token for DMAs, its finish time otherwise.

        `cycles` occupy the op's engine alone; a DMA's `transfer` cycles then
        occupy the shared DRAM as well (booked on `self.dram`). `int8`: the
        MACs are int8 ones (the roofline's peak for them is higher)."""
        ranges = []
        touches = self.touches
        for memref in reads:
            buffer = memref.buffer
            low, high = memref._range or memref.byte_range()
            if buffer.touched is not None:
                touches.add(memref.touch_key(1))
            if high > low:  # an empty view touches nothing
                base = buffer.address
                ranges.append((buffer.range_key, base + low, base + high, False, memref))
        for memref in writes:
            buffer = memref.buffer
            low, high = memref._range or memref.byte_range()
            if buffer.touched is not None:
                touches.add(memref.touch_key(2))
            if high > low:
                base = buffer.address
                ranges.append((buffer.range_key, base + low, base + high, True, memref))
        for memref in reads:
            if memref.buffer.written is not None:
                mask = written_mask(memref)
                if mask is not None and not mask.all():
                    raise info.error(self._uninitialised(memref, mask))
        for memref in writes:
            if memref.buffer.written is not None:
                mask = written_mask(memref)
                if mask is not None:
                    mask[...] = True
        start = self.engine_free[engine]
        if start < self.issue_time:
            start = self.issue_time
        accesses = self.accesses
        if accesses:
            for key, low, high, write, view in ranges:
                for a in accesses:
                    if a[0] is not key or a[2] <= low or high <= a[1] or not (write or a[3]):
                        continue
                    token = a[7]
                    if token is not None:
                        if token.done or a[4] == engine:
                            continue  # waited, or same DMA channel: in order
                        if not views_overlap(a[8], view):
                            continue  # interleaved strided tiles: bounding ranges only
                        raise info.error(self._dma_conflict(a, write, key, low, high))
                    if a[5] > start:
                        if dma:
                            raise info.error(self._compute_conflict(a, write, key, low, high,
                                                                    start))
                        start = a[5]  # compute units scoreboard each other
        finish = setup_end = transfer_start = start + cycles
        if transfer:
            transfer_start = self.dram.book(finish, transfer, self.issue_time)
            self.dram_wait_cycles += transfer_start - finish
            finish = transfer_start + transfer
        self.engine_free[engine] = finish
        self.engine_busy[engine] += finish - start
        result_token = Token(finish, info, engine) if dma else None
        for key, low, high, write, view in ranges:
            accesses.append((key, low, high, write, engine, finish, info, result_token, view))
        if len(accesses) > self.prune_at:
            self._prune()
        if not info.count:
            self.ops[id(info)] = info
            info.engine = engine
        info.count += 1
        info.cycles += cycles + transfer
        if macs:
            info.macs += macs
            self.macs += macs
            if int8:
                self.int8_macs += macs
        if dram_read:
            info.dram_read += dram_read
            self.dram_read_bytes += dram_read
        if dram_write:
            info.dram_write += dram_write
            self.dram_write_bytes += dram_write
        if self.trace is not None:
            self.trace.append(TraceEvent(engine, info.name, info.loc, start, finish, info.node,
                                         setup_end if dma else start,
                                         transfer_start if dma else start))
        return result_token if dma else finish

    @staticmethod
    def _uninitialised(memref, mask) -> str:
        base = memref.buffer.address
        low, high = memref.byte_range()
        unwritten = int(mask.size - np.count_nonzero(mask))
        origin = memref.buffer.origin
        where = f" allocated at {origin.loc}" if origin is not None else ""
        return (f"reads SRAM bytes [{base + low}, {base + high}) of which {unwritten} were never "
                f"written since the buffer{where} was allocated (uninitialised read)")

    @staticmethod
    def _where(key, low, high) -> str:
        memory = "SRAM" if key == SRAM else f"DRAM buffer '{key.name}'"
        return f"{memory} bytes [{low}, {high})"

    def _dma_conflict(self, a: tuple, write: bool, key, low, high) -> str:
        a = Access(a)
        where = self._where(key, max(low, a.low), min(high, a.high))
        other = f"{a.info.name} at {a.info.loc}"
        if a.write:
            hazard = "write-after-write" if write else "read-after-write"
            return (f"{'writes' if write else 'reads'} {where} that {other} writes, before an "
                    f"npu.wait on its token ({hazard} hazard)")
        return (f"overwrites {where} that {other} is still reading: its token was not "
                f"waited on (write-after-read hazard)")

    def _compute_conflict(self, a: tuple, write: bool, key, low, high, start: int) -> str:
        a = Access(a)
        where = self._where(key, max(low, a.low), min(high, a.high))
        other = f"{a.info.name} at {a.info.loc}"
        if a.write:
            hazard = "write-after-write" if write else "read-after-write"
            verb = "writes" if write else "reads"
            what = f"{verb} {where} that {other} writes"
        else:
            hazard, what = "write-after-read", f"overwrites {where} that {other} reads"
        return (f"{what} while it is still running (it finishes at cycle {a.finish}, the DMA "
                f"would start at cycle {start}): DMA engines do not wait for compute, order "
                f"them with npu.barrier ({hazard} hazard)")

    # -- SRAM ---------------------------------------------------------------------
    def sram_alloc(self, info: OpInfo, nbytes: int, offset: int | None, name: str) -> Buffer:
        target = self.target
        capacity, align = target.max_sram_bytes, target.sram_alignment
        live = sorted(self.sram_buffers, key=lambda b: b.address)
        if nbytes > capacity:
            raise info.error(f"buffer of {nbytes} B exceeds the SRAM capacity of {capacity} B")
        if offset is not None:
            if offset < 0 or offset % align:
                raise info.error(f"offset {offset} is not aligned to the SRAM alignment "
                                 f"of {align} B")
            if offset + nbytes > capacity:
                raise info.error(f"buffer [{offset}, {offset + nbytes}) exceeds the SRAM "
                                 f"capacity of {capacity} B")
            for other in live:
                if other.address < offset + nbytes and offset < other.address + other.nbytes:
                    where = other.origin.loc if other.origin else "?"
                    raise info.error(
                        f"buffer [{offset}, {offset + nbytes}) overlaps the live buffer "
                        f"[{other.address}, {other.address + other.nbytes}) allocated at {where}")
            address = offset
        else:
            address = first_fit([(b.address, b.nbytes) for b in live], nbytes, align)
            if address + nbytes > capacity:
                raise info.error(f"no room for a buffer of {nbytes} B: {self.sram_live_bytes} B "
                                 f"of the {capacity} B SRAM are live")
        buffer = Buffer(nbytes, SRAM, name, info, self.numerics, address)
        self.sram_buffers.append(buffer)
        self._occupancy(nbytes)
        return buffer

    def sram_free(self, info: OpInfo, buffer: Buffer) -> None:
        if not buffer.live:
            raise info.error("buffer was already released")
        low, high = buffer.address, buffer.address + buffer.nbytes
        for a in map(Access, self.accesses):
            if (a.token is not None and not a.token.done and a.key == SRAM
                    and a.low < high and low < a.high):
                raise info.error(f"releases SRAM bytes [{low}, {high}) while {a.info.name} at "
                                 f"{a.info.loc} using them is pending (its token was not "
                                 f"waited on)")
        buffer.live = False
        self.sram_buffers.remove(buffer)
        self._occupancy(-buffer.nbytes)

    def _occupancy(self, delta: int) -> None:
        self.sram_live_bytes += delta
        self.sram_peak_bytes = max(self.sram_peak_bytes, self.sram_live_bytes)
        point = [self.issue_time, self.sram_live_bytes]
        if self.sram_occupancy and self.sram_occupancy[-1][0] == point[0]:
            self.sram_occupancy[-1] = point
        else:
            self.sram_occupancy.append(point)
