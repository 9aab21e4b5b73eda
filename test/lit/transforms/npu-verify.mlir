// RUN: atvoss-opt %s -split-input-file -npu-verify | FileCheck %s

// A tiled matmul: DRAM tiles are DMA'd into SRAM buffers at fixed offsets,
// waited on, accumulated by the matrix unit and stored back.

// CHECK-LABEL: func.func @matmul$tiled
// CHECK:         %[[A:.*]] = "npu.alloc"() {offset = 0 : i64} : () -> memref<64x32xf16, 1>
// CHECK:         %[[B:.*]] = "npu.alloc"() {offset = 4096 : i64} : () -> memref<32x64xf16, 1>
// CHECK:         %[[ACC:.*]] = "npu.alloc"() {offset = 8192 : i64} : () -> memref<64x64xf32, 1>
// CHECK:         scf.for
// CHECK:           "npu.fill"(%[[ACC]]) {value = 0.000000e+00 : f64}
// CHECK:           scf.for
// CHECK:             %[[TA:.*]] = "npu.dma_load"(%{{.*}}, %[[A]]) {channel = 0 : i64}
// CHECK:             %[[TB:.*]] = "npu.dma_load"(%{{.*}}, %[[B]]) {channel = 1 : i64}
// CHECK:             "npu.wait"(%[[TA]], %[[TB]]) : (!npu.token, !npu.token) -> ()
// CHECK:             "npu.matmul"(%[[A]], %[[B]], %[[ACC]]) {accumulate = true, activation = "none"}
// CHECK:           %[[TC:.*]] = "npu.dma_store"(%[[ACC]], %{{.*}}) {channel = 0 : i64}
// CHECK:           "npu.wait"(%[[TC]])
// CHECK:         "npu.dealloc"(%[[ACC]])
func.func @matmul$tiled(%A: memref<128x64xf16>, %B: memref<64x128xf16>, %C: memref<128x128xf32>) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %a = "npu.alloc"() {offset = 0 : i64} : () -> memref<64x32xf16, 1>
  %b = "npu.alloc"() {offset = 4096 : i64} : () -> memref<32x64xf16, 1>
  %acc = "npu.alloc"() {offset = 8192 : i64} : () -> memref<64x64xf32, 1>
  scf.for %i = %c0 to %c128 step %c64 {
    scf.for %j = %c0 to %c128 step %c64 {
      "npu.fill"(%acc) {value = 0.0 : f64} : (memref<64x64xf32, 1>) -> ()
      scf.for %k = %c0 to %c64 step %c32 {
        %sa = memref.subview %A[%i, %k] [64, 32] [1, 1] : memref<128x64xf16> to memref<64x32xf16, strided<[64, 1], offset: ?>>
        %sb = memref.subview %B[%k, %j] [32, 64] [1, 1] : memref<64x128xf16> to memref<32x64xf16, strided<[128, 1], offset: ?>>
        // The previous step's matmul still reads %a and %b.
        "npu.barrier"() : () -> ()
        %ta = "npu.dma_load"(%sa, %a) {channel = 0 : i64} : (memref<64x32xf16, strided<[64, 1], offset: ?>>, memref<64x32xf16, 1>) -> !npu.token
        %tb = "npu.dma_load"(%sb, %b) {channel = 1 : i64} : (memref<32x64xf16, strided<[128, 1], offset: ?>>, memref<32x64xf16, 1>) -> !npu.token
        "npu.wait"(%ta, %tb) : (!npu.token, !npu.token) -> ()
        "npu.matmul"(%a, %b, %acc) {accumulate = true, activation = "none"} : (memref<64x32xf16, 1>, memref<32x64xf16, 1>, memref<64x64xf32, 1>) -> ()
      }
      "npu.barrier"() : () -> ()
      %sc = memref.subview %C[%i, %j] [64, 64] [1, 1] : memref<128x128xf32> to memref<64x64xf32, strided<[128, 1], offset: ?>>
      %tc = "npu.dma_store"(%acc, %sc) {channel = 0 : i64} : (memref<64x64xf32, 1>, memref<64x64xf32, strided<[128, 1], offset: ?>>) -> !npu.token
      "npu.wait"(%tc) : (!npu.token) -> ()
    }
  }
  "npu.dealloc"(%acc) : (memref<64x64xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<32x64xf16, 1>) -> ()
  "npu.dealloc"(%a) : (memref<64x32xf16, 1>) -> ()
  return
}

