// Tiles of A are streamed through one SRAM buffer; the reload of the next
// tile overwrites the buffer while the previous iteration's matmul still
// reads it (the npu.barrier before the reload is missing). The first
// iteration is fine: the error is at the second execution of the load.
// RUN: not atvoss-sim %s 2>&1 | FileCheck %s --implicit-check-not=Traceback

func.func @main(%A: memref<128x64xf16>, %B: memref<64x32xf16>, %C: memref<128x32xf32>) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c128 = arith.constant 128 : index
  %a = "npu.alloc"() : () -> memref<32x64xf16, 1>
  %b = "npu.alloc"() : () -> memref<64x32xf16, 1>
  %c = "npu.alloc"() : () -> memref<128x32xf32, 1>
  %tb = "npu.dma_load"(%B, %b) {channel = 1 : i64} : (memref<64x32xf16>, memref<64x32xf16, 1>) -> !npu.token
  "npu.wait"(%tb) : (!npu.token) -> ()
  scf.for %i = %c0 to %c128 step %c32 {
    %ga = memref.subview %A[%i, 0] [32, 64] [1, 1] : memref<128x64xf16> to memref<32x64xf16, strided<[64, 1], offset: ?>>
    %tc = memref.subview %c[%i, 0] [32, 32] [1, 1] : memref<128x32xf32, 1> to memref<32x32xf32, strided<[32, 1], offset: ?>, 1>
    // CHECK: reload-while-matmul-reads.mlir:[[@LINE+1]]:10: error: npu.dma_load: overwrites SRAM bytes [0, 4096) that npu.matmul at {{.*}}reload-while-matmul-reads.mlir:[[@LINE+3]]:5 reads while it is still running {{.*}}(write-after-read hazard)
    %t = "npu.dma_load"(%ga, %a) {channel = 0 : i64} : (memref<32x64xf16, strided<[64, 1], offset: ?>>, memref<32x64xf16, 1>) -> !npu.token
    "npu.wait"(%t) : (!npu.token) -> ()
    "npu.matmul"(%a, %b, %tc) {accumulate = false, activation = "none"} : (memref<32x64xf16, 1>, memref<64x32xf16, 1>, memref<32x32xf32, strided<[32, 1], offset: ?>, 1>) -> ()
  }
  "npu.barrier"() : () -> ()
  %s = "npu.dma_store"(%c, %C) {channel = 0 : i64} : (memref<128x32xf32, 1>, memref<128x32xf32>) -> !npu.token
  "npu.wait"(%s) : (!npu.token) -> ()
  return
}
