// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM

// Two 1x1 convs: the first's result stays in SRAM (npu-keep-in-sram), and the
// second's implicit GEMM multiplies that buffer as a matrix in place: its rows
// are the output rows it computes. No vector-unit copy into a tile of its own.
// The first writes it in place a tile of 32 channels at a time, each tile a
// matrix of 256 pixel rows with the buffer's row stride, while the next
// tile's weights load.

// CHECK-LABEL: func.func @pointwise$chain
// CHECK:         %[[R:.*]] = "npu.alloc"() {npu.resident, offset = {{.*}}} : () -> memref<1x16x16x64xf32, 1>
// CHECK:         %[[T:.*]] = memref.subview %[[R]][0, 0, 0, %{{.*}}] [1, 16, 16, 32] [1, 1, 1, 1]
// CHECK:         %[[TM:.*]] = memref.collapse_shape %[[T]] {{\[\[}}0, 1, 2], [3]] : {{.*}} into memref<256x32xf32, strided<[64, 1], offset: ?>, 1>
// CHECK:         "npu.matmul"({{.*}}, {{.*}}, %[[TM]])
// CHECK-NOT:     "npu.activation"
// CHECK:         %[[M:.*]] = memref.collapse_shape %[[R]] {{\[\[}}0, 1, 2], [3]] : memref<1x16x16x64xf32, 1> into memref<256x64xf32, 1>
// CHECK:         %[[V:.*]] = memref.cast %[[M]]
// CHECK:         "npu.matmul"(%[[V]], {{.*}}, {{.*}})
// CHECK:         "npu.dma_store"
// CHECK:         "npu.dealloc"(%[[R]])

// SIM: DRAM read / write         49,152 / 32,768 B
func.func @pointwise$chain(%x: tensor<1x16x16x32xf32>, %w1: tensor<1x1x32x64xf32>, %w2: tensor<1x1x64x32xf32>) -> tensor<1x16x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x16x16x64xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w1 : tensor<1x16x16x32xf32>, tensor<1x1x32x64xf32>) outs(%f1 : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  %e2 = tensor.empty() : tensor<1x16x16x32xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32>
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%c1, %w2 : tensor<1x16x16x64xf32>, tensor<1x1x64x32xf32>) outs(%f2 : tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32>
  return %c2 : tensor<1x16x16x32xf32>
}
