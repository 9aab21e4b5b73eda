// RUN: atvoss-opt %s -split-input-file -npu-overlap-ops -npu-narrow-barriers -npu-interleave-loops | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-overlap-ops -npu-narrow-barriers -npu-interleave-loops
// RUN: atvoss-opt %s -split-input-file -npu-overlap-ops -npu-narrow-barriers -npu-interleave-loops -npu-allocate-sram -npu-verify

// A relu in a tile loop on the vector unit (4 tiles), then a matmul in a tile
// loop on the matrix unit (2 tiles) using none of its buffers, with no barrier
// between them (npu-overlap-ops took it): one loop of 4 iterations runs a relu
// tile and, in the first two, a matmul tile. The allocations and first loads
// between them go before it; the relu's barrier waits for the vector unit, the
// matmul's for the matrix unit, so the two run at once
// (npu-interleave-loops-timing.mlir simulates it).

// CHECK-LABEL: func.func @relu_loop$beside_matmul_loop
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NEXT:      "npu.barrier"() {engines = "vector"}
// CHECK:           "npu.activation"
// CHECK:           %[[IN:.*]] = arith.cmpi ult, %[[I]], %{{.*}} : index
// CHECK-NEXT:      scf.if %[[IN]] {
// CHECK-NEXT:        "npu.barrier"() {engines = "matrix"}
// CHECK:             "npu.matmul"
// CHECK:         } {npu.tile_loop}
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
// CHECK-NOT:     scf.for

func.func @relu_loop$beside_matmul_loop(%x: memref<4x64x64xf32>, %w: memref<64x128xf32>,
                                        %y: memref<4x64x64xf32>, %z: memref<64x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %a = "npu.alloc"() : () -> memref<1x64x64xf32, 1>
  %r = "npu.alloc"() : () -> memref<4x64x64xf32, 1>
  scf.for %i = %c0 to %c4 step %c1 {
    "npu.barrier"() {engines = "compute"} : () -> ()
    %xs = memref.subview %x[%i, 0, 0] [1, 64, 64] [1, 1, 1] : memref<4x64x64xf32> to memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>>
    %t = "npu.dma_load"(%xs, %a) {channel = 0 : i64} : (memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>>, memref<1x64x64xf32, 1>) -> !npu.token
    "npu.wait"(%t) : (!npu.token) -> ()
    %rs = memref.subview %r[%i, 0, 0] [1, 64, 64] [1, 1, 1] : memref<4x64x64xf32, 1> to memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>, 1>
    "npu.activation"(%a, %rs) {kind = "relu"} : (memref<1x64x64xf32, 1>, memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>, 1>) -> ()
  } {npu.tile_loop}
  "npu.barrier"() {engines = "compute"} : () -> ()
  %b = "npu.alloc"() : () -> memref<64x64xf32, 1>
  %o = "npu.alloc"() : () -> memref<64x128xf32, 1>
  // expected-remark @below {{runs beside the tile loop before it on the other unit: one loop, a tile of each per iteration}}
  scf.for %i = %c0 to %c2 step %c1 {
    "npu.barrier"() {engines = "compute"} : () -> ()
    %off = arith.muli %i, %c64 : index
    %ws = memref.subview %w[0, %off] [64, 64] [1, 1] : memref<64x128xf32> to memref<64x64xf32, strided<[128, 1], offset: ?>>
    %t = "npu.dma_load"(%ws, %b) {channel = 1 : i64} : (memref<64x64xf32, strided<[128, 1], offset: ?>>, memref<64x64xf32, 1>) -> !npu.token
    "npu.wait"(%t) : (!npu.token) -> ()
    %os = memref.subview %o[0, %off] [64, 64] [1, 1] : memref<64x128xf32, 1> to memref<64x64xf32, strided<[128, 1], offset: ?>, 1>
    "npu.matmul"(%b, %b, %os) {accumulate = false, activation = "none", dataflow = "ws"} : (memref<64x64xf32, 1>, memref<64x64xf32, 1>, memref<64x64xf32, strided<[128, 1], offset: ?>, 1>) -> ()
  } {npu.tile_loop}
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t2 = "npu.dma_store"(%o, %z) {channel = 0 : i64} : (memref<64x128xf32, 1>, memref<64x128xf32>) -> !npu.token
  %t3 = "npu.dma_store"(%r, %y) {channel = 1 : i64} : (memref<4x64x64xf32, 1>, memref<4x64x64xf32>) -> !npu.token
  "npu.wait"(%t2, %t3) : (!npu.token, !npu.token) -> ()
  "npu.dealloc"(%o) : (memref<64x128xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<64x64xf32, 1>) -> ()
  "npu.dealloc"(%r) : (memref<4x64x64xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<1x64x64xf32, 1>) -> ()
  return
}

