"""Convolution and pooling: Conv, ConvTranspose, MaxPool, AveragePool and the
global pools.

Convolutions and pools run in NHWC, the NPU's preferred layout: the NCHW
activation is transposed in and out around the named op (a layout pass can
cancel the transposes between neighbours), and constant weights are
transposed to HWCF with numpy at import time."""

from __future__ import annotations

import numpy as np
from mlir import ir
from mlir.dialects import arith, linalg, math

from ..limits import format_bytes, format_limit, memory_limit
from . import builders as b
from .onnx_importer import ImportFailure, handles

TO_NHWC, TO_NCHW = [0, 2, 3, 1], [0, 3, 1, 2]


def nhwc(x: ir.Value) -> ir.Value:
    """`x` (NCHW) transposed to NHWC: the transpose an earlier conv or pool
    reading `x` made, where there is one (a graph input read by a block's
    conv and its shortcut is transposed once, not once per reader)."""
    point = ir.InsertionPoint.current
    for use in x.uses:
        op = use.owner.operation
        if op.name == "linalg.transpose" and use.operand_number == 0 \
                and op.block == point.block \
                and (point.ref_operation is None or op.is_before_in_block(point.ref_operation)) \
                and list(ir.DenseI64ArrayAttr(op.attributes["permutation"])) == TO_NHWC:
            return op.results[0]
    return b.transpose(x, TO_NHWC)


# -- window geometry -----------------------------------------------------------------------

def _ints(node, name: str) -> list | None:
    """An ints attribute as a list (one int given alone in a list); None when
    absent. A com.microsoft op's attribute no schema types (a STRING where
    INTS belong) is refused by name."""
    value = node.attr(name)
    if value is None:
        return None
    listed = list(value) if isinstance(value, (list, tuple)) else [value]
    if not all(isinstance(v, int) for v in listed):
        raise ImportFailure(f"attribute '{name}' must be ints, not {value!r}")
    return listed


