// Not folded: the conv's result is read by another op too (it must exist), and
// a conv that starts from zero (no bias broadcast to replace).

#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
func.func @conv$read_twice(%x: tensor<1x16x16x32xf32>, %skip: tensor<1x16x16x64xf32>)
    -> (tensor<1x16x16x64xf32>, tensor<1x16x16x64xf32>) {
  %w = arith.constant dense<0.125> : tensor<1x1x32x64xf32>
  %b = arith.constant dense<0.5> : tensor<64xf32>
  %e = tensor.empty() : tensor<1x16x16x64xf32>
  %bias = linalg.broadcast ins(%b : tensor<64xf32>) outs(%e : tensor<1x16x16x64xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x16x16x32xf32>, tensor<1x1x32x64xf32>) outs(%bias : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  %e1 = tensor.empty() : tensor<1x16x16x64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%conv, %skip : tensor<1x16x16x64xf32>, tensor<1x16x16x64xf32>) outs(%e1 : tensor<1x16x16x64xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %r = arith.addf %v, %s : f32
func.func @conv$read_twice(%x: tensor<1x16x16x32xf32>, %skip: tensor<1x16x16x64xf32>)
func.func @conv$read_twice(%x: tensor<1x16x16x32xf32>, %skip: tensor<1x16x16x64xf32>)
    linalg.yield %r : f32
  } -> tensor<1x16x16x64xf32>
  return %sum, %conv : tensor<1x16x16x64xf32>, tensor<1x16x16x64xf32>
}

func.func @conv$from_zero(%x: tensor<1x16x16x32xf32>, %skip: tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32> {
  %w = arith.constant dense<0.125> : tensor<1x1x32x64xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x16x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x16x16x32xf32>, tensor<1x1x32x64xf32>) outs(%f : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  %e1 = tensor.empty() : tensor<1x16x16x64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%conv, %skip : tensor<1x16x16x64xf32>, tensor<1x16x16x64xf32>) outs(%e1 : tensor<1x16x16x64xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %r = arith.addf %v, %s : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x64xf32>
  return %sum : tensor<1x16x16x64xf32>
}
