// RUN: atvoss-opt %s -split-input-file -npu-fuse-epilogue | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-fuse-epilogue
// RUN: atvoss-opt %s -split-input-file -npu-fuse-epilogue --target='npu -fusion=0' | FileCheck %s --check-prefix=NOFUSION

// An exported linear layer: MatMul, then Add of a bias[N]. The matmul starts
// from the bias broadcast over its rows (the matrix unit's bias); the add is
// gone, and the relu after it becomes the matmul's epilogue.

#id = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @linear$relu
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<64x16xf32>
// CHECK:         %[[B:.*]] = linalg.broadcast ins(%{{.*}} : tensor<16xf32>) outs(%[[E]] : tensor<64x16xf32>) dimensions = [0]
// CHECK:         %[[R:.*]] = linalg.matmul {npu.activation = "relu"} ins(%{{.*}}, %{{.*}} : tensor<64x32xf32>, tensor<32x16xf32>) outs(%[[B]] : tensor<64x16xf32>)
// CHECK-NOT:     linalg.generic
// CHECK-NOT:     linalg.fill
// CHECK:         return %[[R]]
// NOFUSION-LABEL: func.func @linear$relu
// NOFUSION:         linalg.fill
// NOFUSION:         linalg.generic
func.func @linear$relu(%a: tensor<64x32xf32>, %w: tensor<32x16xf32>) -> tensor<64x16xf32> {
  %zero = arith.constant 0.0 : f32
  %b = arith.constant dense<0.5> : tensor<16xf32>
  %e0 = tensor.empty() : tensor<64x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<64x16xf32>) -> tensor<64x16xf32>
  // expected-remark @below {{'linalg.matmul': bias add folded in: the matrix unit adds it}}
  // expected-remark @below {{'linalg.matmul': relu folded into its epilogue}}
  %r = linalg.matmul ins(%a, %w : tensor<64x32xf32>, tensor<32x16xf32>) outs(%init : tensor<64x16xf32>) -> tensor<64x16xf32>
  %e1 = tensor.empty() : tensor<64x16xf32>
  %sum = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %b : tensor<64x16xf32>, tensor<16xf32>) outs(%e1 : tensor<64x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64x16xf32>
  %e2 = tensor.empty() : tensor<64x16xf32>
  %act = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%sum : tensor<64x16xf32>) outs(%e2 : tensor<64x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %x, %zero : f32
    linalg.yield %y : f32
  } -> tensor<64x16xf32>
  return %act : tensor<64x16xf32>
}

// -----

// A linear layer on a 3-d input: the matmul's rows are the batch and sequence
// dims, reshaped back after it; the bias (first operand of the add) folds
// through the reshape.

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d2)>

// CHECK-LABEL: func.func @linear$3d
// CHECK:         %[[B:.*]] = linalg.broadcast ins(%{{.*}} : tensor<64xf32>) outs(%{{.*}} : tensor<16x64xf32>) dimensions = [0]
// CHECK:         %[[R:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x32xf32>, tensor<32x64xf32>) outs(%[[B]] : tensor<16x64xf32>)
// CHECK:         %[[X:.*]] = tensor.expand_shape %[[R]] {{\[\[}}0, 1], [2]] output_shape [2, 8, 64]
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[X]]
func.func @linear$3d(%a: tensor<16x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<16x64xf32>) -> tensor<16x64xf32>
  // expected-remark @below {{'linalg.matmul': bias add folded in: the matrix unit adds it}}
  %r = linalg.matmul ins(%a, %w : tensor<16x32xf32>, tensor<32x64xf32>) outs(%init : tensor<16x64xf32>) -> tensor<16x64xf32>
  %x = tensor.expand_shape %r [[0, 1], [2]] output_shape [2, 8, 64] : tensor<16x64xf32> into tensor<2x8x64xf32>
  %e1 = tensor.empty() : tensor<2x8x64xf32>
  %sum = linalg.generic {indexing_maps = [#last, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%b, %x : tensor<64xf32>, tensor<2x8x64xf32>) outs(%e1 : tensor<2x8x64xf32>) {
  ^bb0(%y: f32, %v: f32, %o: f32):
    %s = arith.addf %y, %v : f32
    linalg.yield %s : f32
  } -> tensor<2x8x64xf32>
  return %sum : tensor<2x8x64xf32>
}

// -----

// The relu after a 3-d linear layer's bias add is the matmul's epilogue too:
// the relu of the reshaped rows is the reshape of the relu.

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d2)>

