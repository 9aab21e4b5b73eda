"""Numerics that do not depend on the schedule: an fp16 matmul or convolution
whose reduction is split into K tiles accumulates in an fp32 SRAM tile and is
rounded to fp16 once, so every K tile size gives the same bits, equal to a
numpy reference that accumulates in fp32 and rounds once."""

from __future__ import annotations

import numpy as np
import pytest

from atvoss_mlir.pipeline import named_pipeline
from atvoss_mlir.sim import simulate
from test_lowering_cases import compile_text

MATMUL = """
func.func @main(%a: tensor<97x131xf16>, %b: tensor<131x61xf16>) -> tensor<97x61xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<97x61xf16>
  %f = linalg.fill ins(%z : f16) outs(%e : tensor<97x61xf16>) -> tensor<97x61xf16>
  %r = linalg.matmul ins(%a, %b : tensor<97x131xf16>, tensor<131x61xf16>)
      outs(%f : tensor<97x61xf16>) -> tensor<97x61xf16>
  return %r : tensor<97x61xf16>
}"""

CONV = """
func.func @main(%x: tensor<1x10x10x48xf16>, %w: tensor<3x3x48x16xf16>) -> tensor<1x8x8x16xf16> {
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<1x8x8x16xf16>
  %f = linalg.fill ins(%z : f16) outs(%e : tensor<1x8x8x16xf16>) -> tensor<1x8x8x16xf16>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x10x10x48xf16>, tensor<3x3x48x16xf16>)
      outs(%f : tensor<1x8x8x16xf16>) -> tensor<1x8x8x16xf16>
  return %r : tensor<1x8x8x16xf16>
}"""


def with_tiles(tiles: list[int]) -> str:
    pipeline = named_pipeline("npu-pipeline")
    return pipeline.replace("npu-tile,", f"npu-tile{{tile-sizes={','.join(map(str, tiles))}}},")


def run(text: str, tiles: list[int], inputs: list) -> np.ndarray:
    compiled, _ = compile_text(text, pipeline=with_tiles(tiles))
    return np.asarray(simulate(compiled, inputs).outputs[0])


def integer_valued(rng, shape) -> np.ndarray:
    """fp16 values whose products and fp32 sums are exact, while partial sums
    pass 2048 (where fp16 has no unit precision): rounding each K tile's
    partial sum to fp16 loses bits, rounding once does not."""
    return rng.integers(-40, 41, shape).astype(np.float16)


def conv_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    x, w = x.astype(np.float32), w.astype(np.float32)
    out = np.zeros((1, 8, 8, 16), np.float32)
    for i in range(3):
        for j in range(3):
            out += np.einsum("nhwc,cf->nhwf", x[:, i:i + 8, j:j + 8, :], w[i, j])
    return out.astype(np.float16)


def test_matmul_fp16_same_bits_for_every_k_tile():
    rng = np.random.default_rng(7)
    a, b = integer_valued(rng, (97, 131)), integer_valued(rng, (131, 61))
    reference = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    for k in (131, 64, 16):
        output = run(MATMUL, [97, 64, k], [a, b])
        np.testing.assert_array_equal(output.view(np.uint16), reference.view(np.uint16))


def test_matmul_fp16_general_values_round_once():
    """With general values fp32 sums depend on their order (as numpy's own do),
    so the K tilings agree with the fp32 reference to fp32 accumulation error,
    far below one fp16 rounding per K tile."""
    rng = np.random.default_rng(7)
    a, b = (rng.uniform(-4, 4, shape).astype(np.float16) for shape in ((97, 131), (131, 61)))
    exact = a.astype(np.float64) @ b.astype(np.float64)
    reference = exact.astype(np.float32).astype(np.float16).astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    for k in (131, 64, 16):
        output = run(MATMUL, [97, 64, k], [a, b]).astype(np.float64)
        # One fp16 rounding of the result, plus fp32 summation error.
        bound = np.abs(reference) * 2.0 ** -10 + scale * 131 * 2.0 ** -24
        assert np.all(np.abs(output - reference) <= bound)


def test_conv_fp16_same_bits_for_every_k_tile():
    rng = np.random.default_rng(11)
    x, w = integer_valued(rng, (1, 10, 10, 48)), integer_valued(rng, (3, 3, 48, 16))
    outputs = [run(CONV, [1, 8, 8, 16, c], [x, w]) for c in (48, 16, 8)]
    for output in outputs:
        np.testing.assert_array_equal(output, conv_reference(x, w))


def test_partial_sums_of_integer_inputs_pass_fp16_precision():
    """The inputs above make rounding between K tiles visible: this is what a
    schedule that rounded each partial sum to fp16 would have produced."""
    rng = np.random.default_rng(7)
    a, b = integer_valued(rng, (97, 131)), integer_valued(rng, (131, 61))
    exact = a.astype(np.float32) @ b.astype(np.float32)
    rounded = np.zeros((97, 61), np.float16)
    for k in range(0, 131, 16):
        rounded = (rounded.astype(np.float32)
                   + a[:, k:k + 16].astype(np.float32) @ b[k:k + 16].astype(np.float32)
                   ).astype(np.float16)
    assert np.count_nonzero(rounded != exact.astype(np.float16)) > 100
