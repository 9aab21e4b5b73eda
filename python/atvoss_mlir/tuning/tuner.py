"""`atvoss tune`: search a schedule for every op of a model that `npu-tile`
tiles, measured on the simulator on the op's own program, recorded in the
tuning database, which `atvoss compile` and `atvoss run` then read.

Ops with one signature (the repeated layers of a network) are tuned once.
Each trial is recorded as it finishes: a run stopped midway and started again
measures nothing twice.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field

from ..diagnostics import location_label
from ..recipes import Unsupported, linalg_ops, tiling_problem
from ..target import NpuTarget
from .database import TuningDatabase
from .op_program import op_program, pre_tile_module
from .space import Candidate, OpSpace, build_space, op_key, target_hash
from .strategies import run_strategy


@dataclass
class OpResult:
    label: str
    key: str
    space_size: int
    valid: int
    refused: dict
    measured: int                    # candidates simulated in this run
    heuristic_cycles: int | None
    best_cycles: int | None
    best: str | None
    errors: list = field(default_factory=list)   # (measured, estimated) pairs
    heuristic_candidate: object = None


def tileable_ops(module, target: NpuTarget):
    """(op, problem, budget target) of each op npu-tile would tile, as npu-tile
    sees them: ops folded into another are left out; the budget is the SRAM
    left below the tensors the buffer plan keeps across the op."""
    from ..passes.npu_tile import sram_left
    found, budgets = [], {}
    for op in linalg_ops(module.operation):
        try:
            found.append((op, tiling_problem(op, target)))
        except Unsupported:
            continue
    absorbed = [a for _, problem in found for a in problem.absorbed_ops]
    return [(op, problem, sram_left(op, problem, target, budgets)) for op, problem in found
            if op not in absorbed]


class Progress:
    """One line on stderr: op i/n, trials done, best so far, time left."""

    def __init__(self, enabled: bool, ops: int, total_trials: int):
        self.enabled, self.ops = enabled, ops
        self.live = enabled and sys.stderr.isatty()
        self.start = time.perf_counter()
        self.done_trials = 0
        self.total_trials = total_trials

    def update(self, index: int, label: str, trials: int, best: int | None, final=False):
        if not (self.live or (self.enabled and final)):
            return
        elapsed = time.perf_counter() - self.start
        done = self.done_trials + trials
        left = elapsed / done * max(0, self.total_trials - done) if done else 0
        width = 24
        filled = int(width * min(1.0, done / max(1, self.total_trials)))
        best_text = f"{best:,}" if best is not None else "-"
        line = (f"\r[tune] [{'#' * filled}{'.' * (width - filled)}] op {index}/{self.ops} "
                f"{label[:40]}: {trials} trials, best {best_text} cycles, "
                f"~{left:.0f} s left   ")
        sys.stderr.write((line if self.live else line.lstrip("\r").rstrip()) +
                         ("\n" if final else ""))
        sys.stderr.flush()
        if final:
            self.done_trials += trials


def tune_model(model: str, target: NpuTarget, db: TuningDatabase, *, strategy: str,
               trials: int, executor, progress: bool = False) -> list[OpResult]:
    module, _ = pre_tile_module(model, target)
    results = []
    thash = target_hash(target)
    with module.context:
        spaces, seen = [], set()
        for op, problem, budget in tileable_ops(module, target):
            key = op_key(problem)
            if key in seen:  # a repeated layer: its space is the first one's
                continue
            seen.add(key)
            label = f"{op.name.removeprefix('linalg.')} '{location_label(op.location) or '?'}'"
            space = build_space(op, problem, budget, label)
            if space.valid:
                spaces.append(space)
        bar = Progress(progress, len(spaces), sum(min(trials, len(s.valid)) for s in spaces))
        for index, space in enumerate(spaces, 1):
            results.append(_tune_op(space, target, thash, db, strategy, trials, executor, bar,
                                    index))
    return results


def _tune_op(space: OpSpace, target, thash, db, strategy, budget, executor, bar,
             index) -> OpResult:
    program = op_program(space.op, space.problem)
    known = db.trials(space.key, thash)
    simulated = [0]

    def evaluate(candidates):
        out, jobs = {}, []
        for candidate in candidates:
            if candidate in known:
                out[candidate] = known[candidate][0]
            else:
                jobs.append((program, str(target), candidate.key()))
        for key, measured, _ in executor.map(jobs) if jobs else []:
            candidate = Candidate.from_key(key)
            if measured is None:
                out[candidate] = None
                continue
            db.record(space.key, thash, candidate, measured, strategy, space.label)
            known[candidate] = (measured.cycles, measured.estimated_cycles)
            out[candidate] = measured.cycles
            simulated[0] += 1
        best = min((v[0] for v in known.values()), default=None)
        bar.update(index, space.label, len(known), best)
        return out

    run_strategy(strategy, space, evaluate, budget, batch=max(1, executor.workers))
    # The fastest trial, ties to the first by key (the database's order).
    best = min(known, key=lambda c: (known[c][0], c.key())) if known else None
    best_cycles = known[best][0] if best else None
    heuristic = known.get(space.heuristic, (None, None))[0] if space.heuristic else None
    bar.update(index, space.label, len(known), best_cycles, final=True)
    return OpResult(space.label, space.key, space.size, len(space.valid), dict(space.refused),
                    simulated[0], heuristic, best_cycles,
                    space.describe(best) if best else None,
                    [v for v in known.values() if v[1] is not None], space.heuristic)


@dataclass
class ModelCheck:
    heuristic_cycles: int
    best_trials_cycles: int          # every op on its best trial
    tuned_cycles: int                # after the check
    kept_heuristic: list             # labels of ops whose best trial did not pay in the model


def check_in_model(model: str, target: NpuTarget, db: TuningDatabase,
                   results: list[OpResult]) -> ModelCheck:
    """Each op's best trial was measured on the op alone; in the model, the
    ops around it (weight prefetch, what they keep in SRAM, the overlap of
    one op's tail with the next) can make it a loss. Starting from the
    heuristic's schedules, the ops whose best trial differs are taken one at
    a time, largest measured gain first, and each is kept only if the whole
    model, compiled and simulated, takes fewer cycles than without it; the
    others keep the heuristic's schedule (a choice in the database)."""
    from ..compiler import compile as compile_model
    thash = target_hash(target)

    def total(**options) -> int:
        compiled = compile_model(model, target, **options)
        compiled.run(None, timing_only=True)
        return compiled.report["total_cycles"]
    candidates = []
    for result in results:
        db.clear_choice(result.key, thash)
        best = db.best(result.key, thash)
        if result.heuristic_candidate is None or best is None \
                or best.candidate == result.heuristic_candidate:
            continue
        if result.heuristic_cycles is not None and best.measured_cycles is not None \
                and best.measured_cycles >= result.heuristic_cycles:
            # A tie (or nothing faster): the heuristic's schedule stays.
            db.choose(result.key, thash, result.heuristic_candidate,
                      "no trial was faster than the heuristic's schedule")
            continue
        candidates.append(result)
    heuristic_total = total()
    best_total = total(tuning_db=db.path)
    candidates.sort(key=lambda r: -((r.heuristic_cycles or 0) - (r.best_cycles or 0)))
    for result in candidates:
        db.choose(result.key, thash, result.heuristic_candidate, "not checked in the model yet")
    current, kept = heuristic_total, []
    for result in candidates:
        db.clear_choice(result.key, thash)
        trial = total(tuning_db=db.path)
        if trial < current:
            current = trial
        else:
            db.choose(result.key, thash, result.heuristic_candidate,
                      f"with its best trial the model took {trial - current} cycles more")
            kept.append(result.label)
    return ModelCheck(heuristic_total, best_total, current, kept)


def cost_model_error(pairs) -> tuple[float, float] | None:
    """(median, worst) of |estimated - measured| / measured over (measured, estimated)."""
    errors = sorted(abs(estimated - measured) / measured for measured, estimated in pairs
                    if measured)
    if not errors:
        return None
    return errors[len(errors) // 2], errors[-1]


def spearman(xs, ys) -> float:
    """Spearman's rank correlation (average ranks for ties)."""
    def ranks(values):
        order = sorted(range(len(values)), key=lambda i: values[i])
        result = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for k in range(i, j + 1):
                result[order[k]] = (i + j) / 2
            i = j + 1
        return result
    rx, ry = ranks(list(xs)), ranks(list(ys))
    n = len(rx)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sx = math.sqrt(sum((a - mx) ** 2 for a in rx))
    sy = math.sqrt(sum((b - my) ** 2 for b in ry))
    return cov / (sx * sy) if sx and sy else 1.0
