// The padding's value depends on the channel index: it would move with the
// channels.

func.func @padding_per_element(%x: tensor<1x8x8x6xf32>) -> tensor<1x4x4x6xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<[[[10.18446744073709551616, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]], [[10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]], [[10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0], [10.0, 11.0, 12.0, 13.0, 14.0, 15.0]]]> : tensor<3x3x6xf32>
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
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%p, %w : tensor<1x10x10x6xf32>, tensor<3x3x6xf32>) outs(%bias : tensor<1x4x4x6xf32>) -> tensor<1x4x4x6xf32>
  return %d : tensor<1x4x4x6xf32>
}
