"""npu-propagate-layout's rewrites of compute ops: an elementwise generic or a
reduction reading a transposed tensor computes in the transpose's source
layout (its loops and indexing maps permuted), so the transpose moves below
it or goes."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import tensor

from ..recipes.problem import indexing_maps, input_count
from .npu_convert_layout import transposed

INPUTS_SEGMENT = "operandSegmentSizes"


def transpose_source(value: ir.Value):
    """(source, permutation) when `value` is a linalg.transpose result."""
    if not isinstance(value, ir.OpResult) or value.owner.name != "linalg.transpose":
        return None
    permutation = list(ir.DenseI64ArrayAttr(value.owner.attributes["permutation"]))
    return value.owner.operands[0], permutation


def dims_of(affine_map: ir.AffineMap) -> list | None:
    """The results of a map as dim positions (None for a constant), or None when
    a result is neither."""
    results = []
    for expr in affine_map.results:
        expr = expr.maybe_downcast()
        if isinstance(expr, ir.AffineDimExpr):
            results.append(expr.position)
        elif isinstance(expr, ir.AffineConstantExpr):
            results.append(None)
        else:
            return None
    return results


def remapped(affine_map: ir.AffineMap, new_position: list[int]) -> ir.AffineMap:
    exprs = [ir.AffineDimExpr.get(new_position[e.position]) if isinstance(e, ir.AffineDimExpr)
             else e for e in (r.maybe_downcast() for r in affine_map.results)]
    return ir.AffineMap.get(affine_map.n_dims, 0, exprs)


def in_order(affine_map: ir.AffineMap) -> bool:
    """Whether the map's dims come in increasing order (constants aside): a
    broadcast, or a reduction's output, the vector unit's tiles can read."""
    dims = [d for d in dims_of(affine_map) if d is not None]
    return dims == sorted(dims)


def remap_index_ops(op, permutation: list[int]) -> None:
    """Loop m of `op` is now loop permutation[m]: so is every `linalg.index` of
    its body (an ArgMax's position, a mask's coordinate)."""
    def visit(inner):
        if inner.name == "linalg.index":
            dim = ir.IntegerAttr(inner.attributes["dim"]).value
            inner.attributes["dim"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                         permutation[dim])
        return ir.WalkResult.ADVANCE
    for block in op.regions[0].blocks:
        for inner in block.operations:
            inner.operation.walk(visit)


def inverse_transpose(value: ir.Value, permutation: list[int], before) -> ir.Value | None:
    """The result of a transpose of `value` by the inverse of `permutation`
    placed before the op `before` in its block, if there is one."""
    inverse = [permutation.index(d) for d in range(len(permutation))]
    candidates = [use.owner for use in value.uses if use.owner.name == "linalg.transpose"
                  and list(ir.DenseI64ArrayAttr(use.owner.attributes["permutation"])) == inverse]
    for op in before.block.operations:
        if op == before:
            return None
        if op in candidates:
            return op.results[0]
    return None


class Candidate:
    """An elementwise generic and the transpose its full-size inputs share."""

    def __init__(self, op):
        self.op = op
        self.maps = indexing_maps(op)
        segments = list(ir.DenseI32ArrayAttr(op.attributes[INPUTS_SEGMENT]))
        self.input_count, output_count = segments
        self.permutation = None
        self.sources = {}
        self.refusal = None     # why a transposed input stays
        if output_count != 1 or not self.simple():
            return
        rank = self.maps[-1].n_dims
        full_size = [index for index in range(self.input_count)
                     if self.maps[index] == ir.AffineMap.get_identity(rank)]
        found = {index: transpose_source(op.operands[index]) for index in full_size}
        transposed = {index: f for index, f in found.items() if f is not None}
        if not transposed:
            return
        permutations = {tuple(f[1]) for f in transposed.values()}
        if len(permutations) > 1:
            self.refusal = "its inputs are transposed by different permutations"
            return
        permutation = list(permutations.pop())
        for index in full_size:
            if index not in transposed:
                # An input already transposed the other way for another op
                # (the model's input, read by the first conv and a residual
                # add): that transpose is its source in the moved layout.
                existing = inverse_transpose(op.operands[index], permutation, op)
                if existing is not None:
                    transposed[index] = (existing, permutation)
        # An input read through a whole permutation of the loops is a
        # transposed tile, in any order; a broadcast's dims must stay in order.
        scrambled = [index for index in range(self.input_count) if index not in full_size
                     and len(set(dims_of(self.maps[index])) - {None}) < rank
                     and not in_order(remapped(self.maps[index], permutation))]
        if len(transposed) < len(full_size):
            others = [index for index in full_size if index not in transposed]
            self.refusal = (f"input #{others[0]} is not transposed: moving the transpose "
                            f"would transpose that input instead")
        elif scrambled:
            self.refusal = (f"input #{scrambled[0]} would be read with its dims out of order "
                            f"in the moved layout")
        else:
            self.permutation = permutation
            self.sources = {index: f[0] for index, f in transposed.items()}

    def simple(self) -> bool:
        """All loops parallel, an identity output map whose block argument the
        body does not read, and inputs indexed by loop dims or constants."""
        op = self.op
        if any(str(t) != "#linalg.iterator_type<parallel>"
               for t in op.attributes["iterator_types"]):
            return False
        output_map = self.maps[-1]
        if output_map != ir.AffineMap.get_identity(output_map.n_dims):
            return False
        body = op.regions[0].blocks[0]
        if list(body.arguments[-1].uses):
            return False
        return all(dims_of(m) is not None for m in self.maps[:-1])

    def rewrite(self) -> None:
        result = in_layout(self.op, self.permutation, self.sources)
        with self.op.location, ir.InsertionPoint.after(self.op):
            back = transposed(result, self.permutation)
        result.replace_all_uses_except(back, back.owner.operation)


def in_layout(op, permutation: list[int], sources: dict) -> ir.Value:
    """Rewrite the elementwise generic `op` to compute the transpose of its
    result by `permutation` (its loops in that layout): the inputs in
    `sources` (index -> the source of its transposed input) are read with
    the identity map, the others' maps remapped. Returns its result."""
    maps = indexing_maps(op)
    input_total = len(maps) - 1
    maps = [ir.AffineMap.get_identity(m.n_dims) if index in sources
            else remapped(m, permutation)
            for index, m in enumerate(maps[:-1])] + [maps[-1]]
    result = op.results[0]
    old_type = ir.RankedTensorType(result.type)
    shape = [old_type.shape[permutation.index(d)] for d in range(old_type.rank)]
    with op.location, ir.InsertionPoint(op):
        new_type = ir.RankedTensorType.get(shape, old_type.element_type)
        init = tensor.EmptyOp(shape, old_type.element_type).result
    for index, source in sources.items():
        op.operands[index] = source
    op.operands[input_total] = init
    op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
    remap_index_ops(op, permutation)
    result.set_type(new_type)
    return result


