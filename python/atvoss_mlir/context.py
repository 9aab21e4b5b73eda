"""The one place that builds an MLIR context for atvoss-mlir."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import irdl

from .dialects import npu


def make_context(multithreading: bool = True) -> ir.Context:
    """A context with every upstream dialect and the `npu` dialect registered.

    Unregistered dialects stay disallowed, so a malformed npu op is rejected
    by the parser with a located error. Without `multithreading` it starts no
    thread (a forked process has only the thread that forked).
    """
    context = ir.Context()  # upstream dialects are registered on creation
    context.enable_multithreading(multithreading)
    context.allow_unregistered_dialects = False
    with context:
        irdl.load_dialects(ir.Module.parse(npu.irdl_source()))
    return context
