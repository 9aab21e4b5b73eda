// RUN: atvoss-opt %s -split-input-file -npu-narrow-barriers | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -npu-narrow-barriers -npu-verify

// A strip's pool (vector unit) beside the next strip's conv (matrix unit): the
// store after the barrier reads only the pool's result, so the barrier waits
// for the vector unit alone and the store runs while the conv does.

// CHECK-LABEL: func.func @store_after_vector
// CHECK:         "npu.matmul"
// CHECK-NEXT:    "npu.activation"
// CHECK-NEXT:    "npu.barrier"() {engines = "vector"}
// CHECK-NEXT:    "npu.dma_store"
func.func @store_after_vector(%y: memref<32x32xf32>) {
  %a = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %b = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %m = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %v = "npu.alloc"() : () -> memref<32x32xf32, 1>
  "npu.fill"(%a) {value = 1.0 : f64} : (memref<32x32xf32, 1>) -> ()
  "npu.fill"(%b) {value = 2.0 : f64} : (memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.matmul"(%a, %a, %m) {accumulate = false, activation = "none"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.activation"(%b, %v) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t = "npu.dma_store"(%v, %y) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t) : (!npu.token) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.dealloc"(%v) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%m) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<32x32xf32, 1>) -> ()
  return
}

// -----

// The store reads the matmul's result: the barrier waits for the matrix unit
// alone.

// CHECK-LABEL: func.func @store_after_matrix
// CHECK:         "npu.barrier"() {engines = "matrix"}
// CHECK-NEXT:    "npu.dma_store"(%{{.*}}, %{{.*}}) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>)
func.func @store_after_matrix(%y: memref<32x32xf32>) {
  %a = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %b = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %m = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %v = "npu.alloc"() : () -> memref<32x32xf32, 1>
  "npu.matmul"(%a, %a, %m) {accumulate = false, activation = "none"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.activation"(%b, %v) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t = "npu.dma_store"(%m, %y) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t) : (!npu.token) -> ()
  "npu.dealloc"(%v) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%m) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<32x32xf32, 1>) -> ()
  return
}

// -----

// The stores read both results, or the load overwrites what the matmul reads:
// the barriers wait for both units.

// CHECK-LABEL: func.func @both_units
// CHECK-COUNT-2: "npu.barrier"() {engines = "compute"}
// CHECK-NOT:     engines = "vector"
// CHECK-NOT:     engines = "matrix"
func.func @both_units(%x: memref<32x32xf32>, %y: memref<32x32xf32>) {
  %a = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %b = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %m = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %v = "npu.alloc"() : () -> memref<32x32xf32, 1>
  "npu.matmul"(%a, %a, %m) {accumulate = false, activation = "none"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.activation"(%b, %v) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t0 = "npu.dma_store"(%m, %y) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  %t1 = "npu.dma_store"(%v, %y) {channel = 1 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t0, %t1) : (!npu.token, !npu.token) -> ()
  "npu.matmul"(%a, %a, %m) {accumulate = false, activation = "none"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.activation"(%b, %v) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t2 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  %t3 = "npu.dma_store"(%v, %y) {channel = 1 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t2, %t3) : (!npu.token, !npu.token) -> ()
  "npu.dealloc"(%v) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%m) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<32x32xf32, 1>) -> ()
  return
}

// -----

// A relu on the vector unit with no barrier after it (npu-overlap-ops took
// it), then a matmul in a tile loop: the barrier in the loop orders a load
// into the weight tile after the matmul of the iteration before, which only
// the matrix unit uses, so it waits for the matrix unit alone and the
// matmuls run beside the relu.

