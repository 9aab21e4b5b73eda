// Two 8 KiB loads issued together on two DMA channels share the DRAM bandwidth
// (64 B/cycle is the total): the setups overlap, the transfers take
// 16384 / 64 = 256 cycles together, so both are done at 100 + 256 = 356, and
// the second waited 128 cycles for DRAM. Each load's own cost stays 100 + 128.
// RUN: atvoss-sim %s --report json --timing-only | FileCheck %s

// CHECK: "total_cycles": 356,
// CHECK: "dram_wait_cycles": 128,
// CHECK: "op": "npu.dma_load",
// CHECK: "cycles": 228,
// CHECK: "op": "npu.dma_load",
// CHECK: "cycles": 228,
func.func @main(%a: memref<64x64xf16>, %b: memref<64x64xf16>) {
  %sa = "npu.alloc"() : () -> memref<64x64xf16, 1>
  %sb = "npu.alloc"() : () -> memref<64x64xf16, 1>
  %ta = "npu.dma_load"(%a, %sa) {channel = 0 : i64} : (memref<64x64xf16>, memref<64x64xf16, 1>) -> !npu.token
  %tb = "npu.dma_load"(%b, %sb) {channel = 1 : i64} : (memref<64x64xf16>, memref<64x64xf16, 1>) -> !npu.token
  "npu.wait"(%ta, %tb) : (!npu.token, !npu.token) -> ()
  return
}
