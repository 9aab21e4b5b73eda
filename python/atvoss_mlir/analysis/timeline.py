"""Who owns each cycle: the simulator's engine timelines split among model nodes.

Every cycle of the run goes to exactly one node, so the nodes' cycles sum to
the total. A cycle belongs to the earliest node in program order that has an
op running on some engine then: the DMA of a later node's weights, issued
while an earlier node computes, is hidden by that node and costs its own node
nothing. Cycles when no engine runs (the sequencer waiting) go to the node
that runs next.

Within its own cycles a node's engines are in one of these states, counted
per cycle (what the bound is read from):

  compute       a matrix or vector op of the node runs, no DMA of it does
  overlap       a compute op and a DMA of the node run together
  dma_transfer  only DMAs run, at least one moving data (or waiting for DRAM
                that another channel's transfer holds)
  dma_setup     only DMAs run, all in their fixed setup
  fallback      an op of the node runs on the scalar fallback engine
  idle          none of the node's ops runs
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

STATES = ("compute", "overlap", "dma_transfer", "dma_setup", "fallback", "idle")

# Phase kinds of an event, indexes into a node's active counters.
_COMPUTE, _TRANSFER, _SETUP, _FALLBACK = range(4)


@dataclass
class NodeTime:
    rank: int                                     # program order (first issue)
    cycles: int = 0
    states: dict = field(default_factory=lambda: dict.fromkeys(STATES, 0))
    spans: list = field(default_factory=list)     # [start, finish) the node owns
    sram_peak_bytes: int = 0
    # Channel cycles of the node's DMAs in setup, and waiting for or moving data.
    dma_setup_cycles: int = 0
    dma_transfer_cycles: int = 0


def _phases(event):
    """(start, finish, kind) pieces of one trace event."""
    if event.engine.startswith("dma"):
        return [(event.start, event.setup_end, _SETUP),
                (event.setup_end, event.finish, _TRANSFER)]  # DRAM wait counts as transfer
    kind = _FALLBACK if event.engine == "fallback" else _COMPUTE
    return [(event.start, event.finish, kind)]


def _state(active) -> str:
    if active[_FALLBACK]:
        return "fallback"
    dma = active[_TRANSFER] or active[_SETUP]
    if active[_COMPUTE]:
        return "overlap" if dma else "compute"
    if active[_TRANSFER]:
        return "dma_transfer"
    return "dma_setup" if active[_SETUP] else "idle"


def attribute(events, total_cycles: int, sram_occupancy=()) -> dict[str, NodeTime]:
    """NodeTime per node name, in program order; their cycles sum to `total_cycles`."""
    nodes: dict[str, NodeTime] = {}
    names = []
    points = []  # (time, +1/-1, rank, kind)
    for event in events:
        node = nodes.get(event.node)
        if node is None:
            node = nodes[event.node] = NodeTime(len(names))
            names.append(event.node)
        if event.engine.startswith("dma"):
            node.dma_setup_cycles += event.setup_end - event.start
            node.dma_transfer_cycles += event.finish - event.setup_end
        for start, finish, kind in _phases(event):
            if finish > start:
                points.append((start, 1, node.rank, kind))
                points.append((finish, -1, node.rank, kind))
    if not names:
        return nodes
    # Ends before starts at the same time: a span [a, b) then [b, c) never overlaps.
    points.sort(key=lambda p: (p[0], p[1]))
    active = [[0, 0, 0, 0] for _ in names]
    busy = [0] * len(names)
    heap: list[int] = []  # ranks with something running (lazily cleaned)
    spans: list[list] = []  # [start, finish, rank, state]
    time, pending = 0, 0
    i = 0
    while i < len(points):
        at = points[i][0]
        if at > time:
            while heap and not busy[heap[0]]:
                heapq.heappop(heap)
            if heap:
                owner = heap[0]
                _own(spans, time - pending, at, owner, _state(active[owner]), pending)
                pending = 0
            else:
                pending += at - time
            time = at
        while i < len(points) and points[i][0] == at:
            _, step, rank, kind = points[i]
            active[rank][kind] += step
            if step > 0 and not busy[rank]:
                heapq.heappush(heap, rank)
            busy[rank] += step
            i += 1
    end = max(total_cycles, time)
    if pending or end > time:  # the sequencer's tail: the last node running
        owner = spans[-1][2] if spans else 0
        _own(spans, time - pending, end, owner, "idle", pending + end - time)
    for start, finish, rank, state in spans:
        node = nodes[names[rank]]
        node.cycles += finish - start
        node.states[state] += finish - start
        if node.spans and node.spans[-1][1] == start:
            node.spans[-1][1] = finish
        else:
            node.spans.append([start, finish])
    _sram_peaks(nodes, names, spans, sram_occupancy)
    return nodes


def _own(spans, start, finish, owner, state, idle):
    """Give [start, finish) to `owner`: its first `idle` cycles in no state."""
    if idle:
        _append(spans, start, start + idle, owner, "idle")
    if finish > start + idle:
        _append(spans, start + idle, finish, owner, state)


def _append(spans, start, finish, owner, state):
    last = spans[-1] if spans else None
    if last and last[1] == start and last[2] == owner and last[3] == state:
        last[1] = finish
    else:
        spans.append([start, finish, owner, state])


def _sram_peaks(nodes, names, spans, occupancy) -> None:
    """Each node's peak of live SRAM bytes over the cycles it owns."""
    steps = list(occupancy)
    k, level = 0, 0
    for start, finish, rank, _ in spans:
        while k < len(steps) and steps[k][0] <= start:
            level = steps[k][1]
            k += 1
        peak = level
        j = k
        while j < len(steps) and steps[j][0] < finish:
            peak = max(peak, steps[j][1])
            j += 1
        node = nodes[names[rank]]
        node.sram_peak_bytes = max(node.sram_peak_bytes, peak)


def engine_segments(events, engines, total_cycles: int, limit: int = 1500) -> dict:
    """Per engine, busy intervals [start, finish, node] for a picture: events of
    one node closer than total/limit cycles are merged, so each engine keeps
    about `limit` segments at most."""
    gap = max(1, total_cycles // limit)
    segments = {engine: [] for engine in engines}
    for event in events:
        row = segments.setdefault(event.engine, [])
        if row and row[-1][2] == event.node and event.start - row[-1][1] <= gap:
            row[-1][1] = max(row[-1][1], event.finish)
        else:
            row.append([event.start, event.finish, event.node])
    return segments
