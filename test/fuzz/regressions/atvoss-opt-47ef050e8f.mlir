// A conv or matmul whose output starts as a broadcast bias takes the bias as
// its bias operand: no separate broadcast program, no load of the output. When
// the reduction is split into tiles, the first step adds the bias and starts
// the accumulator; the later steps accumulate.


// SPLIT-LABEL: func.func @conv$bias
// SPLIT-LABEL: func.func @matmul$bias

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
