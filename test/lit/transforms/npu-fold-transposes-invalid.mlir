// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-fold-transposes
// RUN: atvoss-opt %s -split-input-file -npu-fold-transposes | FileCheck %s

// Transforms that stay, with the reason.

// The producer's result is read by another op too: it cannot write only the
// transposed layout.

// CHECK-LABEL: func.func @producer$read_twice
// CHECK:         linalg.transpose
#id = affine_map<(n, c, h, w) -> (n, c, h, w)>
func.func @producer$read_twice(%x: tensor<1x16x8x8xf32>) -> (tensor<1x16x8x8xf32>, tensor<1x8x8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x8x8xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x16x8x8xf32>) outs(%e : tensor<1x16x8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x16x8x8xf32>
  %et = tensor.empty() : tensor<1x8x8x16xf32>
  // expected-remark @below {{transpose of the 1x16x8x8 tensor stays: its producer is read by other ops too}}
  %t = linalg.transpose ins(%relu : tensor<1x16x8x8xf32>) outs(%et : tensor<1x8x8x16xf32>) permutation = [0, 2, 3, 1]
  return %relu, %t : tensor<1x16x8x8xf32>, tensor<1x8x8x16xf32>
}

// -----

// Between a function argument and a matmul: no elementwise op to take it.

// CHECK-LABEL: func.func @no_elementwise$neighbour
// CHECK:         linalg.transpose
func.func @no_elementwise$neighbour(%a: tensor<32x16xf32>, %b: tensor<32x8xf32>) -> tensor<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<16x32xf32>
  // expected-remark @below {{transpose of the 32x16 tensor stays: neither its producer nor all of its readers are elementwise ops}}
  %t = linalg.transpose ins(%a : tensor<32x16xf32>) outs(%et : tensor<16x32xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<16x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %m = linalg.matmul ins(%t, %b : tensor<16x32xf32>, tensor<32x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %m : tensor<16x8xf32>
}

// -----

// One elementwise reader and one that is not: folding into the first alone
// would leave the transform in place for the second.

// CHECK-LABEL: func.func @readers$not_all_elementwise
// CHECK:         linalg.transpose
#id2 = affine_map<(i, j) -> (i, j)>
func.func @readers$not_all_elementwise(%a: tensor<32x16xf32>, %b: tensor<32x8xf32>)
    -> (tensor<16x8xf32>, tensor<16x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<16x32xf32>
  // expected-remark @below {{transpose of the 32x16 tensor stays: neither its producer nor all of its readers are elementwise ops}}
  %t = linalg.transpose ins(%a : tensor<32x16xf32>) outs(%et : tensor<16x32xf32>) permutation = [1, 0]
  %er = tensor.empty() : tensor<16x32xf32>
  %relu = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<16x32xf32>) outs(%er : tensor<16x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<16x32xf32>
  %e = tensor.empty() : tensor<16x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %m = linalg.matmul ins(%t, %b : tensor<16x32xf32>, tensor<32x8xf32>) outs(%f : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %m, %relu : tensor<16x8xf32>, tensor<16x32xf32>
}
