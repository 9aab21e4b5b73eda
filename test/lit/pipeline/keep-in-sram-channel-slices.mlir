// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM

// A 1x1 conv's 48-channel result stays in SRAM (npu-keep-in-sram), and two
// grouped 1x1 convs read 16-channel slices of it (ShuffleNet's grouped convs
// after a concatenation). Each implicit GEMM multiplies its slice in place,
// as a matrix whose rows are 48 elements apart: no vector-unit copy of the
// slice into a tile of its own (with one: 1,396 cycles). The 1x1 conv writes
// the kept result a tile of rows at a time, in place (written whole: 1,164).

// CHECK-LABEL: func.func @grouped$slices
// CHECK:         %[[R:.*]] = "npu.alloc"() {npu.resident, offset = {{.*}}} : () -> memref<1x8x8x48xf32, 1>
// CHECK-DAG:     %[[S0:.*]] = memref.subview %[[R]][0, 0, 0, 0] [1, 8, 8, 16] [1, 1, 1, 1]
// CHECK-DAG:     %[[S1:.*]] = memref.subview %[[R]][0, 0, 0, 16] [1, 8, 8, 16] [1, 1, 1, 1]
// CHECK-NOT:     "npu.activation"
// CHECK:         %[[M0:.*]] = memref.collapse_shape %[[S0]] {{\[\[}}0, 1, 2], [3]] : memref<1x8x8x16xf32, strided<[3072, 384, 48, 1]>, 1> into memref<64x16xf32, strided<[48, 1]>, 1>
// CHECK:         "npu.matmul"(%[[M0]],
// CHECK:         %[[M1:.*]] = memref.collapse_shape %[[S1]] {{\[\[}}0, 1, 2], [3]] : memref<1x8x8x16xf32, strided<[3072, 384, 48, 1], offset: 16>, 1> into memref<64x16xf32, strided<[48, 1], offset: 16>, 1>
// CHECK:         "npu.matmul"(%[[M1]],
// CHECK-NOT:     "npu.activation"

// SIM: total cycles               1,132
func.func @grouped$slices(%x: tensor<1x8x8x16xf32>, %w1: tensor<1x1x16x48xf32>, %w2: tensor<1x1x16x16xf32>, %w3: tensor<1x1x16x16xf32>) -> (tensor<1x8x8x16xf32>, tensor<1x8x8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x8x8x48xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x8x8x48xf32>) -> tensor<1x8x8x48xf32>
  %a = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w1 : tensor<1x8x8x16xf32>, tensor<1x1x16x48xf32>) outs(%f1 : tensor<1x8x8x48xf32>) -> tensor<1x8x8x48xf32>
  %s0 = tensor.extract_slice %a[0, 0, 0, 0] [1, 8, 8, 16] [1, 1, 1, 1] : tensor<1x8x8x48xf32> to tensor<1x8x8x16xf32>
  %s1 = tensor.extract_slice %a[0, 0, 0, 16] [1, 8, 8, 16] [1, 1, 1, 1] : tensor<1x8x8x48xf32> to tensor<1x8x8x16xf32>
  %e2 = tensor.empty() : tensor<1x8x8x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %g0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%s0, %w2 : tensor<1x8x8x16xf32>, tensor<1x1x16x16xf32>) outs(%f2 : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %e3 = tensor.empty() : tensor<1x8x8x16xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %g1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%s1, %w3 : tensor<1x8x8x16xf32>, tensor<1x1x16x16xf32>) outs(%f3 : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  return %g0, %g1 : tensor<1x8x8x16xf32>, tensor<1x8x8x16xf32>
}
