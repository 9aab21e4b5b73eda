// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-fuse-elementwise --target='npu -max-sram-bytes=65536'
// RUN: atvoss-opt %s -split-input-file -npu-fuse-elementwise --target='npu -max-sram-bytes=65536' | FileCheck %s

// Chains that stay two ops.

// The intermediate is read by another op too: it must exist.

// CHECK-LABEL: func.func @read_twice
// CHECK-COUNT-2: linalg.generic
#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
func.func @read_twice(%x: tensor<1x16x16x64xf32>) -> (tensor<1x16x16x64xf32>, tensor<1x16x16x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x16x16x64xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x16x16x64xf32>) outs(%e0 : tensor<1x16x16x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.negf %v : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x64xf32>
  %e1 = tensor.empty() : tensor<1x16x16x64xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%neg : tensor<1x16x16x64xf32>) outs(%e1 : tensor<1x16x16x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x64xf32>
  return %relu, %neg : tensor<1x16x16x64xf32>, tensor<1x16x16x64xf32>
}

// -----

// A small intermediate (4 KiB, at most a quarter of the SRAM) is left to the
// buffer plan.

// CHECK-LABEL: func.func @small
// CHECK-COUNT-2: linalg.generic
#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
func.func @small(%x: tensor<1x4x4x64xf32>) -> tensor<1x4x4x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x4x4x64xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x4x4x64xf32>) outs(%e0 : tensor<1x4x4x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.negf %v : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x64xf32>
  %e1 = tensor.empty() : tensor<1x4x4x64xf32>
  // expected-remark @below {{elementwise producer not merged: its 4096 B result is left to the buffer plan (at most a quarter of the SRAM)}}
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%neg : tensor<1x4x4x64xf32>) outs(%e1 : tensor<1x4x4x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x4x4x64xf32>
  return %relu : tensor<1x4x4x64xf32>
}

// -----

// The producer's body does not run on the vector unit (a remainder has no
// vector step): it is not merged into an op that does.

// CHECK-LABEL: func.func @unsupported_body
// CHECK-COUNT-2: linalg.generic
#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
func.func @unsupported_body(%x: tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %two = arith.constant 2.0 : f32
  %e0 = tensor.empty() : tensor<1x16x16x64xf32>
  %rem = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x16x16x64xf32>) outs(%e0 : tensor<1x16x16x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.remf %v, %two : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x64xf32>
  %e1 = tensor.empty() : tensor<1x16x16x64xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%rem : tensor<1x16x16x64xf32>) outs(%e1 : tensor<1x16x16x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x64xf32>
  return %relu : tensor<1x16x16x64xf32>
}
