// RUN: atvoss-opt %s -split-input-file -npu-convert-linalg-to-npu | FileCheck %s

// One rewrite pattern per op family turns linalg ops on SRAM tiles (memory
// space 1) into npu compute ops. A zero fill marked npu.init is the first step
// of the accumulation; the npu.activation epilogue moves onto the npu op.

// CHECK-LABEL: func.func @matmul$zero_init
// CHECK-NOT:     linalg.
// CHECK:         "npu.matmul"(%{{.*}}, %{{.*}}, %{{.*}}) {accumulate = false, activation = "relu"}
func.func @matmul$zero_init(%a: memref<64x32xf16, 1>, %b: memref<32x48xf16, 1>, %c: memref<64x48xf32, 1>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill {npu.init} ins(%zero : f32) outs(%c : memref<64x48xf32, 1>)
  linalg.matmul {npu.activation = "relu"} ins(%a, %b : memref<64x32xf16, 1>, memref<32x48xf16, 1>)
    outs(%c : memref<64x48xf32, 1>)
  return
}

// -----

// Without an initial value the matmul accumulates onto the tile; a non-zero
// initial value is filled first.

// CHECK-LABEL: func.func @matmul$accumulate
// CHECK:         "npu.fill"(%{{.*}}) {value = 2.500000e+00 : f64}
// CHECK-NEXT:    "npu.matmul"({{.*}}) {accumulate = true, activation = "none"}
// CHECK-NEXT:    "npu.matmul"({{.*}}) {accumulate = true, activation = "none"}
func.func @matmul$accumulate(%a: memref<64x32xf16, 1>, %b: memref<32x48xf16, 1>, %c: memref<64x48xf32, 1>) {
  %init = arith.constant 2.5 : f32
  linalg.fill {npu.init} ins(%init : f32) outs(%c : memref<64x48xf32, 1>)
  linalg.matmul ins(%a, %b : memref<64x32xf16, 1>, memref<32x48xf16, 1>) outs(%c : memref<64x48xf32, 1>)
  linalg.matmul ins(%a, %b : memref<64x32xf16, 1>, memref<32x48xf16, 1>) outs(%c : memref<64x48xf32, 1>)
  return
}

// -----

// A batch_matmul tile holds one batch: npu.matmul runs on its 2-D matrices.

// CHECK-LABEL: func.func @batch_matmul$one_batch
// CHECK:         memref.subview %{{.*}}[0, 0, 0] [1, 16, 8] [1, 1, 1] : memref<1x16x8xf32, 1> to memref<16x8xf32, strided<[8, 1]>, 1>
// CHECK:         "npu.matmul"({{.*}}) {accumulate = true, activation = "none"} : (memref<16x8xf32, strided<[8, 1]>, 1>, memref<8x4xf32, strided<[4, 1]>, 1>, memref<16x4xf32, strided<[4, 1]>, 1>)
func.func @batch_matmul$one_batch(%a: memref<1x16x8xf32, 1>, %b: memref<1x8x4xf32, 1>, %c: memref<1x16x4xf32, 1>) {
  linalg.batch_matmul ins(%a, %b : memref<1x16x8xf32, 1>, memref<1x8x4xf32, 1>) outs(%c : memref<1x16x4xf32, 1>)
  return
}

// -----

// CHECK-LABEL: func.func @conv$direct
// CHECK:         "npu.conv2d"({{.*}}) {accumulate = false, activation = "none", dilations = array<i64: 1, 1>, strides = array<i64: 2, 2>}
func.func @conv$direct(%x: memref<1x9x9x8xf16, 1>, %w: memref<3x3x8x16xf16, 1>, %y: memref<1x4x4x16xf32, 1>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill {npu.init} ins(%zero : f32) outs(%y : memref<1x4x4x16xf32, 1>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : memref<1x9x9x8xf16, 1>, memref<3x3x8x16xf16, 1>) outs(%y : memref<1x4x4x16xf32, 1>)
  return
}

// -----

// A 1x1 convolution as implicit GEMM: npu.matmul on the collapsed tiles.

// CHECK-LABEL: func.func @conv$implicit_gemm
// CHECK:         memref.collapse_shape %{{.*}} {{\[}}[0, 1, 2], [3]] : memref<1x4x4x8xf16, 1> into memref<16x8xf16, 1>
// CHECK:         "npu.matmul"({{.*}}) {accumulate = true, activation = "none"}
func.func @conv$implicit_gemm(%x: memref<1x4x4x8xf16, 1>, %w: memref<1x1x8x16xf16, 1>, %y: memref<1x4x4x16xf32, 1>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                            npu.conv_strategy = "implicit-gemm"}
    ins(%x, %w : memref<1x4x4x8xf16, 1>, memref<1x1x8x16xf16, 1>) outs(%y : memref<1x4x4x16xf32, 1>)
  return
}

// -----

// A broadcast bias marked npu.init becomes the depthwise op's bias.

