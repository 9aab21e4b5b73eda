"""Every injected fault in correctly compiled programs is reported by the
simulator at the right op (bench/faults_table.py runs the larger sample)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))

import faults_table  # noqa: E402
from atvoss_mlir.sim.faults import KINDS, Program, check, inject  # noqa: E402


def test_every_fault_kind_is_caught_at_the_right_op():
    result = faults_table.table(list(faults_table.SOURCES) + ["resnet"], per_kind=2)
    counts = result["counts"]
    for kind in KINDS:
        assert sum(t for (_, k), (_, t) in counts.items() if k == kind) > 0, kind
    assert result["misses"] == []


MATMUL_TAIL = """func.func @main(%A: memref<32x32xf16>, %B: memref<32x32xf16>, %C: memref<32x32xf32>) {
  %a = "npu.alloc"() {offset = 0 : i64} : () -> memref<32x32xf16, 1>
  %b = "npu.alloc"() {offset = 2048 : i64} : () -> memref<32x32xf16, 1>
  %c = "npu.alloc"() {offset = 4096 : i64} : () -> memref<32x32xf32, 1>
  %ta = "npu.dma_load"(%A, %a) {channel = 0 : i64} : (memref<32x32xf16>, memref<32x32xf16, 1>) -> !npu.token
  %tb = "npu.dma_load"(%B, %b) {channel = 1 : i64} : (memref<32x32xf16>, memref<32x32xf16, 1>) -> !npu.token
  "npu.wait"(%ta, %tb) : (!npu.token, !npu.token) -> ()
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<32x32xf16, 1>, memref<32x32xf16, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() : () -> ()
  %s = "npu.dma_store"(%c, %C) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%s) : (!npu.token) -> ()
  "npu.barrier"() : () -> ()
  return
}"""


def test_right_op_per_kind():
    faults = {f.kind: f for f in reversed(inject(MATMUL_TAIL))}  # the first of each kind
    assert faults["drop_wait"].lines == {8} and faults["drop_wait"].names == {5, 6}
    assert faults["wait_after_use"].lines == {8}
    assert faults["sram_offset"].lines == {3} and faults["sram_offset"].names == {2}
    assert faults["store_reorder"].lines == {10}
    # The store's wait is followed by a barrier: dropping it changes nothing.
    assert all(f.lines != {11} for f in inject(MATMUL_TAIL, ["drop_wait"]))
    assert Program(MATMUL_TAIL).first_use(6, {"%a"}) == 7


@pytest.mark.parametrize("kind", ["drop_wait", "store_reorder"])
def test_check_rejects_a_report_at_another_op(kind):
    fault = next(f for f in inject(MATMUL_TAIL, [kind]))
    ok, what = check(fault, lambda text, target: [(1, "error somewhere else")])
    assert not ok and "expected" in what
    ok, what = check(fault, lambda text, target: [])
    assert not ok and what == "no error"
