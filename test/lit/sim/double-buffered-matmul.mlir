// A correct double-buffered matmul: C[256,32] = A[256,64] @ B[64,32], B resident,
// A streamed in 64-row tiles through two SRAM buffers; the next tile's DMA
// overlaps the current tile's matmul, barriers order each store after its
// matmul and each reload after the matmul reading the buffer.
// RUN: atvoss-sim %s --report json | FileCheck %s --implicit-check-not=Traceback
// RUN: atvoss-sim %s | FileCheck %s --check-prefix=TABLE

// CHECK: {
// CHECK-NEXT:   "version": 1,
// CHECK-NEXT:   "entry": "main",
// CHECK-NEXT:   "target": "npu
// CHECK-NEXT:   "timing_only": false,
// CHECK-NEXT:   "total_cycles": {{[1-9][0-9]*}},
// CHECK-NEXT:   "macs": 524288,
// CHECK-NEXT:   "roofline_cycles": 1088,
// CHECK-NEXT:   "roofline_ratio": {{[0-9.]+}},
// CHECK-NEXT:   "dram_read_bytes": {{[0-9]+}},
// CHECK-NEXT:   "dram_write_bytes": 32768,
// CHECK-NEXT:   "compulsory_dram_bytes": 69632,
// Two A tiles, two C tiles and B: 2*8192 + 2*8192 + 4096 bytes.
// CHECK-NEXT:   "sram_peak_bytes": 36864,
// CHECK-NEXT:   "sram_capacity_bytes": 1048576,
// CHECK-NEXT:   "sram_occupancy": [
// CHECK:        "engines": {
// CHECK:          "matrix": {
// CHECK:          "dma0": {
// CHECK:          "dma1": {
// CHECK:        "ops": [
// CHECK-DAG:        "op": "npu.matmul",
// CHECK-DAG:        "op": "npu.dma_load",
// CHECK-DAG:        "op": "npu.dma_store",

// TABLE: total cycles
// TABLE: SRAM peak 36,864 B of 1,048,576 B
// TABLE: npu.matmul {{.*}}double-buffered-matmul.mlir:{{[0-9]+}}:5 matrix 2
func.func @main(%A: memref<256x64xf16>, %B: memref<64x32xf16>, %C: memref<256x32xf32>) {
  %c0 = arith.constant 0 : index
  %cm = arith.constant 256 : index
  %ct = arith.constant 64 : index
  %b = "npu.alloc"() : () -> memref<64x32xf16, 1>
  %a0 = "npu.alloc"() : () -> memref<64x64xf16, 1>
  %c0b = "npu.alloc"() : () -> memref<64x32xf32, 1>
  %tb = "npu.dma_load"(%B, %b) {channel = 1 : i64} : (memref<64x32xf16>, memref<64x32xf16, 1>) -> !npu.token
  "npu.wait"(%tb) : (!npu.token) -> ()

  %a1 = "npu.alloc"() : () -> memref<64x64xf16, 1>
  %c1b = "npu.alloc"() : () -> memref<64x32xf32, 1>
  %c2t = arith.constant 128 : index
  %last = arith.constant 192 : index
  %g0 = memref.subview %A[%c0, 0] [64, 64] [1, 1] : memref<256x64xf16> to memref<64x64xf16, strided<[64, 1], offset: ?>>
  %first = "npu.dma_load"(%g0, %a0) {channel = 0 : i64} : (memref<64x64xf16, strided<[64, 1], offset: ?>>, memref<64x64xf16, 1>) -> !npu.token
  %last_load = scf.for %i = %c0 to %cm step %c2t iter_args(%ta0 = %first) -> (!npu.token) {
    %i1 = arith.addi %i, %ct : index
    %g1 = memref.subview %A[%i1, 0] [64, 64] [1, 1] : memref<256x64xf16> to memref<64x64xf16, strided<[64, 1], offset: ?>>
    %ta1 = "npu.dma_load"(%g1, %a1) {channel = 1 : i64} : (memref<64x64xf16, strided<[64, 1], offset: ?>>, memref<64x64xf16, 1>) -> !npu.token
    "npu.wait"(%ta0) : (!npu.token) -> ()
    "npu.matmul"(%a0, %b, %c0b) {accumulate = false, activation = "none"} : (memref<64x64xf16, 1>, memref<64x32xf16, 1>, memref<64x32xf32, 1>) -> ()
    "npu.barrier"() : () -> ()
    %gc0 = memref.subview %C[%i, 0] [64, 32] [1, 1] : memref<256x32xf32> to memref<64x32xf32, strided<[32, 1], offset: ?>>
    %s0 = "npu.dma_store"(%c0b, %gc0) {channel = 0 : i64} : (memref<64x32xf32, 1>, memref<64x32xf32, strided<[32, 1], offset: ?>>) -> !npu.token
    %i2 = arith.addi %i, %c2t : index
    %inext = arith.minsi %i2, %last : index
    %g2 = memref.subview %A[%inext, 0] [64, 64] [1, 1] : memref<256x64xf16> to memref<64x64xf16, strided<[64, 1], offset: ?>>
    %ta0n = "npu.dma_load"(%g2, %a0) {channel = 0 : i64} : (memref<64x64xf16, strided<[64, 1], offset: ?>>, memref<64x64xf16, 1>) -> !npu.token
    "npu.wait"(%ta1) : (!npu.token) -> ()
    "npu.matmul"(%a1, %b, %c1b) {accumulate = false, activation = "none"} : (memref<64x64xf16, 1>, memref<64x32xf16, 1>, memref<64x32xf32, 1>) -> ()
    "npu.barrier"() : () -> ()
    %gc1 = memref.subview %C[%i1, 0] [64, 32] [1, 1] : memref<256x32xf32> to memref<64x32xf32, strided<[32, 1], offset: ?>>
    %s1 = "npu.dma_store"(%c1b, %gc1) {channel = 1 : i64} : (memref<64x32xf32, 1>, memref<64x32xf32, strided<[32, 1], offset: ?>>) -> !npu.token
    "npu.wait"(%s0, %s1) : (!npu.token, !npu.token) -> ()
    scf.yield %ta0n : !npu.token
  }
  "npu.wait"(%last_load) : (!npu.token) -> ()
  return
}
