// RUN: atvoss-opt %s -split-input-file -npu-overlap-ops | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-overlap-ops --target='npu -max-sram-bytes=327680'

// A relu on the vector unit whose result stays in SRAM, then a matmul on the
// matrix unit that reads none of it: no DMA between the two barriers touches
// a buffer the relu uses, so the first barrier goes and the relu's
// deallocations move after the second. The matmul's weights load while the
// relu runs, and the matmul computes beside it (npu-overlap-ops-timing.mlir
// simulates this program with and without the pass).

// CHECK-LABEL: func.func @relu$beside_matmul
// CHECK:         "npu.activation"
// CHECK-NOT:     "npu.barrier"
// CHECK:         "npu.dma_load"(%{{.*}}, %[[W:.*]]) {channel = 1 : i64}
// CHECK:         "npu.matmul"
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
// CHECK-NEXT:    "npu.dealloc"(%[[A:.*]]) :
// CHECK:         "npu.dma_store"
func.func @relu$beside_matmul(%x: memref<128x128xf32>, %w: memref<128x128xf32>,
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

// -----

// The DRAM buffer the matmul's result is stored to is allocated between the
// two barriers: a DRAM allocation runs on no engine, the first barrier goes
// as without it.

// CHECK-LABEL: func.func @dram_buffer_between$beside_matmul
// CHECK:         "npu.activation"
// CHECK-NOT:     "npu.barrier"
// CHECK:         memref.alloc() : memref<128x128xf32>
// CHECK-NOT:     "npu.barrier"
// CHECK:         "npu.matmul"
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
// CHECK-NEXT:    "npu.dealloc"
func.func @dram_buffer_between$beside_matmul(%x: memref<128x128xf32>, %w: memref<128x128xf32>,
                                            %y: memref<128x128xf32>) -> memref<128x128xf32> {
  %a = "npu.alloc"() : () -> memref<128x128xf32, 1>
  %t0 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<128x128xf32>, memref<128x128xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %r = "npu.alloc"() : () -> memref<128x128xf32, 1>
  "npu.activation"(%a, %r) {kind = "relu"} : (memref<128x128xf32, 1>, memref<128x128xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.dealloc"(%a) : (memref<128x128xf32, 1>) -> ()
  %z = memref.alloc() : memref<128x128xf32>
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
  return %z : memref<128x128xf32>
}

// -----

// The store after the barrier reads what the relu writes: the barrier stays
// (without it the DMA would read the tile while the relu still writes it).

// CHECK-LABEL: func.func @store_reads_the_result$stays
// CHECK:         "npu.activation"
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
// CHECK-NEXT:    "npu.dma_store"
// CHECK:         "npu.matmul"
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
func.func @store_reads_the_result$stays(%x: memref<128x128xf32>, %w: memref<128x128xf32>,
                                        %y: memref<128x128xf32>, %z: memref<128x128xf32>) {
  %a = "npu.alloc"() : () -> memref<128x128xf32, 1>
  %t0 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<128x128xf32>, memref<128x128xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %r = "npu.alloc"() : () -> memref<128x128xf32, 1>
  "npu.activation"(%a, %r) {kind = "relu"} : (memref<128x128xf32, 1>, memref<128x128xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t1 = "npu.dma_store"(%r, %y) {channel = 1 : i64} : (memref<128x128xf32, 1>, memref<128x128xf32>) -> !npu.token
  "npu.wait"(%t1) : (!npu.token) -> ()
  "npu.dealloc"(%r) : (memref<128x128xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<128x128xf32, 1>) -> ()
  %b = "npu.alloc"() : () -> memref<128x128xf32, 1>
  %t2 = "npu.dma_load"(%w, %b) {channel = 1 : i64} : (memref<128x128xf32>, memref<128x128xf32, 1>) -> !npu.token
  "npu.wait"(%t2) : (!npu.token) -> ()
  %o = "npu.alloc"() : () -> memref<128x128xf32, 1>
  "npu.matmul"(%b, %b, %o) {accumulate = false, activation = "none", dataflow = "ws"} : (memref<128x128xf32, 1>, memref<128x128xf32, 1>, memref<128x128xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t3 = "npu.dma_store"(%o, %z) {channel = 0 : i64} : (memref<128x128xf32, 1>, memref<128x128xf32>) -> !npu.token
  "npu.wait"(%t3) : (!npu.token) -> ()
  "npu.dealloc"(%o) : (memref<128x128xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<128x128xf32, 1>) -> ()
  return
}

// -----

// The first relu's input tile (96 KiB) would stay allocated during the second
// relu: with the first one's result and the second one's two tiles that is
// 384 KiB, over the 320 KiB SRAM the second RUN line gives (288 KiB fit): the
// barrier stays, with a remark.

// CHECK-LABEL: func.func @tiles_would_not_fit$stays
func.func @tiles_would_not_fit$stays(%x: memref<96x256xf32>, %w: memref<96x256xf32>,
                                     %y: memref<96x256xf32>, %z: memref<96x256xf32>) {
  %a = "npu.alloc"() : () -> memref<96x256xf32, 1>
  %t0 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<96x256xf32>, memref<96x256xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %r = "npu.alloc"() : () -> memref<96x256xf32, 1>
  "npu.activation"(%a, %r) {kind = "relu"} : (memref<96x256xf32, 1>, memref<96x256xf32, 1>) -> ()
  // expected-remark @below {{the next op does not start beside this one: the tiles this op frees would stay allocated during it, and its own would not fit beside them}}
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.dealloc"(%a) : (memref<96x256xf32, 1>) -> ()
  %b = "npu.alloc"() : () -> memref<96x256xf32, 1>
  %t1 = "npu.dma_load"(%w, %b) {channel = 1 : i64} : (memref<96x256xf32>, memref<96x256xf32, 1>) -> !npu.token
  "npu.wait"(%t1) : (!npu.token) -> ()
  %o = "npu.alloc"() : () -> memref<96x256xf32, 1>
  "npu.activation"(%b, %o) {kind = "relu"} : (memref<96x256xf32, 1>, memref<96x256xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t2 = "npu.dma_store"(%o, %z) {channel = 0 : i64} : (memref<96x256xf32, 1>, memref<96x256xf32>) -> !npu.token
  %t3 = "npu.dma_store"(%r, %y) {channel = 1 : i64} : (memref<96x256xf32, 1>, memref<96x256xf32>) -> !npu.token
  "npu.wait"(%t2, %t3) : (!npu.token, !npu.token) -> ()
  "npu.dealloc"(%o) : (memref<96x256xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<96x256xf32, 1>) -> ()
  "npu.dealloc"(%r) : (memref<96x256xf32, 1>) -> ()
  return
}

// -----

// A copy on the fallback engine (not followed buffer by buffer) ran since the
// last barrier: the load after the barrier reads what it writes in DRAM, and
// the barrier stays.

// CHECK-LABEL: func.func @fallback_before$stays
// CHECK:         memref.copy
// CHECK:         "npu.activation"
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
// CHECK:         "npu.dma_load"(%arg1
func.func @fallback_before$stays(%x: memref<32x32xf32>, %d: memref<32x32xf32>,
                                 %y: memref<32x32xf32>) {
  memref.copy %x, %d : memref<32x32xf32> to memref<32x32xf32>
  %a = "npu.alloc"() : () -> memref<32x32xf32, 1>
  "npu.fill"(%a) {value = 1.0 : f64} : (memref<32x32xf32, 1>) -> ()
  %r = "npu.alloc"() : () -> memref<32x32xf32, 1>
  "npu.activation"(%a, %r) {kind = "relu"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.dealloc"(%a) : (memref<32x32xf32, 1>) -> ()
  %b = "npu.alloc"() : () -> memref<32x32xf32, 1>
  %t0 = "npu.dma_load"(%d, %b) {channel = 0 : i64} : (memref<32x32xf32>, memref<32x32xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %o = "npu.alloc"() : () -> memref<32x32xf32, 1>
  "npu.elementwise"(%b, %r, %o) {kind = "add"} : (memref<32x32xf32, 1>, memref<32x32xf32, 1>, memref<32x32xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t1 = "npu.dma_store"(%o, %y) {channel = 0 : i64} : (memref<32x32xf32, 1>, memref<32x32xf32>) -> !npu.token
  "npu.wait"(%t1) : (!npu.token) -> ()
  "npu.dealloc"(%o) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<32x32xf32, 1>) -> ()
  "npu.dealloc"(%r) : (memref<32x32xf32, 1>) -> ()
  return
}

// -----

// A relu on the vector unit, then a matmul in a tile loop (its weights in
// tiles, a barrier in the loop before each load into the tile) that reads none
// of the relu's buffers: the loop may stand between the relu's barrier and the
// one after the loop, which takes over; the relu's deallocation moves after
// that one. npu-narrow-barriers then lets the loop's barrier wait for the
// matrix unit alone, and the matmuls run beside the relu.

// CHECK-LABEL: func.func @relu$beside_tile_loop
// CHECK:         "npu.activation"
// CHECK-NOT:     "npu.barrier"
// CHECK:         scf.for
// CHECK-NEXT:      "npu.barrier"() {engines = "compute"}
// CHECK:         } {npu.tile_loop}
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
// CHECK-NEXT:    "npu.dealloc"(%[[A:.*]]) :
// CHECK:         "npu.dma_store"
func.func @relu$beside_tile_loop(%x: memref<64x64xf32>, %w: memref<64x128xf32>,
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
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.dealloc"(%a) : (memref<64x64xf32, 1>) -> ()
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
  return
}

// -----

// The same tile loop after a matmul: both run on the matrix unit, nothing
// would run beside the loop, and the barrier stays.

// CHECK-LABEL: func.func @matmul$before_tile_loop
// CHECK:         "npu.matmul"
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
// CHECK:         scf.for
func.func @matmul$before_tile_loop(%x: memref<64x64xf32>, %w: memref<64x128xf32>,
                                   %y: memref<64x64xf32>, %z: memref<64x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %a = "npu.alloc"() : () -> memref<64x64xf32, 1>
  %t0 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<64x64xf32>, memref<64x64xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %r = "npu.alloc"() : () -> memref<64x64xf32, 1>
  "npu.matmul"(%a, %a, %r) {accumulate = false, activation = "none", dataflow = "ws"} : (memref<64x64xf32, 1>, memref<64x64xf32, 1>, memref<64x64xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.dealloc"(%a) : (memref<64x64xf32, 1>) -> ()
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
  return
}

// -----

// The tile loop loads into the relu's input tile (a buffer the relu reads
// while it runs): the loop may not pass, and the barrier stays.

// CHECK-LABEL: func.func @tile_loop_overwrites$stays
// CHECK:         "npu.activation"
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
// CHECK-NEXT:    "npu.alloc"
// CHECK-NEXT:    scf.for
func.func @tile_loop_overwrites$stays(%x: memref<64x64xf32>, %w: memref<64x128xf32>,
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
  "npu.barrier"() {engines = "compute"} : () -> ()
  %o = "npu.alloc"() : () -> memref<64x128xf32, 1>
  scf.for %i = %c0 to %c2 step %c1 {
    "npu.barrier"() {engines = "compute"} : () -> ()
    %off = arith.muli %i, %c64 : index
    %ws = memref.subview %w[0, %off] [64, 64] [1, 1] : memref<64x128xf32> to memref<64x64xf32, strided<[128, 1], offset: ?>>
    %t = "npu.dma_load"(%ws, %a) {channel = 1 : i64} : (memref<64x64xf32, strided<[128, 1], offset: ?>>, memref<64x64xf32, 1>) -> !npu.token
    "npu.wait"(%t) : (!npu.token) -> ()
    %os = memref.subview %o[0, %off] [64, 64] [1, 1] : memref<64x128xf32, 1> to memref<64x64xf32, strided<[128, 1], offset: ?>, 1>
    "npu.matmul"(%a, %a, %os) {accumulate = false, activation = "none", dataflow = "ws"} : (memref<64x64xf32, 1>, memref<64x64xf32, 1>, memref<64x64xf32, strided<[128, 1], offset: ?>, 1>) -> ()
  } {npu.tile_loop}
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t2 = "npu.dma_store"(%o, %z) {channel = 0 : i64} : (memref<64x128xf32, 1>, memref<64x128xf32>) -> !npu.token
  %t3 = "npu.dma_store"(%r, %y) {channel = 1 : i64} : (memref<64x64xf32, 1>, memref<64x64xf32>) -> !npu.token
  "npu.wait"(%t2, %t3) : (!npu.token, !npu.token) -> ()
  "npu.dealloc"(%o) : (memref<64x128xf32, 1>) -> ()
  "npu.dealloc"(%r) : (memref<64x64xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<64x64xf32, 1>) -> ()
  return
}
