// RUN: atvoss-opt %s -split-input-file -npu-prefetch-inputs | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-prefetch-inputs --target='npu -max-sram-bytes=16384'

// The second op's first input load moves, with its buffer, before the barrier
// that ends the first op's compute; the wait on the first op's earlier store
// (started before the barrier) moves up with it, so the load is issued once
// that store is done. Its own wait stays.

// CHECK-LABEL: func.func @relu$then_relu
// CHECK:         "npu.activation"
// CHECK-NEXT:    "npu.wait"(%[[S:.*]]) :
// CHECK-NEXT:    %[[B:.*]] = "npu.alloc"() : () -> memref<32x32xf32, 1>
// CHECK-NEXT:    %[[L:.*]] = "npu.dma_load"(%{{.*}}, %[[B]]) {channel = 0 : i64}
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
// CHECK-NEXT:    "npu.dma_store"
// CHECK:         "npu.wait"(%[[L]])
// CHECK-NEXT:    "npu.activation"
func.func @relu$then_relu(%x: memref<32x32xf32>, %copy: memref<32x32xf32>, %y: memref<32x32xf32>,
                          %u: memref<32x32xf32>, %z: memref<32x32xf32>) {
  %a = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t0 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %s = "npu.dma_store"(%a, %copy) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  %r = "npu.alloc"() : () -> memref<32x32xf32, 1>
  "npu.activation"(%a, %r) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.wait"(%s) : (!npu.token) -> ()
  %t1 = "npu.dma_store"(%r, %y) {channel = 1 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t1) : (!npu.token) -> ()
  "npu.dealloc"(%r) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<32x32xf32, 1>) -> ()
  %b = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %o = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t2 = "npu.dma_load"(%u, %b) {channel = 0 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  "npu.activation"(%b, %o) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t3 = "npu.dma_store"(%o, %z) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t3) : (!npu.token) -> ()
  "npu.dealloc"(%o) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<32x32xf32, 1>) -> ()
  return
}

// -----

// The load reads rows the first op's last store writes: it waits for that
// store, and stays.

// CHECK-LABEL: func.func @reads_the_last_store$stays
// CHECK:         "npu.barrier"() {engines = "compute"}
// CHECK:         "npu.dma_store"
// CHECK:         "npu.dma_load"(%{{.*}}, %[[B:.*]]) {channel = 0 : i64}
func.func @reads_the_last_store$stays(%x: memref<32x32xf32>, %y: memref<64x32xf32>, %z: memref<32x32xf32>) {
  %a = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t0 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %r = "npu.alloc"() : () -> memref<32x32xf32, 1>
  "npu.activation"(%a, %r) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %last = memref.subview %y[32, 0] [32, 32] [1, 1] : memref<64x32xf32> to memref<32x32xf32, strided<[32, 1], offset: 1024>>
  %t1 = "npu.dma_store"(%r, %last) {channel = 1 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32, strided<[32, 1], offset: 1024>>) -> !npu.token
  "npu.wait"(%t1) : (!npu.token) -> ()
  "npu.dealloc"(%r) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<32x32xf32, 1>) -> ()
  %b = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %o = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %first = memref.subview %y[16, 0] [32, 32] [1, 1] : memref<64x32xf32> to memref<32x32xf32, strided<[32, 1], offset: 512>>
  // expected-remark @below {{the first load of this op waits for the previous op's last store: it reads what that store writes}}
  %t2 = "npu.dma_load"(%first, %b) {channel = 0 : i64} : (memref<32x32xf32, strided<[32, 1], offset: 512>>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  "npu.activation"(%b, %o) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t3 = "npu.dma_store"(%o, %z) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t3) : (!npu.token) -> ()
  "npu.dealloc"(%o) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<32x32xf32, 1>) -> ()
  return
}

// -----

// Rows of the same buffer the last store does not write: the load moves.

