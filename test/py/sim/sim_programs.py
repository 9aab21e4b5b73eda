"""The simulator tests' program builders (shared with the benchmarks)."""

from atvoss_mlir.testing.sim_programs import *  # noqa: F401,F403
