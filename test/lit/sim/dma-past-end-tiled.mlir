// A tiled copy of a 48-row matrix in 32-row tiles without clamping the last
// tile (no affine.min): in the second iteration the DMA's source view would
// run past the matrix's end. The error is where that view is made.
// RUN: not atvoss-sim %s 2>&1 | FileCheck %s --implicit-check-not=Traceback

func.func @main(%A: memref<48x64xf16>) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c48 = arith.constant 48 : index
  %a = "npu.alloc"() : () -> memref<32x64xf16, 1>
  scf.for %i = %c0 to %c48 step %c32 {
    // CHECK: dma-past-end-tiled.mlir:[[@LINE+1]]:11: error: memref.subview: slice [32, +32, step 1] of dimension 0 is out of bounds of size 48
    %ga = memref.subview %A[%i, 0] [32, 64] [1, 1] : memref<48x64xf16> to memref<32x64xf16, strided<[64, 1], offset: ?>>
    "npu.barrier"() : () -> ()
    %t = "npu.dma_load"(%ga, %a) {channel = 0 : i64} : (memref<32x64xf16, strided<[64, 1], offset: ?>>, memref<32x64xf16, 1>) -> !npu.token
    "npu.wait"(%t) : (!npu.token) -> ()
  }
  return
}
