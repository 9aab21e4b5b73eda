// RUN: atvoss-opt %s -split-input-file -npu-normalize-contractions | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-normalize-contractions -o /dev/null

// A transpose-B matmul written as a generic (the form that ran at thousands of
// times its roofline on the fallback engine) becomes linalg.matmul on the
// transposed B.

// CHECK-LABEL: func.func @generic$transposed_b
// CHECK:         %[[BT:.*]] = linalg.transpose ins(%arg1 : tensor<48x32xf16>) outs(%{{.*}} : tensor<32x48xf16>) permutation = [1, 0]
// CHECK:         linalg.matmul ins(%arg0, %[[BT]] : tensor<64x32xf16>, tensor<32x48xf16>) outs(%arg2 : tensor<64x48xf32>)
// CHECK-NOT:     linalg.generic
func.func @generic$transposed_b(%a: tensor<64x32xf16>, %b: tensor<48x32xf16>, %c: tensor<64x48xf32>) -> tensor<64x48xf32> {
  // expected-remark @below {{'linalg.generic' is a contraction: runs as 'linalg.matmul', rhs transposed first}}
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
                                        affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<64x32xf16>, tensor<48x32xf16>) outs(%c : tensor<64x48xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xe = arith.extf %x : f16 to f32
    %ye = arith.extf %y : f16 to f32
    %p = arith.mulf %xe, %ye : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<64x48xf32>
  return %r : tensor<64x48xf32>
}

// -----

// Operands in either role and order, with a batch dim: the input holding the
// output's row dim is the lhs; both are put in (batch, m, k) / (batch, k, n).

// CHECK-LABEL: func.func @generic$batch_swapped
// CHECK:         %[[L:.*]] = linalg.transpose ins(%arg1 : tensor<2x8x16xf32>) outs(%{{.*}} : tensor<2x16x8xf32>) permutation = [0, 2, 1]
// CHECK:         linalg.batch_matmul ins(%[[L]], %arg0 : tensor<2x16x8xf32>, tensor<2x8x4xf32>)
func.func @generic$batch_swapped(%b: tensor<2x8x4xf32>, %a: tensor<2x8x16xf32>, %c: tensor<2x16x4xf32>) -> tensor<2x16x4xf32> {
  // expected-remark @below {{'linalg.generic' is a contraction: runs as 'linalg.batch_matmul', lhs transposed first}}
  %r = linalg.generic {indexing_maps = [affine_map<(b, m, n, k) -> (b, k, n)>, affine_map<(b, m, n, k) -> (b, k, m)>,
                                        affine_map<(b, m, n, k) -> (b, m, n)>],
                       iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%b, %a : tensor<2x8x4xf32>, tensor<2x8x16xf32>) outs(%c : tensor<2x16x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %y, %x : f32
    %s = arith.addf %p, %acc : f32
    linalg.yield %s : f32
  } -> tensor<2x16x4xf32>
  return %r : tensor<2x16x4xf32>
}

// -----

// An attention einsum (bhid,bhjd->bhij): batch and heads are collapsed into
// one batch dim around the batch_matmul, the keys transposed first.

