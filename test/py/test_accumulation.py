"""Numerics that do not depend on the schedule: an fp16 matmul or convolution
whose reduction is split into K tiles accumulates in an fp32 SRAM tile and is
rounded to fp16 once, so every K tile size gives the same bits, equal to a
numpy reference that accumulates in fp32 and rounds once. With general values
the fp32 sums round, so the reference adds the products one reduction step at
a time in the matrix unit's order (matmul: k; conv: channel, then kh, kw)."""

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


MATMUL_DYNAMIC = """
func.func @main(%a: tensor<?x131xf16>, %b: tensor<131x61xf16>) -> tensor<?x61xf16> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %a, %c0 : tensor<?x131xf16>
  %z = arith.constant 0.0 : f16
  %e = tensor.empty(%m) : tensor<?x61xf16>
  %f = linalg.fill ins(%z : f16) outs(%e : tensor<?x61xf16>) -> tensor<?x61xf16>
  %r = linalg.matmul ins(%a, %b : tensor<?x131xf16>, tensor<131x61xf16>)
      outs(%f : tensor<?x61xf16>) -> tensor<?x61xf16>
  return %r : tensor<?x61xf16>
}"""


def general_matmul_inputs(rng) -> tuple[np.ndarray, np.ndarray]:
    """Non-integer fp16 values; the first and last reduction steps add a large
    product and take it away again, so the partial sums in between carry fp32
    rounding errors that reach the fp16 result: another order of the adds, or
    rounding once from the exact sum, changes many output bits."""
    a, b = rng.uniform(-4, 4, (97, 131)), rng.uniform(-4, 4, (131, 61))
    a[:, 0] = a[:, -1] = 256 * rng.uniform(1, 2, 97)
    b[-1] = -b[0]
    return a.astype(np.float16), b.astype(np.float16)


def general_conv_inputs(rng) -> tuple[np.ndarray, np.ndarray]:
    """As general_matmul_inputs: channel 0 adds large products, the last
    channel takes them away."""
    x, w = rng.uniform(-4, 4, (1, 10, 10, 48)), rng.uniform(-4, 4, (3, 3, 48, 16))
    x[..., 0] = x[..., -1] = 256 * rng.uniform(1, 2, (1, 10, 10))
    w[:, :, -1] = -w[:, :, 0]
    return x.astype(np.float16), w.astype(np.float16)


def matmul_in_order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """fp32 accumulator, plus a[:, k] * b[k] for k = 0, 1, ... (each add rounded)."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):
        acc = acc + a[:, k:k + 1].astype(np.float32) * b[k:k + 1].astype(np.float32)
    return acc


def conv_in_order(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """fp32 accumulator, plus each tap's products: channel-major, then kh, then kw."""
    acc = np.zeros((1, 8, 8, 16), np.float32)
    for c in range(48):
        for i in range(3):
            for j in range(3):
                acc = acc + x[:, i:i + 8, j:j + 8, c:c + 1].astype(np.float32) \
                    * w[i, j, c].astype(np.float32)
    return acc


def conv_window_major(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """As conv_in_order, in the order kh, kw, then channel (im2col's columns)."""
    acc = np.zeros((1, 8, 8, 16), np.float32)
    for i in range(3):
        for j in range(3):
            for c in range(48):
                acc = acc + x[:, i:i + 8, j:j + 8, c:c + 1].astype(np.float32) \
                    * w[i, j, c].astype(np.float32)
    return acc


def assert_same_bits(output: np.ndarray, reference: np.ndarray) -> None:
    assert output.dtype == reference.dtype
    bits = np.uint16 if output.dtype == np.float16 else np.uint32
    np.testing.assert_array_equal(output.view(bits), reference.view(bits))


def test_matmul_fp16_general_values_same_bits_for_every_k_tile():
    a, b = general_matmul_inputs(np.random.default_rng(5))
    reference = matmul_in_order(a, b).astype(np.float16)
    for k in (131, 64, 16):
        assert_same_bits(run(MATMUL, [97, 64, k], [a, b]), reference)


def test_matmul_fp16_into_fp32_output_same_bits_for_every_k_tile():
    """An fp32 output is the accumulator itself: every fp32 rounding shows."""
    a, b = general_matmul_inputs(np.random.default_rng(6))
    text = MATMUL.replace("tensor<97x61xf16>", "tensor<97x61xf32>").replace(": f16", ": f32")
    reference = matmul_in_order(a, b)
    for k in (131, 64, 16):
        assert_same_bits(run(text, [97, 64, k], [a, b]), reference)


def test_conv_fp16_general_values_same_bits_for_every_k_tile():
    x, w = general_conv_inputs(np.random.default_rng(12))
    reference = conv_in_order(x, w).astype(np.float16)
    for c in (48, 16, 8):
        assert_same_bits(run(CONV, [1, 8, 8, 16, c], [x, w]), reference)


def test_fallback_matmul_fp16_same_bits_as_the_matrix_unit():
    """A dynamic-shape matmul stays on the fallback engine; it accumulates as
    the matrix unit does."""
    a, b = general_matmul_inputs(np.random.default_rng(5))
    compiled, diagnostics = compile_text(MATMUL_DYNAMIC)
    assert any("'linalg.matmul' stays on the fallback engine" in d.message for d in diagnostics)
    output = np.asarray(simulate(compiled, [a, b]).outputs[0])
    assert_same_bits(output, matmul_in_order(a, b).astype(np.float16))


def test_general_values_make_the_order_visible():
    """The inputs above tell accumulation orders apart in the fp16 bits: rounding
    the exact sum once, or summing each K tile on its own before adding it (any
    other order within a tile), gives other results."""
    a, b = general_matmul_inputs(np.random.default_rng(5))
    in_order = matmul_in_order(a, b).astype(np.float16)
    exact = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    assert np.count_nonzero(in_order != exact) > 50
    by_tile = np.zeros((97, 61), np.float32)
    for k in range(0, 131, 16):
        by_tile = by_tile + matmul_in_order(a[:, k:k + 16], b[k:k + 16])
    assert np.count_nonzero(in_order != by_tile.astype(np.float16)) > 50
    x, w = general_conv_inputs(np.random.default_rng(12))
    assert np.count_nonzero(conv_in_order(x, w).astype(np.float16)
                            != conv_window_major(x, w).astype(np.float16)) > 20


def test_conv_fp16_im2col_adds_in_column_order():
    """The im2col strategy's GEMM reduces over its columns, ordered (kh, kw, c)."""
    x, w = general_conv_inputs(np.random.default_rng(12))
    pipeline = with_tiles([1, 8, 8, 16, 48]).replace(
        "npu-select-conv-strategy,", "npu-select-conv-strategy{strategy=im2col},")
    compiled, diagnostics = compile_text(CONV, pipeline=pipeline)
    assert any("conv strategy im2col" in d.message for d in diagnostics)
    output = np.asarray(simulate(compiled, [x, w]).outputs[0])
    assert_same_bits(output, conv_window_major(x, w).astype(np.float16))
