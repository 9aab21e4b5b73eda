"""npu-normalize-contractions: a matmul is a matmul however it is written.

Runs on tensors. A contraction is recognised from linalg's structure, not from
the op's name: a `linalg.generic` (or a `linalg.matmul` / `batch_matmul` with
`indexing_maps`) whose iterators are parallel except one reduction dim k,
whose body is `out + a * b` (the inputs possibly widened with extf/extsi
first), and whose maps are projections: the output indexed by (batch..., m, n),
one input by {batch, m, k}, the other by {batch, k, n}, in any order. It
becomes `linalg.matmul` (no batch dim) or `linalg.batch_matmul` with the
default maps, each operand whose dims come in another order transposed
first (`linalg.transpose`, on the vector unit), several batch dims (an
attention einsum's batch and heads) collapsed into one around it: the matrix
unit then runs it instead of the fallback engine. Anything else is left as
it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import linalg, tensor

from ..frontend.builders import reassociation_attr
from ..recipes.problem import copy_npu_attributes, indexing_maps
from . import ModulePass, PassContext
from .npu_convert_layout import result_of, transposed

WIDENING = ("arith.extf", "arith.extsi")
PRODUCTS = {"arith.mulf": "arith.addf", "arith.muli": "arith.addi"}


@dataclass(frozen=True)
class Contraction:
    lhs: ir.Value
    rhs: ir.Value
    init: ir.Value
    lhs_order: list[int]   # the permutation putting lhs in (batch..., m, k) order
    rhs_order: list[int]   # the permutation putting rhs in (batch..., k, n) order
    batch: int


def dims_of(affine_map: ir.AffineMap):
    positions = []
    for expr in affine_map.results:
        if not isinstance(expr, ir.AffineDimExpr):
            return None
        positions.append(expr.position)
    return positions if len(set(positions)) == len(positions) else None


def is_product_sum(block: ir.Block) -> bool:
    """Whether the body yields out + a * b (a and b possibly widened)."""
    operations = list(block.operations)
    yielded = operations[-1].operands
    if len(yielded) != 1 or not isinstance(yielded[0], ir.OpResult):
        return False
    total = yielded[0].owner
    if total.name not in PRODUCTS.values():
        return False
    out = block.arguments[2]
    operands = list(total.operands)
    if out not in operands:
        return False
    product = operands[1] if operands[0] == out else operands[0]
    if not isinstance(product, ir.OpResult) or PRODUCTS.get(product.owner.name) != total.name:
        return False

    def source(value):
        while isinstance(value, ir.OpResult) and value.owner.name in WIDENING:
            value = value.owner.operands[0]
        return value
    first, second = (source(v) for v in product.owner.operands)
    a, b = block.arguments[0], block.arguments[1]
    return (first == a and second == b) or (first == b and second == a)


def contraction(op) -> Contraction | None:
    if op.name not in ("linalg.generic", "linalg.matmul", "linalg.batch_matmul"):
        return None
    if "indexing_maps" not in op.attributes or len(op.operands) != 3:
        return None
    lhs, rhs, init = op.operands
    maps = indexing_maps(op)
    lhs_dims, rhs_dims, out_dims = (dims_of(m) for m in maps)
    if None in (lhs_dims, rhs_dims, out_dims):
        return None
    loops = maps[0].n_dims
    if op.name == "linalg.generic":
        iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
        reductions = [d for d, kind in enumerate(iterators) if "reduction" in kind]
        if not is_product_sum(op.regions[0].blocks[0]):
            return None
    else:
        reductions = [d for d in range(loops) if d not in out_dims]
    if len(reductions) != 1 or sorted(out_dims + reductions) != list(range(loops)) \
            or len(out_dims) < 2:   # a dot product or a matrix-vector product
        return None
    k = reductions[0]
    batch = out_dims[:-2]
    m, n = out_dims[-2:]
    # Which input holds m: that one is the lhs.
    if set(lhs_dims) == set(batch + [n, k]) and set(rhs_dims) == set(batch + [m, k]):
        lhs, rhs, lhs_dims, rhs_dims = rhs, lhs, rhs_dims, lhs_dims
    if set(lhs_dims) != set(batch + [m, k]) or set(rhs_dims) != set(batch + [k, n]):
        return None
    lhs_order = [lhs_dims.index(d) for d in batch + [m, k]]
    rhs_order = [rhs_dims.index(d) for d in batch + [k, n]]
    return Contraction(lhs, rhs, init, lhs_order, rhs_order, len(batch))


def is_default(contraction_: Contraction, op) -> bool:
    identity = list(range(len(contraction_.lhs_order)))
    return op.name != "linalg.generic" and contraction_.lhs_order == identity \
        and contraction_.rhs_order == identity and contraction_.lhs == op.operands[0]


def batch_groups(batch: int) -> ir.ArrayAttr:
    """The reassociation folding the leading `batch` dims of a rank batch + 2
    tensor into one."""
    return reassociation_attr([list(range(batch)), [batch], [batch + 1]])


def batches_collapsed(value: ir.Value, batch: int) -> ir.Value:
    shape = ir.RankedTensorType(value.type).shape
    result_type = ir.RankedTensorType.get([math.prod(shape[:batch]), *shape[batch:]],
                                          ir.RankedTensorType(value.type).element_type)
    return tensor.CollapseShapeOp(result_type, value, batch_groups(batch)).result


@dataclass(frozen=True)
class NpuNormalizeContractions(ModulePass):
    argument = "npu-normalize-contractions"
    summary = "Rewrite contractions written as generics or with transposed operands into " \
              "linalg.matmul / batch_matmul with transposes"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            found = []
            module.walk(lambda op: found.append(op) or ir.WalkResult.ADVANCE)
            for op in found:
                recognised = contraction(op)
                if recognised is None or is_default(recognised, op):
                    continue
                if len(op.results) != 1:
                    context.diagnostics.remark(op.location, f"'{op.name}' is a contraction but "
                                               f"not rewritten: contractions are normalized on "
                                               f"tensors, before bufferization")
                    continue
                self.rewrite(op, recognised, context)

    @staticmethod
    def rewrite(op, found: Contraction, context: PassContext) -> None:
        identity = list(range(len(found.lhs_order)))
        with op.location, ir.InsertionPoint(op):
            lhs = found.lhs if found.lhs_order == identity else transposed(found.lhs,
                                                                           found.lhs_order)
            rhs = found.rhs if found.rhs_order == identity else transposed(found.rhs,
                                                                           found.rhs_order)
            if found.batch > 1:
                lhs, rhs, init = (batches_collapsed(v, found.batch)
                                  for v in (lhs, rhs, found.init))
            else:
                init = found.init
            builder = linalg.batch_matmul if found.batch else linalg.matmul
            product = result_of(builder(lhs, rhs, outs=[init]))
            result = product if found.batch <= 1 else tensor.ExpandShapeOp(
                op.results[0].type, product, batch_groups(found.batch), [],
                ir.RankedTensorType(op.results[0].type).shape).result
        copy_npu_attributes(op, product.owner)
        moved = [side for side, order in (("lhs", found.lhs_order), ("rhs", found.rhs_order))
                 if order != identity]
        how = f", {' and '.join(moved)} transposed first" if moved else ""
        if found.batch > 1:
            how += f", its {found.batch} batch dims as one"
        context.diagnostics.remark(op.location, f"'{op.name}' is a contraction: runs as "
                                                f"'{product.owner.name}'{how}")
        op.results[0].replace_all_uses_with(result)
        op.erase()