// CHECK-LABEL: func.func @linear$3d_relu
// CHECK:         %[[R:.*]] = linalg.matmul {npu.activation = "relu"}
// CHECK:         %[[X:.*]] = tensor.expand_shape %[[R]]
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[X]]
func.func @linear$3d_relu(%a: tensor<16x32xf32>, %w: tensor<32x64xf32>, %b: tensor<64xf32>) -> tensor<2x8x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x64xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<16x64xf32>) -> tensor<16x64xf32>
  // expected-remark @below {{'linalg.matmul': bias add folded in: the matrix unit adds it}}
  // expected-remark @below {{'linalg.matmul': relu folded into its epilogue}}
  %r = linalg.matmul ins(%a, %w : tensor<16x32xf32>, tensor<32x64xf32>) outs(%init : tensor<16x64xf32>) -> tensor<16x64xf32>
  %x = tensor.expand_shape %r [[0, 1], [2]] output_shape [2, 8, 64] : tensor<16x64xf32> into tensor<2x8x64xf32>
  %e1 = tensor.empty() : tensor<2x8x64xf32>
  %sum = linalg.generic {indexing_maps = [#id3, #last, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %b : tensor<2x8x64xf32>, tensor<64xf32>) outs(%e1 : tensor<2x8x64xf32>) {
  ^bb0(%v: f32, %y: f32, %o: f32):
    %s = arith.addf %v, %y : f32
    linalg.yield %s : f32
  } -> tensor<2x8x64xf32>
  %act = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%sum : tensor<2x8x64xf32>) outs(%e1 : tensor<2x8x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.maximumf %v, %zero : f32
    linalg.yield %y : f32
  } -> tensor<2x8x64xf32>
  return %act : tensor<2x8x64xf32>
}

// -----

// Not folded: the vector is added along the rows (one value per row, not per
// column), the matmul's result is read twice, or the matmul does not start
// from zero (it accumulates onto %c).

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @not_a_bias
// CHECK-COUNT-3: linalg.generic
func.func @not_a_bias(%a: tensor<16x16xf32>, %w: tensor<16x16xf32>, %v: tensor<16xf32>, %c: tensor<16x16xf32>)
    -> (tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r = linalg.matmul ins(%a, %w : tensor<16x16xf32>, tensor<16x16xf32>) outs(%init : tensor<16x16xf32>) -> tensor<16x16xf32>
  %e1 = tensor.empty() : tensor<16x16xf32>
  %rows = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %v : tensor<16x16xf32>, tensor<16xf32>) outs(%e1 : tensor<16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  %init2 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %r2 = linalg.matmul ins(%a, %w : tensor<16x16xf32>, tensor<16x16xf32>) outs(%init2 : tensor<16x16xf32>) -> tensor<16x16xf32>
  %twice = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r2, %v : tensor<16x16xf32>, tensor<16xf32>) outs(%e1 : tensor<16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  %r3 = linalg.matmul ins(%a, %w : tensor<16x16xf32>, tensor<16x16xf32>) outs(%c : tensor<16x16xf32>) -> tensor<16x16xf32>
  %onto = linalg.generic {indexing_maps = [#id, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r3, %v : tensor<16x16xf32>, tensor<16xf32>) outs(%e1 : tensor<16x16xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  return %rows, %twice, %r2, %onto : tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>
}

// -----

// Adds of scalars and vectors are no matmul's bias add (nor an error).

#s = affine_map<() -> ()>
#v = affine_map<(d0) -> (d0)>

// CHECK-LABEL: func.func @not_a_matrix
// CHECK-COUNT-2: linalg.generic
func.func @not_a_matrix(%a: tensor<f32>, %b: tensor<f32>, %x: tensor<8xf32>, %y: tensor<8xf32>) -> (tensor<f32>, tensor<8xf32>) {
  %e = tensor.empty() : tensor<f32>
  %s = linalg.generic {indexing_maps = [#s, #s, #s], iterator_types = []}
      ins(%a, %b : tensor<f32>, tensor<f32>) outs(%e : tensor<f32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<f32>
  %e1 = tensor.empty() : tensor<8xf32>
  %t = linalg.generic {indexing_maps = [#v, #v, #v], iterator_types = ["parallel"]}
      ins(%x, %y : tensor<8xf32>, tensor<8xf32>) outs(%e1 : tensor<8xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %r = arith.addf %p, %q : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  return %s, %t : tensor<f32>, tensor<8xf32>
}
