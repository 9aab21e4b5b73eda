// RUN: atvoss-opt %s -split-input-file -npu-fuse-elementwise --target='npu -max-sram-bytes=65536' | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-fuse-elementwise --target='npu -max-sram-bytes=65536'
// RUN: atvoss-opt %s -split-input-file --npu-pipeline --target='npu -max-sram-bytes=65536' | FileCheck %s --check-prefix=NPU

// The exact gelu as PyTorch exports it before opset 20: Div by sqrt(2), Erf,
// Add 1, Mul by x, Mul by 0.5, each an op with its constant as a 0-d tensor.
// Merged into one op, the chain computes the vector unit's gelu of the
// matmul's result, reshaped back to the batch dims: it becomes the matmul's
// epilogue, through the reshape. No elementwise op is left.

#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#s = affine_map<(d0, d1, d2) -> ()>

// CHECK-LABEL: func.func @linear$gelu
// CHECK:         %[[R:.*]] = linalg.matmul {npu.activation = "gelu"}
// CHECK:         %[[X:.*]] = tensor.expand_shape %[[R]]
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[X]]
// NPU-LABEL:   func.func @linear$gelu
// NPU-NOT:       npu.elementwise
// NPU:           "npu.matmul"{{.*}}activation = "gelu"
// NPU-NOT:       npu.elementwise
// NPU-LABEL:   func.func @linear$not_gelu
func.func @linear$gelu(%a: tensor<128x32xf32>, %w: tensor<32x64xf32>, %c: tensor<128x64xf32>) -> tensor<2x64x64xf32> {
  %sqrt2 = arith.constant dense<1.41421354> : tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  %half = arith.constant dense<0.5> : tensor<f32>
  // expected-remark @below {{'linalg.matmul': gelu folded into its epilogue}}
  %r = linalg.matmul ins(%a, %w : tensor<128x32xf32>, tensor<32x64xf32>) outs(%c : tensor<128x64xf32>) -> tensor<128x64xf32>
  %x = tensor.expand_shape %r [[0, 1], [2]] output_shape [2, 64, 64] : tensor<128x64xf32> into tensor<2x64x64xf32>
  %e = tensor.empty() : tensor<2x64x64xf32>
  %d = linalg.generic {indexing_maps = [#id, #s, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %sqrt2 : tensor<2x64x64xf32>, tensor<f32>) outs(%e : tensor<2x64x64xf32>) {
  ^bb0(%v: f32, %k: f32, %o: f32):
    %y = arith.divf %v, %k : f32
    linalg.yield %y : f32
  } -> tensor<2x64x64xf32>
  // expected-remark @below {{elementwise producer merged into this op (saves 65536 B of DRAM traffic)}}
  %f = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%d : tensor<2x64x64xf32>) outs(%e : tensor<2x64x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = math.erf %v : f32
    linalg.yield %y : f32
  } -> tensor<2x64x64xf32>
  // expected-remark @below {{elementwise producer merged into this op (saves 65536 B of DRAM traffic)}}
  %g = linalg.generic {indexing_maps = [#id, #s, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%f, %one : tensor<2x64x64xf32>, tensor<f32>) outs(%e : tensor<2x64x64xf32>) {
  ^bb0(%v: f32, %k: f32, %o: f32):
    %y = arith.addf %v, %k : f32
    linalg.yield %y : f32
  } -> tensor<2x64x64xf32>
  // expected-remark @below {{elementwise producer merged into this op (saves 65536 B of DRAM traffic)}}
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %g : tensor<2x64x64xf32>, tensor<2x64x64xf32>) outs(%e : tensor<2x64x64xf32>) {
  ^bb0(%v: f32, %u: f32, %o: f32):
    %y = arith.mulf %v, %u : f32
    linalg.yield %y : f32
  } -> tensor<2x64x64xf32>
  // expected-remark @below {{elementwise producer merged into this op (saves 65536 B of DRAM traffic)}}
  %i = linalg.generic {indexing_maps = [#id, #s, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%h, %half : tensor<2x64x64xf32>, tensor<f32>) outs(%e : tensor<2x64x64xf32>) {
  ^bb0(%v: f32, %k: f32, %o: f32):
    %y = arith.mulf %v, %k : f32
    linalg.yield %y : f32
  } -> tensor<2x64x64xf32>
  return %i : tensor<2x64x64xf32>
}

// -----

// Not a gelu: the chain adds 2 instead of 1 (x * (2 + erf(x / sqrt(2))) / 2).
// It is merged, and stays an elementwise op after the matmul.

#id = affine_map<(d0, d1) -> (d0, d1)>
#s = affine_map<(d0, d1) -> ()>

// CHECK-LABEL: func.func @linear$not_gelu
// CHECK:         linalg.matmul ins
// CHECK:         linalg.generic
func.func @linear$not_gelu(%a: tensor<128x32xf32>, %w: tensor<32x64xf32>, %c: tensor<128x64xf32>) -> tensor<128x64xf32> {
  %sqrt2 = arith.constant dense<1.41421354> : tensor<f32>
  %two = arith.constant dense<2.0> : tensor<f32>
  %half = arith.constant dense<0.5> : tensor<f32>
  %r = linalg.matmul ins(%a, %w : tensor<128x32xf32>, tensor<32x64xf32>) outs(%c : tensor<128x64xf32>) -> tensor<128x64xf32>
  %e = tensor.empty() : tensor<128x64xf32>
  %d = linalg.generic {indexing_maps = [#id, #s, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %sqrt2 : tensor<128x64xf32>, tensor<f32>) outs(%e : tensor<128x64xf32>) {
  ^bb0(%v: f32, %k: f32, %o: f32):
    %y = arith.divf %v, %k : f32
    %z = math.erf %y : f32
    linalg.yield %z : f32
  } -> tensor<128x64xf32>
  // expected-remark @below {{elementwise producer merged into this op (saves 65536 B of DRAM traffic)}}
  %g = linalg.generic {indexing_maps = [#id, #s, #id], iterator_types = ["parallel", "parallel"]}
      ins(%d, %two : tensor<128x64xf32>, tensor<f32>) outs(%e : tensor<128x64xf32>) {
  ^bb0(%v: f32, %k: f32, %o: f32):
    %y = arith.addf %v, %k : f32
    linalg.yield %y : f32
  } -> tensor<128x64xf32>
  // expected-remark @below {{elementwise producer merged into this op (saves 65536 B of DRAM traffic)}}
  %h = linalg.generic {indexing_maps = [#id, #id, #s, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %g, %half : tensor<128x64xf32>, tensor<128x64xf32>, tensor<f32>) outs(%e : tensor<128x64xf32>) {
  ^bb0(%v: f32, %u: f32, %k: f32, %o: f32):
    %y = arith.mulf %v, %u : f32
    %z = arith.mulf %y, %k : f32
    linalg.yield %z : f32
  } -> tensor<128x64xf32>
  return %h : tensor<128x64xf32>
}