def broadcast_piece(value: ir.Value) -> bool:
    """A piece of a concatenation computed by an elementwise generic with no
    full-size input (a pooled vector broadcast over the image: DeepLab's
    image-level branch), read only by the concatenation: it may compute the
    piece in any layout."""
    if not isinstance(value, ir.OpResult) or value.owner.name != "linalg.generic" \
            or len(list(value.uses)) != 1:
        return False
    candidate = Candidate(value.owner)
    rank = candidate.maps[-1].n_dims
    return candidate.simple() and candidate.input_count == len(candidate.maps) - 1 and \
        not any(m == ir.AffineMap.get_identity(rank) for m in candidate.maps[:-1])


def reduction_source(op):
    """(index, source, permutation) when `op` is a reduction whose one full-size
    input is a transpose and whose maps are dims and constants, else None."""
    types = [str(t) for t in op.attributes["iterator_types"]]
    if "#linalg.iterator_type<reduction>" not in types:
        return None
    maps = indexing_maps(op)
    if any(dims_of(m) is None for m in maps):
        return None
    rank = maps[0].n_dims
    full_size = [i for i in range(input_count(op)) if maps[i] == ir.AffineMap.get_identity(rank)]
    if len(full_size) != 1:
        return None
    found = transpose_source(op.operands[full_size[0]])
    if found is None:
        return None
    # The result keeps its dims in order (a global pool's (N, C)); a reduction
    # over the channels of a tensor moved to NHWC would not.
    if not all(in_order(remapped(m, found[1])) for i, m in enumerate(maps) if i != full_size[0]):
        return None
    return (full_size[0], *found)


def iterate_in_source_layout(op, index: int, source: ir.Value, permutation: list[int]) -> None:
    """The reduction reads the transpose's source with an identity map: its
    loops follow the source's dims, the other maps (and the output's) are
    remapped, and its result is unchanged."""
    maps = [ir.AffineMap.get_identity(m.n_dims) if i == index else remapped(m, permutation)
            for i, m in enumerate(indexing_maps(op))]
    types = list(op.attributes["iterator_types"])
    moved = [None] * len(types)
    for dim, iterator in enumerate(types):
        moved[permutation[dim]] = iterator
    op.operands[index] = source
    op.attributes["indexing_maps"] = ir.ArrayAttr.get([ir.AffineMapAttr.get(m) for m in maps])
    op.attributes["iterator_types"] = ir.ArrayAttr.get(moved)
    remap_index_ops(op, permutation)
