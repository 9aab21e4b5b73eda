"""What the npu op handlers share: attribute values, the checks of their
operands (SRAM placement, broadcasting, convolution windows) with located
errors, and storing a result with the numeric-safety count."""

from __future__ import annotations

import numpy as np
from atvoss_mlir.diagnostics import error_at
from mlir import ir

from . import numerics
from .values import SRAM, MemRef, format_view


def attr(op, name, default=None):
    """The Python value of an op's attribute (default when absent)."""
    attributes = op.attributes
    if name not in attributes:
        return default
    value = attributes[name]
    if isinstance(value, ir.BoolAttr):
        return bool(value.value)
    if isinstance(value, (ir.IntegerAttr, ir.FloatAttr, ir.StringAttr)):
        return value.value
    if isinstance(value, ir.DenseI64ArrayAttr):
        return tuple(value)
    # npu-verify refuses it; a program simulated unverified gets the error here.
    raise error_at(op.location, f"{op.name}: attribute {name} = {value} is not an integer, "
                                f"float, string, bool or array<i64>")


def require_sram(info, **operands) -> None:
    for name, memref in operands.items():
        if memref is not None and memref.space != SRAM:
            raise info.error(f"operand '{name}' is not an SRAM tile (memory space 1)")


def shape_error(info, message: str, **operands):
    shapes = ", ".join(f"{name} {format_view(m)}" for name, m in operands.items() if m is not None)
    return info.error(f"{message} ({shapes})")


def epilogue_of(op):
    return (attr(op, "activation", "none"), attr(op, "clip_min"), attr(op, "clip_max"))


def broadcasts(shape, *operands) -> bool:
    """Whether the operands broadcast to `shape` by numpy rules."""
    try:
        return np.broadcast_shapes(*(m.shape for m in operands), shape) == shape
    except ValueError:
        return False


def window_output(info, form: str, x, w, out, bias, filter_rank: int, strides, dilations):
    """(OH, OW) of a conv of NHWC `x` with a KH x KW x C (x F) filter; a located
    error unless the shapes form `form` for these strides and dilations."""
    ok = len(x.shape) == 4 and len(w.shape) == filter_rank and w.shape[2] == x.shape[3]
    if ok:
        kh, kw, channels = w.shape[0], w.shape[1], w.shape[-1]
        oh = numerics.conv_output_size(x.shape[1], kh, strides[0], dilations[0])
        ow = numerics.conv_output_size(x.shape[2], kw, strides[1], dilations[1])
        ok = out.shape == (x.shape[0], oh, ow, channels) and \
            (bias is None or bias.shape == (channels,))
    if not ok:
        raise shape_error(info, f"shapes do not form {form} for these strides and "
                          "dilations", input=x, filter=w, output=out, bias=bias)
    return oh, ow


def store_checked(t, info, target: np.ndarray, value, inputs) -> None:
    """Store a result, counting overflow and underflow (numeric_safety.py)."""
    numerics.store(target, value)
    t.machine.numeric_events.check_float(info, target, value, inputs)


def finish(t, info, out: MemRef, acc: np.ndarray, accumulate: bool, bias, epilogue,
           inputs) -> None:
    """Add the bias to `acc` (which starts from the output's value when
    `accumulate`), apply the activation, store."""
    target = out.array()
    inputs = [m.array() for m in inputs]
    if accumulate:
        inputs.append(target.copy())
    if bias is not None:
        inputs.append(bias.array())
        acc = acc + bias.array().astype(acc.dtype)
    store_checked(t, info, target, numerics.activation(acc, *epilogue), inputs)
