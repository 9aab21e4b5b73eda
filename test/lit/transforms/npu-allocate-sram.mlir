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
