"""npu-readonly-inputs: the program never writes its inputs.

Runs on tensors, right before one-shot bufferization. Bufferizing across
function boundaries, an op updating a tensor argument in place (a
`tensor.insert_slice` into it, an op whose init it is) would otherwise write
the caller's input buffer and return it aliased. Every tensor argument of a
function with a body is marked `bufferization.writable = false`, so
bufferization writes a copy instead (a DMA through SRAM after
npu-convert-copies).
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from . import ModulePass, PassContext

WRITABLE = "bufferization.writable"


@dataclass(frozen=True)
class NpuReadonlyInputs(ModulePass):
    argument = "npu-readonly-inputs"
    summary = "Mark function arguments read-only for bufferization"

    def run(self, module: ir.Operation, context: PassContext) -> None:
        with module.context:
            for function in module.regions[0].blocks[0].operations:
                function = function.operation
                if function.name != "func.func" or not function.regions[0].blocks:
                    continue
                arguments = function.regions[0].blocks[0].arguments
                old = list(ir.ArrayAttr(function.attributes["arg_attrs"])) \
                    if "arg_attrs" in function.attributes else [None] * len(arguments)
                new = []
                for argument, attributes in zip(arguments, old):
                    entries = {named.name: named.attr for named in ir.DictAttr(attributes)} \
                        if attributes is not None else {}
                    if isinstance(argument.type, ir.RankedTensorType):
                        entries[WRITABLE] = ir.BoolAttr.get(False)
                    new.append(ir.DictAttr.get(entries))
                function.attributes["arg_attrs"] = ir.ArrayAttr.get(new)
