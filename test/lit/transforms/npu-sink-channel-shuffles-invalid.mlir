// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-sink-channel-shuffles
// RUN: atvoss-opt %s -split-input-file -npu-sink-channel-shuffles | FileCheck %s

// Channel shuffles that stay above the depthwise conv reading them, each with
// the reason.
// -----

// At stride 1 the conv's result is as large as the shuffled tensor: moving
// the shuffle below it would transpose as many bytes.

// CHECK-LABEL: func.func @stride_one
// CHECK:         linalg.transpose
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-NOT:     linalg.transpose
func.func @stride_one(%x: tensor<1x8x8x6xf32>) -> tensor<1x8x8x6xf32> {
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
  %d0 = tensor.empty() : tensor<1x8x8x6xf32>
  %bias = linalg.broadcast ins(%b : tensor<6xf32>) outs(%d0 : tensor<1x8x8x6xf32>) dimensions = [0, 1, 2]
  // expected-remark @below {{channel shuffle of the 1536 B tensor stays above the depthwise conv: its 1536 B result is no smaller}}
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w : tensor<1x10x10x6xf32>, tensor<3x3x6xf32>) outs(%bias : tensor<1x8x8x6xf32>) -> tensor<1x8x8x6xf32>
  return %d : tensor<1x8x8x6xf32>
}

// -----

// The weights are an argument: they cannot be permuted at compile time.

// CHECK-LABEL: func.func @weights_argument
// CHECK:         linalg.transpose
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-NOT:     linalg.transpose
func.func @weights_argument(%x: tensor<1x8x8x6xf32>, %w: tensor<3x3x6xf32>) -> tensor<1x4x4x6xf32> {
  %zero = arith.constant 0.0 : f32
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
  // expected-remark @below {{channel shuffle of the 1536 B tensor stays above the depthwise conv: its weights are no float constant it can permute}}
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%p, %w : tensor<1x10x10x6xf32>, tensor<3x3x6xf32>) outs(%bias : tensor<1x4x4x6xf32>) -> tensor<1x4x4x6xf32>
  return %d : tensor<1x4x4x6xf32>
}

// -----

// int8 weights (accumulated in i16 here, so that the result is smaller): a
// quantised conv's per-channel parameters are not the pass's to permute; it
// leaves integer convs alone.

// CHECK-LABEL: func.func @int8_weights
// CHECK:         linalg.transpose
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc
func.func @int8_weights(%x: tensor<1x8x8x6xi8>) -> tensor<1x4x4x6xi16> {
  %zero = arith.constant 0 : i8
  %w = arith.constant dense<3> : tensor<3x3x6xi8>
  %e = tensor.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 8, 8, 2, 3] : tensor<1x8x8x6xi8> into tensor<1x8x8x2x3xi8>
  %t0 = tensor.empty() : tensor<1x8x8x3x2xi8>
  %t = linalg.transpose ins(%e : tensor<1x8x8x2x3xi8>) outs(%t0 : tensor<1x8x8x3x2xi8>) permutation = [0, 1, 2, 4, 3]
  %s = tensor.collapse_shape %t [[0], [1], [2], [3, 4]] : tensor<1x8x8x3x2xi8> into tensor<1x8x8x6xi8>
  %p = tensor.pad %s low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : i8
  } : tensor<1x8x8x6xi8> to tensor<1x10x10x6xi8>
  %c0 = arith.constant 0 : i16
  %d0 = tensor.empty() : tensor<1x4x4x6xi16>
  %init = linalg.fill ins(%c0 : i16) outs(%d0 : tensor<1x4x4x6xi16>) -> tensor<1x4x4x6xi16>
  // expected-remark @below {{channel shuffle of the 384 B tensor stays above the depthwise conv: its weights are no float constant it can permute}}
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%p, %w : tensor<1x10x10x6xi8>, tensor<3x3x6xi8>) outs(%init : tensor<1x4x4x6xi16>) -> tensor<1x4x4x6xi16>
  return %d : tensor<1x4x4x6xi16>
}

