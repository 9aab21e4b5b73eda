// Two live SRAM buffers whose static offsets overlap.
// RUN: not atvoss-sim %s 2>&1 | FileCheck %s --implicit-check-not=Traceback

func.func @main(%A: memref<64x64xf16>) {
  %a = "npu.alloc"() {offset = 0 : i64} : () -> memref<64x64xf16, 1>
  // 64x64xf16 is 8192 B: the second buffer starts inside the first one.
  // CHECK: sram-overlap.mlir:[[@LINE+1]]:8: error: npu.alloc: buffer [4096, 12288) overlaps the live buffer [0, 8192) allocated at {{.*}}sram-overlap.mlir:[[@LINE-2]]:8
  %b = "npu.alloc"() {offset = 4096 : i64} : () -> memref<64x64xf16, 1>
  %t = "npu.dma_load"(%A, %a) {channel = 0 : i64} : (memref<64x64xf16>, memref<64x64xf16, 1>) -> !npu.token
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}
