"""Data-movement ops: reshapes become tensor.collapse/expand_shape, slices
tensor.extract_slice, concatenation tensor.insert_slice, transposes
linalg.transpose, padding tensor.pad. Each op's parameters are read once
(attributes in old opsets, constant inputs in new ones) and shared by the
handler and the numpy folder."""

from __future__ import annotations

import numpy as np
from mlir import ir

from . import builders as b
from .handler_api import normalized_axis
from .onnx_importer import ImportFailure, folds, handles


def _int_list(value) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


# -- Reshape, Flatten, Squeeze, Unsqueeze, Expand ------------------------------------------

def reshape_target(node, shape) -> list[int]:
    requested = _int_list(node.required_constant(1, "the target shape"))
    allow_zero = node.opset >= 14 and node.attr("allowzero", 0)
    copied = [i for i, d in enumerate(requested) if d == 0 and not allow_zero]
    if copied and copied[-1] >= len(shape):
        raise ImportFailure(f"target shape {requested} copies dim {copied[-1]} (a 0) of an input "
                            f"of rank {len(shape)}")
    target = [shape[i] if d == 0 and not allow_zero else d for i, d in enumerate(requested)]
    if target.count(-1) > 1:
        raise ImportFailure(f"target shape {requested} has more than one -1")
    if -1 in target:
        known = int(np.prod([d for d in target if d != -1]))
        target[target.index(-1)] = int(np.prod(shape)) // known if known else 0
    if int(np.prod(target)) != int(np.prod(shape)):
        raise ImportFailure(f"cannot reshape {shape} to {requested}")
    return target


def flatten_target(node, shape) -> list[int]:
    axis = node.attr("axis", 1)
    if not -len(shape) <= axis <= len(shape):
        raise ImportFailure(f"axis {axis} out of range for rank {len(shape)} (Flatten takes "
                            f"-rank to rank)")
    axis = axis + len(shape) if axis < 0 else axis
    return [int(np.prod(shape[:axis])), int(np.prod(shape[axis:]))]


def _axes(node, input_index: int, what: str):
    """Axes given as an attribute (opset < 13) or as a constant input."""
    if node.opset < 13:
        return node.attr("axes")
    if not node.has_input(input_index):
        return None
    return _int_list(node.required_constant(input_index, what))


def squeeze_target(node, shape) -> list[int]:
    axes = _axes(node, 1, "the axes")
    if axes is None:
        return [d for d in shape if d != 1]
    axes = {normalized_axis(a, len(shape)) for a in axes}
    if any(shape[a] != 1 for a in axes):
        raise ImportFailure(f"cannot squeeze axes {sorted(axes)} of shape {shape}")
    return [d for i, d in enumerate(shape) if i not in axes]


def unsqueeze_target(node, shape) -> list[int]:
    axes = _axes(node, 1, "the axes")
    if axes is None:
        raise ImportFailure("Unsqueeze needs axes")
    rank = len(shape) + len(axes)
    axes = sorted(normalized_axis(a, rank) for a in axes)
    target, rest = [], iter(shape)
    for i in range(rank):
        target.append(1 if i in axes else next(rest))
    return target


_RESHAPES = {"Reshape": reshape_target, "Flatten": flatten_target,
             "Squeeze": squeeze_target, "Unsqueeze": unsqueeze_target}


@folds(*_RESHAPES)
def fold_reshape(node, inputs):
    return [inputs[0].reshape(_RESHAPES[node.op_type](node, list(inputs[0].shape)))]


@handles(*_RESHAPES)
def reshape(node):
    return [b.reshape(node.value(0), _RESHAPES[node.op_type](node, node.shape(0)))]


@folds("Expand")
def fold_expand(node, inputs):
    shape = b.broadcast_shape(inputs[0].shape, _int_list(inputs[1]))
    return [np.broadcast_to(inputs[0], shape).copy()]


@handles("Expand")
def expand(node):
    requested = _int_list(node.required_constant(1, "the shape"))
    return [b.broadcast_to(node.value(0), b.broadcast_shape(node.shape(0), requested))]


# -- Transpose -----------------------------------------------------------------------------

def _permutation(node, rank):
    return node.attr("perm") or list(reversed(range(rank)))


@folds("Transpose")
def fold_transpose(node, inputs):
    return [np.ascontiguousarray(np.transpose(inputs[0], _permutation(node, inputs[0].ndim)))]


