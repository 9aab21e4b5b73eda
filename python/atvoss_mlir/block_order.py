"""The ops of a block in order, listed once per block while a pass reads the
IR without adding, moving or erasing ops (the bindings have no previous-op
link: without the list, each look back walks the block from its start)."""

from __future__ import annotations

import contextlib

from mlir import ir

# block -> (its ops as ir.Operation, op -> index), while `unchanged_blocks` is active.
_LISTED: dict | None = None


@contextlib.contextmanager
def unchanged_blocks():
    """List each block's ops once while no op is added, moved or erased."""
    global _LISTED
    outer, _LISTED = _LISTED, {}
    try:
        yield
    finally:
        _LISTED = outer


def _listed(block: ir.Block) -> tuple[list, dict | None]:
    if _LISTED is None:
        return [op.operation for op in block.operations], None
    found = _LISTED.get(block)
    if found is None:
        ops = [op.operation for op in block.operations]
        found = _LISTED[block] = (ops, {op: index for index, op in enumerate(ops)})
    return found


def block_ops(block: ir.Block) -> list:
    """The ops of `block` as ir.Operation (an OpView's `.name` may be one of its
    attributes, memref.get_global's symbol, not the op name)."""
    return _listed(block)[0]


def ops_before(op) -> list:
    """The ops before `op` in its block, nearest first."""
    op = op.operation
    ops, index_of = _listed(op.block)
    index = index_of[op] if index_of is not None else ops.index(op)
    return ops[index - 1::-1] if index else []
