// RUN: atvoss-opt %s -split-input-file -npu-share-constant-tiles --target='npu -max-sram-bytes=12288' | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-share-constant-tiles --target='npu -max-sram-bytes=12288'

// Two strips of a cascade load the same weights: the second reads the tile the
// first loaded, which lives until the second's end. Its load, its buffer and
// its token in the wait go; the activation's input load stays.

memref.global "private" constant @weights : memref<32x32xf32> = dense<1.0>

// CHECK-LABEL: func.func @two_strips
// CHECK:         %[[G:.*]] = memref.get_global @weights
// CHECK:         %[[W:.*]] = "npu.alloc"() : () -> memref<32x32xf32, 1>
// CHECK:         %[[L:.*]] = "npu.dma_load"(%[[G]], %[[W]])
// CHECK:         "npu.wait"(%[[L]], %{{.*}})
// CHECK-NEXT:    "npu.matmul"(%{{.*}}, %[[W]], %{{.*}})
// CHECK-NOT:     "npu.dealloc"(%[[W]])
// CHECK:         "npu.dma_load"(%{{.*}}, %[[B:.*]]) {channel = 0 : i64}
// CHECK-NEXT:    "npu.wait"(%{{.*}}) : (!npu.token) -> ()
// CHECK-NEXT:    "npu.matmul"(%[[B]], %[[W]], %{{.*}})
// CHECK:         "npu.dealloc"(%[[W]])
// CHECK-NEXT:    return
func.func @two_strips(%x: memref<64x32xf32>, %y: memref<64x32xf32>) {
  %g = memref.get_global @weights : memref<32x32xf32>
  %x0 = memref.subview %x[0, 0] [32, 32] [1, 1] : memref<64x32xf32> to memref<32x32xf32, strided<[32, 1]>>
  %y0 = memref.subview %y[0, 0] [32, 32] [1, 1] : memref<64x32xf32> to memref<32x32xf32, strided<[32, 1]>>
  %x1 = memref.subview %x[32, 0] [32, 32] [1, 1] : memref<64x32xf32> to memref<32x32xf32, strided<[32, 1], offset: 1024>>
  %y1 = memref.subview %y[32, 0] [32, 32] [1, 1] : memref<64x32xf32> to memref<32x32xf32, strided<[32, 1], offset: 1024>>
  %w0 = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %a0 = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %o0 = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t0 = "npu.dma_load"(%g, %w0) {channel = 1 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  %t1 = "npu.dma_load"(%x0, %a0) {channel = 0 : i64} : (memref<32x32xf32, strided<[32, 1]>>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t0, %t1) : (!npu.token, !npu.token) -> ()
  "npu.matmul"(%a0, %w0, %o0) {accumulate = false, activation = "none"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t2 = "npu.dma_store"(%o0, %y0) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32, strided<[32, 1]>>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  "npu.dealloc"(%o0) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%a0) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%w0) : (memref<32x32xf32, 1>) -> ()
  %w1 = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %a1 = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %o1 = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t3 = "npu.dma_load"(%g, %w1) {channel = 1 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  %t4 = "npu.dma_load"(%x1, %a1) {channel = 0 : i64} : (memref<32x32xf32, strided<[32, 1], offset: 1024>>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t3, %t4) : (!npu.token, !npu.token) -> ()
  "npu.matmul"(%a1, %w1, %o1) {accumulate = false, activation = "none"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t5 = "npu.dma_store"(%o1, %y1) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32, strided<[32, 1], offset: 1024>>) -> !npu.token
  "npu.wait"(%t5) : (!npu.token) -> ()
  "npu.dealloc"(%o1) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%a1) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%w1) : (memref<32x32xf32, 1>) -> ()
  return
}

// -----

// An op between the two needs the whole SRAM (12 KiB): the first tile cannot
// live through it, so the second strip loads the weights again.

memref.global "private" constant @weights : memref<32x32xf32> = dense<1.0>

// CHECK-LABEL: func.func @no_room
// CHECK-COUNT-3: "npu.dma_load"(%{{.*}}, %{{.*}}) {channel = 1 : i64}
func.func @no_room(%x: memref<32x32xf32>, %y: memref<32x32xf32>) {
  %g = memref.get_global @weights : memref<32x32xf32>
  %w0 = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t0 = "npu.dma_load"(%g, %w0) {channel = 1 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %o0 = "npu.alloc"() : () -> memref<32x32xf32, 1>
  "npu.activation"(%w0, %o0) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t1 = "npu.dma_store"(%o0, %y) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t1) : (!npu.token) -> ()
  "npu.dealloc"(%o0) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%w0) : (memref<32x32xf32, 1>) -> ()
  %a = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %b = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %c = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t2 = "npu.dma_load"(%x, %a) {channel = 1 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  "npu.elementwise"(%a, %a, %b) {kind = "add"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.elementwise"(%a, %b, %c) {kind = "mul"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t3 = "npu.dma_store"(%c, %x) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t3) : (!npu.token) -> ()
  "npu.dealloc"(%c) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<32x32xf32, 1>) -> ()
  %w1 = "npu.alloc"() : () -> memref<32x32xf32, 1>
  // expected-remark @below {{this constant is loaded again: the tile loaded before would not fit in SRAM until this op's end}}
  %t4 = "npu.dma_load"(%g, %w1) {channel = 1 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t4) : (!npu.token) -> ()
  %o1 = "npu.alloc"() : () -> memref<32x32xf32, 1>
  "npu.activation"(%w1, %o1) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t5 = "npu.dma_store"(%o1, %y) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t5) : (!npu.token) -> ()
  "npu.dealloc"(%o1) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%w1) : (memref<32x32xf32, 1>) -> ()
  return
}

// -----

// A tile an op writes after its load (here the activation writes over it) holds
// no longer the constant: the next load of it stays. So does a load of another
// view of the constant.

memref.global "private" constant @weights : memref<64x32xf32> = dense<1.0>

// CHECK-LABEL: func.func @written_or_other_view
// CHECK-COUNT-3: "npu.dma_load"
func.func @written_or_other_view(%y: memref<32x32xf32>) {
  %g = memref.get_global @weights : memref<64x32xf32>
  %top = memref.subview %g[0, 0] [32, 32] [1, 1] : memref<64x32xf32> to memref<32x32xf32, strided<[32, 1]>>
  %bottom = memref.subview %g[32, 0] [32, 32] [1, 1] : memref<64x32xf32> to memref<32x32xf32, strided<[32, 1], offset: 1024>>
  %w0 = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t0 = "npu.dma_load"(%top, %w0) {channel = 1 : i64} : (memref<32x32xf32, strided<[32, 1]>>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  "npu.activation"(%w0, %w0) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t1 = "npu.dma_store"(%w0, %y) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t1) : (!npu.token) -> ()
  "npu.dealloc"(%w0) : (memref<32x32xf32, 1>) -> ()
  %w1 = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t2 = "npu.dma_load"(%top, %w1) {channel = 1 : i64} : (memref<32x32xf32, strided<[32, 1]>>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  %t3 = "npu.dma_store"(%w1, %y) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t3) : (!npu.token) -> ()
  "npu.dealloc"(%w1) : (memref<32x32xf32, 1>) -> ()
  %w2 = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t4 = "npu.dma_load"(%bottom, %w2) {channel = 1 : i64} : (memref<32x32xf32, strided<[32, 1], offset: 1024>>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t4) : (!npu.token) -> ()
  %t5 = "npu.dma_store"(%w2, %y) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t5) : (!npu.token) -> ()
  "npu.dealloc"(%w2) : (memref<32x32xf32, 1>) -> ()
  return
}