// CHECK-LABEL: func.func @other_rows$moves
// CHECK:         "npu.activation"
// CHECK-NEXT:    %[[B:.*]] = "npu.alloc"
// CHECK-NEXT:    %[[F:.*]] = memref.subview
// CHECK-NEXT:    "npu.dma_load"(%[[F]], %[[B]]) {channel = 0 : i64}
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
func.func @other_rows$moves(%x: memref<32x32xf32>, %y: memref<64x32xf32>, %z: memref<32x32xf32>) {
  %a = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t0 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %r = "npu.alloc"() : () -> memref<32x32xf32, 1>
  "npu.activation"(%a, %r) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %last = memref.subview %y[32, 0] [32, 32] [1, 1] : memref<64x32xf32> to memref<32x32xf32, strided<[32, 1], offset: 1024>>
  %t1 = "npu.dma_store"(%r, %last) {channel = 1 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32, strided<[32, 1], offset: 1024>>) -> !npu.token
  "npu.wait"(%t1) : (!npu.token) -> ()
  "npu.dealloc"(%r) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<32x32xf32, 1>) -> ()
  %b = "npu.alloc"() : () -> memref<16x32xf32, 1>
  %o = "npu.alloc"() : () -> memref<16x32xf32, 1>
  %first = memref.subview %y[0, 0] [16, 32] [1, 1] : memref<64x32xf32> to memref<16x32xf32, strided<[32, 1]>>
  %t2 = "npu.dma_load"(%first, %b) {channel = 0 : i64} : (memref<16x32xf32, strided<[32, 1]>>, memref<16x32xf32, 1>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  "npu.activation"(%b, %o) {kind = "relu"} : (memref<16x32xf32, 1>, memref<16x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %zs = memref.subview %z[0, 0] [16, 32] [1, 1] : memref<32x32xf32> to memref<16x32xf32, strided<[32, 1]>>
  %t3 = "npu.dma_store"(%o, %zs) {channel = 0 : i64} : (memref<16x32xf32, 1>, memref<16x32xf32, strided<[32, 1]>>) -> !npu.token
  "npu.wait"(%t3) : (!npu.token) -> ()
  "npu.dealloc"(%o) : (memref<16x32xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<16x32xf32, 1>) -> ()
  return
}

// -----

// The last store on the load's channel: the load would wait behind it on that
// channel anyway, so it stays (it reads a buffer the program writes: the
// channel may order it after an earlier store of it).

// CHECK-LABEL: func.func @same_channel$stays
// CHECK:         "npu.barrier"() {engines = "compute"}
// CHECK:         "npu.dma_store"
// CHECK:         %[[B:.*]] = "npu.alloc"
// CHECK:         "npu.dma_load"(%{{.*}}, %[[B]]) {channel = 1 : i64}
func.func @same_channel$stays(%x: memref<32x32xf32>, %y: memref<32x32xf32>, %z: memref<32x32xf32>) {
  %u = memref.alloc() : memref<32x32xf32>
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
  %o = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t2 = "npu.dma_load"(%u, %b) {channel = 1 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  "npu.activation"(%b, %o) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t3 = "npu.dma_store"(%o, %z) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t3) : (!npu.token) -> ()
  "npu.dealloc"(%o) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<32x32xf32, 1>) -> ()
  return
}

// -----

// The load's buffer would not fit beside the first op's in 16 KiB: the move is
// undone (the default 1 MiB has room).

