"""A reduction outside the innermost output loop (npu-tile's loop orders when
an op accumulates in place into a tensor kept in SRAM): each output tile's
partial sums wait in that tensor while the op computes the others, start
from the bias on the first reduction step and get the relu on the last. The
program matches numpy at every pipeline depth; an fp16 output, accumulated in
an fp32 tile of its own, keeps the reduction innermost."""

from __future__ import annotations

import numpy as np
import pytest

from atvoss_mlir.sim import simulate
from test_lowering_cases import compile_text

PROGRAM = """
func.func @main(%x: tensor<1x7x7x512xf32>, %w1: tensor<3x3x512x512xf32>, %b1: tensor<512xf32>,
                %w2: tensor<1x1x512x256xf32>) -> tensor<1x7x7x256xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x7x7x512xf32> to tensor<1x9x9x512xf32>
  %e1 = tensor.empty() : tensor<1x7x7x512xf32>
  %bias = linalg.broadcast ins(%b1 : tensor<512xf32>) outs(%e1 : tensor<1x7x7x512xf32>) dimensions = [0, 1, 2]
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w1 : tensor<1x9x9x512xf32>, tensor<3x3x512x512xf32>) outs(%bias : tensor<1x7x7x512xf32>) -> tensor<1x7x7x512xf32>
  %r1 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c1 : tensor<1x7x7x512xf32>) outs(%e1 : tensor<1x7x7x512xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x7x7x512xf32>
  %e2 = tensor.empty() : tensor<1x7x7x256xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x7x7x256xf32>) -> tensor<1x7x7x256xf32>
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%r1, %w2 : tensor<1x7x7x512xf32>, tensor<1x1x512x256xf32>) outs(%f2 : tensor<1x7x7x256xf32>) -> tensor<1x7x7x256xf32>
  return %c2 : tensor<1x7x7x256xf32>
}"""

OUTER = "loops (n,ow,oh,c,f)"


def messages(diagnostics) -> list[str]:
    return [str(getattr(d, "message", d)) for d in diagnostics]


def inputs(rng) -> list[np.ndarray]:
    x = rng.standard_normal((1, 7, 7, 512)).astype(np.float32)
    w1 = (rng.standard_normal((3, 3, 512, 512)) / 48).astype(np.float32)
    b1 = rng.standard_normal(512).astype(np.float32)
    w2 = (rng.standard_normal((1, 1, 512, 256)) / 22).astype(np.float32)
    return [x, w1, b1, w2]


def reference(x, w1, b1, w2) -> np.ndarray:
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0))).astype(np.float64)
    conv = sum(np.einsum("nhwc,cf->nhwf", padded[:, i:i + 7, j:j + 7, :], w1[i, j])
               for i in range(3) for j in range(3)) + b1
    return np.einsum("nhwc,cf->nhwf", np.maximum(conv, 0), w2[0, 0].astype(np.float64))


@pytest.mark.parametrize("stages", [1, 2, 3])
def test_reduction_outside_matches_numpy(stages):
    target = f"npu -pipeline-stages={stages}"
    compiled, diagnostics = compile_text(PROGRAM, target)
    assert any(OUTER in m and "kernel" not in m for m in messages(diagnostics)), \
        "the 3x3 conv no longer takes its reduction outside"
    values = inputs(np.random.default_rng(stages))
    output = np.asarray(simulate(compiled, values, target=target).outputs[0])
    expected = reference(*values)
    assert np.max(np.abs(output - expected)) <= 1e-5 * np.max(np.abs(expected))


def test_fp16_output_keeps_reduction_innermost():
    program = PROGRAM.replace("f32>", "f16>").replace("0.0 : f32", "0.0 : f16") \
        .replace(": f32", ": f16").replace("f32 {", "f16 {")
    _, diagnostics = compile_text(program)
    tiled = [m for m in messages(diagnostics) if "loops (" in m and "conv_2d" in m]
    assert tiled and not any(OUTER in m for m in tiled)
