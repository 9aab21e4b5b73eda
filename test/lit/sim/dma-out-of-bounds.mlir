// A DMA reads past the end of its DRAM view's buffer: the view of 32 rows
// starts at row 16 of a 32-row matrix.
// RUN: not atvoss-sim %s 2>&1 | FileCheck %s --implicit-check-not=Traceback

func.func @main(%A: memref<32x32xf16>) {
  %a = "npu.alloc"() : () -> memref<32x32xf16, 1>
  %v = memref.reinterpret_cast %A to offset: [512], sizes: [32, 32], strides: [32, 1] : memref<32x32xf16> to memref<32x32xf16, strided<[32, 1], offset: 512>>
  // CHECK: dma-out-of-bounds.mlir:[[@LINE+1]]:8: error: npu.dma_load: source view 32x32xfloat16 reaches bytes [1024, 3072) outside its DRAM buffer of 2048 B
  %t = "npu.dma_load"(%v, %a) {channel = 0 : i64} : (memref<32x32xf16, strided<[32, 1], offset: 512>>, memref<32x32xf16, 1>) -> !npu.token
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}