@handles("Transpose")
def transpose(node):
    return [b.transpose(node.value(0), _permutation(node, len(node.shape(0))))]


# -- Concat, Split -------------------------------------------------------------------------

@folds("Concat")
def fold_concat(node, inputs):
    if node.attr("axis") is None:  # numpy would flatten the inputs
        raise ImportFailure("a Concat needs an 'axis' attribute")
    arrays = [i for i in inputs if i is not None]
    if not arrays:
        raise ImportFailure("a Concat needs at least one input")
    axis = normalized_axis(node.attr("axis"), arrays[0].ndim)
    return [np.concatenate(arrays, axis=axis)]


@handles("Concat")
def concat(node):
    values = [node.value(i) for i in range(node.input_count) if node.has_input(i)]
    rank = len(b.shape_of(values[0]))
    axis = normalized_axis(node.attr("axis"), rank)
    values = [v for v in values if b.shape_of(v)[axis] > 0]
    return [b.concat(values, axis)]


def split_sizes(node, shape) -> tuple[int, list[int]]:
    axis = normalized_axis(node.attr("axis", 0), len(shape))
    if node.opset < 13:
        sizes = node.attr("split")
    else:
        sizes = _int_list(node.constant(1)) if node.has_input(1) else None
        if node.has_input(1) and node.constant(1) is None:
            raise ImportFailure("the split sizes (input 1) must be a constant")
    outputs = len(node.proto.output)
    if not sizes:
        parts = node.attr("num_outputs", outputs)
        chunk = -(-shape[axis] // parts)  # the last part may be smaller (opset 18)
        sizes = [min(chunk, shape[axis] - chunk * i) for i in range(parts)]
    if sum(sizes) != shape[axis]:
        raise ImportFailure(f"split sizes {sizes} do not add up to {shape[axis]}")
    return axis, list(sizes)


@folds("Split")
def fold_split(node, inputs):
    axis, sizes = split_sizes(node, list(inputs[0].shape))
    return np.split(inputs[0], np.cumsum(sizes)[:-1], axis=axis)


@handles("Split")
def split(node):
    source = node.value(0)
    shape = b.shape_of(source)
    axis, sizes = split_sizes(node, shape)
    results, offset = [], 0
    for size in sizes:
        offsets, part = [0] * len(shape), list(shape)
        offsets[axis], part[axis] = offset, size
        results.append(b.extract_slice(source, offsets, part))
        offset += size
    return results


# -- Slice ---------------------------------------------------------------------------------

def slice_parameters(node, shape):
    """(start, size, step) per dimension after ONNX's clamping rules."""
    if node.opset < 10:
        starts, ends = node.attr("starts"), node.attr("ends")
        axes, steps = node.attr("axes"), None
    else:
        starts = _int_list(node.required_constant(1, "starts"))
        ends = _int_list(node.required_constant(2, "ends"))
        axes = _int_list(node.required_constant(3, "axes")) if node.has_input(3) else None
        steps = _int_list(node.required_constant(4, "steps")) if node.has_input(4) else None
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps or [1] * len(starts)
    parameters = [(0, d, 1) for d in shape]
    for axis, start, end, step in zip(axes, starts, ends, steps):
        axis = normalized_axis(axis, len(shape))
        dim = shape[axis]
        if step == 0:
            raise ImportFailure("a slice step of 0")
        start = start + dim if start < 0 else start
        end = end + dim if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        size = max(0, -(-(end - start) // step))
        parameters[axis] = (start, size, step)
    return parameters


@folds("Slice")
def fold_slice(node, inputs):
    parameters = slice_parameters(node, list(inputs[0].shape))
    index = tuple(slice(start, start + step * size if start + step * size >= 0 else None, step)
                  for start, size, step in parameters)
    return [np.ascontiguousarray(inputs[0][index])]


@handles("Slice")
def slice_(node):
    source = node.value(0)
    parameters = slice_parameters(node, b.shape_of(source))
    # A negative step reads the same elements as a positive one, in reverse.
    offsets = [start + step * (size - 1) if step < 0 and size else start
               for start, size, step in parameters]
    sizes = [size for _, size, _ in parameters]
    result = b.extract_slice(source, offsets, sizes, [abs(step) for _, _, step in parameters])
    reversed_axes = [d for d, (_, size, step) in enumerate(parameters) if step < 0 and size > 1]
    return [reverse(result, reversed_axes) if reversed_axes else result]


def reverse(value, axes):
    shape = b.shape_of(value)
    rank = len(shape)
    exprs = []
    for d in range(rank):
        dim = ir.AffineDimExpr.get(d)
        exprs.append(dim * -1 + (shape[d] - 1) if d in axes else dim)
    return b.generic([value], [ir.AffineMap.get(rank, 0, exprs)],
                     b.empty(shape, b.element_of(value)), ir.AffineMap.get_identity(rank),
                     ["parallel"] * rank, lambda args: args[0])


# -- Pad -----------------------------------------------------------------------------------

def pad_parameters(node, rank):
    if node.opset < 11:
        pads, value = node.attr("pads"), node.attr("value", 0.0)
    else:
        pads = _int_list(node.required_constant(1, "the pads"))
        value = node.constant(2)
        if node.has_input(2) and value is None:
            raise ImportFailure("the pad value (input 2) must be a constant")
        value = 0 if value is None else value.reshape(-1)[0].item()
    axes = list(range(rank))
    if node.opset >= 18 and node.has_input(3):
        axes = [normalized_axis(a, rank) for a in _int_list(node.required_constant(3, "the axes"))]
    if pads is None or len(pads) != 2 * len(axes):
        raise ImportFailure(f"{0 if pads is None else len(pads)} pads for {len(axes)} axes: "
                            f"Pad takes a start and an end per axis")
    low, high = [0] * rank, [0] * rank
    for i, axis in enumerate(axes):
        low[axis], high[axis] = pads[i], pads[i + len(axes)]
    return low, high, value, node.attr("mode", "constant")


@folds("Pad")
def fold_pad(node, inputs):
    low, high, value, mode = pad_parameters(node, inputs[0].ndim)
    if min(low + high) < 0:
        return None
    widths = list(zip(low, high))
    if mode == "constant":
        return [np.pad(inputs[0], widths, constant_values=value)]
    return [np.pad(inputs[0], widths, mode={"edge": "edge", "reflect": "reflect",
                                             "wrap": "wrap"}[mode])]


@handles("Pad")
def pad(node):
    source = node.value(0)
    shape = b.shape_of(source)
    low, high, value, mode = pad_parameters(node, len(shape))
    if mode not in ("constant", "edge", "reflect", "wrap"):
        raise node.unsupported(f"Pad mode '{mode}'")
    # Negative pads crop.
    offsets = [-p if p < 0 else 0 for p in low]
    sizes = [d - max(-lo, 0) - max(-hi, 0) for d, lo, hi in zip(shape, low, high)]
    source = b.extract_slice(source, offsets, sizes)
    if mode != "constant":
        return [_pad_from_source(source, [max(p, 0) for p in low], [max(p, 0) for p in high],
                                 mode)]
    return [b.pad(source, [max(p, 0) for p in low], [max(p, 0) for p in high], value)]


def _pad_from_source(value, low, high, mode):
    """edge, reflect and wrap padding: each axis's borders are slices of the
    tensor (repeated, mirrored or taken from the other end), concatenated."""
    for axis, (before, after) in enumerate(zip(low, high)):
        if not before and not after:
            continue
        shape = b.shape_of(value)
        length = shape[axis]
        limit = length - 1 if mode == "reflect" else length
        if length == 0 or (mode != "edge" and max(before, after) > limit):
            raise ImportFailure(f"{mode} padding of {max(before, after)} on an axis of "
                                f"{length} elements")

        def part(start, count, mirrored=False):
            offsets, sizes = [0] * len(shape), list(shape)
            offsets[axis], sizes[axis] = start, count
            piece = b.extract_slice(value, offsets, sizes)
            return reverse(piece, [axis]) if mirrored and count > 1 else piece
        if mode == "edge":
            parts = [part(0, 1)] * before + [value] + [part(length - 1, 1)] * after
        elif mode == "reflect":
            parts = ([part(1, before, True)] if before else []) + [value] + \
                ([part(length - 1 - after, after, True)] if after else [])
        else:
            parts = ([part(length - before, before)] if before else []) + [value] + \
                ([part(0, after)] if after else [])
        value = b.concat(parts, axis)
    return value
