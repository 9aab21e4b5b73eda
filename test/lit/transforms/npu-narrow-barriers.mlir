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
