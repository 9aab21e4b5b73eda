"""Tiled programs with one, two or three SRAM buffers per streamed operand
(partial tiles at the edges) equal numpy references; double buffering takes
fewer cycles and never fewer than the roofline bound."""

import numpy as np
import pytest

from atvoss_mlir.sim import simulate
from sim_programs import (pipelined_conv2d, pipelined_elementwise, pipelined_matmul,
                          pipelined_pool2d, streamed_matmul)

# (input dtype, output dtype, rtol): fp16 results 1e-2, fp32 1e-5, int8/int32 exact.
FLOAT16_TO_32 = (np.float16, np.float32, 1e-5)
FLOAT16 = (np.float16, np.float16, 1e-2)
FLOAT32 = (np.float32, np.float32, 1e-5)
INT8_TO_32 = (np.int8, np.int32, 0)
INT8 = (np.int8, np.int8, 0)


def random(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        return rng.integers(-128, 128, shape).astype(dtype)
    return rng.uniform(-1, 1, shape).astype(dtype)


def check(actual, reference, rtol):
    if rtol == 0:
        np.testing.assert_array_equal(actual, reference)
    else:
        np.testing.assert_allclose(actual.astype(np.float64), reference, rtol=rtol, atol=rtol)


def run_both(make_program, inputs, output_shape, output_dtype, buffers=(1, 2, 3)):
    """Outputs of the program with each buffer count; they must agree bit for bit."""
    results = {}
    for count in buffers:
        result = simulate(make_program(count), inputs + [np.zeros(output_shape, output_dtype)])
        results[count] = result.outputs[-1]
    first = results[buffers[0]]
    for out in results.values():
        np.testing.assert_array_equal(out, first)
    return first


@pytest.mark.parametrize("types", [FLOAT16_TO_32, FLOAT16, FLOAT32, INT8_TO_32],
                         ids=["f16-f32", "f16", "f32", "i8-i32"])
def test_tiled_matmul(types):
    dtype, out_dtype, rtol = types
    m, n, k = 40, 24, 36  # 16 x 16 x 16 tiles: partial in every dimension
    a, b = random((m, k), dtype, 1), random((k, n), dtype, 2)
    out = run_both(lambda count: pipelined_matmul(m, n, k, 16, 16, 16, count, dtype, out_dtype),
                   [a, b], (m, n), out_dtype)
    if rtol == 0:
        reference = a.astype(np.int64) @ b.astype(np.int64)
    else:
        reference = a.astype(np.float64) @ b.astype(np.float64)
    check(out, reference, rtol)


def conv_reference(x, w, stride):
    kernel, oh = w.shape[0], (x.shape[1] - w.shape[0]) // stride + 1
    ow = (x.shape[2] - w.shape[1]) // stride + 1
    wide = np.int64 if x.dtype.kind == "i" else np.float64
    out = np.zeros((1, oh, ow, w.shape[3]), wide)
    for i in range(kernel):
        for j in range(w.shape[1]):
            taps = x[:, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
            out += taps.astype(wide) @ w[i, j].astype(wide)
    return out


@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("types", [FLOAT16_TO_32, INT8_TO_32], ids=["f16-f32", "i8-i32"])
def test_tiled_conv2d(types, stride):
    dtype, out_dtype, rtol = types
    h, w, c, f, kernel = 13, 11, 5, 7, 3
    x, wt = random((1, h, w, c), dtype, 3), random((kernel, kernel, c, f), dtype, 4)
    reference = conv_reference(x, wt, stride)
    # Output rows in tiles of 4 (11 or 6 rows: the last tile is partial), halo rows loaded.
    out = run_both(lambda count: pipelined_conv2d(h, w, c, f, kernel, stride, 4, count, dtype,
                                                  out_dtype),
                   [x, wt], reference.shape, out_dtype)
    check(out, reference, rtol)


@pytest.mark.parametrize("kind", ["max", "avg"])
@pytest.mark.parametrize("types", [FLOAT16, INT8], ids=["f16", "i8"])
def test_tiled_pool2d(types, kind):
    dtype, _, rtol = types
    h, w, c, window, stride = 11, 9, 6, 3, 2
    x = random((1, h, w, c), dtype, 5)
    oh, ow = (h - window) // stride + 1, (w - window) // stride + 1
    taps = np.stack([x[:, i:i + stride * (oh - 1) + 1:stride, j:j + stride * (ow - 1) + 1:stride]
                     .astype(np.float64) for i in range(window) for j in range(window)])
    reference = taps.max(axis=0) if kind == "max" else taps.mean(axis=0)
    if rtol == 0 and kind == "avg":
        reference = np.rint(reference)  # integer average: round half to even
    out = run_both(lambda count: pipelined_pool2d(kind, h, w, c, window, stride, 2, count, dtype),
                   [x], (1, oh, ow, c), dtype)
    check(out, reference, rtol)


@pytest.mark.parametrize("kind,fn", [("add", np.add), ("mul", np.multiply), ("max", np.maximum)])
@pytest.mark.parametrize("types", [FLOAT16, FLOAT32, INT8], ids=["f16", "f32", "i8"])
def test_tiled_elementwise(types, kind, fn):
    dtype, _, rtol = types
    rows, cols = 37, 50  # 16 x 32 tiles: partial in both dimensions
    x, bias = random((rows, cols), dtype, 6), random((cols,), dtype, 7)
    out = run_both(lambda count: pipelined_elementwise(kind, rows, cols, 16, 32, count, dtype),
                   [x, bias], (rows, cols), dtype)
    if rtol == 0:  # integers wrap around as the hardware's int8 does
        reference = fn(x.astype(np.int64), bias.astype(np.int64)).astype(np.int8)
    else:
        reference = fn(x.astype(np.float64), bias.astype(np.float64))
    check(out, reference, rtol)


@pytest.mark.parametrize("program", [
    lambda count: pipelined_matmul(256, 128, 256, 64, 64, 64, count),
    lambda count: pipelined_matmul(200, 72, 100, 64, 32, 48, count),  # partial tiles
    lambda count: pipelined_conv2d(30, 30, 32, 64, 3, 1, 4, count),
    lambda count: streamed_matmul(1024, 32, 64, 128, count),
], ids=["matmul", "matmul-partial", "conv2d", "streamed-matmul"])
def test_double_buffering_is_faster_and_above_the_roofline(program):
    reports = {count: simulate(program(count), timing_only=True).report for count in (1, 2)}
    single, double = reports[1], reports[2]
    assert double["total_cycles"] < single["total_cycles"]
    for report in (single, double):
        assert report["total_cycles"] >= report["roofline_cycles"] > 0
        assert report["engines"]["matrix"]["busy_cycles"] <= report["total_cycles"]
    # The same work: the same matrix and DMA busy cycles, only better overlapped.
    assert (single["engines"]["matrix"]["busy_cycles"]
            == double["engines"]["matrix"]["busy_cycles"])
    assert single["macs"] == double["macs"] and single["roofline_cycles"] == double["roofline_cycles"]


def test_three_buffers_beat_one_and_stay_above_the_roofline():
    # With barriers that wait for every engine, a third buffer gains nothing over two
    # (each barrier also waits for the prefetch two steps ahead), but it still overlaps.
    single, triple = (simulate(pipelined_matmul(256, 128, 256, 64, 64, 64, count),
                               timing_only=True).report for count in (1, 3))
    assert triple["roofline_cycles"] <= triple["total_cycles"] < single["total_cycles"]
