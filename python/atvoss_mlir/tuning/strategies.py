"""Search strategies over one op's space, each measuring candidates on the
simulator through `evaluate` (which skips what the database already holds):

  grid        Optuna's GridSampler: every point of the grid, in its order,
              up to the trial budget;
  coordinate  one dimension at a time, as the reference article recommends:
              from the heuristic's schedule, every value of one parameter
              (a tile size, the loop order, the stages, the dataflow) with the
              others fixed, keep the best, next parameter; passes repeat
              until one changes nothing or the budget is spent; budget left
              then goes to the cost model's best candidates not yet measured;
  tpe         Optuna's TPE sampler, model-guided: its first trials are the
              heuristic's schedule and the cost model's best few (a third of
              the budget), re-measured on the simulator; a point sampled
              again is told its known measurement without a new simulation.

Every strategy measures the heuristic's schedule first, so a tuned schedule
is never slower than the heuristic's on the op's own program. A candidate
the space refuses is pruned without being simulated.
"""

from __future__ import annotations

import math

import optuna

from .space import Candidate, OpSpace

STRATEGIES = ("coordinate", "grid", "tpe")
optuna.logging.set_verbosity(optuna.logging.WARNING)


class _GridSampler(optuna.samplers.GridSampler):
    """Optuna's grid sampler driven by ask and tell: the search loop stops when
    the grid is exhausted (the sampler's own stop works inside optimize only)."""

    def after_trial(self, study, trial, state, values):
        pass


def parameters(space: OpSpace) -> dict:
    """name -> choices: t0..tN (tile sizes), order (index), stages, dataflow."""
    params = {f"t{i}": list(values) for i, values in enumerate(space.per_dim)}
    params["order"] = list(range(len(space.orders)))
    params["stages"] = sorted({c.stages for c in space.valid} or {1})
    if space.dataflows != (None,):
        params["dataflow"] = list(space.dataflows)
    return params


def to_params(space: OpSpace, candidate: Candidate) -> dict:
    params = {f"t{i}": t for i, t in enumerate(candidate.tiles)}
    params["order"] = space.orders.index(candidate.order)
    params["stages"] = candidate.stages
    if space.dataflows != (None,):
        params["dataflow"] = candidate.dataflow
    return params


def from_params(space: OpSpace, params: dict) -> Candidate:
    tiles = tuple(params[f"t{i}"] for i in range(len(space.per_dim)))
    return Candidate(tiles, space.orders[params["order"]], params["stages"],
                     params.get("dataflow"))


def run_strategy(name: str, space: OpSpace, evaluate, budget: int, batch: int = 1) -> None:
    """Search `space`, measuring at most `budget` new candidates; `evaluate(list
    of Candidate)` measures them (in parallel) and returns Candidate -> cycles."""
    if space.heuristic is not None and space.heuristic in space.valid:
        evaluate([space.heuristic])
    if name == "coordinate":
        _coordinate(space, evaluate, budget, batch)
    else:
        _optuna(name, space, evaluate, budget, batch)


def _coordinate(space: OpSpace, evaluate, budget: int, batch: int) -> None:
    params = parameters(space)
    current = space.heuristic if space.heuristic in space.valid else \
        min(space.valid, key=space.valid.get)
    best = evaluate([current])[current]
    seen = {current}

    def measure(candidates):
        nonlocal best, current
        improved = False
        for start in range(0, len(candidates), batch):
            chunk = candidates[start:start + batch]
            seen.update(chunk)
            for candidate, cycles in evaluate(chunk).items():
                if cycles is not None and (best is None or cycles < best):
                    best, current, improved = cycles, candidate, True
        return improved

    changed = True
    while changed and len(seen) - 1 < budget:
        changed = False
        for name, choices in params.items():
            base = to_params(space, current)
            tries = [from_params(space, dict(base, **{name: value})) for value in choices]
            tries = [c for c in dict.fromkeys(tries) if c in space.valid and c not in seen]
            changed |= measure(tries[:budget - (len(seen) - 1)])
            if len(seen) - 1 >= budget:
                break
    # Converged with budget left: the cost model's best candidates not yet measured.
    left = budget - (len(seen) - 1)
    if left > 0:
        ranked = sorted((c for c in space.valid if c not in seen),
                        key=lambda c: (space.valid[c], c.key()))
        measure(ranked[:left])


def _optuna(name: str, space: OpSpace, evaluate, budget: int, batch: int) -> None:
    params = parameters(space)
    if name == "grid":
        sampler = _GridSampler(params, seed=0)
    else:
        sampler = optuna.samplers.TPESampler(seed=0, n_startup_trials=max(3, min(10, budget // 4)))
    study = optuna.create_study(direction="minimize", sampler=sampler)
    distributions = {key: optuna.distributions.CategoricalDistribution(choices)
                     for key, choices in params.items()}
    if name == "tpe":
        # Model-guided start: the heuristic's schedule, then the cost model's
        # best few, re-measured on the simulator; TPE goes on from them.
        ranked = sorted(space.valid, key=lambda c: (space.valid[c], c.key()))
        first = ([space.heuristic] if space.heuristic in space.valid else []) + \
            ranked[:max(2, budget // 3)]
        for candidate in dict.fromkeys(first):
            study.enqueue_trial(to_params(space, candidate))
    done: dict = {}
    measured_count, asked = 0, 0
    # Refused points do not count against the budget; the grid's are bounded by its size.
    limit = budget * 20 + 100 if name != "grid" else math.prod(len(c) for c in params.values())
    while measured_count < budget and asked < limit:
        trials = []
        while len(trials) < batch and asked < limit:
            if name == "grid" and sampler.is_exhausted(study):
                break
            trial = study.ask(distributions)
            asked += 1
            candidate = from_params(space, trial.params)
            if candidate not in space.valid:
                study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                continue
            if candidate in done or candidate in (c for _, c in trials):
                # Sampled again: its measurement is known, no new simulation.
                if done.get(candidate) is None:
                    study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                else:
                    study.tell(trial, done[candidate])
                continue
            trials.append((trial, candidate))
        if not trials:
            break
        results = evaluate([candidate for _, candidate in trials])
        for trial, candidate in trials:
            cycles = done[candidate] = results.get(candidate)
            if cycles is None:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
            else:
                study.tell(trial, cycles)
        measured_count += len(trials)
        if name == "grid" and sampler.is_exhausted(study):
            break
