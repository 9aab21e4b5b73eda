// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-decompose-linalg

// The decompositions build tensors: on memrefs it is too late.

func.func @softmax$on_memrefs(%x: memref<4x6xf32>, %y: memref<4x6xf32>) {
  // expected-error @below {{'linalg.softmax' is decomposed on tensors, before bufferization: it cannot run on memrefs}}
  linalg.softmax dimension(1) ins(%x : memref<4x6xf32>) outs(%y : memref<4x6xf32>)
  return
}

// -----

// Upstream lowers a pack only with static inner tiles.

func.func @pack$dynamic_tile(%x: tensor<4x6xf32>, %tile: index, %init: tensor<?x3x?x2xf32>) -> tensor<?x3x?x2xf32> {
  // expected-error @below {{cannot decompose 'linalg.pack': cannot lower to pad + expand + transpose}}
  %r = linalg.pack %x inner_dims_pos = [0, 1] inner_tiles = [%tile, 2] into %init : tensor<4x6xf32> -> tensor<?x3x?x2xf32>
  return %r : tensor<?x3x?x2xf32>
}
