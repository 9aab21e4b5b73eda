"""Data rearrangement built from reshapes, transposes and constant masks:
DepthToSpace, SpaceToDepth, Tile, Trilu; and Einsum as one linalg.generic
(its subscripts are the indexing maps: free letters parallel, summed letters
reduction, the body a product)."""

from __future__ import annotations

import re

import numpy as np
from mlir import ir
from mlir.dialects import arith

from . import builders as b
from .handler_api import ImportFailure, folds, handles


# -- DepthToSpace, SpaceToDepth ----------------------------------------------------------------

def _blocksize(node, shape):
    if len(shape) != 4:
        raise node.unsupported(f"{node.op_type} of a rank-{len(shape)} tensor (NCHW only)")
    size = node.attr("blocksize")
    if not size or size <= 0:
        raise ImportFailure(f"blocksize {size} must be positive")
    mode = node.attr("mode", "DCR")
    if mode not in ("DCR", "CRD"):
        raise node.unsupported(f"mode '{mode}'")
    return size, mode


@handles("DepthToSpace")
def depth_to_space(node):
    x = node.value(0)
    n, c, h, w = b.shape_of(x)
    size, mode = _blocksize(node, [n, c, h, w])
    if c % (size * size):
        raise ImportFailure(f"{c} channels are not a multiple of blocksize^2 = {size * size}")
    depth = c // (size * size)
    if mode == "DCR":
        split, permutation = [n, size, size, depth, h, w], [0, 3, 4, 1, 5, 2]
    else:
        split, permutation = [n, depth, size, size, h, w], [0, 1, 4, 2, 5, 3]
    moved = b.transpose(b.reshape(x, split), permutation)
    return [b.reshape(moved, [n, depth, h * size, w * size])]


