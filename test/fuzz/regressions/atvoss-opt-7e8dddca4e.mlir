// Not contractions: a product with a subtraction, and a sum of squares. They
// stay as they are (the tile pass says where they run).

func.func @generic$not_a_product_sum(%a: tensor<8x4xf32>, %b: tensor<4x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>,
                                        affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<8x4xf32>, tensor<4x8xf32>) outs(%c : tensor<8x8xf32>) {
    linalg.yield %s : f32
    %p = arith.mulf %x, %y : f32
    %s = arith.subf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

func.func @generic$squares(%a: tensor<8x4xf32>, %c: tensor<8xf32>) -> tensor<8xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> (m)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<8x4xf32>) outs(%c : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %s = arith.addf %acc, %p : f32
    %p = arith.mulf %x, %x : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}
