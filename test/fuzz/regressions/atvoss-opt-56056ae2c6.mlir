// Two padded 3x3 convs in a row: the tensor between them stays in SRAM with
// its padding (npu-keep-in-sram). The halo is filled once, the first conv
// writes the interior of the padded buffer and the second reads that buffer
// itself: no copy into a padded tile on the vector unit, no DRAM round trip.

func.func @conv$conv(%x: tensor<1x16x16x16xf32>, %w1: tensor<3x3x16x16xf32>, %w2: tensor<3x3x16x16xf32>) -> tensor<1x16x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %xp = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x16x16x16xf32> to tensor<1x18x18x16xf32>
  %e = tensor.empty() : tensor<1x16x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %a = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%xp, %w1 : tensor<1x18x18x16xf32>, tensor<3x3x16x16xf32>) outs(%f : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %ap = tensor.pad %a low[0, 9223372036854775807, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x16x16x16xf32> to tensor<1x18x18x16xf32>
  %e2 = tensor.empty() : tensor<1x16x16x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %b = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%ap, %w2 : tensor<1x18x18x16xf32>, tensor<3x3x16x16xf32>) outs(%f2 : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  return %b : tensor<1x16x16x16xf32>
}
