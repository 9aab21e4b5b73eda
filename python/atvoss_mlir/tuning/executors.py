"""Where trials run: a local process pool (the default), or Ray when one
machine is not enough (`pip install 'atvoss-mlir[distributed]'`, then
`--executor ray` for a local instance or `--executor ray://host:port`).

A job is (op program text, target string, candidate key); its result is
(candidate key, Measured or None, error text or None). Workers start with
`spawn`: each imports the compiler afresh rather than inheriting MLIR state
across a fork.
"""

from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

from ..diagnostics import DiagnosticError


def measure_job(job):
    from ..target import parse_target
    from .op_program import measure
    from .space import Candidate
    program, target_text, key = job
    candidate = Candidate.from_key(key)
    try:
        return key, measure(program, parse_target(target_text), candidate.tiles, candidate.order,
                            candidate.stages, candidate.dataflow), None
    except DiagnosticError as error:
        return key, None, str(error)


class InlineExecutor:
    """Trials one after the other in this process."""
    name = "inline"
    workers = 1

    def map(self, jobs):
        return [measure_job(job) for job in jobs]

    def close(self):
        pass


class LocalExecutor:
    name = "local"

    def __init__(self, workers: int | None = None):
        self.workers = workers or max(1, os.cpu_count() or 1)
        self.pool = ProcessPoolExecutor(self.workers,
                                        mp_context=multiprocessing.get_context("spawn"))

    def map(self, jobs):
        return list(self.pool.map(measure_job, jobs))

    def close(self):
        self.pool.shutdown()


class RayExecutor:
    name = "ray"

    def __init__(self, address: str | None = None, workers: int | None = None):
        import ray
        self.ray = ray
        if not ray.is_initialized():
            if address:
                ray.init(address=address, ignore_reinit_error=True, log_to_driver=False)
            else:
                ray.init(num_cpus=workers, include_dashboard=False, ignore_reinit_error=True,
                         log_to_driver=False)
        self.workers = int(ray.available_resources().get("CPU", 1)) or 1
        self.remote = ray.remote(measure_job)

    def map(self, jobs):
        return self.ray.get([self.remote.remote(job) for job in jobs])

    def close(self):
        pass


class ExecutorError(Exception):
    pass


def make_executor(spec: str, workers: int | None = None):
    """`local`, `inline`, `ray` or `ray://host:port`."""
    if spec == "local":
        return LocalExecutor(workers) if (workers or os.cpu_count() or 1) > 1 else InlineExecutor()
    if spec == "inline":
        return InlineExecutor()
    if spec == "ray" or spec.startswith("ray://"):
        try:
            import ray  # noqa: F401
        except ImportError:
            raise ExecutorError("--executor ray needs Ray: pip install 'atvoss-mlir[distributed]'")
        return RayExecutor(None if spec == "ray" else spec, workers)
    raise ExecutorError(f"unknown executor '{spec}': expected local, ray or ray://host:port")
