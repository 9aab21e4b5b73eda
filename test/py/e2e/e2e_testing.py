"""Shared helpers of the end-to-end tests: an ONNX model compiled with
atvoss_mlir.compile, simulated, and compared with onnxruntime."""

from __future__ import annotations

import os

import numpy as np

import atvoss_mlir
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