// CHECK-LABEL: func.func @generic$batch_and_heads
// CHECK:         %[[KT:.*]] = linalg.transpose ins(%arg1 : tensor<2x3x16x8xf32>) outs(%{{.*}} : tensor<2x3x8x16xf32>) permutation = [0, 1, 3, 2]
// CHECK:         %[[Q:.*]] = tensor.collapse_shape %arg0 {{\[}}[0, 1], [2], [3]] : tensor<2x3x16x8xf32> into tensor<6x16x8xf32>
// CHECK:         %[[K:.*]] = tensor.collapse_shape %[[KT]] {{\[}}[0, 1], [2], [3]] : tensor<2x3x8x16xf32> into tensor<6x8x16xf32>
// CHECK:         %[[C:.*]] = tensor.collapse_shape %arg2 {{\[}}[0, 1], [2], [3]] : tensor<2x3x16x16xf32> into tensor<6x16x16xf32>
// CHECK:         %[[P:.*]] = linalg.batch_matmul ins(%[[Q]], %[[K]] : tensor<6x16x8xf32>, tensor<6x8x16xf32>) outs(%[[C]] : tensor<6x16x16xf32>)
// CHECK:         %[[R:.*]] = tensor.expand_shape %[[P]] {{\[}}[0, 1], [2], [3]] output_shape [2, 3, 16, 16] : tensor<6x16x16xf32> into tensor<2x3x16x16xf32>
// CHECK:         return %[[R]]
func.func @generic$batch_and_heads(%q: tensor<2x3x16x8xf32>, %k: tensor<2x3x16x8xf32>, %c: tensor<2x3x16x16xf32>) -> tensor<2x3x16x16xf32> {
  // expected-remark @below {{'linalg.generic' is a contraction: runs as 'linalg.batch_matmul', rhs transposed first, its 2 batch dims as one}}
  %r = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, h, j, d)>,
                                        affine_map<(b, h, i, j, d) -> (b, h, i, j)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x3x16x8xf32>, tensor<2x3x16x8xf32>) outs(%c : tensor<2x3x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3x16x16xf32>
  return %r : tensor<2x3x16x16xf32>
}

// -----

// Not contractions: a product with a subtraction, and a sum of squares. They
// stay as they are (the tile pass says where they run).

// CHECK-LABEL: func.func @generic$not_a_product_sum
// CHECK:         linalg.generic
// CHECK-NOT:     linalg.matmul
func.func @generic$not_a_product_sum(%a: tensor<8x4xf32>, %b: tensor<4x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>,
                                        affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<8x4xf32>, tensor<4x8xf32>) outs(%c : tensor<8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.subf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// CHECK-LABEL: func.func @generic$squares
// CHECK:         linalg.generic
func.func @generic$squares(%a: tensor<8x4xf32>, %c: tensor<8xf32>) -> tensor<8xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(m, k) -> (m, k)>, affine_map<(m, k) -> (m)>],
                       iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<8x4xf32>) outs(%c : tensor<8xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %p = arith.mulf %x, %x : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

// A default matmul is left alone.

// CHECK-LABEL: func.func @matmul$default
// CHECK-NOT:     linalg.transpose
// CHECK:         linalg.matmul ins(%arg0, %arg1
func.func @matmul$default(%a: tensor<8x4xf32>, %b: tensor<4x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// A dot product has no M and N: it is not a matmul and stays a generic.

// CHECK-LABEL: func.func @dot$stays_generic
// CHECK:         linalg.generic
// CHECK-NOT:     linalg.matmul
#vector = affine_map<(k) -> (k)>
#scalar = affine_map<(k) -> ()>
func.func @dot$stays_generic(%a: tensor<5xf32>, %b: tensor<5xf32>, %init: tensor<f32>) -> tensor<f32> {
  %r = linalg.generic {indexing_maps = [#vector, #vector, #scalar], iterator_types = ["reduction"]}
      ins(%a, %b : tensor<5xf32>, tensor<5xf32>) outs(%init : tensor<f32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %r : tensor<f32>
}

// -----

// A batch dim that one operand lacks (the keys shared by every head) is not a
// batch_matmul's: the generic stays.

// CHECK-LABEL: func.func @generic$batch_broadcast
// CHECK:         linalg.generic
// CHECK-NOT:     linalg.batch_matmul
func.func @generic$batch_broadcast(%q: tensor<2x3x16x8xf32>, %k: tensor<2x16x8xf32>, %c: tensor<2x3x16x16xf32>) -> tensor<2x3x16x16xf32> {
  %r = linalg.generic {indexing_maps = [affine_map<(b, h, i, j, d) -> (b, h, i, d)>, affine_map<(b, h, i, j, d) -> (b, j, d)>,
                                        affine_map<(b, h, i, j, d) -> (b, h, i, j)>],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x3x16x8xf32>, tensor<2x16x8xf32>) outs(%c : tensor<2x3x16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x3x16x16xf32>
  return %r : tensor<2x3x16x16xf32>
}
