// The result tile is stored while the matmul producing it still runs: DMA
// engines do not wait for compute and there is no npu.barrier between them.
// RUN: not atvoss-sim %s 2>&1 | FileCheck %s --implicit-check-not=Traceback

func.func @main(%A: memref<32x32xf16>, %B: memref<32x32xf16>, %C: memref<32x32xf32>) {
  %a = "npu.alloc"() : () -> memref<32x32xf16, 1>
  %b = "npu.alloc"() : () -> memref<32x32xf16, 1>
  %c = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %ta = "npu.dma_load"(%A, %a) {channel = 0 : i64} : (memref<32x32xf16>, memref<32x32xf16, 1>) -> !npu.token
  %tb = "npu.dma_load"(%B, %b) {channel = 1 : i64} : (memref<32x32xf16>, memref<32x32xf16, 1>) -> !npu.token
  "npu.wait"(%ta, %tb) : (!npu.token, !npu.token) -> ()
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<32x32xf16, 1>, memref<32x32xf16, 1>, memref<32x32xf32, 1>) -> ()
  // CHECK: store-before-matmul.mlir:[[@LINE+1]]:8: error: npu.dma_store: reads SRAM bytes [4096, 8192) that npu.matmul at {{.*}}store-before-matmul.mlir:[[@LINE-1]]:3 writes while it is still running (it finishes at cycle {{[0-9]+}}, the DMA would start at cycle {{[0-9]+}}): DMA engines do not wait for compute, order them with npu.barrier (read-after-write hazard)
  %s = "npu.dma_store"(%c, %C) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%s) : (!npu.token) -> ()
  return
}
