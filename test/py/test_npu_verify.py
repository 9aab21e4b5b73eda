"""npu-verify against target options, and through the pass pipeline."""

import pytest
from mlir import ir

from atvoss_mlir.context import make_context
from atvoss_mlir.passes import PassContext, lookup_pass
from atvoss_mlir.passes.npu_verify import NpuVerify
from atvoss_mlir.pipeline import build_pass_manager
from atvoss_mlir.target import parse_target

LOAD_ON_CHANNEL_3 = """
func.func @f(%src: memref<64xf16>) {
  %a = "npu.alloc"() {offset = 64 : i64} : () -> memref<64xf16, 1>
  %t = "npu.dma_load"(%src, %a) {channel = 3 : i64} : (memref<64xf16>, memref<64xf16, 1>) -> !npu.token
  "npu.wait"(%t) : (!npu.token) -> ()
  "npu.dealloc"(%a) : (memref<64xf16, 1>) -> ()
  return
}
"""


def verify(text: str, target: str | None = None) -> list[str]:
    module = ir.Module.parse(text, make_context())
    context = PassContext(target=parse_target(target))
    NpuVerify().run(module.operation, context)
    return [d.message for d in context.diagnostics.diagnostics]


def test_registered_under_its_argument():
    assert lookup_pass("npu-verify") is NpuVerify


def test_channel_checked_against_target():
    assert verify(LOAD_ON_CHANNEL_3, "npu -dma-channels=4") == []
    assert verify(LOAD_ON_CHANNEL_3) == [
        "'npu.dma_load' op channel 3 is out of range: the target has 2 DMA channels (0..1)"]


def test_alignment_checked_against_target():
    assert verify(LOAD_ON_CHANNEL_3, "npu -dma-channels=4 -sram-alignment=128") == [
        "'npu.alloc' op offset 64 is not a multiple of the SRAM alignment 128"]


def test_capacity_checked_against_target():
    # 64 x f16 at offset 64 ends at byte 192.
    assert verify(LOAD_ON_CHANNEL_3, "npu -dma-channels=4 -max-sram-bytes=192") == []
    assert verify(LOAD_ON_CHANNEL_3, "npu -dma-channels=4 -max-sram-bytes=160") == [
        "'npu.alloc' op buffer at bytes [64, 192) ends at byte 192, beyond the SRAM "
        "capacity of 160 bytes"]


def test_errors_fail_the_pipeline():
    context = make_context()
    module = ir.Module.parse(LOAD_ON_CHANNEL_3, context)
    pass_context = PassContext()
    pm = build_pass_manager("builtin.module(npu-verify)", context, pass_context)
    with pytest.raises(ir.MLIRError):
        pm.run(module.operation)
    assert pass_context.diagnostics.error_count == 1
    assert pass_context.internal_errors == []
