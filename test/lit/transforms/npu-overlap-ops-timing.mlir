// RUN: atvoss-opt %s -npu-allocate-sram | atvoss-sim - --timing-only --report=table | FileCheck %s --check-prefix=ALONE
// RUN: atvoss-opt %s -npu-overlap-ops -npu-allocate-sram | atvoss-sim - --timing-only --report=table | FileCheck %s --check-prefix=BESIDE

// npu-overlap-ops.mlir's first program, simulated: with the barrier between
// the relu (vector unit) and the matmul (matrix unit), the matmul's weights
// load and it computes only once the relu is done; without the barrier both
// run at once and the program ends sooner.

// ALONE:  total cycles {{ *}}8,212
// BESIDE: total cycles {{ *}}7,948
func.func @main(%x: memref<128x128xf32>, %w: memref<128x128xf32>,
                %y: memref<128x128xf32>, %z: memref<128x128xf32>) {
  %a = "npu.alloc"() : () -> memref<128x128xf32, 1>
  %t0 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<128x128xf32>, memref<128x128xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %r = "npu.alloc"() : () -> memref<128x128xf32, 1>
  "npu.activation"(%a, %r) {kind = "relu"} : (memref<128x128xf32, 1>, memref<128x128xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.dealloc"(%a) : (memref<128x128xf32, 1>) -> ()
  %b = "npu.alloc"() : () -> memref<128x128xf32, 1>
  %t1 = "npu.dma_load"(%w, %b) {channel = 1 : i64} : (memref<128x128xf32>, memref<128x128xf32, 1>) -> !npu.token
  "npu.wait"(%t1) : (!npu.token) -> ()
  %o = "npu.alloc"() : () -> memref<128x128xf32, 1>
  "npu.matmul"(%b, %b, %o) {accumulate = false, activation = "none", dataflow = "ws"} : (memref<128x128xf32, 1>, memref<128x128xf32, 1>, memref<128x128xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t2 = "npu.dma_store"(%o, %z) {channel = 0 : i64} : (memref<128x128xf32, 1>, memref<128x128xf32>) -> !npu.token
  %t3 = "npu.dma_store"(%r, %y) {channel = 1 : i64} : (memref<128x128xf32, 1>, memref<128x128xf32>) -> !npu.token
  "npu.wait"(%t2, %t3) : (!npu.token, !npu.token) -> ()
  "npu.dealloc"(%o) : (memref<128x128xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<128x128xf32, 1>) -> ()
  "npu.dealloc"(%r) : (memref<128x128xf32, 1>) -> ()
  return
}
