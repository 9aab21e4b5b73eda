// A matmul reads a tile whose DMA load was never waited on: the npu.wait
// between them is missing.
// RUN: not atvoss-sim %s 2>&1 | FileCheck %s --implicit-check-not=Traceback

func.func @main(%A: memref<32x32xf16>, %C: memref<32x32xf32>) {
  %a = "npu.alloc"() : () -> memref<32x32xf16, 1>
  %c = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t = "npu.dma_load"(%A, %a) {channel = 0 : i64} : (memref<32x32xf16>, memref<32x32xf16, 1>) -> !npu.token
  // CHECK: missing-wait.mlir:[[@LINE+1]]:3: error: npu.matmul: reads SRAM bytes [0, 2048) that npu.dma_load at {{.*}}missing-wait.mlir:[[@LINE-1]]:8 writes, before an npu.wait on its token (read-after-write hazard)
  "npu.matmul"(%a, %a, %c) {accumulate = false, activation = "none"} : (memref<32x32xf16, 1>, memref<32x32xf16, 1>, memref<32x32xf32, 1>) -> ()
  "npu.wait"(%t) : (!npu.token) -> ()
  "npu.barrier"() : () -> ()
  %s = "npu.dma_store"(%c, %C) {channel = 1 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%s) : (!npu.token) -> ()
  return
}
