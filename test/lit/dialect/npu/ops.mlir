// RUN: atvoss-opt %s | atvoss-opt | FileCheck %s
// RUN: atvoss-opt %s --mlir-print-op-generic | atvoss-opt | FileCheck %s

// Every npu op, parsed, printed and parsed again.

// CHECK-LABEL: func.func @buffers_and_dma
// CHECK-SAME:    (%[[SRC:.*]]: memref<128x64xf16>, %[[DST:.*]]: memref<128x64xf16>)
func.func @buffers_and_dma(%src: memref<128x64xf16>, %dst: memref<128x64xf16>) {
  // CHECK: %[[BUF:.*]] = "npu.alloc"() {offset = 0 : i64} : () -> memref<32x64xf16, 1>
  %buf = "npu.alloc"() {offset = 0 : i64} : () -> memref<32x64xf16, 1>
  // CHECK: "npu.alloc"() : () -> memref<16xf32, 1>
  %unplaced = "npu.alloc"() : () -> memref<16xf32, 1>
  %view = memref.subview %src[32, 0] [32, 64] [1, 1]
      : memref<128x64xf16> to memref<32x64xf16, strided<[64, 1], offset: 2048>>
  // CHECK: %[[T0:.*]] = "npu.dma_load"(%{{.*}}, %[[BUF]]) {channel = 0 : i64}
  // CHECK-SAME: -> !npu.token
  %t0 = "npu.dma_load"(%view, %buf) {channel = 0 : i64}
      : (memref<32x64xf16, strided<[64, 1], offset: 2048>>, memref<32x64xf16, 1>) -> !npu.token
  // CHECK: "npu.wait"(%[[T0]]) : (!npu.token) -> ()
  "npu.wait"(%t0) : (!npu.token) -> ()
  %out = memref.subview %dst[0, 0] [32, 64] [1, 1]
      : memref<128x64xf16> to memref<32x64xf16, strided<[64, 1]>>
  // CHECK: %[[T1:.*]] = "npu.dma_store"(%[[BUF]], %{{.*}}) {channel = 1 : i64}
  %t1 = "npu.dma_store"(%buf, %out) {channel = 1 : i64}
      : (memref<32x64xf16, 1>, memref<32x64xf16, strided<[64, 1]>>) -> !npu.token
  // CHECK: "npu.wait"(%[[T1]], %[[T1]]) : (!npu.token, !npu.token) -> ()
  "npu.wait"(%t1, %t1) : (!npu.token, !npu.token) -> ()
  // CHECK: "npu.barrier"() : () -> ()
  "npu.barrier"() : () -> ()
  // CHECK: "npu.dealloc"(%[[BUF]]) : (memref<32x64xf16, 1>) -> ()
  "npu.dealloc"(%buf) : (memref<32x64xf16, 1>) -> ()
  "npu.dealloc"(%unplaced) : (memref<16xf32, 1>) -> ()
  return
}

// CHECK-LABEL: func.func @matrix_unit
func.func @matrix_unit(%a: memref<64x32xf16, 1>, %b: memref<32x64xf16, 1>,
                       %c: memref<64x64xf32, 1>, %bias: memref<64xf32, 1>,
                       %in: memref<1x10x10x16xf16, 1>, %w: memref<3x3x16x32xf16, 1>,
                       %o: memref<1x8x8x32xf32, 1>) {
  // CHECK: "npu.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) {accumulate = true, activation = "none"}
  "npu.matmul"(%a, %b, %c) {accumulate = true, activation = "none"}
      : (memref<64x32xf16, 1>, memref<32x64xf16, 1>, memref<64x64xf32, 1>) -> ()
  // CHECK: "npu.matmul"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {accumulate = false, activation = "clip", clip_max = 6.000000e+00 : f64, clip_min = 0.000000e+00 : f64}
  "npu.matmul"(%a, %b, %c, %bias) {accumulate = false, activation = "clip", clip_min = 0.0 : f64, clip_max = 6.0 : f64}
      : (memref<64x32xf16, 1>, memref<32x64xf16, 1>, memref<64x64xf32, 1>, memref<64xf32, 1>) -> ()
  // CHECK: "npu.conv2d"(%{{.*}}, %{{.*}}, %{{.*}}) {accumulate = false, activation = "relu", dilations = array<i64: 1, 1>, strides = array<i64: 1, 1>}
  "npu.conv2d"(%in, %w, %o) {accumulate = false, activation = "relu",
                             strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>}
      : (memref<1x10x10x16xf16, 1>, memref<3x3x16x32xf16, 1>, memref<1x8x8x32xf32, 1>) -> ()
  return
}

