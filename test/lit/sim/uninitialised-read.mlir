// The result tile is stored before the matmul producing it runs: the store
// reads SRAM that nothing has written since the buffer was allocated.
// RUN: not atvoss-sim %s 2>&1 | FileCheck %s --implicit-check-not=Traceback
// RUN: atvoss-sim %s --timing-only | FileCheck %s --check-prefix=TIMING

func.func @main(%A: memref<32x32xf16>, %B: memref<32x32xf16>, %C: memref<32x32xf32>) {
  %a = "npu.alloc"() : () -> memref<32x32xf16, 1>
  %b = "npu.alloc"() : () -> memref<32x32xf16, 1>
  %c = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %ta = "npu.dma_load"(%A, %a) {channel = 0 : i64} : (memref<32x32xf16>, memref<32x32xf16, 1>) -> !npu.token
  %tb = "npu.dma_load"(%B, %b) {channel = 1 : i64} : (memref<32x32xf16>, memref<32x32xf16, 1>) -> !npu.token
  "npu.wait"(%ta, %tb) : (!npu.token, !npu.token) -> ()
  // CHECK: uninitialised-read.mlir:[[@LINE+1]]:8: error: npu.dma_store: reads SRAM bytes [4096, 8192) of which 4096 were never written since the buffer allocated at {{.*}}uninitialised-read.mlir:[[@LINE-4]]:8 was allocated (uninitialised read)
  %s = "npu.dma_store"(%c, %C) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%s) : (!npu.token) -> ()
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<32x32xf16, 1>, memref<32x32xf16, 1>, memref<32x32xf32, 1>) -> ()
  return
}
// TIMING: total cycles
