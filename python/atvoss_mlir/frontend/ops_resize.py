"""Resize and Upsample. Interpolation is separable and, with static shapes,
linear in the data along each axis: every resized axis is one constant
weight matrix W (output length x input length), computed here with numpy
from the mode (nearest, linear, cubic, antialias), the coordinate
transformation and the nearest-rounding rule. The IR applies each W as a
matrix product along its axis (a `linalg.matmul`, so it runs on the matrix
unit); tf_crop_and_resize adds its extrapolation value where the source
coordinate falls outside the input. Where W only repeats each input k times
(nearest, an integer scale: a 2x upsample), the axes so resized are one
`linalg.broadcast` instead, a copy on the vector unit."""

from __future__ import annotations

import math

import numpy as np
from mlir.dialects import linalg

from . import builders as b
from .handler_api import ImportFailure, handles, normalized_axis

_TRANSFORMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
               "asymmetric", "tf_crop_and_resize")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")


def _source_coordinates(transform, out_int, in_width, scale, roi):
    """Where each output index samples the input (ONNX's coordinate
    transformation), and which samples fall outside (tf_crop_and_resize)."""
    y = np.arange(out_int, dtype=np.float64)
    out_width = scale * in_width
    outside = None
    # As ONNX specifies (and its conformance data expects), align_corners and
    # tf_crop_and_resize divide by scale * length, which need not be a whole
    # number; onnxruntime divides by the integer output length instead, which
    # differs only when scales (not sizes) give a fractional length.
    if transform == "align_corners":
        x = np.zeros(out_int) if out_width == 1 else y * (in_width - 1) / (out_width - 1)
    elif transform == "asymmetric":
        x = y / scale
    elif transform == "tf_crop_and_resize":
        start, end = roi
        x = np.full(out_int, (end - start) * (in_width - 1) / 2) if out_width == 1 \
            else y * (end - start) * (in_width - 1) / (out_width - 1)
        x = x + start * (in_width - 1)
        outside = (x < 0) | (x > in_width - 1)
    elif transform == "pytorch_half_pixel":
        x = np.full(out_int, -0.5) if out_width == 1 else (y + 0.5) / scale - 0.5
    elif transform == "half_pixel":
        x = (y + 0.5) / scale - 0.5
    else:  # half_pixel_symmetric
        offset = in_width / 2 * (1 - out_int / out_width)
        x = offset + (y + 0.5) / scale - 0.5
    return x, outside


def _nearest_coeffs(ratio, rounding, downsampling):
    if ratio == 1:  # an exact input position
        return [0.0, 1.0]
    if rounding == "round_prefer_floor":
        return [float(ratio <= 0.5), float(ratio > 0.5)]
    if rounding == "round_prefer_ceil":
        return [float(ratio < 0.5), float(ratio >= 0.5)]
    if rounding == "floor" or (rounding == "simple" and not downsampling):
        return [1.0, 0.0]
    return [0.0, 1.0]