// CHECK-LABEL: func.func @vector_unit
func.func @vector_unit(%x: memref<1x17x17x32xf16, 1>, %dw: memref<3x3x32xf16, 1>,
                       %y: memref<1x8x8x32xf16, 1>, %e0: memref<8x64xf16, 1>,
                       %e1: memref<64xf16, 1>, %t: memref<64x8xf16, 1>,
                       %cols: memref<225x288xf16, 1>, %acc: memref<8x64xi32, 1>,
                       %q: memref<8x64xi8, 1>) {
  // CHECK: "npu.depthwise_conv2d"
  // CHECK-SAME: activation = "relu6", dilations = array<i64: 1, 1>, strides = array<i64: 2, 2>
  "npu.depthwise_conv2d"(%x, %dw, %y) {activation = "relu6",
                                       strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>}
      : (memref<1x17x17x32xf16, 1>, memref<3x3x32xf16, 1>, memref<1x8x8x32xf16, 1>) -> ()
  // CHECK: "npu.elementwise"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "max"}
  "npu.elementwise"(%e0, %e1, %e0) {kind = "max"}
      : (memref<8x64xf16, 1>, memref<64xf16, 1>, memref<8x64xf16, 1>) -> ()
  // CHECK: "npu.activation"(%{{.*}}, %{{.*}}) {kind = "gelu"}
  "npu.activation"(%e0, %e0) {kind = "gelu"} : (memref<8x64xf16, 1>, memref<8x64xf16, 1>) -> ()
  // CHECK: "npu.pool2d"(%{{.*}}, %{{.*}}) {kind = "avg", strides = array<i64: 2, 2>, window = array<i64: 3, 3>}
  "npu.pool2d"(%x, %y) {kind = "avg", window = array<i64: 3, 3>, strides = array<i64: 2, 2>}
      : (memref<1x17x17x32xf16, 1>, memref<1x8x8x32xf16, 1>) -> ()
  // CHECK: "npu.pool2d"(%{{.*}}, %{{.*}}) {kind = "sum", strides = array<i64: 2, 2>, window = array<i64: 3, 3>}
  "npu.pool2d"(%x, %y) {kind = "sum", window = array<i64: 3, 3>, strides = array<i64: 2, 2>}
      : (memref<1x17x17x32xf16, 1>, memref<1x8x8x32xf16, 1>) -> ()
  // CHECK: "npu.transpose"(%{{.*}}, %{{.*}}) {permutation = array<i64: 1, 0>}
  "npu.transpose"(%e0, %t) {permutation = array<i64: 1, 0>}
      : (memref<8x64xf16, 1>, memref<64x8xf16, 1>) -> ()
  // CHECK: "npu.im2col"(%{{.*}}, %{{.*}}) {dilations = array<i64: 1, 1>, strides = array<i64: 1, 1>, window = array<i64: 3, 3>}
  "npu.im2col"(%x, %cols) {window = array<i64: 3, 3>, strides = array<i64: 1, 1>,
                           dilations = array<i64: 1, 1>}
      : (memref<1x17x17x32xf16, 1>, memref<225x288xf16, 1>) -> ()
  // CHECK: "npu.fill"(%{{.*}}) {value = 0.000000e+00 : f64} : (memref<8x64xi32, 1>) -> ()
  "npu.fill"(%acc) {value = 0.0 : f64} : (memref<8x64xi32, 1>) -> ()
  // CHECK: "npu.requantize"(%{{.*}}, %{{.*}}) {scale = 1.250000e-02 : f64, zero_point = 3 : i64}
  "npu.requantize"(%acc, %q) {scale = 0.0125 : f64, zero_point = 3 : i64}
      : (memref<8x64xi32, 1>, memref<8x64xi8, 1>) -> ()
  %scales = "npu.alloc"() {offset = 8192 : i64} : () -> memref<1x64xf32, 1>
  // CHECK: "npu.requantize"(%{{.*}}, %{{.*}}, %{{.*}}) {scale = 1.000000e+00 : f64, zero_point = -128 : i64}
  "npu.requantize"(%acc, %q, %scales) {scale = 1.0 : f64, zero_point = -128 : i64}
      : (memref<8x64xi32, 1>, memref<8x64xi8, 1>, memref<1x64xf32, 1>) -> ()
  %xf = "npu.alloc"() {offset = 8448 : i64} : () -> memref<8x64xf32, 1>
  // CHECK: "npu.dequantize"(%{{.*}}, %{{.*}}) {scale = 5.000000e-01 : f64, zero_point = 3 : i64}
  "npu.dequantize"(%q, %xf) {scale = 0.5 : f64, zero_point = 3 : i64}
      : (memref<8x64xi8, 1>, memref<8x64xf32, 1>) -> ()
  // CHECK: "npu.requantize"(%{{.*}}, %{{.*}}) {divide = true, scale = 5.000000e-01 : f64, zero_point = 3 : i64}
  "npu.requantize"(%xf, %q) {divide = true, scale = 0.5 : f64, zero_point = 3 : i64}
      : (memref<8x64xf32, 1>, memref<8x64xi8, 1>) -> ()
  // CHECK: "npu.requantize"(%{{.*}}, %{{.*}}) {divide = true, offset = 1.200000e+02 : f64, scale = 5.000000e-01 : f64, zero_point = -128 : i64}
  "npu.requantize"(%xf, %q) {divide = true, offset = 120.0 : f64, scale = 0.5 : f64, zero_point = -128 : i64}
      : (memref<8x64xf32, 1>, memref<8x64xi8, 1>) -> ()
  // CHECK: "npu.quantized_add"(%{{.*}}, %{{.*}}, %{{.*}}) {input_shift = 128 : i64, lhs_scale = 5.000000e-01 : f64, offset = 3.000000e+00 : f64, rhs_scale = 2.500000e-01 : f64, zero_point = -128 : i64}
  "npu.quantized_add"(%q, %q, %q) {lhs_scale = 0.5 : f64, rhs_scale = 0.25 : f64, offset = 3.0 : f64, input_shift = 128 : i64, zero_point = -128 : i64}
      : (memref<8x64xi8, 1>, memref<8x64xi8, 1>, memref<8x64xi8, 1>) -> ()
  return
}
