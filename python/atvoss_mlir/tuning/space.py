"""The search space of one op: tile sizes per loop dimension, loop order,
pipeline stages and, for matrix-unit ops, the dataflow.

Tile sizes per dimension are `npu-tile`'s candidates (bounded by -tile-min
and -tile-max; a whole dimension is always one; a dimension of a tensor kept
in SRAM is not tiled; thinned as npu-tile thins them to at most
tile_candidates.MAX_CANDIDATES tile tuples x orders), loop orders are the ones its
recipe runs, stages 1 to 3, dataflow `ws` or `os`. A candidate is refused
before it is tried, with the reason counted, when its working set exceeds the
SRAM budget or when it would tile an operand the buffer plan keeps whole in
SRAM. The cost model (tile_cost.estimate, the one `npu-tile` uses) gives
every candidate an estimate.

Not in the space: the conv strategy (chosen on tensors, before bufferization)
and whether the op's output stays in SRAM (the buffer plan's whole-model
decision); the op's program holds both as the model compiled them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from ..passes.npu_tile import matrix_dataflow
from ..passes.tile_candidates import loop_orders, reads_resident_whole, tile_grid
from ..passes.tile_search import Space, evaluate_space, search, signature
from ..recipes import tiling_problem
from ..target import NpuTarget

STAGES = (1, 2, 3)
DATAFLOWS = ("ws", "os")
REFUSED_BUDGET = "working set over the SRAM budget"
REFUSED_RESIDENT = "tiles an operand kept whole in SRAM"


@dataclass(frozen=True)
class Candidate:
    tiles: tuple
    order: tuple
    stages: int
    dataflow: str | None = None

    def key(self) -> str:
        return json.dumps([list(self.tiles), list(self.order), self.stages, self.dataflow])

    @classmethod
    def from_key(cls, key: str) -> "Candidate":
        tiles, order, stages, dataflow = json.loads(key)
        return cls(tuple(tiles), tuple(order), stages, dataflow)


def op_key(problem) -> str:
    """The op's signature (op, loop dims, operand types and regions, attributes)
    as a short stable key."""
    return hashlib.sha256(repr(signature(problem)).encode()).hexdigest()[:32]


def target_hash(target: NpuTarget) -> str:
    return hashlib.sha256(str(target).encode()).hexdigest()[:16]


@dataclass
class OpSpace:
    op: object
    problem: object
    key: str
    label: str                       # op name and model node, for people
    per_dim: list                    # tile sizes per loop dim
    orders: list                     # loop orders
    dataflows: tuple                 # (None,) for ops off the matrix unit
    valid: dict = field(default_factory=dict)      # Candidate -> estimated cycles
    refused: Counter = field(default_factory=Counter)
    heuristic: Candidate | None = None

    @property
    def size(self) -> int:
        return len(self.valid) + sum(self.refused.values())

    def names(self) -> list[str]:
        return [d.name for d in self.problem.dims]

    def describe(self, candidate: Candidate) -> str:
        tiles = "x".join(f"{name}{t}" for name, t in zip(self.names(), candidate.tiles))
        order = ",".join(self.names()[i] for i in candidate.order)
        flow = f", {candidate.dataflow}" if candidate.dataflow else ""
        return f"tiles {tiles}, loops ({order}), {candidate.stages} stages{flow}"


def build_space(op, problem, target: NpuTarget, label: str) -> OpSpace:
    """Every candidate of the op, refused ones counted, valid ones estimated
    (the cost model over the whole space at once, as npu-tile evaluates it).
    The tile grid is npu-tile's, thinned as it thins it."""
    orders = loop_orders(problem)
    per_dim = tile_grid(problem, target, orders)
    matrix = "gemm" in problem.details
    dataflows = DATAFLOWS if matrix else (None,)
    space = OpSpace(op, problem, op_key(problem), label, per_dim, orders, dataflows)
    grid = Space(problem, per_dim)
    whole = np.array([reads_resident_whole(problem, tuple(int(t) for t in tiles))
                      for tiles in grid.tiles]) if grid.count else np.zeros(0, bool)
    whole = np.repeat(whole, len(orders))
    for flow in dataflows:
        flow_problem = tiling_problem(op, dataclasses.replace(target, dataflow=flow)) \
            if flow else problem
        for stages in STAGES:
            sizes, cycles, _ = evaluate_space(flow_problem, grid, orders, target, stages)
            space.refused[REFUSED_RESIDENT] += int((~whole).sum())
            over = whole & (sizes > target.max_sram_bytes)
            space.refused[REFUSED_BUDGET] += int(over.sum())
            for index in np.flatnonzero(whole & ~over):
                tiles = tuple(int(t) for t in grid.tiles[index // len(orders)])
                space.valid[Candidate(tiles, orders[index % len(orders)], stages, flow)] = \
                    int(cycles[index])
    space.refused = Counter({k: v for k, v in space.refused.items() if v})
    outcome = search(problem, target, target.pipeline_stages)
    if outcome.schedule is not None:
        flow = matrix_dataflow(problem, outcome.schedule.tiles, target)
        space.heuristic = Candidate(tuple(outcome.schedule.tiles), tuple(outcome.schedule.order),
                                    outcome.stages, flow)
    return space
