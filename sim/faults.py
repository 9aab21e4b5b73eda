"""Fault injection: mechanical faults in a correctly compiled npu program, to
check that the simulator reports each one at the right op.

Programs are the text printed without debug locations, so an error's
location is a line of that text. Every injection keeps the numbering of the
lines it does not move. Kinds, and the op where the simulator must report
each ("right op"):

  drop_wait        an npu.wait is blanked; its DMA's data is used later in the
                   block before any barrier -> at that first use
  wait_after_use   the wait moves just after that first use -> at the use
  token_swap       the wait waits on another DMA's token instead -> at the use
  sram_offset      an SRAM buffer takes the offset of a buffer still live -> at
                   its npu.alloc
  sram_budget      the target's SRAM capacity below the program's highest
                   buffer end -> at an npu.alloc reaching past the capacity
  dma_extent       a DMA's DRAM subview starts one dimension further, past its
                   buffer -> at that subview or the DMA
  store_reorder    the compute op producing a stored tile moves after the
                   store (and its wait) -> at the store (uninitialised read)

Sites where the fault cannot change what the program computes (a wait whose
DMA's data is not used before the next barrier, a buffer first written
before its producer) are not injected: they are not faults.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from atvoss_mlir.machine_model import element_bytes

KINDS = ("drop_wait", "wait_after_use", "token_swap", "sram_offset", "sram_budget",
         "dma_extent", "store_reorder")

_NPU_OP = re.compile(r'^\s*(?:(%[\w.$-]+) = )?"npu\.(\w+)"\(([^)]*)\)')
_VIEW = re.compile(r"^\s*(%[\w.$-]+) = (memref\.\w+|arith\.select) (.*)$")
_ALLOC = re.compile(r'^\s*(%[\w.$-]+) = "npu\.alloc"\(\) \{(?:npu\.resident, )?offset = (\d+) '
                    r': i64\} : \(\) -> memref<([^>]*)>')
# Which operand a compute op writes.
_OUTPUT = {"matmul": 2, "conv2d": 2, "depthwise_conv2d": 2, "elementwise": 2, "activation": 1,
           "pool2d": 1, "transpose": 1, "im2col": 1, "requantize": 1, "dequantize": 1,
           "quantized_add": 2, "fill": 0}


@dataclass
class Fault:
    kind: str
    changes: dict             # line index -> new text of the line (made on demand)
    lines: set[int]           # 1-based lines where the error must be reported
    names: set[int] = field(default_factory=set)  # lines the message must mention (any)
    target: str | None = None  # the target string to run with, if changed
    note: str = ""
    program: "Program | None" = None

    @property
    def text(self) -> str:
        lines = list(self.program.lines)
        for i, line in self.changes.items():
            lines[i] = line
        return "\n".join(lines)


class Program:
    """Line facts of a program: blocks, npu ops, SSA views and their buffers."""

    def __init__(self, text: str):
        self.lines = text.split("\n")
        self.block: list[int] = []     # per line: index of the line opening its block
        stack = [-1]
        for i, line in enumerate(self.lines):
            stripped = line.strip()
            if stripped.startswith("}"):
                stack.pop()
            self.block.append(stack[-1])
            if stripped.endswith("{"):
                stack.append(i)
        self.ops = {}                  # line -> (result, name, operands)
        self._op_roots: dict[int, set[str]] = {}
        self.sources: dict[str, list[str]] = {}
        self.defined: dict[str, int] = {}
        for i, line in enumerate(self.lines):
            m = _NPU_OP.match(line)
            if m:
                operands = [o.strip() for o in m.group(3).split(",") if o.strip()]
                self.ops[i] = (m.group(1), m.group(2), operands)
                if m.group(1):
                    self.defined[m.group(1)] = i
                continue
            v = _VIEW.match(line)
            if v:
                self.defined[v.group(1)] = i
                names = re.findall(r"%[\w.$-]+", v.group(3).split(":")[0])
                self.sources[v.group(1)] = names[1:] if v.group(2) == "arith.select" else names[:1]

    def roots(self, value: str) -> set[str]:
        found, work = set(), [value]
        while work:
            v = work.pop()
            parents = self.sources.get(v)
            if parents:
                work.extend(parents)
            else:
                found.add(v)
        return found

    def op_roots(self, line: int) -> set[str]:
        found = self._op_roots.get(line)
        if found is None:
            found = self._op_roots[line] = set().union(*(self.roots(o) for o in self.ops[line][2]))
        return found

    def dma_roots(self, token: str) -> set[str]:
        line = self.defined.get(token)
        return self.op_roots(line) if line in self.ops else set()

    def first_use(self, after: int, roots: set[str]) -> int | None:
        """The first npu op after line `after` in its block that touches `roots`,
        before a barrier or the end of the block."""
        block = self.block[after]
        for i in range(after + 1, len(self.lines)):
            if self.lines[i].strip().startswith("}") and self.block[i] == block:
                return None
            if self.block[i] != block or i not in self.ops:
                continue
            name = self.ops[i][1]
            if name == "barrier":
                return None
            if name != "alloc" and self.op_roots(i) & roots:
                return i
        return None

    def text(self) -> str:
        return "\n".join(self.lines)


def _memref_bytes(spec: str) -> int:
    parts = spec.split(",")[0].split("x")
    count = 1
    for p in parts[:-1]:
        count *= int(p)
    return count * (element_bytes(parts[-1].strip()) or 4)


def _waits(p: Program):
    for w, (_, name, tokens) in sorted(p.ops.items()):
        if name == "wait" and tokens:
            roots = set().union(*(p.dma_roots(t) for t in tokens))
            use = p.first_use(w, roots)
            if use is not None:
                yield w, tokens, use


def inject(text: str, kinds=KINDS) -> list[Fault]:
    """Every fault of `kinds` that can be injected into `text`."""
    p = Program(text)
    faults: list[Fault] = []
    dma_line = p.defined.get
    if "drop_wait" in kinds:
        for w, tokens, use in _waits(p):
            faults.append(Fault("drop_wait", {w: ""}, {use + 1},
                                {dma_line(t) + 1 for t in tokens}))
    if "wait_after_use" in kinds:
        for w, tokens, use in _waits(p):
            # The wait's line is blanked and the wait follows the use on its line.
            changes = {w: "", use: p.lines[use] + "\n" + p.lines[w]}
            faults.append(Fault("wait_after_use", changes, {use + 1},
                                {dma_line(t) + 1 for t in tokens}))
    if "token_swap" in kinds:
        tokens_before: list[tuple[int, str]] = [
            (i, r) for i, (r, name, _) in sorted(p.ops.items()) if name.startswith("dma_") and r]
        for w, tokens, _ in _waits(p):
            others = [t for i, t in tokens_before if i < w and p.block[i] == p.block[w]
                      and t not in tokens]
            if not others:
                continue
            victim = tokens[0]
            use = p.first_use(w, p.dma_roots(victim))
            if use is None:
                continue
            line = p.lines[w].replace(f"({victim}", f"({others[-1]}", 1)
            faults.append(Fault("token_swap", {w: line}, {use + 1},
                                {dma_line(victim) + 1}))
    if "sram_offset" in kinds or "sram_budget" in kinds:
        allocs = []  # (line, value, offset, bytes)
        for i, line in enumerate(p.lines):
            m = _ALLOC.match(line)
            if m:
                allocs.append((i, m.group(1), int(m.group(2)), _memref_bytes(m.group(3))))
        freed = {}
        for i, (_, name, operands) in p.ops.items():
            if name == "dealloc" and operands:
                freed[operands[0]] = i
        if "sram_offset" in kinds:
            capacity = re.search(r"-max-sram-bytes=(\d+)", text)
            capacity = int(capacity.group(1)) if capacity else 1 << 20
            for b, (line_b, value_b, offset_b, size_b) in enumerate(allocs):
                # (A buffer moved past the capacity is a budget fault, not an overlap.)
                live = [a for a in allocs[:b] if p.block[a[0]] == p.block[line_b]
                        and freed.get(a[1], len(p.lines)) > line_b and a[2] != offset_b
                        and a[2] + size_b <= capacity]
                if not live:
                    continue
                line_a, _, offset_a, _ = live[-1]
                new = p.lines[line_b].replace(f"offset = {offset_b} :", f"offset = {offset_a} :")
                faults.append(Fault("sram_offset", {line_b: new}, {line_b + 1},
                                    {line_a + 1}))
        if "sram_budget" in kinds and allocs:
            highest = max(offset + size for _, _, offset, size in allocs)
            for capacity in (highest - 1, highest // 2):
                over = {line + 1 for line, _, offset, size in allocs if offset + size > capacity}
                faults.append(Fault("sram_budget", {}, over,
                                    target=f"npu -max-sram-bytes={capacity}",
                                    note=f"capacity {capacity} B"))
    if "dma_extent" in kinds:
        for d, (_, name, operands) in sorted(p.ops.items()):
            if name not in ("dma_load", "dma_store") or len(operands) < 2:
                continue
            view = operands[0] if name == "dma_load" else operands[1]
            while p.sources.get(view) and "memref.subview" not in p.lines[p.defined[view]]:
                view = p.sources[view][0]
            if view not in p.defined:
                continue
            s = p.defined[view]
            m = re.match(r"^(\s*%[\w.$-]+ = memref\.subview %[\w.$-]+\[)(%[\w.$-]+)(.*)$",
                         p.lines[s])
            source_type = re.search(r": memref<(\d+)x", p.lines[s])
            if not m or not source_type:
                continue  # a static first offset: the verifier rejects static overreach
            offset, dim = m.group(2), int(source_type.group(1))
            shift = (f"%fault_dim = arith.constant {dim} : index "
                     f"%fault_offset = arith.addi {offset}, %fault_dim : index ")
            new = m.group(1).replace(m.group(1).strip(), shift + m.group(1).strip()) \
                + "%fault_offset" + m.group(3)
            faults.append(Fault("dma_extent", {s: new}, {s + 1, d + 1}))
    if "store_reorder" in kinds:
        for s, (token, name, operands) in sorted(p.ops.items()):
            if name != "dma_store" or not operands:
                continue
            roots = p.roots(operands[0])
            producer = None
            for i in sorted(p.ops):
                if i >= s:
                    break
                op_name, op_operands = p.ops[i][1], p.ops[i][2]
                if op_name in ("alloc", "dealloc", "wait", "barrier"):
                    continue
                written = (op_operands[_OUTPUT[op_name]] if op_name in _OUTPUT
                           and len(op_operands) > _OUTPUT[op_name] else None)
                touches = p.op_roots(i) & roots
                if touches and written and p.roots(written) & roots and producer is None:
                    producer = i
                elif touches:
                    producer = -1  # the buffer is touched before: not its first write
                    break
            if producer is None or producer < 0 or p.block[producer] != p.block[s]:
                continue
            after = s + 1 if s + 1 in p.ops and p.ops[s + 1][1] == "wait" \
                and token in p.ops[s + 1][2] else s
            changes = {producer: "", after: p.lines[after] + "\n" + p.lines[producer]}
            faults.append(Fault("store_reorder", changes, {s + 1}))
    for fault in faults:
        fault.program = p
    return faults


def check(fault: Fault, run) -> tuple[bool, str]:
    """Run the faulted program with `run(text, target) -> list of (line, message)`
    errors; (caught at the right op, what happened)."""
    errors = run(fault.text, fault.target)
    if not errors:
        return False, "no error"
    line, message = errors[0]
    if line not in fault.lines:
        return False, f"error at line {line}, expected {sorted(fault.lines)[:5]}: {message}"
    if fault.names and not any(f":{n}:" in message for n in fault.names):
        return False, f"error does not name the faulted op (lines {sorted(fault.names)}): " \
                      f"{message}"
    return True, message
