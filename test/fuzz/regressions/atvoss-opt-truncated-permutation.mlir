
#in = affine_map<(n, c, h, w) -> (n, c, h, w)>
#out = affine_map<(n, c, h, w) -> (n, c)>
func.func @reduction$keeps_transpose(%a: tensor<1x4x4x8xf32>) -> tensor<1x8xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %ta = linalg.transpose ins(%a : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = 