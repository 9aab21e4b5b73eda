"""Nodes evaluated at import time: constants and the shape arithmetic that
feeds Reshape, Slice, Pad and friends (Shape, Gather, Cast, Range, ...).

A folder runs only when every input is a constant (Shape and Size only need
the static type of theirs); otherwise the node's handler builds IR."""

from __future__ import annotations

import numpy as np
import onnx

from .onnx_importer import ImportFailure, folds, handles


@folds("Constant")
def constant(node, inputs):
    for name in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if name in node.attributes:
            value = node.attr(name)
            if name in ("value_float", "value_floats"):
                value = np.asarray(value, np.float32)
            elif name in ("value_int", "value_ints"):
                value = np.asarray(value, np.int64)
            return [np.asarray(value)]
    raise ImportFailure("a Constant needs a numeric 'value' attribute "
                        f"(has {sorted(node.attributes)})")


@folds("ConstantOfShape")
def constant_of_shape(node, inputs):
    value = node.attr("value")
    value = np.zeros(1, np.float32) if value is None else np.asarray(value).reshape(-1)
    if inputs[0].ndim != 1 or value.size != 1:
        raise ImportFailure(f"the shape (input 0) must be 1-d and 'value' one element (have "
                            f"shapes {list(inputs[0].shape)} and {list(value.shape)})")
    if (inputs[0] < 0).any():
        raise ImportFailure(f"the shape {inputs[0].tolist()} has a negative dim")
    return [np.full([int(d) for d in inputs[0]], value[0], value.dtype)]


@folds("Shape")
def shape(node, inputs):
    dims = np.asarray(inputs[0].shape, np.int64)
    start, end = node.attr("start", 0), node.attr("end", None)
    return [dims[start:end]]


@folds("Size")
def size(node, inputs):
    return [np.asarray(inputs[0].size, np.int64)]


@folds("Cast")
def cast(node, inputs):
    return [inputs[0].astype(cast_dtype(node))]


def cast_dtype(node) -> np.dtype:
    """The numpy type of a Cast's 'to' attribute."""
    to = node.attr("to")
    if to is None:
        raise ImportFailure("a Cast needs a 'to' attribute (the element type)")
    try:
        return np.dtype(onnx.helper.tensor_dtype_to_np_dtype(to))
    except (KeyError, TypeError):
        raise ImportFailure(f"'to' = {to} is not an ONNX element type") from None


@folds("Gather")
def gather(node, inputs):
    data, indices = inputs
    return [np.take(data, indices.astype(np.int64), axis=node.attr("axis", 0))]


@folds("Range")
def range_(node, inputs):
    if len(inputs) != 3:
        raise ImportFailure(f"Range takes start, limit and delta: got {len(inputs)} inputs")
    for value, name in zip(inputs, ("start", "limit", "delta")):
        if np.asarray(value).size != 1:
            raise ImportFailure(f"{name} must be a scalar, not of shape {list(value.shape)}")
    start, limit, delta = (np.asarray(v).reshape(()) for v in inputs)
    if delta == 0:
        raise ImportFailure("delta is 0: the range never reaches its limit")
    return [np.arange(start, limit, delta).astype(start.dtype)]


@folds("Where")
def where(node, inputs):
    return [np.where(*inputs)]


_COMPARE = {"Equal": np.equal, "Less": np.less, "Greater": np.greater,
            "LessOrEqual": np.less_equal, "GreaterOrEqual": np.greater_equal,
            "And": np.logical_and, "Or": np.logical_or}


@folds(*_COMPARE)
def compare(node, inputs):
    return [_COMPARE[node.op_type](*inputs)]


@folds("Not")
def not_(node, inputs):
    return [np.logical_not(inputs[0])]


@folds("Identity", "Dropout")
def identity(node, inputs):
    if node.op_type == "Dropout" and node.opset >= 10:
        return [inputs[0], _dropout_mask(node, inputs[0].shape, inputs[0].dtype)][
            :len(node.proto.output)]
    if node.op_type == "Dropout" and len(node.proto.output) > 1:
        return None  # the handler leaves the old mask undefined
    return [inputs[0]]


def _dropout_mask(node, shape, dtype) -> np.ndarray:
    """Dropout at inference keeps everything: from opset 10 its mask is all
    ones (bool). Training mode is refused."""
    if node.opset >= 12 and node.has_input(2):
        training = node.required_constant(2, "training_mode")
        ratio = node.constant(1)
        if bool(training.reshape(-1)[0]) and (ratio is None or float(ratio.reshape(-1)[0]) != 0):
            raise ImportFailure("training_mode=true (random dropout) is not supported")
    return np.ones(shape, np.bool_) if node.opset >= 10 else None


@folds("ReduceProd", "ReduceSum", "ReduceMin", "ReduceMax", "ReduceMean")
def reduce_constant(node, inputs):
    from .ops_reduce import reduction_axes
    if node.op_type == "ReduceMean" and inputs[0].dtype.kind != "f":
        return None   # an integer mean: the handler's rounding
    axes = reduction_axes(node, inputs[0].ndim)
    fn = {"ReduceProd": np.prod, "ReduceSum": np.sum, "ReduceMin": np.min,
          "ReduceMax": np.max, "ReduceMean": np.mean}[node.op_type]
    keepdims = bool(node.attr("keepdims", 1))
    return [np.asarray(fn(inputs[0], axis=tuple(axes), keepdims=keepdims)).astype(inputs[0].dtype)]


@handles("Identity", "Dropout")
def forward(node):
    """Identity and Dropout (inference) forward their input unchanged. The
    mask of Dropout before opset 10 (of the data's type) has no agreed
    inference value (onnxruntime gives zeros, the ONNX reference ones): it is
    left undefined, an error only where something reads it."""
    value = node.importer.values[node.proto.input[0]]
    if node.op_type != "Dropout":
        return [value]
    mask = _dropout_mask(node, node.shape(0), None) if node.opset >= 10 else None
    return [value, mask][:len(node.proto.output)]
