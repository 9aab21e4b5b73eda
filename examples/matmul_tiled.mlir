// A 128x128x64 fp16 matmul with fp32 results, tiled 64x64 over the output:
// each tile of A and B is loaded into SRAM by DMA (two channels), waited on,
// multiplied on the systolic array, and the result stored back to DRAM. DMA
// engines do not wait for compute: a barrier orders the store after the
// matmul, and the next reload of B after the matmul that reads it.
//
//   atvoss-opt examples/matmul_tiled.mlir --npu-verify
//   atvoss-sim examples/matmul_tiled.mlir --report table
func.func @main(%a: memref<128x64xf16>, %b: memref<64x128xf16>, %c: memref<128x128xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %a_tile = "npu.alloc"() {offset = 0 : i64} : () -> memref<64x64xf16, 1>
  %b_tile = "npu.alloc"() {offset = 8192 : i64} : () -> memref<64x64xf16, 1>
  %c_tile = "npu.alloc"() {offset = 16384 : i64} : () -> memref<64x64xf32, 1>
  scf.for %i = %c0 to %c128 step %c64 {
    %a_view = memref.subview %a[%i, 0] [64, 64] [1, 1]
        : memref<128x64xf16> to memref<64x64xf16, strided<[64, 1], offset: ?>>
    %ta = "npu.dma_load"(%a_view, %a_tile) {channel = 0 : i64}
        : (memref<64x64xf16, strided<[64, 1], offset: ?>>, memref<64x64xf16, 1>) -> !npu.token
    "npu.wait"(%ta) : (!npu.token) -> ()
    scf.for %j = %c0 to %c128 step %c64 {
      %b_view = memref.subview %b[0, %j] [64, 64] [1, 1]
          : memref<64x128xf16> to memref<64x64xf16, strided<[128, 1], offset: ?>>
      %tb = "npu.dma_load"(%b_view, %b_tile) {channel = 1 : i64}
          : (memref<64x64xf16, strided<[128, 1], offset: ?>>, memref<64x64xf16, 1>) -> !npu.token
      "npu.wait"(%tb) : (!npu.token) -> ()
      "npu.matmul"(%a_tile, %b_tile, %c_tile) {accumulate = false, activation = "none"}
          : (memref<64x64xf16, 1>, memref<64x64xf16, 1>, memref<64x64xf32, 1>) -> ()
      "npu.barrier"() : () -> ()
      %c_view = memref.subview %c[%i, %j] [64, 64] [1, 1]
          : memref<128x128xf32> to memref<64x64xf32, strided<[128, 1], offset: ?>>
      %tc = "npu.dma_store"(%c_tile, %c_view) {channel = 0 : i64}
          : (memref<64x64xf32, 1>, memref<64x64xf32, strided<[128, 1], offset: ?>>) -> !npu.token
      "npu.wait"(%tc) : (!npu.token) -> ()
    }
  }
  "npu.dealloc"(%c_tile) : (memref<64x64xf32, 1>) -> ()
  "npu.dealloc"(%b_tile) : (memref<64x64xf16, 1>) -> ()
  "npu.dealloc"(%a_tile) : (memref<64x64xf16, 1>) -> ()
  return
}
