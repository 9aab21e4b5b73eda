"""Whole-process compile time: `atvoss compile` against TVM on the same ONNX model.

Builds ResNet-50 and DenseNet-121 (bench/zoo.py: opset 9, real sizes, random
weights), saves them as .onnx files, then times, each in a fresh process:
  - atvoss: `atvoss compile model.onnx -o model.<suffix> -q` (ONNX -> npu program);
  - TVM:    `tvm.relax.frontend.onnx.from_onnx` + `tvm.compile(mod, target="llvm")`,
            `import tvm` included.
Best of --runs runs each; wall time and the process's CPU time (user + sys),
since the machine may be shared. Prints the ResNet-50 ratio atvoss / TVM
(goal < 1) and the DenseNet-121 compile time (goal < 10 s).

Installs nothing: TVM runs if `apache-tvm` is importable by the Python given
with --tvm-python (default: $ATVOSS_TVM_PYTHON, else this Python); otherwise
the TVM column says so.

    python bench/compile_vs_tvm.py [--runs=3] [--tvm-python=/path/to/python]
                                   [--models resnet50 densenet121] [--suffix=.mlirbc]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

import onnx

from zoo import MODELS

RATIO_GOAL = 1.0
DENSENET_SECONDS_GOAL = 10.0

TVM_SCRIPT = """
import sys
import onnx
import tvm
from tvm.relax.frontend.onnx import from_onnx
module = from_onnx(onnx.load(sys.argv[1]), keep_params_in_input=False)
tvm.compile(module, target="llvm")
"""


def timed(command: list[str], runs: int) -> tuple[float, float]:
    """(best wall seconds, best CPU seconds) of `command` over `runs` runs."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        finished = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if finished.returncode:
            raise RuntimeError(f"{' '.join(command)} failed:\n{finished.stderr[-2000:]}")
        walls.append(wall)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return min(walls), min(cpus)


def atvoss_command() -> list[str]:
    script = os.path.join(os.path.dirname(sys.executable), "atvoss")
    if os.path.exists(script):
        return [script]
    return [sys.executable, "-m", "atvoss_mlir.tools.atvoss"]


def output_suffix(requested: str) -> str:
    """The fastest output `atvoss compile` writes: bytecode when it has it."""
    if requested != "auto":
        return requested
    usage = subprocess.run(atvoss_command() + ["compile", "--help"], capture_output=True,
                           text=True).stdout
    return ".mlirbc" if "bytecode" in usage else ".mlir"


def tvm_missing(python: str) -> str | None:
    """Why TVM cannot run under `python`, or None when it can."""
    if shutil.which(python) is None and not os.path.exists(python):
        return f"{python} does not exist"
    probe = subprocess.run([python, "-c", "import tvm, tvm.relax.frontend.onnx"],
                           capture_output=True, text=True)
    if probe.returncode:
        return f"apache-tvm is not importable by {python}"
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tvm-python", default=os.environ.get("ATVOSS_TVM_PYTHON",
                                                               sys.executable))
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--suffix", default="auto", help=".mlir, .mlirbc or auto (the fastest)")
    parser.add_argument("--no-tvm", action="store_true", help="time atvoss only")
    args = parser.parse_args(argv)

    suffix = output_suffix(args.suffix)
    missing = "not requested" if args.no_tvm else tvm_missing(args.tvm_python)
    tvm = f"relax ONNX frontend + tvm.compile(target=llvm) under {args.tvm_python}" \
        if missing is None else f"not measured ({missing})"
    print(f"whole-process compile, best of {args.runs}; atvoss writes {suffix}; TVM: {tvm}")
    print(f"{'model':<13} {'atvoss wall':>12} {'cpu':>8} {'TVM wall':>10} {'cpu':>8} "
          f"{'ratio wall':>11} {'ratio cpu':>10}")
    seconds, ratios = {}, {}
    with tempfile.TemporaryDirectory() as directory:
        for name in args.models:
            path = os.path.join(directory, f"{name}.onnx")
            onnx.save(MODELS[name](), path)
            ours = timed(atvoss_command() + ["compile", path, "-o",
                                             os.path.join(directory, name + suffix), "-q"],
                         args.runs)
            seconds[name] = ours[0]
            line = f"{name:<13} {ours[0]:>10.2f} s {ours[1]:>6.2f} s"
            if missing is None:
                theirs = timed([args.tvm_python, "-c", TVM_SCRIPT, path], args.runs)
                ratios[name] = ours[0] / theirs[0]
                line += f" {theirs[0]:>8.2f} s {theirs[1]:>6.2f} s {ratios[name]:>11.2f} " \
                        f"{ours[1] / theirs[1]:>10.2f}"
            print(line, flush=True)
    met = True
    if "resnet50" in ratios:
        ok = ratios["resnet50"] < RATIO_GOAL
        met &= ok
        print(f"ResNet-50 atvoss / TVM = {ratios['resnet50']:.2f} "
              f"(goal < {RATIO_GOAL:g}: {'met' if ok else 'MISSED'})")
    if "densenet121" in seconds:
        ok = seconds["densenet121"] < DENSENET_SECONDS_GOAL
        met &= ok
        print(f"DenseNet-121 compile {seconds['densenet121']:.2f} s "
              f"(goal < {DENSENET_SECONDS_GOAL:g} s: {'met' if ok else 'MISSED'})")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
