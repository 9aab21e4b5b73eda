"""Numerics of the simulator against independent numpy references."""

import math

import numpy as np
import pytest

from atvoss_mlir.sim import simulate
from sim_programs import single_tile, tiled_matmul

RNG = np.random.default_rng(7)


def uniform(shape, dtype=np.float16):
    return RNG.uniform(-1, 1, shape).astype(dtype)


def conv_reference(x, w, stride, dilation):
    """Direct sum over the filter taps, in float64."""
    n, h, wd, c = x.shape
    kh, kw, _, f = w.shape
    oh = (h - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, oh, ow, f))
    for i in range(kh):
        for j in range(kw):
            rows = x[:, i * dilation[0]: i * dilation[0] + stride[0] * (oh - 1) + 1: stride[0],
                     j * dilation[1]: j * dilation[1] + stride[1] * (ow - 1) + 1: stride[1], :]
            out += rows.astype(np.float64) @ w[i, j].astype(np.float64)
    return out


def test_tiled_fp16_matmul_with_partial_tiles():
    m, n, k = 100, 72, 80
    a, b = uniform((m, k)), uniform((k, n))
    result = simulate(tiled_matmul(m, n, k, 32, 32, 48), [a, b])
    reference = a.astype(np.float64) @ b.astype(np.float64)
    (c,) = result.outputs
    assert c.dtype == np.float32 and c.shape == (m, n)
    np.testing.assert_allclose(c, reference, rtol=1e-5, atol=1e-5)
    # fp32 accumulation: much closer than an fp16 accumulation could be.
    assert np.abs(c - reference).max() < 1e-4


def test_matmul_bias_relu_fp16_output():
    a, b, bias = uniform((16, 24)), uniform((24, 8)), uniform((8,))
    body = ('"npu.matmul"({in0}, {in1}, {out0}, {in2}) {accumulate = false, '
            'activation = "relu"} : ({in0_t}, {in1_t}, {out0_t}, {in2_t}) -> ()')
    program = single_tile([((16, 24), np.float16), ((24, 8), np.float16), ((8,), np.float16)],
                          [((16, 8), np.float16)], body)
    out = simulate(program, [a, b, bias, np.zeros((16, 8), np.float16)]).outputs[3]
    reference = np.maximum(a.astype(np.float32) @ b.astype(np.float32) + bias, 0)
    np.testing.assert_array_equal(out, reference.astype(np.float16))


@pytest.mark.parametrize("stride,dilation", [((2, 2), (1, 1)), ((1, 1), (2, 2)), ((2, 1), (2, 3))])
def test_conv2d_strides_dilations(stride, dilation):
    x, w = uniform((2, 13, 14, 5)), uniform((3, 3, 5, 7))
    reference = conv_reference(x, w, stride, dilation)
    body = ('"npu.conv2d"({in0}, {in1}, {out0}) {accumulate = false, activation = "none", '
            f'strides = array<i64: {stride[0]}, {stride[1]}>, '
            f'dilations = array<i64: {dilation[0]}, {dilation[1]}>}}'
            ' : ({in0_t}, {in1_t}, {out0_t}) -> ()')
    program = single_tile([(x.shape, np.float16), (w.shape, np.float16)],
                          [(reference.shape, np.float32)], body)
    out = simulate(program, [x, w, np.zeros(reference.shape, np.float32)]).outputs[2]
    np.testing.assert_allclose(out, reference, rtol=1e-5, atol=1e-5)


def test_im2col_then_matmul_equals_conv():
    x, w = uniform((1, 9, 9, 4)), uniform((3, 3, 4, 6))
    reference = conv_reference(x, w, (2, 2), (1, 1))  # 1x4x4x6
    body = ('"npu.im2col"({in0}, {out0}) {window = array<i64: 3, 3>, strides = array<i64: 2, 2>,'
            ' dilations = array<i64: 1, 1>} : ({in0_t}, {out0_t}) -> ()\n'
            '  "npu.matmul"({out0}, {in1}, {out1}) {accumulate = false, activation = "none"}'
            ' : ({out0_t}, {in1_t}, {out1_t}) -> ()')
    program = single_tile([(x.shape, np.float16), ((36, 6), np.float16)],
                          [((16, 36), np.float16), ((16, 6), np.float32)], body)
    outs = simulate(program, [x, w.reshape(36, 6), np.zeros((16, 36), np.float16),
                              np.zeros((16, 6), np.float32)]).outputs
    np.testing.assert_allclose(outs[3].reshape(1, 4, 4, 6), reference, rtol=1e-5, atol=1e-5)
    # Row 5 is output pixel (1, 1): its window starts at input (2, 2), ordered (kh, kw, c).
    np.testing.assert_array_equal(outs[2][5], x[0, 2:5, 2:5, :].reshape(-1))


