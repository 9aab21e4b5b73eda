// Two DMAs in flight on interleaved column tiles of one DRAM buffer: their
// bounding byte ranges meet but no byte is shared, so they may overlap in time.
// The same two DMAs on one shared column tile are a write-after-read hazard.
// RUN: atvoss-sim %s --entry=disjoint --report=table | FileCheck %s --check-prefix=OK
// RUN: not atvoss-sim %s --entry=shared 2>&1 | FileCheck %s --check-prefix=HAZARD --implicit-check-not=Traceback

// OK: total cycles
func.func @disjoint(%D: memref<64x64xf32>) {
  %a = "npu.alloc"() : () -> memref<64x32xf32, 1>
  %b = "npu.alloc"() : () -> memref<64x32xf32, 1>
  "npu.fill"(%b) {value = 1.0 : f64} : (memref<64x32xf32, 1>) -> ()
  "npu.barrier"() : () -> ()
  %left = memref.subview %D[0, 0] [64, 32] [1, 1] : memref<64x64xf32> to memref<64x32xf32, strided<[64, 1]>>
  %right = memref.subview %D[0, 32] [64, 32] [1, 1] : memref<64x64xf32> to memref<64x32xf32, strided<[64, 1], offset: 32>>
  %t0 = "npu.dma_load"(%left, %a) {channel = 0 : i64} : (memref<64x32xf32, strided<[64, 1]>>, memref<64x32xf32, 1>) -> !npu.token
  %t1 = "npu.dma_store"(%b, %right) {channel = 1 : i64} : (memref<64x32xf32, 1>, memref<64x32xf32, strided<[64, 1], offset: 32>>) -> !npu.token
  "npu.wait"(%t0, %t1) : (!npu.token, !npu.token) -> ()
  return
}

func.func @shared(%D: memref<64x64xf32>) {
  %a = "npu.alloc"() : () -> memref<64x32xf32, 1>
  %b = "npu.alloc"() : () -> memref<64x32xf32, 1>
  "npu.fill"(%b) {value = 1.0 : f64} : (memref<64x32xf32, 1>) -> ()
  "npu.barrier"() : () -> ()
  %left = memref.subview %D[0, 0] [64, 32] [1, 1] : memref<64x64xf32> to memref<64x32xf32, strided<[64, 1]>>
  %t0 = "npu.dma_load"(%left, %a) {channel = 0 : i64} : (memref<64x32xf32, strided<[64, 1]>>, memref<64x32xf32, 1>) -> !npu.token
  // HAZARD: interleaved-dram-tiles.mlir:[[@LINE+1]]:9: error: npu.dma_store: overwrites DRAM buffer {{.*}} that npu.dma_load at {{.*}} is still reading: its token was not waited on (write-after-read hazard)
  %t1 = "npu.dma_store"(%b, %left) {channel = 1 : i64} : (memref<64x32xf32, 1>, memref<64x32xf32, strided<[64, 1]>>) -> !npu.token
  "npu.wait"(%t0, %t1) : (!npu.token, !npu.token) -> ()
  return
}