def window_geometry(node, input_sizes, kernel, ceil_mode=False):
    """(low pads, high pads, output sizes, strides, dilations) of a conv or pool
    window over the spatial dimensions, following auto_pad and ceil_mode."""
    rank = len(kernel)
    # An INT where INTS belong (a com.microsoft op's, which no ONNX schema
    # checks) is one int: refused below with the others of the wrong count.
    strides = _ints(node, "strides") or [1] * rank
    dilations = _ints(node, "dilations") or [1] * rank
    auto_pad = node.attr("auto_pad", "NOTSET")
    effective = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        outputs = [-(-n // s) for n, s in zip(input_sizes, strides)]
        totals = [max((o - 1) * s + e - n, 0)
                  for o, s, e, n in zip(outputs, strides, effective, input_sizes)]
        small = [t // 2 for t in totals]
        large = [t - t // 2 for t in totals]
        low, high = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
    elif auto_pad == "VALID":
        low, high = [0] * rank, [0] * rank
    elif auto_pad == "NOTSET":
        pads = _ints(node, "pads") or [0] * (2 * rank)
        low, high = list(pads[:rank]), list(pads[rank:])
    else:
        raise ImportFailure(f"auto_pad '{auto_pad}'")
    if len(strides) != rank or len(dilations) != rank or len(low) != rank \
            or len(high) != rank or min(list(strides) + list(dilations)) < 1 \
            or min(low + high) < 0:
        raise ImportFailure(f"strides {list(strides)} and dilations {list(dilations)} must "
                            f"be {rank} positive ints, pads {low + high} {2 * rank} "
                            f"non-negative ones")
    outputs = []
    for n, lo, hi, e, s in zip(input_sizes, low, high, effective, strides):
        span = n + lo + hi - e
        if span < 0:
            raise ImportFailure(f"the window ({e}) is larger than the padded input ({n + lo + hi})")
        size = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (size - 1) * s >= n + lo:  # the last window must start inside
            size -= 1
        outputs.append(size)
    return low, high, outputs, list(strides), list(dilations)


def _as_2d(node, what):
    """1-D convs and pools run as 2-D ones over a unit height."""
    shape = node.shape(0)
    if len(shape) == 4:
        return False
    if len(shape) == 3:
        return True
    raise node.unsupported(f"{what} over {len(shape) - 2} spatial dimensions")


class _Window2d:
    """A node's window attributes seen as 2-D (a 1-D window gets a unit height)."""

    def __init__(self, node, lift: bool):
        self.node, self.lift = node, lift
        self.opset = node.opset

    def attr(self, name, default=None):
        if name not in ("kernel_shape", "strides", "dilations", "pads"):
            return self.node.attr(name, default)
        value = _ints(self.node, name)
        if value is None:
            return default
        if not self.lift:
            return value
        if name == "pads":   # of another count: refused with the window's others
            return [0, value[0], 0, value[1]] if len(value) == 2 else value
        return [1] + value


# -- Conv ----------------------------------------------------------------------------------

@handles("Conv")
def conv(node):
    weight = node.constant(1)
    return [conv_nchw(node, node.value(0), node.value(1) if weight is None else weight,
                      node.value(2))]


def conv_nchw(node, x, weight, bias, pad_value=0.0, accumulator_type=None,
              epilogue=None):
    """The node's convolution of NCHW `x` by FCHW `weight` (a constant or a
    value), in NHWC. The input is padded with `pad_value`; the accumulator
    (and `bias`) are of `accumulator_type`, the input's by default.
    `epilogue(nhwc)` maps the NHWC result before it is transposed back."""
    lift = _as_2d(node, "Conv")
    if lift:
        x = b.reshape(x, node.shape(0)[:2] + [1] + node.shape(0)[2:])
        weight = _reshape_weight(weight, [d for d in _shape(weight)[:2]] + [1] + _shape(weight)[2:])
    if len(b.shape_of(x)) != 4 or len(_shape(weight)) != 4:
        raise ImportFailure(f"input {b.shape_of(x)} and weights {_shape(weight)} are not both "
                            f"of rank 4 (3 for a 1-D convolution)")
    n, c, h, w = b.shape_of(x)
    f, c_per_group, kh, kw = _shape(weight)
    group = node.attr("group", 1)
    if group < 1 or c_per_group * group != c or f % group:
        raise ImportFailure(f"{c} input channels, {f} filters of {c_per_group} channels "
                            f"and group {group} do not match")
    if bias is not None and b.shape_of(bias) != [f]:
        raise ImportFailure(f"the bias has shape {b.shape_of(bias)}, not [{f}] (one per filter)")
    window = _Window2d(node, lift)
    low, high, (oh, ow), strides, dilations = window_geometry(window, [h, w], [kh, kw])
    element_type = accumulator_type or b.element_of(x)
    padded = b.pad(nhwc(x), [0, *low, 0], [0, *high, 0], pad_value)

    def init(channels, bias_value):
        shape = [n, oh, ow, channels]
        if bias_value is None:
            return b.fill(0.0, shape, element_type)
        return b.result_of(linalg.broadcast(bias_value, outs=[b.empty(shape, element_type)],
                                            dimensions=[0, 1, 2]))

    if group == 1:
        result = linalg.conv_2d_nhwc_hwcf(
            padded, _weight(node, weight, [2, 3, 1, 0]), outs=[init(f, bias)],
            strides=strides, dilations=dilations)
    elif group == c and f == c:
        hwc = _weight(node, _reshape_weight(weight, [f, kh, kw]), [1, 2, 0])
        result = linalg.depthwise_conv_2d_nhwc_hwc(
            padded, hwc, outs=[init(c, bias)], strides=strides, dilations=dilations)
    elif group == c:
        multiplier = f // c
        hwcm = _weight(node, _reshape_weight(weight, [c, multiplier, kh, kw]), [2, 3, 0, 1])
        init_cm = b.fill(0.0, [n, oh, ow, c, multiplier], element_type)
        result = linalg.depthwise_conv_2d_nhwc_hwcm(
            padded, hwcm, outs=[init_cm], strides=strides, dilations=dilations)
        result = b.reshape(result, [n, oh, ow, f])  # filter index = channel * multiplier + m
        if bias is not None:
            add = arith.addf if b.is_float(element_type) else arith.addi
            result = b.elementwise([result, bias], lambda a: add(a[0], a[1]))
    else:  # a grouped conv runs as one conv per group
        f_per_group = f // group
        parts = []
        for g in range(group):
            x_g = b.extract_slice(padded, [0, 0, 0, g * c_per_group],
                                  b.shape_of(padded)[:3] + [c_per_group])
            w_g = _weight(node, _slice_weight(weight, g * f_per_group, f_per_group), [2, 3, 1, 0])
            bias_g = None if bias is None else b.extract_slice(bias, [g * f_per_group],
                                                               [f_per_group])
            parts.append(linalg.conv_2d_nhwc_hwcf(x_g, w_g, outs=[init(f_per_group, bias_g)],
                                                  strides=strides, dilations=dilations))
        result = b.concat(parts, 3)
    if epilogue is not None:
        result = epilogue(b.result_of(result))
    result = b.transpose(result, TO_NCHW)
    if lift:
        result = b.reshape(result, [n, f, ow])
    return result


@handles("ConvTranspose")
def conv_transpose(node):
    """A transposed conv is a conv over the input spread out by the strides
    (zeros between elements), padded by the window minus the pads, with the
    kernel flipped and its channel dimensions swapped."""
    if _as_2d(node, "ConvTranspose"):
        raise node.unsupported("ConvTranspose over 1 spatial dimension")
    weight = node.required_constant(1, "the weight")
    x = node.value(0)
    n, c, h, w = b.shape_of(x)
    _, f_per_group, kh, kw = weight.shape
    group = node.attr("group", 1)
    strides = node.attr("strides") or [1, 1]
    dilations = node.attr("dilations") or [1, 1]
    output_padding = node.attr("output_padding") or [0, 0]
    effective = [(k - 1) * d + 1 for k, d in zip([kh, kw], dilations)]
    full = [s * (i - 1) + op + e for s, i, op, e in zip(strides, [h, w], output_padding, effective)]
    output_shape = node.attr("output_shape")
    auto_pad = node.attr("auto_pad", "NOTSET")
    if output_shape or auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        wanted = output_shape[-2:] if output_shape else [i * s for i, s in zip([h, w], strides)]
        totals = [fu - o for fu, o in zip(full, wanted)]
        upper = auto_pad == "SAME_UPPER"
        low = [t // 2 if upper else t - t // 2 for t in totals]
        high = [t - lo for t, lo in zip(totals, low)]
    elif auto_pad == "NOTSET":
        pads = node.attr("pads") or [0, 0, 0, 0]
        low, high = list(pads[:2]), list(pads[2:])
    elif auto_pad == "VALID":
        low, high = [0, 0], [0, 0]
    else:
        raise ImportFailure(f"auto_pad '{auto_pad}'")
    element_type = b.element_of(x)
    spread_shape = [n, (h - 1) * strides[0] + 1, (w - 1) * strides[1] + 1, c]
    spread = b.insert_strided(nhwc(x), b.fill(0.0, spread_shape, element_type),
                              [1, *strides, 1])
    before = [e - 1 - lo for e, lo in zip(effective, low)]
    after = [e - 1 - hi + op for e, hi, op in zip(effective, high, output_padding)]
    padded = _pad_or_crop(spread, [0, *before, 0], [0, *after, 0])
    flipped = weight[:, :, ::-1, ::-1]
    c_per_group = c // group
    out = [b.shape_of(padded)[1] - effective[0] + 1, b.shape_of(padded)[2] - effective[1] + 1]
    bias = node.value(2)
    parts = []
    for g in range(group):
        x_g = padded if group == 1 else b.extract_slice(
            padded, [0, 0, 0, g * c_per_group], b.shape_of(padded)[:3] + [c_per_group])
        w_g = _weight(node, flipped[g * c_per_group:(g + 1) * c_per_group], [2, 3, 0, 1])
        init = b.fill(0.0, [n, *out, f_per_group], element_type)
        if bias is not None:
            bias_g = bias if group == 1 else b.extract_slice(bias, [g * f_per_group],
                                                             [f_per_group])
            init = b.result_of(linalg.broadcast(bias_g, outs=[init], dimensions=[0, 1, 2]))
        parts.append(linalg.conv_2d_nhwc_hwcf(x_g, w_g, outs=[init], strides=[1, 1],
                                              dilations=dilations))
    return [b.transpose(b.concat(parts, 3), TO_NCHW)]


def _pad_or_crop(value, low, high):
    shape = b.shape_of(value)
    offsets = [max(-p, 0) for p in low]
    sizes = [d - max(-lo, 0) - max(-hi, 0) for d, lo, hi in zip(shape, low, high)]
    value = b.extract_slice(value, offsets, sizes)
    return b.pad(value, [max(p, 0) for p in low], [max(p, 0) for p in high], 0.0)


def _shape(weight):
    return list(weight.shape) if isinstance(weight, np.ndarray) else b.shape_of(weight)


def _reshape_weight(weight, shape):
    return weight.reshape(shape) if isinstance(weight, np.ndarray) else b.reshape(weight, shape)


def _slice_weight(weight, start, count):
    if isinstance(weight, np.ndarray):
        return weight[start:start + count]
    shape = b.shape_of(weight)
    return b.extract_slice(weight, [start] + [0] * (len(shape) - 1), [count] + shape[1:])


def _weight(node, weight, permutation):
    """A weight in the layout a named op wants: transposed with numpy when constant."""
    if isinstance(weight, np.ndarray):
        return node.weight(np.ascontiguousarray(weight.transpose(permutation)), "weight")
    return b.transpose(weight, permutation)


# -- pooling -------------------------------------------------------------------------------

def _pool_setup(node, ceil_mode, x=None):
    lift = _as_2d(node, node.op_type)
    x = node.value(0) if x is None else x
    if lift:
        x = b.reshape(x, node.shape(0)[:2] + [1] + node.shape(0)[2:])
    window = _Window2d(node, lift)
    kernel = window.attr("kernel_shape")
    if kernel is None or len(kernel) != 2 or len(b.shape_of(x)) != 4:
        raise ImportFailure(f"expects an input of rank 4 (3 for 1-D pooling) and a "
                            f"kernel_shape of its spatial rank, got {b.shape_of(x)} and "
                            f"{kernel}")
    n, c, h, w = b.shape_of(x)
    geometry = window_geometry(window, [h, w], kernel, ceil_mode)
    return lift, x, kernel, geometry


def _pool_result(result, lift):
    result = b.transpose(result, TO_NCHW)
    if lift:
        shape = b.shape_of(result)
        result = b.reshape(result, shape[:2] + shape[3:])
    return result


@handles("MaxPool")
def max_pool(node):
    if len(node.proto.output) > 1 and node.proto.output[1]:
        raise node.unsupported("the Indices output of MaxPool")
    lift, x, kernel, (low, high, outputs, strides, dilations) = \
        _pool_setup(node, node.attr("ceil_mode", 0))
    n, c, h, w = b.shape_of(x)
    element_type = b.element_of(x)
    lowest = b.lowest(element_type)
    # ceil_mode windows may run past the explicit pads: pad those with -inf too.
    high = [max(hi, (o - 1) * s + (k - 1) * d + 1 - n_ - lo)
            for hi, o, s, k, d, n_, lo in zip(high, outputs, strides, kernel, dilations, [h, w], low)]
    padded = b.pad(nhwc(x), [0, *low, 0], [0, *high, 0], lowest)
    init = b.fill(lowest, [n, *outputs, c], element_type)
    result = linalg.pooling_nhwc_max(padded, b.empty(kernel, element_type), outs=[init],
                                     strides=strides, dilations=dilations)
    return [_pool_result(result, lift)]


@handles("AveragePool")
def average_pool(node):
    return [average_pooled(node, node.value(0))]


def average_pooled(node, x: ir.Value, exact_division: bool = False) -> ir.Value:
    """AveragePool of `x` with `node`'s window attributes. The vector unit
    multiplies by the reciprocal of the divisor (one constant, or one per
    output position where the padding is not counted), unless
    `exact_division` (a quantised average rounds as the divided mean does)."""
    lift, x, kernel, (low, high, outputs, strides, dilations) = \
        _pool_setup(node, node.attr("ceil_mode", 0), x)
    n, c, h, w = b.shape_of(x)
    element_type = b.element_of(x)
    count_pads = bool(node.attr("count_include_pad", 0))
    extra = [max(0, (o - 1) * s + (k - 1) * d + 1 - n_ - lo - hi)
             for o, s, k, d, n_, lo, hi in zip(outputs, strides, kernel, dilations, [h, w],
                                               low, high)]
    padded = b.pad(nhwc(x), [0, *low, 0],
                   [0, *(hi + e for hi, e in zip(high, extra)), 0], 0.0)
    init = b.fill(0.0, [n, *outputs, c], element_type)
    total = linalg.pooling_nhwc_sum(padded, b.empty(kernel, element_type), outs=[init],
                                    strides=strides, dilations=dilations)
    # The divisor of each output position is known at import time: the window's
    # count of counted pixels, the product of its counts along the rows and
    # along the columns (the counted pixels are a rectangle).
    if int(np.prod(outputs)) * 8 > memory_limit():
        raise ImportFailure(f"the divisors of its {'x'.join(map(str, outputs))} outputs "
                            f"would take {format_bytes(int(np.prod(outputs)) * 8)} while "
                            f"importing, above the memory limit of "
                            f"{format_limit(memory_limit())}")
    per_axis = []
    for axis, size in enumerate((h, w)):
        mask = np.pad(np.ones(size, np.float64), (low[axis], high[axis]),
                      constant_values=1.0 if count_pads else 0.0)
        mask = np.pad(mask, (0, extra[axis]))
        last = (outputs[axis] - 1) * strides[axis] + 1
        per_axis.append(sum(mask[k * dilations[axis]:k * dilations[axis] + last:strides[axis]]
                            for k in range(kernel[axis])))
    counts = np.outer(per_axis[0], per_axis[1])
    dtype = np.float16 if isinstance(element_type, ir.F16Type) else np.float32
    if np.all(counts == counts.flat[0]) and not exact_division:  # a scalar in the body
        count = float(counts.flat[0])
        result = b.elementwise([total], lambda a: arith.divf(a[0], b.const_like(count, a[0])))
    elif exact_division:
        divisor = b.constant_tensor(counts.reshape(*outputs, 1).astype(dtype))
        result = b.elementwise([total, divisor], lambda a: arith.divf(a[0], a[1]))
    else:   # a multiply by the reciprocals: one vector pass, not a division's four
        with np.errstate(divide="ignore"):
            reciprocals = (1.0 / counts).reshape(*outputs, 1).astype(dtype)
        result = b.elementwise([total, b.constant_tensor(reciprocals)],
                               lambda a: arith.mulf(a[0], a[1]))
    return _pool_result(result, lift)


@handles("GlobalAveragePool", "GlobalMaxPool")
def global_pool(node):
    x = node.value(0)
    shape = b.shape_of(x)
    axes = list(range(2, len(shape)))
    if node.op_type == "GlobalMaxPool":
        return [b.reduce_keepdims(x, axes, b.lowest(b.element_of(x)), b.maximum)]
    count = float(np.prod(shape[2:]))
    if isinstance(b.element_of(x), ir.F16Type):
        # An f16 sum is rounded to f16 once, before the divide, and overflows
        # where the mean does not: divide first (the sum adds in f32).
        x = b.elementwise([x], lambda a: arith.divf(a[0], b.const_like(count, a[0])))
        return [b.reduce_keepdims(x, axes, 0.0, arith.addf)]
    total = b.reduce_keepdims(x, axes, 0.0, arith.addf)
    return [b.elementwise([total], lambda a: arith.divf(a[0], b.const_like(count, a[0])))]


@handles("LpPool", "GlobalLpPool")
def lp_pool(node):
    """(sum over the window of |x|^p)^(1/p): a sum pooling of |x|^p."""
    p = float(node.attr("p", 2))
    if p <= 0:
        raise ImportFailure(f"p={p} must be positive")

    def power(a):
        magnitude = math.absf(a[0])
        return arith.mulf(magnitude, magnitude) if p == 2 else \
            math.powf(magnitude, b.const_like(p, a[0]))

    def root(a):
        return math.sqrt(a[0]) if p == 2 else math.powf(a[0], b.const_like(1.0 / p, a[0]))
    if node.op_type == "GlobalLpPool":
        x = node.value(0)
        axes = list(range(2, len(b.shape_of(x))))
        return [b.elementwise([b.reduce_keepdims(b.elementwise([x], power), axes, 0.0,
                                                 arith.addf)], root)]
    lift, x, kernel, (low, high, outputs, strides, dilations) = \
        _pool_setup(node, node.attr("ceil_mode", 0))
    n, c, h, w = b.shape_of(x)
    element_type = b.element_of(x)
    extra = [max(0, (o - 1) * s + (k - 1) * d + 1 - n_ - lo - hi)
             for o, s, k, d, n_, lo, hi in zip(outputs, strides, kernel, dilations, [h, w],
                                               low, high)]
    padded = b.pad(b.transpose(b.elementwise([x], power), TO_NHWC), [0, *low, 0],
                   [0, *(hi + e for hi, e in zip(high, extra)), 0], 0.0)
    total = linalg.pooling_nhwc_sum(padded, b.empty(kernel, element_type),
                                    outs=[b.fill(0.0, [n, *outputs, c], element_type)],
                                    strides=strides, dilations=dilations)
    return [_pool_result(b.elementwise([total], root), lift)]
