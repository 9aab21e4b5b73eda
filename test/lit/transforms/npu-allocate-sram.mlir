// RUN: atvoss-opt %s -split-input-file -npu-allocate-sram --target='npu -sram-alignment=64' | FileCheck %s

// Offsets are aligned first-fit; a buffer released by npu.dealloc gives its
// space to later buffers.

// CHECK-LABEL: func.func @alloc$reuse
// CHECK:         "npu.alloc"() {offset = 0 : i64} : () -> memref<10xf16, 1>
// CHECK:         "npu.alloc"() {offset = 64 : i64} : () -> memref<64x64xf16, 1>
// CHECK:         "npu.alloc"() {offset = 0 : i64} : () -> memref<16xf32, 1>
// CHECK:         "npu.alloc"() {offset = 8256 : i64} : () -> memref<8xf16, 1>
func.func @alloc$reuse() {
  %a = "npu.alloc"() : () -> memref<10xf16, 1>
  %b = "npu.alloc"() : () -> memref<64x64xf16, 1>
  "npu.dealloc"(%a) : (memref<10xf16, 1>) -> ()
  %c = "npu.alloc"() : () -> memref<16xf32, 1>
  %d = "npu.alloc"() : () -> memref<8xf16, 1>
  "npu.dealloc"(%b) : (memref<64x64xf16, 1>) -> ()
  "npu.dealloc"(%c) : (memref<16xf32, 1>) -> ()
  "npu.dealloc"(%d) : (memref<8xf16, 1>) -> ()
  return
}

// -----

// A buffer allocated inside a loop body lives until the end of the body.

// CHECK-LABEL: func.func @alloc$loop_body
// CHECK:         "npu.alloc"() {offset = 0 : i64} : () -> memref<32xf32, 1>
// CHECK:         scf.for
// CHECK:           "npu.alloc"() {offset = 128 : i64} : () -> memref<32xf32, 1>
// CHECK:         "npu.alloc"() {offset = 128 : i64} : () -> memref<32xf32, 1>
func.func @alloc$loop_body(%n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = "npu.alloc"() : () -> memref<32xf32, 1>
  scf.for %i = %c0 to %n step %c1 {
    %b = "npu.alloc"() : () -> memref<32xf32, 1>
  }
  %c = "npu.alloc"() : () -> memref<32xf32, 1>
  return
}

// -----

// A dealloc does not wait for the compute engines: the fill of %a may still
// run when the DMA into %w starts (DMA engines do not wait for compute). So a
// buffer a DMA writes does not take the space of one freed since the last
// barrier on the compute engines: %w goes above %a's space. An op on the
// compute engines (the fill of %c) runs after the fill of %a and may take it;
// after a barrier, a DMA may too.

