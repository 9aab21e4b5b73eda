"""Cycles of a streamed matmul with one vs two SRAM buffers per tile.

    python bench/sim_double_buffering.py [--m 4096] [--n 32] [--k 64] [--tile 128]

C[m,n] = A[m,k] @ B[k,n] with B resident in SRAM and A streamed in row tiles.
With one buffer each tile is loaded, computed and stored in turn; with two,
the next tile's DMA overlaps the current tile's matmul.
"""

import argparse
import pathlib
import sys
import time


from atvoss_mlir.sim import simulate
from atvoss_mlir.testing.sim_programs import streamed_matmul


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--m", type=int, default=4096)
    parser.add_argument("--n", type=int, default=32)
    parser.add_argument("--k", type=int, default=64)
    parser.add_argument("--tile", type=int, default=128)
    parser.add_argument("--target", default="npu")
    args = parser.parse_args()
    print(f"GEMM {args.m}x{args.n}x{args.k}, A streamed in {args.tile}-row tiles, "
          f"target '{args.target}'")
    print(f"{'buffers':>8} {'cycles':>10} {'roofline':>10} {'ratio':>7} {'matrix util':>12} "
          f"{'sim time':>9}")
    for buffers in (1, 2):
        program = streamed_matmul(args.m, args.n, args.k, args.tile, buffers)
        start = time.perf_counter()
        report = simulate(program, target=args.target, timing_only=True).report
        elapsed = time.perf_counter() - start
        print(f"{buffers:>8} {report['total_cycles']:>10,} {report['roofline_cycles']:>10,} "
              f"{report['roofline_ratio']:>7.2f} "
              f"{report['engines']['matrix']['utilization']:>12.1%} {elapsed:>8.2f}s")


if __name__ == "__main__":
    main()
