// A 3x3 conv mixes neighbouring pixels: pooling does not commute with it.

func.func @three_by_three(%x: tensor<1x10x10x16xf32>, %w: tensor<3x3x16x8xf32>) -> (tensor<1x4x4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x8x8x8xf32>
  %b = arith.constant dense<1.0> : tensor<8xf32>
  %start = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e0 : tensor<1x8x8x8xf32>) dimensions = [0, 2, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x10x10x16xf32>, tensor<3x3x16x8xf32>) outs(%start : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %e1 = tensor.empty() : tensor<1x4x4x8xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  %sum = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%conv, %window : tensor<1x8x8x8xf32>, tensor<2x2xf32>) outs(%init : tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>
  return %sum : tensor<1x4x4x8xf32>
}
