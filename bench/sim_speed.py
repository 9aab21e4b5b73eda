"""Speed of the simulator.

    python bench/sim_speed.py [--size 1024] [--tile 16] [--big 1024] [--big-tile 128]
                              [--repeat 3] [--profile]

(a) Timing-only throughput: a tiled GEMM with many small tiles (C = A @ B,
    f16 in, f32 accumulator kept in SRAM across k; every k step is a barrier,
    two DMA loads, a wait and a matmul). The figure is executed npu ops per
    second of wall time, simulation only (parsing and translation excluded,
    since they do not grow with the trip count). Target: >= 200,000 npu ops/s.
(b) A 1024x1024x1024 fp16 matmul program, tiled 128x128x128, with numerics,
    checked against numpy; wall time of the whole simulate() call.
    Target: < 10 s.
"""

import argparse
import cProfile
import pathlib
import pstats
import sys
import time

import numpy as np


from atvoss_mlir.context import make_context
from atvoss_mlir.sim import simulate
from mlir import ir
from atvoss_mlir.testing.sim_programs import tiled_matmul


def npu_ops_of_tiled_matmul(m: int, n: int, k: int, tm: int, tn: int, tk: int) -> int:
    """npu ops tiled_matmul() executes: per output tile a fill, then per k step
    barrier + 2 dma_load + wait + matmul, then barrier + dma_store + wait."""
    tiles = -(-m // tm) * -(-n // tn)
    return tiles * (1 + 5 * -(-k // tk) + 3)


def throughput(size: int, tile: int, repeat: int, profile: bool) -> None:
    text = tiled_matmul(size, size, size, tile, tile, tile)
    ops = npu_ops_of_tiled_matmul(size, size, size, tile, tile, tile)
    with make_context():
        module = ir.Module.parse(text)
    best = None
    for _ in range(repeat):
        start = time.perf_counter()
        report = simulate(module, timing_only=True).report
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    # The fixed cost (argument setup, translation, report) measured on a one-tile program.
    small = tiled_matmul(tile, tile, tile, tile, tile, tile)
    with make_context():
        small_module = ir.Module.parse(small)
    fixed = min(_timed(lambda: simulate(small_module, timing_only=True)) for _ in range(repeat))
    print(f"(a) timing-only: GEMM {size}^3 in {tile}^3 tiles: {ops:,} npu ops, "
          f"{report['total_cycles']:,} cycles")
    print(f"    wall {best:.3f} s (best of {repeat}), fixed cost {fixed * 1e3:.1f} ms: "
          f"{ops / best:,.0f} npu ops/s ({ops / (best - fixed):,.0f} excluding the fixed cost)"
          f"  [target >= 200,000]")
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        simulate(module, timing_only=True)
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def big_matmul(size: int, tile: int, profile: bool) -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float16)
    text = tiled_matmul(size, size, size, tile, tile, tile)
    profiler = cProfile.Profile() if profile else None
    start = time.perf_counter()
    if profiler:
        profiler.enable()
    result = simulate(text, [a, b])
    if profiler:
        profiler.disable()
    elapsed = time.perf_counter() - start
    reference = a.astype(np.float32) @ b.astype(np.float32)
    error = float(np.max(np.abs(result.outputs[0] - reference)))
    ops = npu_ops_of_tiled_matmul(size, size, size, tile, tile, tile)
    print(f"(b) numerics: fp16 matmul {size}^3 in {tile}^3 tiles ({ops:,} npu ops): "
          f"{elapsed:.2f} s wall, {result.total_cycles:,} cycles, max |error| vs numpy "
          f"{error:.2e}  [target < 10 s]")
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--tile", type=int, default=32)
    parser.add_argument("--big", type=int, default=1024)
    parser.add_argument("--big-tile", type=int, default=128)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="print cProfile hot spots")
    args = parser.parse_args()
    throughput(args.size, args.tile, args.repeat, args.profile)
    big_matmul(args.big, args.big_tile, args.profile)


if __name__ == "__main__":
    main()