// CHECK-LABEL: func.func @alloc$dma_after_compute
// CHECK:         "npu.alloc"() {offset = 0 : i64} : () -> memref<16xf32, 1>
// CHECK:         "npu.dealloc"
// CHECK:         "npu.alloc"() {offset = 64 : i64} : () -> memref<16xf32, 1>
// CHECK-NEXT:    "npu.dma_load"
// CHECK:         "npu.alloc"() {offset = 0 : i64} : () -> memref<16xf32, 1>
// CHECK-NEXT:    "npu.fill"
// CHECK:         "npu.barrier"() {engines = "compute"}
// CHECK:         "npu.alloc"() {offset = 0 : i64} : () -> memref<16xf32, 1>
// CHECK-NEXT:    "npu.dma_load"
func.func @alloc$dma_after_compute(%x: memref<16xf32>) {
  %a = "npu.alloc"() : () -> memref<16xf32, 1>
  "npu.fill"(%a) {value = 1.0 : f64} : (memref<16xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<16xf32, 1>) -> ()
  %w = "npu.alloc"() : () -> memref<16xf32, 1>
  %t = "npu.dma_load"(%x, %w) {channel = 0 : i64} : (memref<16xf32>, memref<16xf32, 1>) -> !npu.token
  %c = "npu.alloc"() : () -> memref<16xf32, 1>
  "npu.fill"(%c) {value = 2.0 : f64} : (memref<16xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.dealloc"(%c) : (memref<16xf32, 1>) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  %v = "npu.alloc"() : () -> memref<16xf32, 1>
  %u = "npu.dma_load"(%x, %v) {channel = 1 : i64} : (memref<16xf32>, memref<16xf32, 1>) -> !npu.token
  "npu.wait"(%t, %u) : (!npu.token, !npu.token) -> ()
  "npu.dealloc"(%w) : (memref<16xf32, 1>) -> ()
  "npu.dealloc"(%v) : (memref<16xf32, 1>) -> ()
  return
}

// -----

// A tile's two buffers, the second written by a DMA only through the select
// that picks the buffer of the next tile: it is written by a DMA too, and does
// not take the space of %a, which the fill may still write.

// CHECK-LABEL: func.func @alloc$dma_through_select
// CHECK:         "npu.alloc"() {offset = 0 : i64} : () -> memref<16xf32, 1>
// CHECK:         "npu.dealloc"
// CHECK-NEXT:    "npu.alloc"() {offset = 64 : i64} : () -> memref<16xf32, 1>
// CHECK-NEXT:    "npu.alloc"() {offset = 128 : i64} : () -> memref<16xf32, 1>
func.func @alloc$dma_through_select(%x: memref<16xf32>, %second: i1) {
  %a = "npu.alloc"() : () -> memref<16xf32, 1>
  "npu.fill"(%a) {value = 1.0 : f64} : (memref<16xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<16xf32, 1>) -> ()
  %b0 = "npu.alloc"() : () -> memref<16xf32, 1>
  %b1 = "npu.alloc"() : () -> memref<16xf32, 1>
  %t0 = "npu.dma_load"(%x, %b0) {channel = 0 : i64} : (memref<16xf32>, memref<16xf32, 1>) -> !npu.token
  %next = arith.select %second, %b1, %b0 : memref<16xf32, 1>
  %t1 = "npu.dma_load"(%x, %next) {channel = 1 : i64} : (memref<16xf32>, memref<16xf32, 1>) -> !npu.token
  "npu.wait"(%t0, %t1) : (!npu.token, !npu.token) -> ()
  "npu.dealloc"(%b0) : (memref<16xf32, 1>) -> ()
  "npu.dealloc"(%b1) : (memref<16xf32, 1>) -> ()
  return
}

// -----

// The only space clear of the freed buffer is where npu-keep-in-sram keeps a
// tensor (offset 64, allocated while %w lives): a barrier goes before %w's
// alloc, which then takes the freed space. Only a fill used that space: the
// barrier waits for the vector unit alone.

// CHECK-LABEL: func.func @alloc$dma_waits_for_compute
// CHECK:         "npu.alloc"() {offset = 0 : i64} : () -> memref<16xf32, 1>
// CHECK:         "npu.dealloc"
// CHECK-NEXT:    "npu.barrier"() {engines = "vector"}
// CHECK-NEXT:    "npu.alloc"() {offset = 0 : i64} : () -> memref<16xf32, 1>
// CHECK-NEXT:    "npu.dma_load"
func.func @alloc$dma_waits_for_compute(%x: memref<16xf32>) {
  %a = "npu.alloc"() : () -> memref<16xf32, 1>
  "npu.fill"(%a) {value = 1.0 : f64} : (memref<16xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<16xf32, 1>) -> ()
  %w = "npu.alloc"() : () -> memref<16xf32, 1>
  %t = "npu.dma_load"(%x, %w) {channel = 0 : i64} : (memref<16xf32>, memref<16xf32, 1>) -> !npu.token
  %k = "npu.alloc"() {npu.resident, offset = 64 : i64} : () -> memref<16xf32, 1>
  "npu.wait"(%t) : (!npu.token) -> ()
  "npu.dealloc"(%k) : (memref<16xf32, 1>) -> ()
  "npu.dealloc"(%w) : (memref<16xf32, 1>) -> ()
  return
}

// -----

// As above, but a fill and a matmul (through the select that picks one of a
// tile's two buffers) used the freed space: the barrier waits for both units.

// CHECK-LABEL: func.func @alloc$dma_waits_for_both_units
// CHECK:         "npu.dealloc"
// CHECK-NEXT:    "npu.dealloc"
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
// CHECK-NEXT:    "npu.alloc"() {offset = 0 : i64} : () -> memref<4x4xf32, 1>
// CHECK-NEXT:    "npu.dma_load"
func.func @alloc$dma_waits_for_both_units(%x: memref<4x4xf32>, %first: i1) {
  %a = "npu.alloc"() : () -> memref<4x4xf32, 1>
  %b = "npu.alloc"() : () -> memref<4x4xf32, 1>
  "npu.fill"(%a) {value = 1.0 : f64} : (memref<4x4xf32, 1>) -> ()
  %p = arith.select %first, %a, %b : memref<4x4xf32, 1>
  "npu.matmul"(%b, %b, %p) {accumulate = false, activation = "none"} : (memref<4x4xf32, 1>, memref<4x4xf32, 1>, memref<4x4xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<4x4xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<4x4xf32, 1>) -> ()
  %w = "npu.alloc"() : () -> memref<4x4xf32, 1>
  %t = "npu.dma_load"(%x, %w) {channel = 0 : i64} : (memref<4x4xf32>, memref<4x4xf32, 1>) -> !npu.token
  %k = "npu.alloc"() {npu.resident, offset = 128 : i64} : () -> memref<4x4xf32, 1>
  "npu.wait"(%t) : (!npu.token) -> ()
  "npu.dealloc"(%k) : (memref<4x4xf32, 1>) -> ()
  "npu.dealloc"(%w) : (memref<4x4xf32, 1>) -> ()
  return
}

// -----

// A tile's buffers picked by a select are followed to the ops using them: a
// vector op alone used the freed buffers, so the barrier waits for the vector
// unit alone.

// CHECK-LABEL: func.func @alloc$select_followed
// CHECK:         "npu.barrier"() {engines = "vector"}
// CHECK-NEXT:    "npu.alloc"() {offset = 0 : i64} : () -> memref<4x4xf32, 1>
func.func @alloc$select_followed(%x: memref<4x4xf32>, %first: i1) {
  %a = "npu.alloc"() : () -> memref<4x4xf32, 1>
  %b = "npu.alloc"() : () -> memref<4x4xf32, 1>
  %p = arith.select %first, %a, %b : memref<4x4xf32, 1>
  "npu.fill"(%p) {value = 1.0 : f64} : (memref<4x4xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<4x4xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<4x4xf32, 1>) -> ()
  %w = "npu.alloc"() : () -> memref<4x4xf32, 1>
  %t = "npu.dma_load"(%x, %w) {channel = 0 : i64} : (memref<4x4xf32>, memref<4x4xf32, 1>) -> !npu.token
  %k = "npu.alloc"() {npu.resident, offset = 128 : i64} : () -> memref<4x4xf32, 1>
  "npu.wait"(%t) : (!npu.token) -> ()
  "npu.dealloc"(%k) : (memref<4x4xf32, 1>) -> ()
  "npu.dealloc"(%w) : (memref<4x4xf32, 1>) -> ()
  return
}

// -----

// After a barrier on the vector unit, the space of a buffer freed before it
// that only vector ops used is free for a DMA (%w takes %a's space); one a
// matmul used may still be read by it (%u goes clear of %b's).

// CHECK-LABEL: func.func @alloc$unit_barrier
// CHECK:         "npu.alloc"() {offset = 0 : i64} : () -> memref<16xf32, 1>
// CHECK:         "npu.alloc"() {offset = 64 : i64} : () -> memref<4x4xf32, 1>
// CHECK:         "npu.barrier"() {engines = "vector"}
// CHECK-NEXT:    "npu.alloc"() {offset = 0 : i64} : () -> memref<16xf32, 1>
// CHECK-NEXT:    "npu.dma_load"
// CHECK-NEXT:    "npu.alloc"() {offset = 192 : i64} : () -> memref<4x4xf32, 1>
// CHECK-NEXT:    "npu.dma_load"
func.func @alloc$unit_barrier(%x: memref<16xf32>, %y: memref<4x4xf32>) {
  %a = "npu.alloc"() : () -> memref<16xf32, 1>
  %b = "npu.alloc"() : () -> memref<4x4xf32, 1>
  %o = "npu.alloc"() : () -> memref<4x4xf32, 1>
  "npu.fill"(%a) {value = 1.0 : f64} : (memref<16xf32, 1>) -> ()
  "npu.matmul"(%b, %b, %o) {accumulate = false, activation = "none"} : (memref<4x4xf32, 1>, memref<4x4xf32, 1>, memref<4x4xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<16xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<4x4xf32, 1>) -> ()
  "npu.barrier"() {engines = "vector"} : () -> ()
  %w = "npu.alloc"() : () -> memref<16xf32, 1>
  %t = "npu.dma_load"(%x, %w) {channel = 0 : i64} : (memref<16xf32>, memref<16xf32, 1>) -> !npu.token
  %u = "npu.alloc"() : () -> memref<4x4xf32, 1>
  %s = "npu.dma_load"(%y, %u) {channel = 1 : i64} : (memref<4x4xf32>, memref<4x4xf32, 1>) -> !npu.token
  "npu.wait"(%t, %s) : (!npu.token, !npu.token) -> ()
  "npu.dealloc"(%u) : (memref<4x4xf32, 1>) -> ()
  "npu.dealloc"(%w) : (memref<16xf32, 1>) -> ()
  "npu.dealloc"(%o) : (memref<4x4xf32, 1>) -> ()
  return
}