// CHECK-LABEL: func.func @tile_loop$beside_relu
// CHECK:         "npu.activation"
// CHECK:         scf.for
// CHECK-NEXT:      "npu.barrier"() {engines = "matrix"}
// CHECK:         } {npu.tile_loop}
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
func.func @tile_loop$beside_relu(%x: memref<64x64xf32>, %w: memref<64x128xf32>,
                                 %y: memref<64x64xf32>, %z: memref<64x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %a = "npu.alloc"() : () -> memref<64x64xf32, 1>
  %t0 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<64x64xf32>, memref<64x64xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %r = "npu.alloc"() : () -> memref<64x64xf32, 1>
  "npu.activation"(%a, %r) {kind = "relu"} : (memref<64x64xf32, 1>, memref<64x64xf32, 1>) -> ()
  %b = "npu.alloc"() : () -> memref<64x64xf32, 1>
  %o = "npu.alloc"() : () -> memref<64x128xf32, 1>
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
  %t3 = "npu.dma_store"(%r, %y) {channel = 1 : i64} : (memref<64x64xf32, 1>, memref<64x64xf32>) -> !npu.token
  "npu.wait"(%t2, %t3) : (!npu.token, !npu.token) -> ()
  "npu.dealloc"(%o) : (memref<64x128xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<64x64xf32, 1>) -> ()
  "npu.dealloc"(%r) : (memref<64x64xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<64x64xf32, 1>) -> ()
  return
}

// -----

// The loop stores the relu's result after its barrier: that store needs the
// vector unit done too, so the barrier keeps waiting for both units.

// CHECK-LABEL: func.func @tile_loop_stores_relu$both
// CHECK:         scf.for
// CHECK-NEXT:      "npu.barrier"() {engines = "compute"}
func.func @tile_loop_stores_relu$both(%x: memref<64x64xf32>, %w: memref<64x128xf32>,
                                      %y: memref<64x64xf32>, %z: memref<64x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %a = "npu.alloc"() : () -> memref<64x64xf32, 1>
  %t0 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<64x64xf32>, memref<64x64xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %r = "npu.alloc"() : () -> memref<64x64xf32, 1>
  "npu.activation"(%a, %r) {kind = "relu"} : (memref<64x64xf32, 1>, memref<64x64xf32, 1>) -> ()
  %b = "npu.alloc"() : () -> memref<64x64xf32, 1>
  %o = "npu.alloc"() : () -> memref<64x128xf32, 1>
  scf.for %i = %c0 to %c2 step %c1 {
    "npu.barrier"() {engines = "compute"} : () -> ()
    %off = arith.muli %i, %c64 : index
    %ws = memref.subview %w[0, %off] [64, 64] [1, 1] : memref<64x128xf32> to memref<64x64xf32, strided<[128, 1], offset: ?>>
    %t = "npu.dma_load"(%ws, %b) {channel = 1 : i64} : (memref<64x64xf32, strided<[128, 1], offset: ?>>, memref<64x64xf32, 1>) -> !npu.token
    %s = "npu.dma_store"(%r, %y) {channel = 0 : i64} : (memref<64x64xf32, 1>, memref<64x64xf32>) -> !npu.token
    "npu.wait"(%t, %s) : (!npu.token, !npu.token) -> ()
    %os = memref.subview %o[0, %off] [64, 64] [1, 1] : memref<64x128xf32, 1> to memref<64x64xf32, strided<[128, 1], offset: ?>, 1>
    "npu.matmul"(%b, %b, %os) {accumulate = false, activation = "none", dataflow = "ws"} : (memref<64x64xf32, 1>, memref<64x64xf32, 1>, memref<64x64xf32, strided<[128, 1], offset: ?>, 1>) -> ()
  } {npu.tile_loop}
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t2 = "npu.dma_store"(%o, %z) {channel = 0 : i64} : (memref<64x128xf32, 1>, memref<64x128xf32>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  "npu.dealloc"(%o) : (memref<64x128xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<64x64xf32, 1>) -> ()
  "npu.dealloc"(%r) : (memref<64x64xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<64x64xf32, 1>) -> ()
  return
}

// -----

// Nothing of the vector unit runs beside the loop (a barrier on both units
// before it): the loop's barrier stays as it is.

// CHECK-LABEL: func.func @tile_loop$alone
// CHECK:         scf.for
// CHECK-NEXT:      "npu.barrier"() {engines = "compute"}
func.func @tile_loop$alone(%w: memref<64x128xf32>, %z: memref<64x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %b = "npu.alloc"() : () -> memref<64x64xf32, 1>
  %o = "npu.alloc"() : () -> memref<64x128xf32, 1>
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
  "npu.wait"(%t2) : (!npu.token) -> ()
  "npu.dealloc"(%o) : (memref<64x128xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<64x64xf32, 1>) -> ()
  return
}
