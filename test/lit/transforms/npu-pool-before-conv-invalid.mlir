// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-pool-before-conv
// RUN: atvoss-opt %s -split-input-file -npu-pool-before-conv | FileCheck %s

// Sum pools that stay after the convolution they read, each with the reason.
// -----

// A 3x3 conv mixes neighbouring pixels: pooling does not commute with it.

// CHECK-LABEL: func.func @three_by_three
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x10x10x16xf32>
// CHECK:         linalg.pooling_nhwc_sum
func.func @three_by_three(%x: tensor<1x10x10x16xf32>, %w: tensor<3x3x16x8xf32>) -> (tensor<1x4x4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x8x8x8xf32>
  %b = arith.constant dense<1.0> : tensor<8xf32>
  %start = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e0 : tensor<1x8x8x8xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x10x10x16xf32>, tensor<3x3x16x8xf32>) outs(%start : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %e1 = tensor.empty() : tensor<1x4x4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  // expected-remark @below {{sum pooling stays after the 1x1 convolution it reads: the convolution is not 1x1}}
  %sum = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%conv, %window : tensor<1x8x8x8xf32>, tensor<2x2xf32>) outs(%init : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %sum : tensor<1x4x4x8xf32>
}
// -----

// A strided 1x1 conv keeps every other pixel: pooling its input would average the pixels it drops.

// CHECK-LABEL: func.func @strided
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x16x16x16xf32>
// CHECK:         linalg.pooling_nhwc_sum
func.func @strided(%x: tensor<1x16x16x16xf32>, %w: tensor<1x1x16x8xf32>) -> (tensor<1x4x4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x8x8x8xf32>
  %b = arith.constant dense<1.0> : tensor<8xf32>
  %start = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e0 : tensor<1x8x8x8xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<1x16x16x16xf32>, tensor<1x1x16x8xf32>) outs(%start : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %e1 = tensor.empty() : tensor<1x4x4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  // expected-remark @below {{sum pooling stays after the 1x1 convolution it reads: the convolution has a stride}}
  %sum = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%conv, %window : tensor<1x8x8x8xf32>, tensor<2x2xf32>) outs(%init : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %sum : tensor<1x4x4x8xf32>
}
// -----

// The conv result is read by another op too: it has to be computed at every pixel anyway.

// CHECK-LABEL: func.func @read_twice
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x8x8x16xf32>
// CHECK:         linalg.pooling_nhwc_sum
func.func @read_twice(%x: tensor<1x8x8x16xf32>, %w: tensor<1x1x16x8xf32>) -> (tensor<1x4x4x8xf32>, tensor<1x8x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x8x8x8xf32>
  %b = arith.constant dense<1.0> : tensor<8xf32>
  %start = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e0 : tensor<1x8x8x8xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x8x16xf32>, tensor<1x1x16x8xf32>) outs(%start : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %e1 = tensor.empty() : tensor<1x4x4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  // expected-remark @below {{sum pooling stays after the 1x1 convolution it reads: other ops read the convolution's result}}
  %sum = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%conv, %window : tensor<1x8x8x8xf32>, tensor<2x2xf32>) outs(%init : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %sum, %conv : tensor<1x4x4x8xf32>, tensor<1x8x8x8xf32>
}
// -----

// The bias is a function argument: it cannot be scaled at compile time.

// CHECK-LABEL: func.func @bias_argument
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x8x8x16xf32>
// CHECK:         linalg.pooling_nhwc_sum
func.func @bias_argument(%x: tensor<1x8x8x16xf32>, %w: tensor<1x1x16x8xf32>, %b: tensor<8xf32>) -> (tensor<1x4x4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x8x8x8xf32>
  %start = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e0 : tensor<1x8x8x8xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x8x16xf32>, tensor<1x1x16x8xf32>) outs(%start : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %e1 = tensor.empty() : tensor<1x4x4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  // expected-remark @below {{sum pooling stays after the 1x1 convolution it reads: the convolution's bias is not a constant}}
  %sum = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%conv, %window : tensor<1x8x8x8xf32>, tensor<2x2xf32>) outs(%init : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %sum : tensor<1x4x4x8xf32>
}
// -----

