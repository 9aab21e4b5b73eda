// A 3x3 conv: loops over output rows, filters and input channels; the input
// subview of a row tile carries its halo (28 output rows read 30 input rows).

func.func @conv(%x: tensor<1x58x58x64xf16>, %w: tensor<3x3x64x64xf16>) -> tensor<1x56x56x64xf32> {
  %z = arith.constant 0.1000000000000 : f32
  %e = tensor.empty() : tensor<1x56x56x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<9223372036854775807> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x58x58x64xf16>, tensor<3x3x64x64xf16>) outs(%f : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  return %r : tensor<1x56x56x64xf32>
}
