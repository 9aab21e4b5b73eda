// infA padded 3x3 stride-1 convolution on the conv instruction, relu epilogue.



func.func @main(%x: tensor<1x28x28x32xf16>, %w: tensor<3x3x32x64xf16>) -> tensor<1x28x28x64xf32> {
  %pv = arith.constant 0.0 : f16
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, -2147483649, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %pv : f16
  } : tensor<1x28x28x32xf16> to tensor<1x30x30x32xf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x28x28x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x28x28x64xf32>) -> tensor<1x28x28x64xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilationinfs = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %w : tensor<1x30x30x32xf16>, tensor<3x3x32x64xf16>)
      outs(%f : tensor<1x28x28x64xf32>) -> tensor<1x28x28x64xf32>
  %e2 = tensor.empty() : tensor<1x28x28x64xf32>
  %act = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%r : tensor<1x28x28x64xf32>) outs(%e2 : tensor<1x28x28x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.maximumf %v, %z : f32
    linalg.yield %y : f32
  } -> tensor<1x28x28x64xf32>
  return %act : tensor<1x28x28x64xf32>
}