// -----

// Double buffering: the load of the next row tile is issued in one iteration,
// carried to the next through an iter_arg token and waited on at its top.

// CHECK-LABEL: func.func @matmul$double_buffered
// CHECK:         %[[A0:.*]] = "npu.alloc"() {offset = 4096 : i64}
// CHECK:         %[[T0:.*]] = "npu.dma_load"(%{{.*}}, %[[A0]])
// CHECK:         %[[R:.*]] = scf.for %{{.*}} iter_args(%[[T:.*]] = %[[T0]]) -> (!npu.token)
// CHECK:           "npu.wait"(%[[T]])
// CHECK:           "npu.matmul"(%[[A0]],
// CHECK:           %[[NEXT:.*]] = "npu.dma_load"(%{{.*}}, %[[A0]])
// CHECK:           scf.yield %[[NEXT]] : !npu.token
// CHECK:         "npu.wait"(%[[R]])
func.func @matmul$double_buffered(%A: memref<256x32xf16>, %W: memref<32x64xf16>, %C: memref<256x64xf32>) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c192 = arith.constant 192 : index
  %c256 = arith.constant 256 : index
  %w = "npu.alloc"() {offset = 0 : i64} : () -> memref<32x64xf16, 1>
  %a0 = "npu.alloc"() {offset = 4096 : i64} : () -> memref<64x32xf16, 1>
  %a1 = "npu.alloc"() {offset = 8192 : i64} : () -> memref<64x32xf16, 1>
  %out0 = "npu.alloc"() {offset = 12288 : i64} : () -> memref<64x64xf32, 1>
  %out1 = "npu.alloc"() {offset = 28672 : i64} : () -> memref<64x64xf32, 1>
  %tw = "npu.dma_load"(%W, %w) {channel = 1 : i64} : (memref<32x64xf16>, memref<32x64xf16, 1>) -> !npu.token
  %first = memref.subview %A[0, 0] [64, 32] [1, 1] : memref<256x32xf16> to memref<64x32xf16, strided<[32, 1]>>
  %t0 = "npu.dma_load"(%first, %a0) {channel = 0 : i64} : (memref<64x32xf16, strided<[32, 1]>>, memref<64x32xf16, 1>) -> !npu.token
  "npu.wait"(%tw) : (!npu.token) -> ()
  %last = scf.for %i = %c0 to %c256 step %c128 iter_args(%t = %t0) -> (!npu.token) {
    %i1 = arith.addi %i, %c64 : index
    %s1 = memref.subview %A[%i1, 0] [64, 32] [1, 1] : memref<256x32xf16> to memref<64x32xf16, strided<[32, 1], offset: ?>>
    %t1 = "npu.dma_load"(%s1, %a1) {channel = 1 : i64} : (memref<64x32xf16, strided<[32, 1], offset: ?>>, memref<64x32xf16, 1>) -> !npu.token
    "npu.wait"(%t) : (!npu.token) -> ()
    "npu.matmul"(%a0, %w, %out0) {accumulate = false, activation = "none"} : (memref<64x32xf16, 1>, memref<32x64xf16, 1>, memref<64x64xf32, 1>) -> ()
    // DMA engines do not wait for compute: the store of %out0 and the reload
    // of %a0 come after a barrier.
    "npu.barrier"() : () -> ()
    %o0 = memref.subview %C[%i, 0] [64, 64] [1, 1] : memref<256x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
    %ts0 = "npu.dma_store"(%out0, %o0) {channel = 0 : i64} : (memref<64x64xf32, 1>, memref<64x64xf32, strided<[64, 1], offset: ?>>) -> !npu.token
    "npu.wait"(%t1) : (!npu.token) -> ()
    // The last iteration reloads the last tile rather than reading past A.
    %i2 = arith.addi %i, %c128 : index
    %next = arith.minui %i2, %c192 : index
    %s2 = memref.subview %A[%next, 0] [64, 32] [1, 1] : memref<256x32xf16> to memref<64x32xf16, strided<[32, 1], offset: ?>>
    %t2 = "npu.dma_load"(%s2, %a0) {channel = 0 : i64} : (memref<64x32xf16, strided<[32, 1], offset: ?>>, memref<64x32xf16, 1>) -> !npu.token
    "npu.matmul"(%a1, %w, %out1) {accumulate = false, activation = "none"} : (memref<64x32xf16, 1>, memref<32x64xf16, 1>, memref<64x64xf32, 1>) -> ()
    "npu.barrier"() : () -> ()
    %o1 = memref.subview %C[%i1, 0] [64, 64] [1, 1] : memref<256x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
    %ts1 = "npu.dma_store"(%out1, %o1) {channel = 1 : i64} : (memref<64x64xf32, 1>, memref<64x64xf32, strided<[64, 1], offset: ?>>) -> !npu.token
    "npu.wait"(%ts0, %ts1) : (!npu.token, !npu.token) -> ()
    scf.yield %t2 : !npu.token
  }
  "npu.wait"(%last) : (!npu.token) -> ()
  "npu.dealloc"(%out1) : (memref<64x64xf32, 1>) -> ()
  "npu.dealloc"(%out0) : (memref<64x64xf32, 1>) -> ()
  "npu.dealloc"(%a1) : (memref<64x32xf16, 1>) -> ()
  "npu.dealloc"(%a0) : (memref<64x32xf16, 1>) -> ()
  "npu.dealloc"(%w) : (memref<32x64xf16, 1>) -> ()
  return
}