// -----

// The matmul reads the relu's result: the loops run one after the other.

// CHECK-LABEL: func.func @matmul_loop_reads_relu$after
// CHECK-COUNT-2: scf.for

func.func @matmul_loop_reads_relu$after(%x: memref<4x64x64xf32>, %w: memref<64x128xf32>,
                                        %y: memref<4x64x64xf32>, %z: memref<64x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %a = "npu.alloc"() : () -> memref<1x64x64xf32, 1>
  %r = "npu.alloc"() : () -> memref<4x64x64xf32, 1>
  scf.for %i = %c0 to %c4 step %c1 {
    "npu.barrier"() {engines = "compute"} : () -> ()
    %xs = memref.subview %x[%i, 0, 0] [1, 64, 64] [1, 1, 1] : memref<4x64x64xf32> to memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>>
    %t = "npu.dma_load"(%xs, %a) {channel = 0 : i64} : (memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>>, memref<1x64x64xf32, 1>) -> !npu.token
    "npu.wait"(%t) : (!npu.token) -> ()
    %rs = memref.subview %r[%i, 0, 0] [1, 64, 64] [1, 1, 1] : memref<4x64x64xf32, 1> to memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>, 1>
    "npu.activation"(%a, %rs) {kind = "relu"} : (memref<1x64x64xf32, 1>, memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>, 1>) -> ()
  } {npu.tile_loop}
  "npu.barrier"() {engines = "compute"} : () -> ()
  %b = "npu.alloc"() : () -> memref<64x64xf32, 1>
  %o = "npu.alloc"() : () -> memref<64x128xf32, 1>
  // expected-remark @below {{runs after the tile loop before it on the other unit, not beside it: one loop's compute writes a buffer the other uses}}
  scf.for %i = %c0 to %c2 step %c1 {
    "npu.barrier"() {engines = "compute"} : () -> ()
    %off = arith.muli %i, %c64 : index
    %ws = memref.subview %w[0, %off] [64, 64] [1, 1] : memref<64x128xf32> to memref<64x64xf32, strided<[128, 1], offset: ?>>
    %t = "npu.dma_load"(%ws, %b) {channel = 1 : i64} : (memref<64x64xf32, strided<[128, 1], offset: ?>>, memref<64x64xf32, 1>) -> !npu.token
    "npu.wait"(%t) : (!npu.token) -> ()
    %os = memref.subview %o[0, %off] [64, 64] [1, 1] : memref<64x128xf32, 1> to memref<64x64xf32, strided<[128, 1], offset: ?>, 1>
    %rv = memref.subview %r[0, 0, 0] [1, 64, 64] [1, 1, 1] : memref<4x64x64xf32, 1> to memref<64x64xf32, strided<[64, 1]>, 1>
    "npu.matmul"(%rv, %b, %os) {accumulate = false, activation = "none", dataflow = "ws"} : (memref<64x64xf32, strided<[64, 1]>, 1>, memref<64x64xf32, 1>, memref<64x64xf32, strided<[128, 1], offset: ?>, 1>) -> ()
  } {npu.tile_loop}
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t2 = "npu.dma_store"(%o, %z) {channel = 0 : i64} : (memref<64x128xf32, 1>, memref<64x128xf32>) -> !npu.token
  %t3 = "npu.dma_store"(%r, %y) {channel = 1 : i64} : (memref<4x64x64xf32, 1>, memref<4x64x64xf32>) -> !npu.token
  "npu.wait"(%t2, %t3) : (!npu.token, !npu.token) -> ()
  "npu.dealloc"(%o) : (memref<64x128xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<64x64xf32, 1>) -> ()
  "npu.dealloc"(%r) : (memref<4x64x64xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<1x64x64xf32, 1>) -> ()
  return
}
