// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline --target='npu -max-sram-bytes=8192' | FileCheck %s --check-prefix=SPLIT

// A conv or matmul whose output starts as a broadcast bias takes the bias as
// its bias operand: no separate broadcast program, no load of the output. When
// the reduction is split into tiles, the first step adds the bias and starts
// the accumulator; the later steps accumulate.

// CHECK-LABEL: func.func @conv$bias
// CHECK-NOT:     "npu.elementwise"
// CHECK-NOT:     "npu.dma_load"({{.*}}x14x16xf32
// CHECK:         "npu.conv2d"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {accumulate = false, {{.*}}} : (memref<1x?x16x8xf32, strided<[768, 128, 8, 1]>, 1>, memref<3x3x8x16xf32, 1>, memref<1x?x14x16xf32, strided<[896, 224, 16, 1]>, 1>, memref<16xf32, 1>) -> ()
// CHECK-NOT:     "npu.dma_load"({{.*}}x14x16xf32
// CHECK-LABEL: func.func @matmul$bias
// CHECK-NOT:     "npu.elementwise"
// CHECK:         "npu.matmul"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {accumulate = false, activation = "none", dataflow = "os"} : (memref<32x128xf32, 1>, memref<128x48xf32, 1>, memref<32x48xf32, 1>, memref<48xf32, 1>) -> ()

// SPLIT-LABEL: func.func @conv$bias
// SPLIT:         "npu.conv2d"({{.*}}, memref<16xf32, 1>) -> ()
// SPLIT:         "npu.conv2d"(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}) {accumulate = true
// SPLIT-LABEL: func.func @matmul$bias
// SPLIT:         "npu.matmul"({{.*}}, memref<16xf32, 1>) -> ()
// SPLIT:         "npu.matmul"(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}) {accumulate = true

func.func @conv$bias(%x: tensor<1x16x16x8xf32>, %w: tensor<3x3x8x16xf32>, %b: tensor<16xf32>) -> tensor<1x14x14x16xf32> {
  %e = tensor.empty() : tensor<1x14x14x16xf32>
  %init = linalg.broadcast ins(%b : tensor<16xf32>) outs(%e : tensor<1x14x14x16xf32>) dimensions = [0, 1, 2]
  %y = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x16x16x8xf32>, tensor<3x3x8x16xf32>) outs(%init : tensor<1x14x14x16xf32>) -> tensor<1x14x14x16xf32>
  return %y : tensor<1x14x14x16xf32>
}

func.func @matmul$bias(%a: tensor<64x128xf32>, %w: tensor<128x48xf32>, %b: tensor<48xf32>) -> tensor<64x48xf32> {
  %e = tensor.empty() : tensor<64x48xf32>
  %init = linalg.broadcast ins(%b : tensor<48xf32>) outs(%e : tensor<64x48xf32>) dimensions = [0]
  %y = linalg.matmul ins(%a, %w : tensor<64x128xf32>, tensor<128x48xf32>) outs(%init : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %y : tensor<64x48xf32>
}
