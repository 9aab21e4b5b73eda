"""Tile loops from upstream MLIR: tiling a linalg op into an `scf.for` nest
with the transform dialect's `structured.tile_using_for`, flattening the nest
into one loop over the tiles (`loop.coalesce`), and the index values of
another iteration of that loop (its offsets and sizes computed again for
iteration t + 1, t - 1, 0, ...), which a software pipeline needs."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith
from mlir.dialects.transform import interpreter

from .problem import TILE_LOOP_ATTR


def _apply(payload, body: str) -> None:
    """Run the transform `body` on `payload`, which %root stands for. The
    payload is the op transformed itself, not an ancestor searched with
    structured.match: a match walks all ops below the ancestor, and so
    transforming every op of a function that way costs a walk of the
    function per op."""
    script = ir.Module.parse(
        "module attributes {transform.with_named_sequence} {\n"
        "  transform.named_sequence @__transform_main("
        "%root: !transform.any_op {transform.consumed}) {\n"
        f"{body}    transform.yield\n  }}\n}}")
    interpreter.apply_named_sequence(payload, script.body.operations[0], script)


def tile_with_loops(op, loop_tiles: list[int], interchange: list[int]) -> None:
    """Tile `op` (sizes per loop of the linalg op, 0 = not tiled; loops
    outermost first as `interchange` orders them) into scf.for loops over the
    op on memref.subviews. The outermost loop gets TILE_LOOP_ATTR."""
    count = sum(1 for size in loop_tiles if size)
    if count == 0:
        return
    results = ", ".join(["!transform.any_op"] * (count + 1))
    _apply(op.operation,
           f"    %tiled, %loops:{count} = transform.structured.tile_using_for %root "
           f"tile_sizes {list(loop_tiles)} interchange = {list(interchange)} : "
           f"(!transform.any_op) -> ({results})\n"
           f"    transform.annotate %loops#0 \"{TILE_LOOP_ATTR}\" : !transform.any_op\n")


def tile_loops(op) -> list:
    """The loops of the tile nest around `op`, outermost first ([] when untiled)."""
    loops, parent = [], op.operation.parent
    while parent is not None and parent.name == "scf.for":
        loops.append(parent)
        if TILE_LOOP_ATTR in parent.attributes:
            return loops[::-1]
        parent = parent.parent
    return []


def constant_int(value: ir.Value) -> int:
    owner = value.owner
    return ir.IntegerAttr(owner.attributes["value"]).value


def normalise(loop) -> None:
    """Make `loop` count tiles: 0 to trips by 1, its old index recomputed inside."""
    lower, upper, step = (constant_int(v) for v in list(loop.operands)[:3])
    if (lower, step) == (0, 1):
        return
    trips = -(-(upper - lower) // step)
    body = loop.regions[0].blocks[0]
    iv = body.arguments[0]
    with loop.location, ir.InsertionPoint.at_block_begin(body):
        scaled = arith.MulIOp(iv, arith.ConstantOp(ir.IndexType.get(), step)).result
        old = arith.AddIOp(scaled, arith.ConstantOp(ir.IndexType.get(), lower)).result
    iv.replace_all_uses_except(old, scaled.owner.operation)
    with loop.location, ir.InsertionPoint(loop):
        index = ir.IndexType.get()
        loop.operands[0] = arith.ConstantOp(index, 0).result
        loop.operands[1] = arith.ConstantOp(index, trips).result
        loop.operands[2] = arith.ConstantOp(index, 1).result


def flatten(op):
    """One normalised loop over the tiles of `op`'s nest (upstream
    `loop.coalesce`, which normalises the loops it merges, for nests of two
    loops or more), or None when untiled."""
    loops = tile_loops(op)
    if not loops:
        return None
    if len(loops) == 1:
        normalise(loops[0])
        return loops[0]
    _apply(loops[0],
           "    %flat = transform.loop.coalesce %root : (!transform.any_op) -> !transform.any_op\n"
           f"    transform.annotate %flat \"{TILE_LOOP_ATTR}\" : !transform.any_op\n")
    return op.operation.parent


def with_iter_args(loop, inits: list[ir.Value]):
    """`loop` (an scf.for without iter_args) rebuilt with loop-carried values
    starting at `inits`: its body moves into the new loop, whose block ends
    without a terminator until the caller yields the next values."""
    from mlir.dialects import scf
    lower, upper, step = list(loop.operands)[:3]
    with loop.location, ir.InsertionPoint(loop):
        carried = scf.ForOp(lower, upper, step, inits)
    for name in list(loop.attributes):
        carried.operation.attributes[name] = loop.attributes[name]
    old_body = loop.regions[0].blocks[0]
    old_body.arguments[0].replace_all_uses_with(carried.induction_variable)
    operations = list(old_body.operations)
    for operation in operations[:-1]:   # all but the old scf.yield
        carried.body.append(operation)
    loop.erase()
    return carried.operation


class Iteration:
    """Values of the tile loop's body computed for another iteration: the ops
    computing them from the induction variable are cloned at the current
    insertion point with the induction variable replaced by `t`."""

    def __init__(self, loop, t):
        self.body = loop.regions[0].blocks[0] if loop is not None else None
        self.iv = self.body.arguments[0] if loop is not None else None
        self.t = t
        self.clones = {}

    def value(self, value):
        if isinstance(value, int) or self.body is None or self.t == self.iv:
            return value
        if value == self.iv:
            return self.t
        if not isinstance(value, ir.OpResult) or value.owner.operation.block != self.body:
            return value      # defined outside the loop: the same at every iteration
        owner = value.owner
        key = owner.operation
        if key not in self.clones:
            operands = [self.value(operand) for operand in owner.operands]
            clone = owner.clone()
            for number, operand in enumerate(operands):
                clone.operands[number] = operand
            self.clones[key] = clone
        return self.clones[key].results[value.result_number]