// CHECK-LABEL: func.func @depthwise$bias
// CHECK-NOT:     linalg.broadcast
// CHECK:         "npu.depthwise_conv2d"(%arg0, %arg1, %arg3, %arg2)
func.func @depthwise$bias(%x: memref<1x6x6x8xf32, 1>, %w: memref<3x3x8xf32, 1>, %b: memref<8xf32, 1>, %y: memref<1x4x4x8xf32, 1>) {
  linalg.broadcast ins(%b : memref<8xf32, 1>) outs(%y : memref<1x4x4x8xf32, 1>) dimensions = [0, 1, 2] {npu.init}
  linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x6x6x8xf32, 1>, memref<3x3x8xf32, 1>) outs(%y : memref<1x4x4x8xf32, 1>)
  return
}

// -----

// A sum pool is one npu.pool2d of kind `sum`: no average scaled back by the
// window size (which rounds twice), no scratch buffer, no second pass.

// CHECK-LABEL: func.func @pool$sum
// CHECK-NOT:     "npu.alloc"
// CHECK:         "npu.pool2d"({{.*}}) {kind = "sum", strides = array<i64: 1, 1>, window = array<i64: 3, 3>}
// CHECK-NOT:     "npu.elementwise"
// CHECK:         return
func.func @pool$sum(%x: memref<1x6x6x8xf16, 1>, %y: memref<1x4x4x8xf16, 1>) {
  %zero = arith.constant 0.0 : f16
  %k = memref.alloc() : memref<3x3xf16>
  linalg.fill {npu.init} ins(%zero : f16) outs(%y : memref<1x4x4x8xf16, 1>)
  linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %k : memref<1x6x6x8xf16, 1>, memref<3x3xf16>) outs(%y : memref<1x4x4x8xf16, 1>)
  return
}

// -----

// An elementwise body becomes a chain of vector steps; a broadcast input is
// read at the output's rank, a scalar constant from a one-element buffer.

// CHECK-LABEL: func.func @elementwise$scale_shift
// CHECK-DAG:     %[[SHIFT:.*]] = "npu.alloc"() : () -> memref<1xf32, 1>
// CHECK-DAG:     "npu.fill"(%[[SHIFT]]) {value = 1.000000e+00 : f64}
// CHECK-DAG:     %[[TMP:.*]] = "npu.alloc"() : () -> memref<4x8xf32, 1>
// CHECK:         %[[ROW:.*]] = memref.subview %arg1[0, 0] [1, 8] [1, 1] : memref<1x8xf32, 1> to memref<1x8xf32, strided<[8, 1]>, 1>
// CHECK:         "npu.elementwise"(%arg0, %[[ROW]], %{{.*}}) {kind = "mul"}
// CHECK:         "npu.elementwise"(%{{.*}}, %[[SHIFT]], %arg2) {kind = "add"}
func.func @elementwise$scale_shift(%x: memref<4x8xf32, 1>, %scale: memref<1x8xf32, 1>, %y: memref<4x8xf32, 1>) {
  %row = memref.subview %scale[0, 0] [1, 8] [1, 1] : memref<1x8xf32, 1> to memref<8xf32, strided<[1]>, 1>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %row : memref<4x8xf32, 1>, memref<8xf32, strided<[1]>, 1>) outs(%y : memref<4x8xf32, 1>) {
  ^bb0(%a: f32, %s: f32, %o: f32):
    %one = arith.constant 1.0 : f32
    %m = arith.mulf %a, %s : f32
    %r = arith.addf %m, %one : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// CHECK-LABEL: func.func @transpose$and_fill
// CHECK:         "npu.transpose"(%arg0, %arg1) {permutation = array<i64: 1, 0>}
// CHECK:         "npu.fill"(%arg0) {value = -1.000000e+00 : f64}
func.func @transpose$and_fill(%x: memref<4x8xf16, 1>, %y: memref<8x4xf16, 1>) {
  %minus = arith.constant -1.0 : f16
  linalg.transpose ins(%x : memref<4x8xf16, 1>) outs(%y : memref<8x4xf16, 1>) permutation = [1, 0]
  linalg.fill ins(%minus : f16) outs(%x : memref<4x8xf16, 1>)
  return
}

// -----

// linalg on DRAM stays: the fallback engine runs it. npu ops read the source
// of a memref.cast.

// CHECK-LABEL: func.func @dram$left_alone
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%arg0 : memref<4xf32>)
// CHECK:         "npu.fill"(%arg1) {value = 0.000000e+00 : f64} : (memref<4xf32, 1>) -> ()
func.func @dram$left_alone(%x: memref<4xf32>, %s: memref<4xf32, 1>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%x : memref<4xf32>)
  %cast = memref.cast %s : memref<4xf32, 1> to memref<?xf32, 1>
  "npu.fill"(%cast) {value = 0.0 : f64} : (memref<?xf32, 1>) -> ()
  return
}