def test_depthwise_bias_relu6():
    x, w, bias = uniform((1, 10, 10, 8)) * 4, uniform((3, 3, 8)) * 4, uniform((8,))
    oh = (10 - 3) // 2 + 1
    reference = np.zeros((1, oh, oh, 8))
    for i in range(3):
        for j in range(3):
            reference += x[:, i:i + 2 * oh - 1:2, j:j + 2 * oh - 1:2, :] * w[i, j].astype(float)
    reference = np.clip(reference + bias, 0, 6)
    body = ('"npu.depthwise_conv2d"({in0}, {in1}, {out0}, {in2}) {activation = "relu6", '
            'strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>} '
            ': ({in0_t}, {in1_t}, {out0_t}, {in2_t}) -> ()')
    program = single_tile([(x.shape, np.float16), (w.shape, np.float16), ((8,), np.float16)],
                          [(reference.shape, np.float32)], body)
    out = simulate(program, [x, w, bias, np.zeros(reference.shape, np.float32)]).outputs[3]
    np.testing.assert_allclose(out, reference, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["max", "avg", "sum"])
def test_pool2d(kind):
    x = uniform((1, 9, 9, 3))
    oh = (9 - 3) // 2 + 1
    taps = [x[:, i:i + 2 * oh - 1:2, j:j + 2 * oh - 1:2, :].astype(np.float32)
            for i in range(3) for j in range(3)]
    total = np.sum(taps, axis=0)
    reference = {"max": np.max(taps, axis=0), "avg": total / 9, "sum": total}[kind]
    body = (f'"npu.pool2d"({{in0}}, {{out0}}) {{kind = "{kind}", window = array<i64: 3, 3>, '
            'strides = array<i64: 2, 2>} : ({in0_t}, {out0_t}) -> ()')
    program = single_tile([(x.shape, np.float16)], [((1, oh, oh, 3), np.float16)], body)
    out = simulate(program, [x, np.zeros((1, oh, oh, 3), np.float16)]).outputs[1]
    np.testing.assert_array_equal(out, reference.astype(np.float16))


@pytest.mark.parametrize("kind,fn", [("add", np.add), ("sub", np.subtract), ("mul", np.multiply),
                                     ("max", np.maximum), ("min", np.minimum)])
