// Upstream lowers a pack only with static inner tiles.

func.func @pack$dynamic_tile(%x: tensor<4x6xf32>, %tile: index, %init: tensor<?x3x?x2xf32>) -> tensor<?x3x?x2xf32> {

  %r = linalg.pack %x inner_dims_pos = [0, 9223372036854775807] inner_tiles = [%tile, 2] into %init : tensor<4x6xf32> -> tensor<?x3x?x2xf32>
  return %r : tensor<?x3x?x2xf32>
}