// CHECK-LABEL: func.func @no_room
// CHECK:         "npu.activation"
// CHECK-NEXT:    %[[B:.*]] = "npu.alloc"
// CHECK-NEXT:    "npu.dma_load"(%{{.*}}, %[[B]]) {channel = 0 : i64}
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
func.func @no_room(%x: memref<48x32xf32>, %y: memref<48x32xf32>, %u: memref<48x32xf32>, %z: memref<48x32xf32>) {
  %a = "npu.alloc"() : () -> memref<48x32xf32, 1>
  %t0 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<48x32xf32>, memref<48x32xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %r = "npu.alloc"() : () -> memref<48x32xf32, 1>
  "npu.activation"(%a, %r) {kind = "relu"} : (memref<48x32xf32, 1>, memref<48x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t1 = "npu.dma_store"(%r, %y) {channel = 1 : i64} : (memref<48x32xf32, 1>, memref<48x32xf32>) -> !npu.token
  "npu.wait"(%t1) : (!npu.token) -> ()
  "npu.dealloc"(%r) : (memref<48x32xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<48x32xf32, 1>) -> ()
  %b = "npu.alloc"() : () -> memref<48x32xf32, 1>
  // expected-remark @below {{the first load of this op is not issued during the previous op's last tile: its SRAM buffer would not fit beside that op's}}
  %t2 = "npu.dma_load"(%u, %b) {channel = 0 : i64} : (memref<48x32xf32>, memref<48x32xf32, 1>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  "npu.activation"(%b, %b) {kind = "relu"} : (memref<48x32xf32, 1>, memref<48x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t3 = "npu.dma_store"(%b, %z) {channel = 0 : i64} : (memref<48x32xf32, 1>, memref<48x32xf32>) -> !npu.token
  "npu.wait"(%t3) : (!npu.token) -> ()
  "npu.dealloc"(%b) : (memref<48x32xf32, 1>) -> ()
  return
}

// -----

// Between the two ops, a padded buffer's halo is filled (a resident tensor the
// second op writes): the fill runs no loop and no DMA, so the load moves past
// it, before the barrier that ends the first op's compute.

// CHECK-LABEL: func.func @past_a_halo_fill$moves
// CHECK:         "npu.activation"
// CHECK-NEXT:    %[[B:.*]] = "npu.alloc"() : () -> memref<32x32xf32, 1>
// CHECK-NEXT:    "npu.dma_load"(%{{.*}}, %[[B]]) {channel = 0 : i64}
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
// CHECK-NEXT:    "npu.dma_store"
// CHECK:         "npu.fill"
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
// CHECK-NEXT:    %{{.*}} = "npu.alloc"() : () -> memref<2x32xf32, 1>
func.func @past_a_halo_fill$moves(%x: memref<32x32xf32>, %y: memref<32x32xf32>, %u: memref<32x32xf32>) {
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
  %p = "npu.alloc"() {npu.resident, offset = 15872 : i64} : () -> memref<4x32xf32, 1>
  %halo = memref.subview %p[0, 0] [1, 32] [1, 1] : memref<4x32xf32, 1> to memref<1x32xf32, strided<[32, 1]>, 1>
  "npu.fill"(%halo) {value = 0.000000e+00 : f64} : (memref<1x32xf32, strided<[32, 1]>, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %b = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t2 = "npu.dma_load"(%u, %b) {channel = 0 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  %o = "npu.alloc"() : () -> memref<2x32xf32, 1>
  "npu.wait"(%t2) : (!npu.token) -> ()
  %rows = memref.subview %b[0, 0] [2, 32] [1, 1] : memref<32x32xf32, 1> to memref<2x32xf32, strided<[32, 1]>, 1>
  "npu.activation"(%rows, %o) {kind = "relu"} : (memref<2x32xf32, strided<[32, 1]>, 1>, memref<2x32xf32, 1>) -> ()
  %interior = memref.subview %p[1, 0] [2, 32] [1, 1] : memref<4x32xf32, 1> to memref<2x32xf32, strided<[32, 1], offset: 32>, 1>
  "npu.activation"(%o, %interior) {kind = "none"} : (memref<2x32xf32, 1>, memref<2x32xf32, strided<[32, 1], offset: 32>, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.dealloc"(%o) : (memref<2x32xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%p) : (memref<4x32xf32, 1>) -> ()
  return
}

// -----

// The same, but the first op's last store writes what the load reads: the
// load cannot go before that store, so it goes past the fill alone (before the
// fill's barrier), and no remark says it waits for the store.

// CHECK-LABEL: func.func @past_a_halo_fill$to_the_fill
// CHECK:         "npu.barrier"() {engines = "compute"}
// CHECK-NEXT:    "npu.dma_store"
// CHECK:         "npu.fill"
// CHECK-NEXT:    %[[B:.*]] = "npu.alloc"() : () -> memref<32x32xf32, 1>
// CHECK-NEXT:    "npu.dma_load"(%{{.*}}, %[[B]]) {channel = 0 : i64}
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
func.func @past_a_halo_fill$to_the_fill(%x: memref<32x32xf32>, %y: memref<32x32xf32>) {
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
  %p = "npu.alloc"() {npu.resident, offset = 15872 : i64} : () -> memref<4x32xf32, 1>
  %halo = memref.subview %p[0, 0] [1, 32] [1, 1] : memref<4x32xf32, 1> to memref<1x32xf32, strided<[32, 1]>, 1>
  "npu.fill"(%halo) {value = 0.000000e+00 : f64} : (memref<1x32xf32, strided<[32, 1]>, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %b = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t2 = "npu.dma_load"(%y, %b) {channel = 0 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  %o = "npu.alloc"() : () -> memref<2x32xf32, 1>
  "npu.wait"(%t2) : (!npu.token) -> ()
  %rows = memref.subview %b[0, 0] [2, 32] [1, 1] : memref<32x32xf32, 1> to memref<2x32xf32, strided<[32, 1]>, 1>
  "npu.activation"(%rows, %o) {kind = "relu"} : (memref<2x32xf32, strided<[32, 1]>, 1>, memref<2x32xf32, 1>) -> ()
  %interior = memref.subview %p[1, 0] [2, 32] [1, 1] : memref<4x32xf32, 1> to memref<2x32xf32, strided<[32, 1], offset: 32>, 1>
  "npu.activation"(%o, %interior) {kind = "none"} : (memref<2x32xf32, 1>, memref<2x32xf32, strided<[32, 1], offset: 32>, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.dealloc"(%o) : (memref<2x32xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%p) : (memref<4x32xf32, 1>) -> ()
  return
}

// -----

// The load reads the program's input, which nothing writes: it moves past the
// last store on its channel onto the other channel.

// CHECK-LABEL: func.func @input_on_the_store_channel$switches
// CHECK:         "npu.activation"
// CHECK-NEXT:    %[[B:.*]] = "npu.alloc"
// CHECK-NEXT:    "npu.dma_load"(%{{.*}}, %[[B]]) {channel = 0 : i64}
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
// CHECK-NEXT:    "npu.dma_store"(%{{.*}}, %{{.*}}) {channel = 1 : i64}
func.func @input_on_the_store_channel$switches(%x: memref<32x32xf32>, %y: memref<32x32xf32>, %u: memref<32x32xf32>, %z: memref<32x32xf32>) {
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
  %o = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t2 = "npu.dma_load"(%u, %b) {channel = 1 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  "npu.activation"(%b, %o) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t3 = "npu.dma_store"(%o, %z) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t3) : (!npu.token) -> ()
  "npu.dealloc"(%o) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<32x32xf32, 1>) -> ()
  return
}

// -----

// A padded buffer's halo filled just before the load, with no barrier between
// (the buffer the load's op writes): the fill touches another buffer, so the
// load moves past it.

// CHECK-LABEL: func.func @past_a_fill_of_another_buffer$moves
// CHECK:         "npu.activation"
// CHECK-NEXT:    %[[B:.*]] = "npu.alloc"() : () -> memref<32x32xf32, 1>
// CHECK-NEXT:    "npu.dma_load"(%{{.*}}, %[[B]]) {channel = 0 : i64}
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
// CHECK:         "npu.fill"
// CHECK-NEXT:    "npu.wait"
func.func @past_a_fill_of_another_buffer$moves(%x: memref<32x32xf32>, %y: memref<32x32xf32>, %u: memref<32x32xf32>) {
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
  %p = "npu.alloc"() {npu.resident, offset = 15872 : i64} : () -> memref<4x32xf32, 1>
  %halo = memref.subview %p[0, 0] [1, 32] [1, 1] : memref<4x32xf32, 1> to memref<1x32xf32, strided<[32, 1]>, 1>
  "npu.fill"(%halo) {value = 0.000000e+00 : f64} : (memref<1x32xf32, strided<[32, 1]>, 1>) -> ()
  %b = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t2 = "npu.dma_load"(%u, %b) {channel = 0 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  %rows = memref.subview %b[0, 0] [2, 32] [1, 1] : memref<32x32xf32, 1> to memref<2x32xf32, strided<[32, 1]>, 1>
  %interior = memref.subview %p[1, 0] [2, 32] [1, 1] : memref<4x32xf32, 1> to memref<2x32xf32, strided<[32, 1], offset: 32>, 1>
  "npu.activation"(%rows, %interior) {kind = "relu"} : (memref<2x32xf32, strided<[32, 1]>, 1>, memref<2x32xf32, strided<[32, 1], offset: 32>, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.dealloc"(%b) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%p) : (memref<4x32xf32, 1>) -> ()
  return
}
