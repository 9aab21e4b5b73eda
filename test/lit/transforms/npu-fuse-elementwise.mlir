// RUN: atvoss-opt %s -split-input-file -npu-fuse-elementwise --target='npu -max-sram-bytes=65536' | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-fuse-elementwise --target='npu -max-sram-bytes=65536'
// RUN: atvoss-opt %s -split-input-file -npu-fuse-elementwise --target='npu -max-sram-bytes=65536 -fusion=1' | FileCheck %s --check-prefix=FUSION1
// RUN: atvoss-opt %s -split-input-file --npu-pipeline --target='npu -max-sram-bytes=65536' | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM

// A pre-activation batch-norm (x * scale + shift per channel) and its relu, as
// in DenseNet: one generic computes both, so the 64 KiB intermediate is neither
// written to DRAM nor read back. The merged op takes the relu's output and the
// batch-norm's inputs by their own maps.

// CHECK:       #[[ID:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK:       #[[CHANNEL:.*]] = affine_map<(d0, d1, d2, d3) -> (d3)>
// CHECK-LABEL: func.func @bn_relu
// CHECK-SAME:    (%[[X:.*]]: tensor<1x16x16x64xf32>, %[[S:.*]]: tensor<64xf32>, %[[T:.*]]: tensor<64xf32>)
// CHECK:         %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[CHANNEL]], #[[CHANNEL]], #[[ID]]], {{.*}}} ins(%[[X]], %[[S]], %[[T]] : {{.*}})
// CHECK:           arith.mulf
// CHECK:           arith.addf
// CHECK:           arith.maximumf
// CHECK:           linalg.yield
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
// FUSION1-LABEL: func.func @bn_relu
// FUSION1-COUNT-2: linalg.generic
// SIM:           DRAM read / write {{.*}} / 65,536 B
#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
#channel = affine_map<(n, h, w, c) -> (c)>
func.func @bn_relu(%x: tensor<1x16x16x64xf32>, %s: tensor<64xf32>, %t: tensor<64xf32>) -> tensor<1x16x16x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x16x16x64xf32>
  %bn = linalg.generic {indexing_maps = [#id, #channel, #channel, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %s, %t : tensor<1x16x16x64xf32>, tensor<64xf32>, tensor<64xf32>) outs(%e0 : tensor<1x16x16x64xf32>) {
  ^bb0(%v: f32, %a: f32, %b: f32, %o: f32):
    %m = arith.mulf %v, %a : f32
    %r = arith.addf %m, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x64xf32>
  %e1 = tensor.empty() : tensor<1x16x16x64xf32>
  // expected-remark @below {{elementwise producer merged into this op (saves 131072 B of DRAM traffic)}}
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%bn : tensor<1x16x16x64xf32>) outs(%e1 : tensor<1x16x16x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x64xf32>
  return %relu : tensor<1x16x16x64xf32>
}
