"""The interpreter: one handler per op, registered in one table.

A handler is called once per op, when the op's region is translated, and
returns a closure `run(regs)` that executes the op on a register list (one
slot per SSA value of the function). Attributes, operand slots and static
types are decoded at translation time, so loop bodies that run many times
never go back to the MLIR bindings. A handler may return None for an op that
does nothing at run time.

An op without a handler is an error at its location, raised when the
function holding it is translated, so nothing is ever skipped silently.
"""

from __future__ import annotations

import re

from typing import Callable

from mlir import ir

from atvoss_mlir.diagnostics import DiagnosticError, error_at

from .machine import Machine, OpInfo

Handler = Callable[["Translator", ir.OpView, OpInfo], "Callable | None"]
HANDLERS: dict[str, Handler] = {}

# Terminators are read by the op holding the region, not executed.
TERMINATORS = {"func.return", "scf.yield", "linalg.yield", "scf.condition"}


def impl(*names: str):
    """Register the handler of the ops called `names`."""
    def register(handler: Handler) -> Handler:
        for name in names:
            HANDLERS[name] = handler
        return handler
    return register


class Block:
    """A translated block: closures to run, then the terminator's operand slots."""

    __slots__ = ("ops", "infos", "arg_slots", "yield_slots", "terminator")

    def __init__(self, ops, infos, arg_slots, yield_slots, terminator):
        self.ops = ops
        self.infos = infos
        self.arg_slots = arg_slots
        self.yield_slots = yield_slots
        self.terminator = terminator

    def run(self, regs: list) -> None:
        try:
            for fn in self.ops:
                fn(regs)
        except DiagnosticError:
            raise
        except Exception as failure:  # an op failed: report it at that op
            info = self.infos[self.ops.index(fn)]
            raise info.error(str(failure) or type(failure).__name__) from None


class Function:
    __slots__ = ("name", "body", "n_slots", "op")

    def __init__(self, name, body, n_slots, op):
        self.name = name
        self.body = body
        self.n_slots = n_slots
        self.op = op

    def call(self, args: list) -> list:
        regs = [None] * self.n_slots
        for slot, value in zip(self.body.arg_slots, args):
            regs[slot] = value
        self.body.run(regs)
        return [regs[slot] for slot in self.body.yield_slots]


class Translator:
    """Translates functions into closures, each function once."""

    def __init__(self, module: ir.Module, machine: Machine):
        self.module = module
        self.machine = machine
        self.target = machine.target
        self.numerics = machine.numerics
        self.func_ops = {}
        self.functions: dict[str, Function] = {}
        self.globals = {}
        for op in module.body.operations:
            if op.operation.name == "func.func":
                self.func_ops[ir.StringAttr(op.attributes["sym_name"]).value] = op
            elif op.operation.name == "memref.global":
                self.globals[ir.StringAttr(op.attributes["sym_name"]).value] = op
        self._slots: dict | None = None
        self.frame_state: dict = {}  # per-op run-time state (e.g. the last alloc)
        self._resource_blobs: dict[str, bytes] | None = None

    def resource_blob(self, key: str) -> bytes | None:
        """The bytes of a `dense_resource<key>` blob, read once from the
        module's printed resource section (the bindings have no getter)."""
        if self._resource_blobs is None:
            text = self.module.operation.get_asm(large_resource_limit=None)
            section = text[text.rfind("{-#"):] if "{-#" in text else ""
            self._resource_blobs = {
                match.group(1).strip('"'): bytes.fromhex(match.group(2))
                for match in re.finditer(r'\s("[^"]+"|[\w.$-]+): "0x([0-9A-Fa-f]*)"', section)}
        return self._resource_blobs.get(key)

    # -- slots ----------------------------------------------------------------
    def slot(self, value: ir.Value) -> int:
        slots = self._slots
        found = slots.get(value)
        if found is None:
            found = slots[value] = len(slots)
        return found

    def slots(self, values) -> tuple[int, ...]:
        return tuple(self.slot(v) for v in values)

    # -- translation ----------------------------------------------------------
    def function(self, name: str, location=None) -> Function:
        found = self.functions.get(name)
        if found is not None:
            return found
        op = self.func_ops.get(name)
        if op is None:
            raise error_at(location, f"no function named '{name}' in the module")
        region = op.regions[0]
        if not region.blocks:
            raise error_at(op.location, f"function '{name}' has no body to simulate")
        outer, self._slots = self._slots, {}
        try:
            body = self.block(region.blocks[0])
            function = Function(name, body, len(self._slots), op)
        finally:
            self._slots = outer
        self.functions[name] = function
        return function

    def block(self, block: ir.Block) -> Block:
        arg_slots = self.slots(block.arguments)
        ops, infos = [], []
        yield_slots, terminator = (), None
        for op in block.operations:
            name = op.operation.name
            if name in TERMINATORS:
                yield_slots, terminator = self.slots(op.operands), op
                continue
            info = OpInfo(name, op.location, self.machine.filename)
            handler = HANDLERS.get(name)
            if handler is None:
                raise error_at(op.location, f"{name}: the simulator has no handler for this op")
            fn = handler(self, op, info)
            if fn is not None:
                ops.append(fn)
                infos.append(info)
        return Block(tuple(ops), tuple(infos), arg_slots, yield_slots, terminator)


# Register the handlers.
from . import (ops_builtin, ops_linalg, ops_memref, ops_npu_matrix,  # noqa: E402,F401
               ops_npu_memory, ops_npu_vector)
