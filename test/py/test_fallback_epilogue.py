"""An op with a folded activation that stays on the fallback engine computes
the activation too (npu-tile writes it as an op of its own): the simulated
result is numpy's conv followed by the clip."""

from __future__ import annotations

import numpy as np
from mlir import ir

from atvoss_mlir.context import make_context
from atvoss_mlir.passes import PassContext
from atvoss_mlir.pipeline import run_pipeline
from atvoss_mlir.sim import simulate
from atvoss_mlir.target import parse_target

PROGRAM = """
func.func @main(%x: memref<1x6x6x8xf32>, %w: memref<3x3x8xf32>, %init: memref<1x4x4x8xf32>,
                %y: memref<1x4x4x8xf32>) {
  memref.copy %init, %y : memref<1x4x4x8xf32> to memref<1x4x4x8xf32>
  linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, npu.activation = "clip",
      npu.clip_min = 0.0 : f64, npu.clip_max = 6.0 : f64, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x6x6x8xf32>, memref<3x3x8xf32>) outs(%y : memref<1x4x4x8xf32>)
  return
}
"""


def test_fallback_op_applies_its_folded_clip():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 6, 6, 8)).astype(np.float32) * 3
    w = rng.standard_normal((3, 3, 8)).astype(np.float32)
    init = rng.standard_normal((1, 4, 4, 8)).astype(np.float32)
    module = ir.Module.parse(PROGRAM, make_context())
    run_pipeline(module, "builtin.module(npu-tile)", PassContext(target=parse_target("npu")))
    result = simulate(str(module), [x, w, init, np.zeros((1, 4, 4, 8), np.float32)])
    expected = init.astype(np.float64).copy()
    for i in range(4):
        for j in range(4):
            expected[0, i, j] += np.einsum("hwc,hwc->c", x[0, i:i + 3, j:j + 3], w)
    expected = np.clip(expected, 0.0, 6.0)
    # The program's arguments as it leaves them: %y is the fourth.
    np.testing.assert_allclose(np.asarray(result.outputs[3]), expected, rtol=1e-5, atol=1e-5)
