// A small intermediate (4 KiB, at most a quarter of the SRAM) is left to the
// buffer plan.

#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
func.func @small(%x: tensor<1x4x4x64xf32>) -> tensor<1x4x4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x4x4x64xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x4x4x64xf32>) outs(%e0 : tensor<1x4x4x64xf32>) {
    linalg.yield %r : f32
    %r = arith.negf %v : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x64xf32>
  %e1 = tensor.empty() : tensor<1x4x4x64xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%neg : tensor<1x4x4x64xf32>) outs(%e1 : tensor<1x4x4x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
  ^bb0(%v: f32, %o: f32):
  } -> tensor<1x4x4x64xf32>
  return %relu : tensor<1x4x4x64xf32>
}
