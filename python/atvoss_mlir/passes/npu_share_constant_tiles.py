"""npu-share-constant-tiles: load a constant into SRAM once for the ops that
read it one after another, not once per op.

The strips of a cascade (npu-cascade-rows) are copies of the same ops: each
loads the same weights and bias into a buffer of its own, freed at its end,
and the next strip loads them again into a new one. Each of these loads
costs its transfer, and the barrier before it (its buffer takes space the
compute engines may still read) holds back the next strip's compute.

A top-level `npu.dma_load` of a `memref.get_global` constant (the same view
of it) into a whole buffer, when an earlier top-level load put the same view
in a buffer of the same type that nothing but that load writes, reads that
earlier buffer instead: the later buffer, its load and the waits on it go,
and the earlier buffer lives until the later one's last deallocation.

The shared buffer then lives longer. Every buffer is placed as
npu-allocate-sram places them (first fit); where they no longer all fit, the
constants are shared one by one, each kept only where all still fit, with a
remark.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from ..dialects import npu
from . import ModulePass, PassContext, defined_functions
from .npu_allocate_sram import first_unplaced
from .npu_verify_common import OUTPUT_OPERAND, VIEW_OPS
from .npu_verify_tokens import root_buffer


def only_read(buffer: ir.Value, load) -> bool:
    """Whether `load` is the only op that writes `buffer` (or a view of it):
    its other users read it (a compute op's input, a store's source) or free
    it."""
    pending = [buffer]
    while pending:
        for use in pending.pop().uses:
            user = use.owner.operation
            if user.name in VIEW_OPS and use.operand_number == 0:
                pending.extend(user.results)
            elif user == load or user.name == "npu.dealloc":
                continue
            elif user.name in OUTPUT_OPERAND:
                accumulate = user.attributes["accumulate"] \
                    if "accumulate" in user.attributes else None
                if use.operand_number == OUTPUT_OPERAND[user.name] or (
                        isinstance(accumulate, ir.BoolAttr) and accumulate.value):
                    return False
            elif not (user.name == "npu.dma_store" and use.operand_number == 0):
                return False
    return True


@dataclass
class Tile:
    load: ir.Operation
    buffer: ir.Value
    deallocs: list   # the buffer's npu.dealloc ops


def constant_tile(load, block: ir.Block) -> Tile | None:
    """The tile `load` fills with a constant, when it can be shared: the whole
    of an npu.alloc buffer of `block`, not kept in SRAM by the buffer plan,
    written by nothing else, its token only waited for."""
    source, buffer = load.operands[0], load.operands[1]
    constant = root_buffer(source)
    if not (isinstance(constant, ir.OpResult)
            and constant.owner.operation.name == "memref.get_global"):
        return None
    if not (isinstance(buffer, ir.OpResult) and buffer.owner.operation.name == "npu.alloc"
            and buffer.owner.operation.block == block
            and "npu.resident" not in buffer.owner.attributes):
        return None
    if any(use.owner.name != "npu.wait" for use in load.results[0].uses):
        return None
    if not only_read(buffer, load):
        return None
    deallocs = [use.owner.operation for use in buffer.uses if use.owner.name == "npu.dealloc"]
    if any(op.block != block for op in deallocs):
        return None
    return Tile(load, buffer, deallocs)


def shareable_groups(block: ir.Block) -> list:
    """Per constant view and tile type, its tiles loaded in `block`, first first
    (groups of two or more)."""
    groups = {}
    for op in block.operations:
        op = op.operation
        if op.name != "npu.dma_load":
            continue
        tile = constant_tile(op, block)
        if tile is not None:
            groups.setdefault((op.operands[0], str(tile.buffer.type)), []).append(tile)
    return [tiles for tiles in groups.values() if len(tiles) > 1]


def drop_token(token: ir.Value) -> None:
    """Remove `token` from the npu.wait ops that wait for it (a wait left with
    none goes)."""
    for wait in [use.owner.operation for use in token.uses]:
        rest = [operand for operand in wait.operands if operand != token]
        if rest:
            with wait.context, wait.location, ir.InsertionPoint(wait):
                npu.WaitOp(rest)
        wait.erase()


def share(tiles: list) -> None:
    """The later tiles of `tiles` read the first one's buffer; it is freed
    where the last of them was."""
    first = tiles[0]
    for tile in tiles[1:]:
        alloc = tile.buffer.owner.operation
        drop_token(tile.load.results[0])
        tile.load.erase()
        tile.buffer.replace_all_uses_with(first.buffer)
        alloc.erase()
    # One dealloc, the last in the block (they are all in it).
    deallocs = [op for tile in tiles for op in tile.deallocs]
    last = deallocs[0]
    for op in deallocs[1:]:
        if last.is_before_in_block(op):
            last = op
    for op in deallocs:
        if op != last:
            op.erase()


@dataclass(frozen=True)
class NpuShareConstantTiles(ModulePass):
    argument = "npu-share-constant-tiles"
    summary = "Load a constant into SRAM once for the ops that read it one after another"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            for function in defined_functions(module):
                self.share_in(function, context)

    @staticmethod
    def share_in(function, context: PassContext) -> None:
        """Share every group in `function` where all buffers still fit; else one
        group at a time, each kept where they do."""
        if not shareable_groups(function.regions[0].blocks[0]):
            return
        function, fits = try_share(function, lambda groups: groups, context.target)
        index = 0
        while not fits and index < len(groups := shareable_groups(function.regions[0].blocks[0])):
            location = groups[index][1].load.location
            function, shared = try_share(function, lambda groups: groups[index:index + 1],
                                         context.target)
            if not shared:
                context.diagnostics.remark(
                    location, "this constant is loaded again: the tile loaded before would "
                    "not fit in SRAM until this op's end")
                index += 1


def try_share(function, pick, target) -> tuple:
    """Share the groups `pick` chooses of the function's; the function and
    True when every buffer then fits the SRAM, else the function as it was
    and False."""
    saved = function.clone(ip=ir.InsertionPoint(function))
    block = function.regions[0].blocks[0]
    for tiles in pick(shareable_groups(block)):
        share(tiles)
    if first_unplaced(block, target) is None:
        saved.erase()
        return function, True
    function.erase()
    return saved, False