// -----

// A barrier completes every DMA issued before it; a buffer released by
// npu.dealloc may be reused at the same offset.

// CHECK-LABEL: func.func @barrier$then_reuse
// CHECK:         %[[T:.*]] = "npu.dma_load"
// CHECK:         "npu.barrier"() : () -> ()
// CHECK:         "npu.activation"
// CHECK:         "npu.dealloc"
// CHECK:         "npu.alloc"() {offset = 0 : i64} : () -> memref<16x16xf32, 1>
// CHECK:         "npu.wait"(%[[T]], %{{.*}})
func.func @barrier$then_reuse(%src: memref<8x64xf16>, %dst: memref<16x16xf32>) {
  %a = "npu.alloc"() {offset = 0 : i64} : () -> memref<8x64xf16, 1>
  %b = "npu.alloc"() {offset = 1024 : i64} : () -> memref<8x64xf16, 1>
  %t = "npu.dma_load"(%src, %a) {channel = 0 : i64} : (memref<8x64xf16>, memref<8x64xf16, 1>) -> !npu.token
  "npu.barrier"() : () -> ()
  "npu.activation"(%a, %b) {kind = "clip", clip_min = 0.0 : f64, clip_max = 6.0 : f64} : (memref<8x64xf16, 1>, memref<8x64xf16, 1>) -> ()
  "npu.dealloc"(%a) : (memref<8x64xf16, 1>) -> ()
  %c = "npu.alloc"() {offset = 0 : i64} : () -> memref<16x16xf32, 1>
  "npu.fill"(%c) {value = 1.0 : f64} : (memref<16x16xf32, 1>) -> ()
  "npu.barrier"() : () -> ()
  %s = "npu.dma_store"(%c, %dst) {channel = 1 : i64} : (memref<16x16xf32, 1>, memref<16x16xf32>) -> !npu.token
  "npu.wait"(%t, %s) : (!npu.token, !npu.token) -> ()
  "npu.dealloc"(%c) : (memref<16x16xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<8x64xf16, 1>) -> ()
  return
}

// -----

// A vector barrier waits for the requantisation issued before it, and so for
// the matmul whose int32 result it reads: its input tile may be reloaded and
// the int8 tile stored. The next matmul (into another accumulator) runs on.