def _cubic_coeffs(ratio, a):
    r = ratio
    return [((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
            ((a + 2) * r - (a + 3)) * r * r + 1,
            ((a + 2) * (1 - r) - (a + 3)) * (1 - r) * (1 - r) + 1,
            ((a * ((1 - r) + 1) - 5 * a) * ((1 - r) + 1) + 8 * a) * ((1 - r) + 1) - 4 * a]


def _antialias_coeffs(ratio, scale, mode, a):
    scale = min(scale, 1.0)
    if mode == "linear":
        start = int(np.floor(-1 / scale) + 1)
        taps = (np.arange(start, 2 - start) - ratio) * scale
        coeffs = np.clip(1 - np.abs(taps), 0, 1)
    else:
        start = int(np.floor(-2 / scale) + 1)
        taps = np.abs(scale * (np.arange(start, 2 - start) - ratio))
        coeffs = np.where(taps <= 1, (a + 2) * taps ** 3 - (a + 3) * taps ** 2 + 1,
                          np.where(taps < 2, a * taps ** 3 - 5 * a * taps ** 2 + 8 * a * taps
                                   - 4 * a, 0.0))
    return list(coeffs / coeffs.sum())


def axis_weights(in_width, out_int, scale, options, roi=(0.0, 1.0)):
    """(W, extrapolated rows or None): output = W @ input along one axis."""
    x, outside = _source_coordinates(options["transform"], out_int, in_width, scale, roi)
    floor = np.floor(x)
    ratios = np.where(x == floor, 1.0, x - floor)
    rows = []
    for ratio in ratios:
        if options["mode"] == "nearest":
            rows.append(_nearest_coeffs(ratio, options["nearest"], scale < 1))
        elif options["antialias"]:
            rows.append(_antialias_coeffs(ratio, scale, options["mode"], options["cubic_a"]))
        elif options["mode"] == "linear":
            rows.append([1 - ratio, ratio])
        else:
            rows.append(_cubic_coeffs(ratio, options["cubic_a"]))
    coeffs = np.asarray(rows, np.float64).reshape(out_int, -1)
    taps = coeffs.shape[1]
    # The `taps` input positions nearest x, ties to the smaller (ONNX's rule).
    pad = int(np.ceil(taps / 2))
    padded = x + pad
    whole = np.floor(padded)
    fraction = padded - whole
    if taps % 2 == 0:
        start = whole + np.where(fraction == 0, -(taps // 2), -(taps // 2) + 1)
    else:
        start = whole + np.where(fraction <= 0.5, -((taps - 1) // 2), -((taps - 1) // 2) + 1)
    neighbours = (start[:, None] + np.arange(taps)[None, :] - pad).astype(np.int64)
    if options["exclude_outside"]:
        coeffs = np.where((neighbours < 0) | (neighbours >= in_width), 0.0, coeffs)
        total = coeffs.sum(axis=1, keepdims=True)
        coeffs = coeffs / np.where(total == 0, 1.0, total)
    weights = np.zeros((out_int, in_width))
    clamped = np.clip(neighbours, 0, in_width - 1)
    for tap in range(taps):
        np.add.at(weights, (np.arange(out_int), clamped[:, tap]), coeffs[:, tap])
    if outside is not None and outside.any():
        weights[outside] = 0.0
        return weights, outside
    return weights, None


def _options(node):
    legacy = node.op_type == "Upsample" or node.opset < 11
    mode = node.attr("mode", "nearest")
    mode = {"bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    options = {
        "mode": mode,
        "transform": "asymmetric" if legacy else
        node.attr("coordinate_transformation_mode", "half_pixel"),
        "nearest": "simple" if legacy else node.attr("nearest_mode", "round_prefer_floor"),
        "cubic_a": node.attr("cubic_coeff_a", -0.75),
        "exclude_outside": bool(node.attr("exclude_outside", 0)),
        "antialias": bool(node.attr("antialias", 0)) and mode != "nearest",
        "extrapolation": node.attr("extrapolation_value", 0.0),
    }
    if mode not in ("nearest", "linear", "cubic"):
        raise node.unsupported(f"mode '{mode}'")
    if options["transform"] not in _TRANSFORMS:
        raise node.unsupported(f"coordinate_transformation_mode '{options['transform']}'")
    if options["nearest"] not in _NEAREST:
        raise node.unsupported(f"nearest_mode '{options['nearest']}'")
    return options


def _optional_constant(node, index, what):
    if not node.has_input(index):
        return None
    value = node.required_constant(index, what)
    return None if value.size == 0 else value.reshape(-1)


def _geometry(node, shape):
    """(scales, output sizes, roi) per axis of the input."""
    rank = len(shape)
    if node.op_type == "Upsample" and node.opset < 9:
        scales, sizes, roi = node.attr("scales"), None, None
    elif node.op_type == "Upsample" or node.opset < 11:
        scales, sizes, roi = node.required_constant(1, "the scales").reshape(-1), None, None
    else:
        roi = _optional_constant(node, 1, "the roi")
        scales = _optional_constant(node, 2, "the scales")
        sizes = _optional_constant(node, 3, "the sizes")
    if (scales is None) == (sizes is None):
        raise ImportFailure("exactly one of scales and sizes must be given")
    axes = node.attr("axes") if node.opset >= 18 else None
    axes = list(range(rank)) if axes is None else [normalized_axis(a, rank) for a in axes]
    given = scales if scales is not None else sizes
    if len(given) != len(axes):
        raise ImportFailure(f"{len(given)} {'scales' if sizes is None else 'sizes'} for "
                            f"{len(axes)} axes")
    full_roi = [(0.0, 1.0)] * rank
    if roi is not None:
        if len(roi) != 2 * len(axes):
            raise ImportFailure(f"roi has {len(roi)} values, expected {2 * len(axes)}")
        for i, axis in enumerate(axes):
            full_roi[axis] = (float(roi[i]), float(roi[len(axes) + i]))
    axis_scales, axis_sizes = [1.0] * rank, list(shape)
    if sizes is not None:
        for i, axis in enumerate(axes):
            axis_sizes[axis] = int(sizes[i])
            axis_scales[axis] = int(sizes[i]) / shape[axis] if shape[axis] else 1.0
        policy = node.attr("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            chosen = [axis_scales[a] for a in axes]
            if policy not in ("not_larger", "not_smaller"):
                raise node.unsupported(f"keep_aspect_ratio_policy '{policy}'")
            scale = min(chosen) if policy == "not_larger" else max(chosen)
            for axis in axes:
                axis_scales[axis] = scale
                axis_sizes[axis] = int(scale * shape[axis] + 0.5)
    else:
        for i, axis in enumerate(axes):
            if not scales[i] > 0:
                raise ImportFailure(f"scale {scales[i]} must be positive")
            axis_scales[axis] = float(scales[i])
        axis_sizes = [int(s) for s in np.asarray(axis_scales) * np.asarray(shape)]
    return axis_scales, axis_sizes, full_roi


@handles("Resize", "Upsample")
def resize(node):
    x = node.value(0)
    shape = b.shape_of(x)
    element_type = b.element_of(x)
    if not b.is_float(element_type):
        raise node.unsupported(f"{node.op_type} of integer tensors")
    options = _options(node)
    scales, sizes, roi = _geometry(node, shape)
    dtype = np.float16 if str(element_type) == "f16" else np.float32
    resized = []   # (axis, weights, outside) of every axis that changes
    for axis, (scale, size) in enumerate(zip(scales, sizes)):
        if size == shape[axis] and math.isclose(scale, 1.0) and roi[axis] == (0.0, 1.0):
            continue
        if shape[axis] == 0 or size == 0:
            raise node.unsupported(f"{node.op_type} from or to an empty axis")
        resized.append((axis, *axis_weights(shape[axis], size, scale, options, roi[axis])))
    repeats = {axis: _repeat_count(weights) for axis, weights, outside in resized
               if outside is None and _repeat_count(weights)}
    if repeats:
        x = _repeat(x, repeats)
    for axis, weights, outside in resized:
        if axis in repeats:
            continue
        x = _along_axis(node, x, axis, weights.astype(dtype), f"weights{axis}")
        if outside is not None and options["extrapolation"] != 0.0:
            fill = np.where(outside, options["extrapolation"], 0.0).astype(dtype)
            fill = fill.reshape([sizes[axis]] + [1] * (len(shape) - axis - 1))
            x = b.elementwise([x, node.weight(fill, f"extrapolation{axis}")],
                              lambda a: b.add(a[0], a[1]))
    return [x]


def _repeat_count(weights: np.ndarray) -> int:
    """k when the weights take input i for outputs k*i .. k*i + k - 1 (each
    input repeated a whole k > 1 times), else 0."""
    size, length = weights.shape
    count = size // length
    repeats = size % length == 0 and count > 1 and np.array_equal(
        weights, np.repeat(np.eye(length, dtype=weights.dtype), count, axis=0))
    return count if repeats else 0


def _repeat(x, repeats: dict):
    """Each element of `x` repeated `repeats[axis]` times along each axis: a
    unit dim after each such axis broadcast to the count, then merged back."""
    shape = b.shape_of(x)
    spread, dims = [], []
    for axis, length in enumerate(shape):
        spread.append(length)
        if axis in repeats:
            dims.append(len(spread))
            spread.append(repeats[axis])
    out = b.result_of(linalg.broadcast(x, outs=[b.empty(spread, b.element_of(x))],
                                       dimensions=dims))
    return b.reshape(out, [length * repeats.get(axis, 1) for axis, length in enumerate(shape)])


def _along_axis(node, x, axis, weights, suffix):
    """`weights` (out x in) applied along `axis` of `x` as one matrix product."""
    shape = b.shape_of(x)
    rank = len(shape)
    permutation = [d for d in range(rank) if d != axis] + [axis]
    moved = b.transpose(x, permutation)
    rows = int(np.prod([shape[d] for d in permutation[:-1]]))
    out = weights.shape[0]
    product = linalg.matmul(b.reshape(moved, [rows, shape[axis]]),
                            node.weight(np.ascontiguousarray(weights.T), suffix),
                            outs=[b.fill(0.0, [rows, out], b.element_of(x))])
    result = b.reshape(product, [shape[d] for d in permutation[:-1]] + [out])
    return b.transpose(result, [permutation.index(d) for d in range(rank)])
