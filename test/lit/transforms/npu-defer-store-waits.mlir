// RUN: atvoss-opt %s -split-input-file -npu-defer-store-waits | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-defer-store-waits --target='npu -max-sram-bytes=16384'

// The second op reads nothing the first one's last store writes: the wait for
// that store, and the stored tile's deallocation, go down to where an op may
// need it done (the end of the program here), so the second op's load and
// compute are issued while the store drains.

// CHECK-LABEL: func.func @independent$defers
// CHECK:         %[[S:.*]] = "npu.dma_store"(%[[R:.*]], %{{.*}}) {channel = 1 : i64}
// CHECK-NEXT:    "npu.dealloc"(%{{.*}})
// CHECK-NEXT:    %[[B:.*]] = "npu.alloc"
// CHECK-NEXT:    "npu.dma_load"(%{{.*}}, %[[B]])
// CHECK:         "npu.activation"(%[[B]], %{{.*}})
// CHECK:         "npu.wait"(%[[S]])
// CHECK-NEXT:    "npu.dealloc"(%[[R]])
// CHECK-NEXT:    return
func.func @independent$defers(%x: memref<32x32xf32>, %y: memref<32x32xf32>, %u: memref<32x32xf32>, %z: memref<32x32xf32>) {
  %a = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t0 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %r = "npu.alloc"() : () -> memref<32x32xf32, 1>
  "npu.activation"(%a, %r) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t1 = "npu.dma_store"(%r, %y) {channel = 1 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t1) : (!npu.token) -> ()
  "npu.dealloc"(%r) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<32x32xf32, 1>) -> ()
  %b = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t2 = "npu.dma_load"(%u, %b) {channel = 0 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  %o = "npu.alloc"() : () -> memref<32x32xf32, 1>
  "npu.activation"(%b, %o) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t3 = "npu.dma_store"(%o, %z) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t3) : (!npu.token) -> ()
  "npu.dealloc"(%o) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<32x32xf32, 1>) -> ()
  return
}

// -----

// The second op loads rows the store writes: it needs the store done, so the
// wait stays right after the store.

// CHECK-LABEL: func.func @reads_what_it_stored$stays
// CHECK:         %[[S:.*]] = "npu.dma_store"
// CHECK-NEXT:    "npu.wait"(%[[S]])
func.func @reads_what_it_stored$stays(%x: memref<32x32xf32>, %y: memref<32x32xf32>, %z: memref<32x32xf32>) {
  %a = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t0 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %r = "npu.alloc"() : () -> memref<32x32xf32, 1>
  "npu.activation"(%a, %r) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t1 = "npu.dma_store"(%r, %y) {channel = 1 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t1) : (!npu.token) -> ()
  "npu.dealloc"(%r) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<32x32xf32, 1>) -> ()
  %b = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t2 = "npu.dma_load"(%y, %b) {channel = 0 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  "npu.activation"(%b, %b) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t3 = "npu.dma_store"(%b, %z) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t3) : (!npu.token) -> ()
  "npu.dealloc"(%b) : (memref<32x32xf32, 1>) -> ()
  return
}

// -----

// The stored tile would stay allocated beside the second op's two tiles: in
// 16 KiB they leave less than twice its bytes free, so the wait stays, with a
// remark (the default 1 MiB has room: the wait goes down).

// CHECK-LABEL: func.func @no_room
// CHECK:         %[[S:.*]] = "npu.dma_store"(%{{.*}}, %{{.*}}) {channel = 1 : i64}
// CHECK-NEXT:    "npu.alloc"
// CHECK:         "npu.activation"
// CHECK:         "npu.wait"(%[[S]])
// CHECK-NEXT:    "npu.dealloc"
// CHECK-NEXT:    return
func.func @no_room(%x: memref<48x32xf32>, %y: memref<48x32xf32>, %u: memref<48x32xf32>, %z: memref<48x32xf32>) {
  %a = "npu.alloc"() : () -> memref<48x32xf32, 1>
  %t0 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<48x32xf32>, memref<48x32xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  "npu.activation"(%a, %a) {kind = "relu"} : (memref<48x32xf32, 1>, memref<48x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t1 = "npu.dma_store"(%a, %y) {channel = 1 : i64} : (memref<48x32xf32, 1>, memref<48x32xf32>) -> !npu.token
  // expected-remark @below {{the wait for this op's last store stays right after it: the stored tile would not fit beside the next op's buffers}}
  "npu.wait"(%t1) : (!npu.token) -> ()
  "npu.dealloc"(%a) : (memref<48x32xf32, 1>) -> ()
  %b = "npu.alloc"() : () -> memref<48x32xf32, 1>
  %t2 = "npu.dma_load"(%u, %b) {channel = 0 : i64} : (memref<48x32xf32>, memref<48x32xf32, 1>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  %o = "npu.alloc"() : () -> memref<48x32xf32, 1>
  "npu.activation"(%b, %o) {kind = "relu"} : (memref<48x32xf32, 1>, memref<48x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t3 = "npu.dma_store"(%o, %z) {channel = 0 : i64} : (memref<48x32xf32, 1>, memref<48x32xf32>) -> !npu.token
  "npu.wait"(%t3) : (!npu.token) -> ()
  "npu.dealloc"(%o) : (memref<48x32xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<48x32xf32, 1>) -> ()
  return
}
