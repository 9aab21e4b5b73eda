"""ResNet-50 end to end: build the ONNX model (bench/zoo.py: opset 9, 25.6M
parameters, 224x224, batch 1, random weights), import and compile it for
the default target, then simulate it in timing-only mode.

Prints the import + compile time, the simulation time, the total cycles, the
roofline bound and the ratio, and what stayed on the fallback engine.
Targets on the development machine: compile < 20 s, timing-only simulation < 20 s.

    python bench/e2e_resnet50.py [--target='npu ...'] [--width=64] [--image=224]
"""

from __future__ import annotations

import argparse
import sys
import time

import atvoss_mlir
from zoo import resnet50

COMPILE_SECONDS_GOAL = 20.0
SIMULATE_SECONDS_GOAL = 20.0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default=None)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--image", type=int, default=224)
    args = parser.parse_args(argv)

    start = time.perf_counter()
    onnx_model = resnet50(width=args.width, image=args.image)
    build_seconds = time.perf_counter() - start

    start = time.perf_counter()
    compiled = atvoss_mlir.compile(onnx_model, args.target)
    compile_seconds = time.perf_counter() - start

    start = time.perf_counter()
    compiled.run(timing_only=True)
    simulate_seconds = time.perf_counter() - start
    report = compiled.report

    def verdict(seconds, goal):
        return f"(goal < {goal:.0f} s: {'met' if seconds < goal else 'MISSED'})"
    print(f"ResNet-50 width {args.width}, {args.image}x{args.image}, target "
          f"'{report['target']}'")
    print(f"  build ONNX model            {build_seconds:8.2f} s")
    print(f"  import + compile            {compile_seconds:8.2f} s  "
          f"{verdict(compile_seconds, COMPILE_SECONDS_GOAL)}")
    print(f"  timing-only simulation      {simulate_seconds:8.2f} s  "
          f"{verdict(simulate_seconds, SIMULATE_SECONDS_GOAL)}")
    print(f"  total cycles             {report['total_cycles']:>14,}")
    print(f"  roofline cycles          {report['roofline_cycles']:>14,}")
    print(f"  roofline ratio           {report['roofline_ratio']:>14.3f}")
    print(f"  MACs                     {report['macs']:>14,}")
    print(f"  DRAM read / write        {report['dram_read_bytes']:>14,} / "
          f"{report['dram_write_bytes']:,} B")
    print(f"  SRAM peak                {report['sram_peak_bytes']:>14,} B")
    for name, engine in report["engines"].items():
        print(f"  {name:<10} busy {engine['busy_cycles']:>14,} cycles  "
              f"({100 * engine['utilization']:.1f}%)")
    print(f"  ops on the fallback engine: {len(compiled.fallback_ops)}")
    for line in compiled.fallback_ops:
        print(f"    {line}")
    met = compile_seconds < COMPILE_SECONDS_GOAL and simulate_seconds < SIMULATE_SECONDS_GOAL
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
