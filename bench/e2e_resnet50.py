"""ResNet-50 end to end: build the ONNX model (bench/zoo.py: opset 9, 25.6M
parameters, 224x224, batch 1, random weights), import and compile it for
the default target, then simulate it in timing-only mode.

Prints the import + compile time, the simulation time, the total cycles, the
roofline bound and the ratio, what stayed on the fallback engine, and the size
and save/load times of the compiled artifact as bytecode (.mlirbc, weights as
dense_resource blobs) and as text (.mlir, weights as hex).
Targets on the development machine: compile < 20 s, timing-only simulation < 20 s,
bytecode artifact < 110 MB (the fp32 weights are 102 MB).

    python bench/e2e_resnet50.py [--target='npu ...'] [--width=64] [--image=224]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time

import atvoss_mlir
from zoo import resnet50

COMPILE_SECONDS_GOAL = 20.0
SIMULATE_SECONDS_GOAL = 20.0
BYTECODE_BYTES_GOAL = 110e6


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
    bytecode_bytes = artifact_sizes(compiled)
    met = compile_seconds < COMPILE_SECONDS_GOAL and simulate_seconds < SIMULATE_SECONDS_GOAL \
        and bytecode_bytes < BYTECODE_BYTES_GOAL
    return 0 if met else 1


def artifact_sizes(compiled) -> int:
    """Print the size and save/load times of the artifact in each format; returns
    the size of the bytecode."""
    sizes = {}
    with tempfile.TemporaryDirectory() as directory:
        for suffix, kind in ((".mlirbc", "bytecode"), (".mlir", "text")):
            path = os.path.join(directory, "resnet50" + suffix)
            start = time.perf_counter()
            compiled.save(path)
            save_seconds = time.perf_counter() - start
            start = time.perf_counter()
            atvoss_mlir.load(path)
            load_seconds = time.perf_counter() - start
            sizes[kind] = os.path.getsize(path)
            goal = ""
            if kind == "bytecode":
                met = sizes[kind] < BYTECODE_BYTES_GOAL
                goal = f"  (goal < {BYTECODE_BYTES_GOAL / 1e6:.0f} MB: {'met' if met else 'MISSED'})"
            print(f"  artifact {suffix:<7} ({kind:<8}) {sizes[kind] / 1e6:8.1f} MB  save "
                  f"{save_seconds:5.2f} s  load {load_seconds:5.2f} s{goal}")
    return sizes["bytecode"]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
