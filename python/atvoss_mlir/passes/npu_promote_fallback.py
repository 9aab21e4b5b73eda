"""Whether an op left on the fallback engine may still be running when a tile
program of npu-promote-to-sram starts: DMA engines do not wait for it, so the
program then starts with a barrier."""

from __future__ import annotations


class FallbackTracker:
    """Whether an op left on the fallback engine (a linalg op or a memref.copy on
    DRAM) precedes a tile nest in its block with no npu.barrier in between.

    Each block's ops are listed once, before any op is lowered, and ops are
    named by their (block, index) in that list. A lowered op's program leaves
    nothing running after it at the top of its block: it starts with a barrier
    when a fallback op may be running before it, and an untiled op's compute is
    followed by one. So the search back from a tile nest stops at the previous
    lowered one; the absorbed ops erased with it are skipped."""

    def __init__(self):
        self.blocks: dict = {}      # block -> [op name] in block order
        self.position: dict = {}    # op -> (block, index), of live ops only
        self.lowered: set = set()   # positions of lowered tile nests
        self.erased: set = set()    # positions of absorbed ops, erased

    def where(self, op) -> tuple:
        """The position of `op` (before any op of its block is lowered)."""
        op = op.operation
        if op not in self.position:
            block = op.block
            siblings = [sibling.operation for sibling in block.operations]
            self.blocks[block] = [sibling.name for sibling in siblings]
            for index, sibling in enumerate(siblings):
                self.position[sibling] = (block, index)
        return self.position[op]

    def may_be_running(self, nest: tuple, absorbed: list[tuple]) -> bool:
        block, index = nest
        names = self.blocks[block]
        for before in range(index - 1, -1, -1):
            at = (block, before)
            if at in self.erased:
                continue
            if at in self.lowered or names[before] == "npu.barrier":
                return False
            if (names[before].startswith("linalg.") or names[before] == "memref.copy") \
                    and at not in absorbed:
                return True
        return False

    def lowered_with(self, nest: tuple, absorbed: list[tuple]) -> None:
        """The nest at `nest` is lowered and the ops at `absorbed` are erased."""
        self.lowered.add(nest)
        self.erased.update(absorbed)
