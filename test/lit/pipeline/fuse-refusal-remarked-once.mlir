// RUN: atvoss-opt %s --npu-pipeline --remarks 2>&1 >/dev/null | FileCheck %s

// npu-fuse-epilogue refuses to fold the relu (the matmul's result is also
// returned) and says so once; npu-fuse-elementwise, which folds the chains it
// merges, does not say it again.

// CHECK:     relu not folded into 'linalg.matmul': its result has other uses or another type
// CHECK-NOT: relu not folded

#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @matmul$relu_result_used_twice(%a: tensor<64x32xf16>, %b: tensor<32x16xf16>, %c: tensor<64x16xf32>) -> (tensor<64x16xf32>, tensor<64x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %r = linalg.matmul ins(%a, %b : tensor<64x32xf16>, tensor<32x16xf16>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  %e = tensor.empty() : tensor<64x16xf32>
  %act = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<64x16xf32>) outs(%e : tensor<64x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %x, %zero : f32
    linalg.yield %y : f32
  } -> tensor<64x16xf32>
  return %act, %r : tensor<64x16xf32>, tensor<64x16xf32>
}
