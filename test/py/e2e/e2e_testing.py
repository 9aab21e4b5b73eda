"""Shared helpers of the end-to-end tests: an ONNX model compiled with
atvoss_mlir.compile, simulated, and compared with onnxruntime."""

from __future__ import annotations

import importlib
import os
import sys

import numpy as np

import atvoss_mlir
from atvoss_mlir import layout_choice
from onnx_testing import reference

REPOSITORY = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                                          os.pardir))
EXAMPLES = os.path.join(REPOSITORY, "examples")

FP32 = {"rtol": 1e-4, "atol": 1e-5}
FP16 = {"rtol": 2e-2, "atol": 1e-2}

# The default machine, and one whose SRAM is small enough that every op of the
# per-op tests runs in several tiles, with partial tiles at the edges.
DEFAULT_TARGET = None
SMALL_SRAM_TARGET = "npu -max-sram-bytes=8192"


def compile_and_check(onnx_model, feeds: dict, target=DEFAULT_TARGET, rtol=1e-4, atol=1e-5):
    """Compile, simulate and compare every output with onnxruntime; returns the
    compiled model and the largest absolute error."""
    compiled = atvoss_mlir.compile(onnx_model, target)
    outputs = compiled.run(feeds)
    expected = reference(onnx_model, feeds)
    assert list(outputs) == [o.name for o in onnx_model.graph.output]
    largest = 0.0
    for (name, got), want in zip(outputs.items(), expected):
        assert got.shape == want.shape, name
        assert got.dtype == want.dtype, name
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=name)
        if got.size:
            largest = max(largest, float(np.abs(got.astype(np.float64) - want).max()))
    return compiled, largest


def bench_module(name: str):
    """A module of the repository's bench/ directory (the model zoo)."""
    sys.path.insert(0, os.path.join(REPOSITORY, "bench"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


def without_pass(monkeypatch, argument: str) -> None:
    """Compile with the named pipeline less the pass `argument` from now on."""
    pipeline = layout_choice.named_pipeline(layout_choice.PIPELINE).replace(f"{argument},", "")
    assert argument not in pipeline, argument
    monkeypatch.setattr(layout_choice, "named_pipeline", lambda name: pipeline)
