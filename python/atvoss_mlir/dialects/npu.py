"""The `npu` dialect: generated op classes plus small builder helpers.

The op classes come from `dialects/npu.td` (`_npu_ops_gen.py`); the dialect
itself is registered in a context by `atvoss_mlir.context.make_context`.
"""

from __future__ import annotations

from importlib import resources

from mlir import ir
from mlir.ir import register_attribute_builder

from ._npu_ops_gen import *  # noqa: F401,F403
from ._npu_ops_gen import _Dialect, _ods_cext  # noqa: F401

# Ops parsed from text come back as their generated classes (op.opview).
_ods_cext.globals.append_dialect_search_prefix("atvoss_mlir.dialects")

SRAM_MEMORY_SPACE = 1


def _string_attr(value, context):
    return ir.StringAttr.get(value, context=context)


# The string enums of npu.td are StringAttrs; let op builders take plain str.
for _enum in ("Npu_ActivationAttr", "Npu_BinaryKindAttr", "Npu_ReduceKindAttr",
              "Npu_CompareKindAttr", "Npu_PoolKindAttr",
              "Npu_BarrierEnginesAttr", "Npu_DataflowAttr"):
    register_attribute_builder(_enum, replace=True)(_string_attr)


def irdl_source() -> str:
    """The generated IRDL module that registers the dialect at run time."""
    return resources.files(__package__).joinpath("npu.irdl.mlir").read_text()


def token_type(context: ir.Context | None = None) -> ir.Type:
    return ir.Type.parse("!npu.token", context)


def sram_memref(shape: list[int], element_type: ir.Type) -> ir.MemRefType:
    """A statically shaped memref in SRAM (memory space 1)."""
    space = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), SRAM_MEMORY_SPACE)
    return ir.MemRefType.get(shape, element_type, memory_space=space)


def is_sram(memref_type: ir.Type) -> bool:
    memref_type = ir.MemRefType(memref_type)
    space = memref_type.memory_space
    return isinstance(space, ir.IntegerAttr) and space.value == SRAM_MEMORY_SPACE
