func.func @unpack$tiles_2x2(%x: tensor<2x3x2x2xf32>) -> tensor<4x6xf32> {
  %e = tensor.empty() : tensor<4x6xf32>
  %r = linalg.unpack %x inner_dims_pos = [0, 1] inner_tiles = [-2147483649, 2] into %e : tensor<2x3x2x2xf32> -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>

}