"""A model compiles to the same program whatever the process compiled before.
The tile search memoises its evaluated schedules per op signature; a
signature that left out a field of an operand's tile (whether a resident
output is a padded interior) let the first of two different problems decide
for both, so a model compiled after another at -fusion=0 took other tiles."""

from __future__ import annotations

from atvoss_mlir.passes import tile_search

import atvoss_mlir
from e2e_testing import bench_module


def cycles(model, target: str) -> int:
    compiled = atvoss_mlir.compile(model, target)
    compiled.run(timing_only=True)
    return compiled.report["total_cycles"]


def test_schedules_do_not_depend_on_the_compiles_before():
    """The EfficientNet-like network at 96x96: its swish ops after the
    depthwise convs write a tensor the buffer plan keeps padded in one place
    and unpadded in another, with the same signature before."""
    model = bench_module("more_models").efficientnet_like(image=96, classes=10)
    for memo in (tile_search._SPACES, tile_search._MEMO):
        memo.clear()
    alone = cycles(model, "npu")
    for memo in (tile_search._SPACES, tile_search._MEMO):
        memo.clear()
    cycles(model, "npu -fusion=0")
    assert cycles(model, "npu") == alone