// -----

// The padding's value depends on the channel index: it would move with the
// channels.

// CHECK-LABEL: func.func @padding_per_element
// CHECK:         linalg.transpose
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc
func.func @padding_per_element(%x: tensor<1x8x8x6xf32>) -> tensor<1x4x4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[[10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]], [[10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]], [[10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]]]> : tensor<3x3x6xf32>
  %b = arith.constant dense<[20.0, 21.0, 22.0, 23.0, 24.0, 25.0]> : tensor<6xf32>
  %e = tensor.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 8, 8, 2, 3] : tensor<1x8x8x6xf32> into tensor<1x8x8x2x3xf32>
  %t0 = tensor.empty() : tensor<1x8x8x3x2xf32>
  %t = linalg.transpose ins(%e : tensor<1x8x8x2x3xf32>) outs(%t0 : tensor<1x8x8x3x2xf32>) permutation = [0, 1, 2, 4, 3]
  %s = tensor.collapse_shape %t [[0], [1], [2], [3, 4]] : tensor<1x8x8x3x2xf32> into tensor<1x8x8x6xf32>
  %p = tensor.pad %s low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    %channel = arith.index_cast %l : index to i32
    %value = arith.sitofp %channel : i32 to f32
    tensor.yield %value : f32
  } : tensor<1x8x8x6xf32> to tensor<1x10x10x6xf32>
  %d0 = tensor.empty() : tensor<1x4x4x6xf32>
  %bias = linalg.broadcast ins(%b : tensor<6xf32>) outs(%d0 : tensor<1x4x4x6xf32>) dimensions = [0, 1, 2]
  // expected-remark @below {{channel shuffle of the 1536 B tensor stays above the depthwise conv: the padding between them is computed per element}}
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%p, %w : tensor<1x10x10x6xf32>, tensor<3x3x6xf32>) outs(%bias : tensor<1x4x4x6xf32>) -> tensor<1x4x4x6xf32>
  return %d : tensor<1x4x4x6xf32>
}

// -----

// The bias is broadcast along the channels (one value per row): not a
// per-channel bias to permute.

// CHECK-LABEL: func.func @bias_per_row
// CHECK:         linalg.transpose
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc
func.func @bias_per_row(%x: tensor<1x8x8x6xf32>) -> tensor<1x4x4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[[10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]], [[10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]], [[10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]]]> : tensor<3x3x6xf32>
  %b = arith.constant dense<[20.0, 21.0, 22.0, 23.0]> : tensor<4xf32>
  %e = tensor.expand_shape %x [[0], [1], [2], [3, 4]] output_shape [1, 8, 8, 2, 3] : tensor<1x8x8x6xf32> into tensor<1x8x8x2x3xf32>
  %t0 = tensor.empty() : tensor<1x8x8x3x2xf32>
  %t = linalg.transpose ins(%e : tensor<1x8x8x2x3xf32>) outs(%t0 : tensor<1x8x8x3x2xf32>) permutation = [0, 1, 2, 4, 3]
  %s = tensor.collapse_shape %t [[0], [1], [2], [3, 4]] : tensor<1x8x8x3x2xf32> into tensor<1x8x8x6xf32>
  %p = tensor.pad %s low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x6xf32> to tensor<1x10x10x6xf32>
  %d0 = tensor.empty() : tensor<1x4x4x6xf32>
  %bias = linalg.broadcast ins(%b : tensor<4xf32>) outs(%d0 : tensor<1x4x4x6xf32>) dimensions = [0, 2, 3]
  // expected-remark @below {{channel shuffle of the 1536 B tensor stays above the depthwise conv: its bias is no float constant per channel it can permute}}
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%p, %w : tensor<1x10x10x6xf32>, tensor<3x3x6xf32>) outs(%bias : tensor<1x4x4x6xf32>) -> tensor<1x4x4x6xf32>
  return %d : tensor<1x4x4x6xf32>
}