def test_elementwise_broadcast(kind, fn):
    a, b = uniform((6, 16)), uniform((16,))
    body = (f'"npu.elementwise"({{in0}}, {{in1}}, {{out0}}) {{kind = "{kind}"}} '
            ': ({in0_t}, {in1_t}, {out0_t}) -> ()')
    program = single_tile([((6, 16), np.float16), ((16,), np.float16)], [((6, 16), np.float16)],
                          body)
    out = simulate(program, [a, b, np.zeros((6, 16), np.float16)]).outputs[2]
    reference = fn(a.astype(np.float32), b.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(out, reference)


@pytest.mark.parametrize("activation,attrs,fn", [
    ("relu", "", lambda v: np.maximum(v, 0)),
    ("clip", ", clip_min = -0.5 : f64, clip_max = 0.25 : f64", lambda v: np.clip(v, -0.5, 0.25)),
    ("abs", "", np.abs),
])
def test_elementwise_epilogue(activation, attrs, fn):
    """The activation applies to the sum on its way out: as the two ops, in f16."""
    a, b = uniform((6, 16)), uniform((16,))
    body = (f'"npu.elementwise"({{in0}}, {{in1}}, {{out0}}) {{kind = "add", '
            f'activation = "{activation}"{attrs}}} : ({{in0_t}}, {{in1_t}}, {{out0_t}}) -> ()')
    program = single_tile([((6, 16), np.float16), ((16,), np.float16)], [((6, 16), np.float16)],
                          body)
    out = simulate(program, [a, b, np.zeros((6, 16), np.float16)]).outputs[2]
    total = (a.astype(np.float32) + b.astype(np.float32)).astype(np.float16)
    np.testing.assert_array_equal(out, fn(total.astype(np.float32)).astype(np.float16))


def _gelu(v):
    return 0.5 * v * (1 + math.erf(v / math.sqrt(2)))


@pytest.mark.parametrize("kind,attrs,fn", [
    ("relu", "", lambda v: max(v, 0.0)),
    ("relu6", "", lambda v: min(max(v, 0.0), 6.0)),
    ("clip", ", clip_min = -0.5 : f64, clip_max = 0.25 : f64", lambda v: min(max(v, -0.5), 0.25)),
    ("gelu", "", _gelu),
    ("sigmoid", "", lambda v: 1 / (1 + math.exp(-v))),
    ("tanh", "", math.tanh),
])
def test_activation(kind, attrs, fn):
    x = (RNG.standard_normal((4, 64)) * 4).astype(np.float32)
    body = (f'"npu.activation"({{in0}}, {{out0}}) {{kind = "{kind}"{attrs}}} '
            ': ({in0_t}, {out0_t}) -> ()')
    program = single_tile([((4, 64), np.float32)], [((4, 64), np.float32)], body)
    out = simulate(program, [x, np.zeros((4, 64), np.float32)]).outputs[1]
    reference = np.vectorize(fn)(x.astype(np.float64))
    np.testing.assert_allclose(out, reference, rtol=2e-6, atol=3e-7)


def test_int8_matmul_requantize():
    a = RNG.integers(-128, 128, (32, 64)).astype(np.int8)
    b = RNG.integers(-128, 128, (64, 16)).astype(np.int8)
    scale, zero_point = 0.0003, 3
    body = ('"npu.matmul"({in0}, {in1}, {out0}) {accumulate = false, activation = "none"} '
            ': ({in0_t}, {in1_t}, {out0_t}) -> ()\n'
            f'  "npu.requantize"({{out0}}, {{out1}}) {{scale = {scale} : f64, '
            f'zero_point = {zero_point} : i64}} : ({{out0_t}}, {{out1_t}}) -> ()')
    program = single_tile([((32, 64), np.int8), ((64, 16), np.int8)],
                          [((32, 16), np.int32), ((32, 16), np.int8)], body)
    outs = simulate(program, [a, b, np.zeros((32, 16), np.int32),
                              np.zeros((32, 16), np.int8)]).outputs
    acc = a.astype(np.int64) @ b.astype(np.int64)
    np.testing.assert_array_equal(outs[2], acc)
    expected = [max(-128, min(127, round(v * scale) + zero_point)) for v in acc.reshape(-1)]
    np.testing.assert_array_equal(outs[3].reshape(-1), np.array(expected, np.int8))


def test_requantize_rounds_half_to_even():
    x = np.array([[5, 15, -5, 25, 1000, -1000]], np.int32)
    body = ('"npu.requantize"({in0}, {out0}) {scale = 0.1 : f64, zero_point = 0 : i64} '
            ': ({in0_t}, {out0_t}) -> ()')
    program = single_tile([(x.shape, np.int32)], [(x.shape, np.int8)], body)
    out = simulate(program, [x, np.zeros(x.shape, np.int8)]).outputs[1]
    # 0.5 -> 0, 1.5 -> 2, -0.5 -> -0, 2.5 -> 2, clamped at 127 / -128.
    np.testing.assert_array_equal(out, [[0, 2, 0, 2, 100, -100]])


def test_requantize_offset_is_added_in_f32_before_rounding():
    # 2.4999998 + 128 is 130.5 in f32 (a tie, to even: 130); 3.4999998 + 128
    # is 131.5 (to 132); -0.5 + 128 is exact (to 128); the offset of 128 then
    # taken off by the zero point.
    x = np.array([[2.4999998, 3.4999998, -0.5, 200.0]], np.float32)
    body = ('"npu.requantize"({in0}, {out0}) {divide = true, offset = 128.0 : f64, '
            'scale = 1.0 : f64, zero_point = -128 : i64} : ({in0_t}, {out0_t}) -> ()')
    program = single_tile([(x.shape, np.float32)], [(x.shape, np.int8)], body)
    out = simulate(program, [x, np.zeros(x.shape, np.int8)]).outputs[1]
    np.testing.assert_array_equal(out, [[2, 4, 0, 127]])


def test_quantized_add_rounds_once_per_fused_multiply_add():
    # 21 * 0.3f + 0.2f is 6.50000005 before its one rounding, f32 6.5000005,
    # which rounds to 7; rounded after the product as well, it is 6.5 and
    # rounds to even, 6. Held int8 with the uint8 shift: 21 is -107, 0 is -128.
    a = np.array([[-107, -128, 127]], np.int8)
    b = np.array([[-128, 0, -128]], np.int8)
    body = ('"npu.quantized_add"({in0}, {in1}, {out0}) {lhs_scale = 0.3 : f64, '
            'rhs_scale = 1.0 : f64, offset = 0.2 : f64, input_shift = 128 : i64, '
            'zero_point = -128 : i64} : ({in0_t}, {in1_t}, {out0_t}) -> ()')
    program = single_tile([(a.shape, np.int8), (b.shape, np.int8)], [(a.shape, np.int8)], body)
    out = simulate(program, [a, b, np.zeros(a.shape, np.int8)]).outputs[2]
    # 7 - 128; (0 + 128 + 0.2) -> 128 - 128; 255 * 0.3 + 0.2 = 76.7 -> 77 - 128
    np.testing.assert_array_equal(out[0], [-121, 0, -51])


def test_transpose_nchw_to_nhwc_and_fill():
    x = uniform((1, 3, 4, 5))
    body = ('"npu.transpose"({in0}, {out0}) {permutation = array<i64: 0, 2, 3, 1>} '
            ': ({in0_t}, {out0_t}) -> ()\n'
            '  "npu.fill"({out1}) {value = 2.5 : f64} : ({out1_t}) -> ()')
    program = single_tile([(x.shape, np.float16)], [((1, 4, 5, 3), np.float16),
                                                    ((3, 3), np.int32)], body)
    outs = simulate(program, [x, np.zeros((1, 4, 5, 3), np.float16),
                              np.zeros((3, 3), np.int32)]).outputs
    np.testing.assert_array_equal(outs[1], np.transpose(x, (0, 2, 3, 1)))
    np.testing.assert_array_equal(outs[2], np.full((3, 3), 2, np.int32))  # 2.5 rounds to even


LINALG = """
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @main(%a: memref<8x16xf32>, %b: memref<16x4xf32>, %bias: memref<16xf32>)
    -> (memref<8x4xf32>, memref<8x16xf32>, memref<16x8xf32>, memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<8x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<8x4xf32>)
  linalg.matmul ins(%a, %b : memref<8x16xf32>, memref<16x4xf32>) outs(%c : memref<8x4xf32>)
  %e = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %bias : memref<8x16xf32>, memref<16xf32>) outs(%e : memref<8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %r = math.tanh %s : f32
    linalg.yield %r : f32
  }
  %t = memref.alloc() : memref<16x8xf32>
  linalg.transpose ins(%a : memref<8x16xf32>) outs(%t : memref<16x8xf32>) permutation = [1, 0]
  %m = memref.alloc() : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%m : memref<8xf32>)
  linalg.reduce ins(%a : memref<8x16xf32>) outs(%m : memref<8xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %mx = arith.maximumf %in, %acc : f32
      linalg.yield %mx : f32
    }
  return %c, %e, %t, %m : memref<8x4xf32>, memref<8x16xf32>, memref<16x8xf32>, memref<8xf32>
}
"""


def test_linalg_fallback_ops():
    a, b, bias = uniform((8, 16), np.float32), uniform((16, 4), np.float32), uniform((16,), np.float32)
    result = simulate(LINALG, [a, b, bias])
    c, e, t, m = result.outputs
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(e, np.tanh(a.astype(np.float64) + bias), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(t, a.T)
    np.testing.assert_array_equal(m, np.maximum(a.max(axis=1), 0))
    engines = {op["op"]: op["engine"] for op in result.report["ops"]}
    assert set(engines.values()) == {"fallback"}
    # Fallback cost: points x body ops x the scalar rate (8 cycles by default).
    matmul = next(op for op in result.report["ops"] if op["op"] == "linalg.matmul")
    assert matmul["cycles"] == 8 * 4 * 16 * 8 and matmul["macs"] == 8 * 4 * 16


SCALARS = """
func.func @main(%n: index, %x: f32) -> (index, index, f32, i32, i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %m7 = arith.constant -7 : index
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %c0) -> (index) {
    %odd = arith.remsi %i, %c3 : index
    %is0 = arith.cmpi eq, %odd, %c0 : index
    %next = scf.if %is0 -> (index) {
      %d = arith.addi %acc, %i : index
      scf.yield %d : index
    } else {
      scf.yield %acc : index
    }
    scf.yield %next : index
  }
  %q = arith.divsi %m7, %c3 : index
  %f = arith.floordivsi %m7, %c3 : index
  %r = arith.remsi %m7, %c3 : index
  %t = affine.apply affine_map<(d0)[s0] -> (d0 * 4 + s0 floordiv 2)>(%q)[%f]
  %h = arith.truncf %x : f32 to f16
  %e = arith.extf %h : f16 to f32
  %big = arith.constant 2147483647 : i32
  %one = arith.constant 1 : i32
  %wrap = arith.addi %big, %one : i32
  %w = scf.while (%v = %c1) : (index) -> index {
    %small = arith.cmpi slt, %v, %n : index
    scf.condition(%small) %v : index
  } do {
  ^bb0(%v: index):
    %v2 = arith.muli %v, %c3 : index
    scf.yield %v2 : index
  }
  %lt = arith.cmpf olt, %e, %x : f32
  %out = arith.addi %sum, %w : index
  %tr = arith.addi %t, %r : index
  return %out, %tr, %e, %wrap, %lt : index, index, f32, i32, i1
}
"""


def test_scalar_control_flow_and_arithmetic():
    n, x = 10, 0.1
    out, tr, e, wrap, lt = simulate(SCALARS, [n, x]).outputs
    # sum of i in [0, 10) with i % 3 == 0, plus the first power of 3 >= 10.
    assert out == (0 + 3 + 6 + 9) + 27
    # divsi(-7, 3) = -2 (toward zero), floordivsi = -3, remsi = -1:
    # -2 * 4 + (-3 floordiv 2 = -2) + (-1) = -11.
    assert tr == -11
    assert e == np.float32(np.float16(x)) and wrap == -2147483648 and lt == (float(np.float16(x)) < float(np.float32(x)))


def test_linalg_generic_reads_values_captured_from_the_function():
    # A global-average-pool as bufferization leaves it: a reduction, then a
    # division by a constant defined outside the generic's body.
    program = """
    #in = affine_map<(n, c, h, w) -> (n, c, h, w)>
    #acc = affine_map<(n, c, h, w) -> (n, c)>
    #id = affine_map<(n, c) -> (n, c)>
    func.func @main(%x: memref<2x3x4x5xf32>) -> memref<2x3xf32> {
      %zero = arith.constant 0.0 : f32
      %count = arith.constant 20.0 : f32
      %sum = memref.alloc() : memref<2x3xf32>
      linalg.fill ins(%zero : f32) outs(%sum : memref<2x3xf32>)
      linalg.generic {indexing_maps = [#in, #acc],
                      iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
          ins(%x : memref<2x3x4x5xf32>) outs(%sum : memref<2x3xf32>) {
      ^bb0(%in: f32, %out: f32):
        %s = arith.addf %in, %out : f32
        linalg.yield %s : f32
      }
      %mean = memref.alloc() : memref<2x3xf32>
      linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
          ins(%sum : memref<2x3xf32>) outs(%mean : memref<2x3xf32>) {
      ^bb0(%in: f32, %out: f32):
        %m = arith.divf %in, %count : f32
        linalg.yield %m : f32
      }
      return %mean : memref<2x3xf32>
    }"""
    x = np.random.default_rng(3).standard_normal((2, 3, 4, 5)).astype(np.float32)
    (mean,) = simulate(program, [x]).outputs
    np.testing.assert_allclose(mean, x.mean(axis=(2, 3)), rtol=1e-5)


def test_rank_reducing_subview_drops_the_unit_dim_its_strides_name():
    # [1, 2, 3, 1] -> [1, 2, 3] with strides [6, 3, 1]: the trailing unit dim goes.
    program = """
    func.func @main(%a: memref<1x2x3x1xf32>, %b: memref<1x2x3xf32>) {
      %v = memref.subview %a[0, 0, 0, 0] [1, 2, 3, 1] [1, 1, 1, 1]
          : memref<1x2x3x1xf32> to memref<1x2x3xf32, strided<[6, 3, 1]>>
      memref.copy %v, %b : memref<1x2x3xf32, strided<[6, 3, 1]>> to memref<1x2x3xf32>
      return
    }"""
    a = uniform((1, 2, 3, 1), np.float32)
    out = simulate(program, [a, np.zeros((1, 2, 3), np.float32)]).outputs[1]
    np.testing.assert_array_equal(out, a.reshape(1, 2, 3))
