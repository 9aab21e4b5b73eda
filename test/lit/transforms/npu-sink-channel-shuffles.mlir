// RUN: atvoss-opt %s -split-input-file -npu-sink-channel-shuffles | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-sink-channel-shuffles

// -----

// ShuffleNet's stride-2 unit: a channel shuffle of 6 channels in 2 groups of
// 3 (shuffled channel c is source channel s[c], s = [0, 3, 1, 4, 2, 5]), then
// a padded 3x3 stride-2 depthwise conv with a bias. The conv reads the
// unshuffled tensor with weights and bias permuted (channel s[c] takes channel
// c's: per-channel values 10..15 become [10, 12, 14, 11, 13, 15]), and the
// shuffle moves onto its 4x4 result.

// CHECK-LABEL: func.func @strided
// CHECK-SAME:    (%[[X:.*]]: tensor<1x8x8x6xf32>)
// CHECK:         %[[P:.*]] = tensor.pad %[[X]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK:         %[[B:.*]] = arith.constant dense<[2.000000e+01, 2.200000e+01, 2.400000e+01, 2.100000e+01, 2.300000e+01, 2.500000e+01]> : tensor<6xf32>
// CHECK:         %[[INIT:.*]] = linalg.broadcast ins(%[[B]] : tensor<6xf32>)
// CHECK:         %[[W:.*]] = arith.constant dense<{{\[\[\[}}1.000000e+01, 1.200000e+01, 1.400000e+01, 1.100000e+01, 1.300000e+01, 1.500000e+01]{{.*}}> : tensor<3x3x6xf32>
// CHECK:         %[[D:.*]] = linalg.depthwise_conv_2d_nhwc_hwc {{.*}} ins(%[[P]], %[[W]] : tensor<1x10x10x6xf32>, tensor<3x3x6xf32>) outs(%[[INIT]] : tensor<1x4x4x6xf32>)
// CHECK:         %[[E:.*]] = tensor.expand_shape %[[D]] {{\[\[}}0], [1], [2], [3, 4]] output_shape [1, 4, 4, 2, 3]
// CHECK:         %[[T:.*]] = linalg.transpose ins(%[[E]] : tensor<1x4x4x2x3xf32>) outs(%{{.*}} : tensor<1x4x4x3x2xf32>) permutation = [0, 1, 2, 4, 3]
// CHECK:         %[[C:.*]] = tensor.collapse_shape %[[T]] {{\[\[}}0], [1], [2], [3, 4]] : tensor<1x4x4x3x2xf32> into tensor<1x4x4x6xf32>
// CHECK:         return %[[C]]
func.func @strided(%x: tensor<1x8x8x6xf32>) -> tensor<1x4x4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[[10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]], [[10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]], [[10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]]]> : tensor<3x3x6xf32>
  %b = arith.constant dense<[20.0, 21.0, 22.0, 23.0, 24.0, 25.0]> : tensor<6xf32>
  %e = tensor.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 8, 8, 2, 3] : tensor<1x8x8x6xf32> into tensor<1x8x8x2x3xf32>
  %t0 = tensor.empty() : tensor<1x8x8x3x2xf32>
  %t = linalg.transpose ins(%e : tensor<1x8x8x2x3xf32>) outs(%t0 : tensor<1x8x8x3x2xf32>) permutation = [0, 1, 2, 4, 3]
  %s = tensor.collapse_shape %t [[0], [1], [2], [3, 4]] : tensor<1x8x8x3x2xf32> into tensor<1x8x8x6xf32>
  %p = tensor.pad %s low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x6xf32> to tensor<1x10x10x6xf32>
  %d0 = tensor.empty() : tensor<1x4x4x6xf32>
  %bias = linalg.broadcast ins(%b : tensor<6xf32>) outs(%d0 : tensor<1x4x4x6xf32>) dimensions = [0, 1, 2]
  // expected-remark @below {{channel shuffle of the 1536 B tensor moves below the depthwise conv, its weights and bias permuted at compile time: it shuffles the 384 B result instead}}
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%p, %w : tensor<1x10x10x6xf32>, tensor<3x3x6xf32>) outs(%bias : tensor<1x4x4x6xf32>) -> tensor<1x4x4x6xf32>
  return %d : tensor<1x4x4x6xf32>
}

// -----

// ShuffleNetV2's stride-2 unit reads the shuffle twice: its padded depthwise
// conv and the other branch's conv. The shuffle must exist for that reader:
// it stays above the depthwise conv (no remark).

// CHECK-LABEL: func.func @shuffle_read_twice$stays
// CHECK:         %[[C:.*]] = tensor.collapse_shape
// CHECK:         tensor.pad %[[C]]
// CHECK:         return %{{.*}}, %[[C]]
func.func @shuffle_read_twice$stays(%x: tensor<1x8x8x6xf32>, %w: tensor<3x3x6xf32>) -> (tensor<1x4x4x6xf32>, tensor<1x8x8x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 8, 8, 2, 3] : tensor<1x8x8x6xf32> into tensor<1x8x8x2x3xf32>
  %t0 = tensor.empty() : tensor<1x8x8x3x2xf32>
  %t = linalg.transpose ins(%e : tensor<1x8x8x2x3xf32>) outs(%t0 : tensor<1x8x8x3x2xf32>) permutation = [0, 1, 2, 4, 3]
  %s = tensor.collapse_shape %t [[0], [1], [2], [3, 4]] : tensor<1x8x8x3x2xf32> into tensor<1x8x8x6xf32>
  %p = tensor.pad %s low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x6xf32> to tensor<1x10x10x6xf32>
  %d0 = tensor.empty() : tensor<1x4x4x6xf32>
  %f = linalg.fill ins(%zero : f32) outs(%d0 : tensor<1x4x4x6xf32>) -> tensor<1x4x4x6xf32>
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%p, %w : tensor<1x10x10x6xf32>, tensor<3x3x6xf32>) outs(%f : tensor<1x4x4x6xf32>) -> tensor<1x4x4x6xf32>
  return %d, %s : tensor<1x4x4x6xf32>, tensor<1x8x8x6xf32>
}