@handles("SpaceToDepth")
def space_to_depth(node):
    x = node.value(0)
    n, c, h, w = b.shape_of(x)
    size, mode = _blocksize(node, [n, c, h, w])
    if h % size or w % size:
        raise ImportFailure(f"spatial size {h}x{w} is not a multiple of blocksize {size}")
    split = b.reshape(x, [n, c, h // size, size, w // size, size])
    permutation = [0, 3, 5, 1, 2, 4] if mode == "DCR" else [0, 1, 3, 5, 2, 4]
    return [b.reshape(b.transpose(split, permutation), [n, c * size * size, h // size,
                                                        w // size])]


# -- Tile, Trilu -----------------------------------------------------------------------------

def tile_repeats(shape, repeats) -> list[int]:
    repeats = [int(r) for r in repeats.reshape(-1)]
    if len(repeats) != len(shape) or min(repeats, default=1) < 0:
        raise ImportFailure(f"repeats {repeats} do not fit a rank-{len(shape)} tensor")
    return repeats


@folds("Tile")
def fold_tile(node, inputs):
    """Of constants (a position embedding's grid of coordinates): numpy."""
    return [np.tile(inputs[0], tile_repeats(inputs[0].shape, inputs[1]))]


@handles("Tile")
def tile(node):
    x = node.value(0)
    shape = b.shape_of(x)
    repeats = tile_repeats(shape, node.required_constant(1, "the repeats"))
    if 0 in repeats or 0 in shape:
        raise node.unsupported("Tile to an empty tensor")
    # (a, b) -> (1, a, 1, b) -> broadcast (ra, a, rb, b) -> (ra*a, rb*b)
    interleaved = [d for size in shape for d in (1, size)]
    broadcast = [d for r, size in zip(repeats, shape) for d in (r, size)]
    expanded = b.broadcast_to(b.reshape(x, interleaved), broadcast)
    return [b.reshape(expanded, [r * size for r, size in zip(repeats, shape)])]


@handles("Trilu")
def trilu(node):
    x = node.value(0)
    shape = b.shape_of(x)
    if len(shape) < 2:
        raise ImportFailure("Trilu needs a tensor of rank 2 or more")
    k = int(node.required_constant(1, "k").reshape(-1)[0]) if node.has_input(1) else 0
    rows, cols = shape[-2:]
    band = np.arange(cols)[None, :] - np.arange(rows)[:, None]
    keep = band >= k if node.attr("upper", 1) else band <= k
    mask = node.weight(keep, "mask")
    zero = 0.0 if b.is_float(b.element_of(x)) else 0
    return [b.elementwise([mask, x], lambda a: arith.select(a[0], a[1],
                                                             b.const_like(zero, a[1])),
                          b.element_of(x))]


# -- Einsum ----------------------------------------------------------------------------------

def _subscripts(equation: str, shapes):
    """(input subscripts, output subscript) with '...' spelled out as letters."""
    equation = equation.replace(" ", "")
    if "->" in equation:
        left, output = equation.split("->")
    else:
        left, output = equation, None
    terms = left.split(",")
    if len(terms) != len(shapes):
        raise ImportFailure(f"equation '{equation}' has {len(terms)} operands, the node "
                            f"{len(shapes)}")
    used = set(re.sub(r"[^A-Za-z]", "", equation))
    spare = [c for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" if c not in used]
    ellipsis_rank = max((len(s) - len(t.replace("...", "")) for t, s in zip(terms, shapes)
                         if "..." in t), default=0)
    batch = "".join(spare[:ellipsis_rank])
    spelled = []
    for term, shape in zip(terms, shapes):
        if "..." in term:
            count = len(shape) - len(term.replace("...", ""))
            term = term.replace("...", batch[ellipsis_rank - count:])
        if not re.fullmatch(r"[A-Za-z]*", term) or len(term) != len(shape):
            raise ImportFailure(f"subscripts '{term}' do not fit an operand of rank {len(shape)}")
        spelled.append(term)
    if output is None:
        letters = "".join(spelled)
        output = batch + "".join(sorted(c for c in set(letters) - set(batch)
                                        if letters.count(c) == 1))
    else:
        output = output.replace("...", batch)
    return spelled, output


@handles("Einsum")
def einsum(node):
    values = [node.value(i) for i in range(node.input_count)]
    shapes = [b.shape_of(v) for v in values]
    terms, output = _subscripts(node.attr("equation", ""), shapes)
    if any(len(set(term)) != len(term) for term in terms + [output]):
        raise node.unsupported("Einsum with a repeated subscript in one operand (a diagonal)")
    element_type = b.element_of(values[0])
    if any(b.element_of(v) != element_type for v in values):
        raise ImportFailure("Einsum operands of different element types")
    sizes = {}
    for term, shape in zip(terms, shapes):
        for letter, size in zip(term, shape):
            if sizes.setdefault(letter, size) != size:
                if sizes[letter] == 1:
                    sizes[letter] = size
                elif size != 1:
                    raise ImportFailure(f"subscript '{letter}' has sizes {sizes[letter]} "
                                        f"and {size}")
    if any(c not in sizes for c in output):
        raise ImportFailure(f"output subscript '{output}' names a letter no operand has")
    loops = list(output) + sorted(set(sizes) - set(output))
    dims = {letter: ir.AffineDimExpr.get(i) for i, letter in enumerate(loops)}
    operands, maps = [], []
    for value, term, shape in zip(values, terms, shapes):
        kept = [i for i, letter in enumerate(term) if shape[i] == sizes[letter]]
        if len(kept) < len(term):  # broadcast unit dimensions are dropped
            value = b.reshape(value, [shape[i] for i in kept])
        operands.append(value)
        maps.append(ir.AffineMap.get(len(loops), 0, [dims[term[i]] for i in kept]))
    init = b.fill(0.0 if b.is_float(element_type) else 0, [sizes[c] for c in output],
                  element_type)

    def body(args):
        product = args[0]
        for arg in args[1:-1]:
            product = b.mul(product, arg)
        return b.add(args[-1], product)
    return [b.generic(operands, maps, init,
                      ir.AffineMap.get(len(loops), 0, [dims[c] for c in output]),
                      ["parallel" if c in output else "reduction" for c in loops], body)]
