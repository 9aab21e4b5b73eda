// RUN: atvoss-opt %s -split-input-file -npu-convert-copies | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-convert-copies
// RUN: atvoss-opt %s -split-input-file --npu-pipeline | FileCheck %s --check-prefix=PIPELINE

// The slices of a concatenation, as bufferization writes them: each copy
// becomes a linalg.copy, which the pipeline tiles through SRAM with DMA.

// CHECK-LABEL: func.func @concat
// CHECK-NOT:     memref.copy
// CHECK:         linalg.copy {{.*}}ins(%arg0 : memref<1x32x28x28xf32>) outs(%{{.*}} : memref<1x32x28x28xf32, strided<[37632, 784, 28, 1]>>)
// CHECK:         linalg.copy {{.*}}ins(%arg1 : memref<1x16x28x28xf32>) outs(%{{.*}} : memref<1x16x28x28xf32, strided<[37632, 784, 28, 1], offset: 25088>>)
// PIPELINE-LABEL: func.func @concat
// PIPELINE-NOT:   memref.copy
// PIPELINE:       "npu.dma_load"
// PIPELINE:       "npu.dma_store"
func.func @concat(%a: memref<1x32x28x28xf32>, %b: memref<1x16x28x28xf32>) -> memref<1x48x28x28xf32> {
  %alloc = memref.alloc() : memref<1x48x28x28xf32>
  %s0 = memref.subview %alloc[0, 0, 0, 0] [1, 32, 28, 28] [1, 1, 1, 1] : memref<1x48x28x28xf32> to memref<1x32x28x28xf32, strided<[37632, 784, 28, 1]>>
  memref.copy %a, %s0 : memref<1x32x28x28xf32> to memref<1x32x28x28xf32, strided<[37632, 784, 28, 1]>>
  %s1 = memref.subview %alloc[0, 32, 0, 0] [1, 16, 28, 28] [1, 1, 1, 1] : memref<1x48x28x28xf32> to memref<1x16x28x28xf32, strided<[37632, 784, 28, 1], offset: 25088>>
  memref.copy %b, %s1 : memref<1x16x28x28xf32> to memref<1x16x28x28xf32, strided<[37632, 784, 28, 1], offset: 25088>>
  return %alloc : memref<1x48x28x28xf32>
}

// -----

// A copy of a dynamically shaped buffer stays on the fallback engine.

// CHECK-LABEL: func.func @copy$dynamic
// CHECK:         memref.copy
func.func @copy$dynamic(%a: memref<?x8xf32>, %b: memref<?x8xf32>) {
  // expected-remark @below {{'memref.copy' stays on the fallback engine: its source has a dynamic shape}}
  memref.copy %a, %b : memref<?x8xf32> to memref<?x8xf32>
  return
}

// -----

// The copy into a padded buffer that a convolution reads stays: the conv's
// recipe loads the source directly and writes the padding in SRAM.

// CHECK-LABEL: func.func @conv$padded_input
// CHECK:         memref.copy
// CHECK-NOT:     linalg.copy
func.func @conv$padded_input(%x: memref<1x8x8x4xf32>, %w: memref<3x3x4x8xf32>, %y: memref<1x8x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %padded = memref.alloc() : memref<1x10x10x4xf32>
  linalg.fill ins(%zero : f32) outs(%padded : memref<1x10x10x4xf32>)
  %interior = memref.subview %padded[0, 1, 1, 0] [1, 8, 8, 4] [1, 1, 1, 1] : memref<1x10x10x4xf32> to memref<1x8x8x4xf32, strided<[400, 40, 4, 1], offset: 44>>
  memref.copy %x, %interior : memref<1x8x8x4xf32> to memref<1x8x8x4xf32, strided<[400, 40, 4, 1], offset: 44>>
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %w : memref<1x10x10x4xf32>, memref<3x3x4x8xf32>) outs(%y : memref<1x8x8x8xf32>)
  return
}

// -----

// The slices of a concatenation that a convolution reads are not a padded
// input: the conv reads the whole buffer, so both copies move by DMA.

// CHECK-LABEL: func.func @conv$reads_a_concatenation
// CHECK-COUNT-2: linalg.copy
// CHECK-NOT:     memref.copy
// PIPELINE-LABEL: func.func @conv$reads_a_concatenation
// PIPELINE-NOT:   memref.copy
func.func @conv$reads_a_concatenation(%a: memref<1x8x8x4xf32>, %b: memref<1x8x8x4xf32>,
                                      %w: memref<1x1x8x8xf32>, %y: memref<1x8x8x8xf32>) {
  %joined = memref.alloc() : memref<1x8x8x8xf32>
  %left = memref.subview %joined[0, 0, 0, 0] [1, 8, 8, 4] [1, 1, 1, 1] : memref<1x8x8x8xf32> to memref<1x8x8x4xf32, strided<[512, 64, 8, 1]>>
  memref.copy %a, %left : memref<1x8x8x4xf32> to memref<1x8x8x4xf32, strided<[512, 64, 8, 1]>>
  %right = memref.subview %joined[0, 0, 0, 4] [1, 8, 8, 4] [1, 1, 1, 1] : memref<1x8x8x8xf32> to memref<1x8x8x4xf32, strided<[512, 64, 8, 1], offset: 4>>
  memref.copy %b, %right : memref<1x8x8x4xf32> to memref<1x8x8x4xf32, strided<[512, 64, 8, 1], offset: 4>>
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%joined, %w : memref<1x8x8x8xf32>, memref<1x1x8x8xf32>) outs(%y : memref<1x8x8x8xf32>)
  return
}