// A pool that starts from 1, not 0, adds a constant the conv would multiply.

// CHECK-LABEL: func.func @pool_from_one
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x8x8x16xf32>
// CHECK:         linalg.pooling_nhwc_sum
func.func @pool_from_one(%x: tensor<1x8x8x16xf32>, %w: tensor<1x1x16x8xf32>) -> (tensor<1x4x4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x8x8x8xf32>
  %b = arith.constant dense<1.0> : tensor<8xf32>
  %start = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e0 : tensor<1x8x8x8xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x8x16xf32>, tensor<1x1x16x8xf32>) outs(%start : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %e1 = tensor.empty() : tensor<1x4x4x8xf32>
  %one = arith.constant 1.0 : f32
  %init = linalg.fill ins(%one : f32) outs(%e1 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  // expected-remark @below {{sum pooling stays after the 1x1 convolution it reads: the pool does not start from zero}}
  %sum = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%conv, %window : tensor<1x8x8x8xf32>, tensor<2x2xf32>) outs(%init : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %sum : tensor<1x4x4x8xf32>
}
// -----

// An int8 conv's int32 result: integer sums are left as they are.

// CHECK-LABEL: func.func @integer
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x8x8x16xi8>
// CHECK:         linalg.pooling_nhwc_sum
func.func @integer(%x: tensor<1x8x8x16xi8>, %w: tensor<1x1x16x8xi8>) -> (tensor<1x4x4x8xi32>) {
  %zero = arith.constant 0 : i32
  %e0 = tensor.empty() : tensor<1x8x8x8xi32>
  %start = linalg.fill ins(%zero : i32) outs(%e0 : tensor<1x8x8x8xi32>) -> tensor<1x8x8x8xi32>
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x8x16xi8>, tensor<1x1x16x8xi8>) outs(%start : tensor<1x8x8x8xi32>) -> tensor<1x8x8x8xi32>
  %e1 = tensor.empty() : tensor<1x4x4x8xi32>
  %init = linalg.fill ins(%zero : i32) outs(%e1 : tensor<1x4x4x8xi32>) -> tensor<1x4x4x8xi32>
  %window = tensor.empty() : tensor<2x2xf32>
  // expected-remark @below {{sum pooling stays after the 1x1 convolution it reads: not in a float type}}
  %sum = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%conv, %window : tensor<1x8x8x8xi32>, tensor<2x2xf32>) outs(%init : tensor<1x4x4x8xi32>) -> tensor<1x4x4x8xi32>
  return %sum : tensor<1x4x4x8xi32>
}
// -----

// A stride-1 window keeps almost every pixel, and the pool would read twice the channels: more cycles, not fewer.

// CHECK-LABEL: func.func @no_gain
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x8x8x64xf32>
// CHECK:         linalg.pooling_nhwc_sum
func.func @no_gain(%x: tensor<1x8x8x64xf32>, %w: tensor<1x1x64x32xf32>) -> (tensor<1x6x6x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x8x8x32xf32>
  %b = arith.constant dense<1.0> : tensor<32xf32>
  %start = linalg.broadcast ins(%b : tensor<32xf32>) outs(%e0 : tensor<1x8x8x32xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x8x64xf32>, tensor<1x1x64x32xf32>) outs(%start : tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32>
  %e1 = tensor.empty() : tensor<1x6x6x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x6x6x32xf32>) -> tensor<1x6x6x32xf32>
  %window = tensor.empty() : tensor<3x3xf32>
  // expected-remark @below {{sum pooling stays after the 1x1 convolution it reads: pooling its 64 input channels first would take ~}}
  %sum = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%conv, %window : tensor<1x8x8x32xf32>, tensor<3x3xf32>) outs(%init : tensor<1x6x6x32xf32>) -> tensor<1x6x6x32xf32>
  return %sum : tensor<1x6x6x32xf32>
}