// CHECK-LABEL: func.func @barrier$vector_after_requantize
// CHECK:         "npu.matmul"
// CHECK:         "npu.requantize"
// CHECK:         "npu.matmul"
// CHECK:         "npu.barrier"() {engines = "vector"} : () -> ()
// CHECK:         "npu.dma_load"
// CHECK:         "npu.dma_store"
func.func @barrier$vector_after_requantize(%src: memref<64x32xi8>, %dst: memref<64x64xi8>, %b: memref<32x64xi8, 1>, %next: memref<64x32xi8, 1>) {
  %a = "npu.alloc"() : () -> memref<64x32xi8, 1>
  %acc = "npu.alloc"() : () -> memref<64x64xi32, 1>
  %acc2 = "npu.alloc"() : () -> memref<64x64xi32, 1>
  %o = "npu.alloc"() : () -> memref<64x64xi8, 1>
  %t0 = "npu.dma_load"(%src, %a) {channel = 0 : i64} : (memref<64x32xi8>, memref<64x32xi8, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  "npu.matmul"(%a, %b, %acc) {accumulate = false, activation = "none"} : (memref<64x32xi8, 1>, memref<32x64xi8, 1>, memref<64x64xi32, 1>) -> ()
  "npu.requantize"(%acc, %o) {scale = 1.0 : f64, zero_point = 0 : i64} : (memref<64x64xi32, 1>, memref<64x64xi8, 1>) -> ()
  "npu.matmul"(%next, %b, %acc2) {accumulate = false, activation = "none"} : (memref<64x32xi8, 1>, memref<32x64xi8, 1>, memref<64x64xi32, 1>) -> ()
  "npu.barrier"() {engines = "vector"} : () -> ()
  %t1 = "npu.dma_load"(%src, %a) {channel = 1 : i64} : (memref<64x32xi8>, memref<64x32xi8, 1>) -> !npu.token
  %t2 = "npu.dma_store"(%o, %dst) {channel = 0 : i64} : (memref<64x64xi8, 1>, memref<64x64xi8>) -> !npu.token
  "npu.wait"(%t1, %t2) : (!npu.token, !npu.token) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.dealloc"(%o) : (memref<64x64xi8, 1>) -> ()
  "npu.dealloc"(%acc2) : (memref<64x64xi32, 1>) -> ()
  "npu.dealloc"(%acc) : (memref<64x64xi32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<64x32xi8, 1>) -> ()
  return
}

// -----

// A matrix barrier waits for the matmul issued before it, and so for the
// im2col whose columns it reads: the image tile may be reloaded while the
// requantisation runs on.

// CHECK-LABEL: func.func @barrier$matrix_after_im2col
// CHECK:         "npu.im2col"
// CHECK:         "npu.matmul"
// CHECK:         "npu.requantize"
// CHECK:         "npu.barrier"() {engines = "matrix"} : () -> ()
// CHECK:         "npu.dma_load"
func.func @barrier$matrix_after_im2col(%src: memref<1x8x8x32xi8>, %w: memref<288x64xi8, 1>, %cols: memref<36x288xi8, 1>, %acc: memref<36x64xi32, 1>, %o: memref<36x64xi8, 1>) {
  %x = "npu.alloc"() : () -> memref<1x8x8x32xi8, 1>
  %t0 = "npu.dma_load"(%src, %x) {channel = 0 : i64} : (memref<1x8x8x32xi8>, memref<1x8x8x32xi8, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  "npu.im2col"(%x, %cols) {window = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (memref<1x8x8x32xi8, 1>, memref<36x288xi8, 1>) -> ()
  "npu.matmul"(%cols, %w, %acc) {accumulate = false, activation = "none"} : (memref<36x288xi8, 1>, memref<288x64xi8, 1>, memref<36x64xi32, 1>) -> ()
  "npu.requantize"(%acc, %o) {scale = 1.0 : f64, zero_point = 0 : i64} : (memref<36x64xi32, 1>, memref<36x64xi8, 1>) -> ()
  "npu.barrier"() {engines = "matrix"} : () -> ()
  %t1 = "npu.dma_load"(%src, %x) {channel = 1 : i64} : (memref<1x8x8x32xi8>, memref<1x8x8x32xi8, 1>) -> !npu.token
  "npu.wait"(%t1) : (!npu.token) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.dealloc"(%x) : (memref<1x8x8x32xi8, 1>) -> ()
  return
}

// -----

// The vector-unit ops with shapes that follow their rules.

// CHECK-LABEL: func.func @vector_unit$shapes
// CHECK:         "npu.depthwise_conv2d"
// CHECK:         "npu.pool2d"
// CHECK:         "npu.elementwise"
// CHECK:         "npu.transpose"
// CHECK:         "npu.im2col"
// CHECK:         "npu.conv2d"
// CHECK:         "npu.requantize"
func.func @vector_unit$shapes(%in: memref<1x17x17x32xf16, 1>, %dw: memref<3x3x32xf16, 1>, %dw_out: memref<1x8x8x32xf16, 1>,
                              %pooled: memref<1x3x3x32xf16, 1>, %row: memref<32xf16, 1>, %sum: memref<1x8x8x32xf16, 1>,
                              %nchw: memref<1x32x8x8xf16, 1>, %cols: memref<36x288xf16, 1>,
                              %q_in: memref<1x10x10x8xi8, 1>, %q_w: memref<3x3x8x16xi8, 1>, %q_acc: memref<1x4x4x16xi32, 1>,
                              %q_out: memref<1x4x4x16xi8, 1>, %bias: memref<32xf16, 1>) {
  "npu.depthwise_conv2d"(%in, %dw, %dw_out, %bias) {activation = "relu6", strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>} : (memref<1x17x17x32xf16, 1>, memref<3x3x32xf16, 1>, memref<1x8x8x32xf16, 1>, memref<32xf16, 1>) -> ()
  "npu.pool2d"(%dw_out, %pooled) {kind = "max", window = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (memref<1x8x8x32xf16, 1>, memref<1x3x3x32xf16, 1>) -> ()
  "npu.elementwise"(%dw_out, %row, %sum) {kind = "add"} : (memref<1x8x8x32xf16, 1>, memref<32xf16, 1>, memref<1x8x8x32xf16, 1>) -> ()
  "npu.transpose"(%sum, %nchw) {permutation = array<i64: 0, 3, 1, 2>} : (memref<1x8x8x32xf16, 1>, memref<1x32x8x8xf16, 1>) -> ()
  "npu.im2col"(%sum, %cols) {window = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (memref<1x8x8x32xf16, 1>, memref<36x288xf16, 1>) -> ()
  "npu.conv2d"(%q_in, %q_w, %q_acc) {accumulate = false, activation = "none", strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>} : (memref<1x10x10x8xi8, 1>, memref<3x3x8x16xi8, 1>, memref<1x4x4x16xi32, 1>) -> ()
  "npu.requantize"(%q_acc, %q_out) {scale = 0.0125 : f64, zero_point = 3 : i64} : (memref<1x4x4x16xi32, 1>, memref<1x4x4x16xi8, 1>) -> ()
  return
}

// -----

// Ops whose Python view has a `name` attribute (memref.get_global) are walked
// by their op name like any other.

// CHECK-LABEL: func.func @weights$from_a_global
// CHECK:         memref.get_global @weights
memref.global "private" constant @weights : memref<4x8xf16> = dense<1.0>
func.func @weights$from_a_global() {
  %w = memref.get_global @weights : memref<4x8xf16>
  %view = memref.subview %w[0, 0] [2, 8] [1, 1] : memref<4x8xf16> to memref<2x8xf16, strided<[8, 1]>>
  %buffer = "npu.alloc"() {offset = 0 : i64} : () -> memref<2x8xf16, 1>
  %t = "npu.dma_load"(%view, %buffer) {channel = 0 : i64} : (memref<2x8xf16, strided<[8, 1]>>, memref<2x8xf16, 1>) -> !npu.token
  "npu.wait"(%t) : (!npu.token) -> ()
  "npu.dealloc"(%buffer) : (memref<2x8xf16, 1>) -> ()
  return
}
