// RUN: atvoss-opt %s -split-input-file --pass-pipeline='builtin.module(npu-cascade-rows{pipeline=false})' | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(npu-cascade-rows{pipeline=false})'
// RUN: atvoss-opt %s -split-input-file --npu-pipeline --remarks 2>&1 | FileCheck %s --check-prefix=PIPELINE

// An elementwise op only a conv reads (a squeeze-excitation's gate times its
// input) folds into that conv's loads as a prologue. Where the conv heads a
// chain run in strips, the strips read rows of the product, which would then
// be made whole and go through DRAM: the chain starts at the product instead,
// each strip scaling its rows, which its conv folds.
// -----

// The gated 1.2 MB input of two 1x1 convs (96 -> 64 -> 144 channels), in 3
// strips of 19 rows: each strip multiplies its rows by the gate, then runs
// both convs on them.

// CHECK-LABEL: func.func @gated
// CHECK-SAME:    (%[[X:.*]]: tensor<1x56x56x96xf32>, %[[G:.*]]: tensor<1x96xf32>)
// CHECK:         %[[X0:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 19, 56, 96] [1, 1, 1, 1]
// CHECK:         %[[S0:.*]] = linalg.generic {{.*}} ins(%[[X0]], %[[G]] : tensor<1x19x56x96xf32>, tensor<1x96xf32>)
// CHECK:         %[[C0:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[S0]], %{{.*}} : tensor<1x19x56x96xf32>, tensor<1x1x96x64xf32>)
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[C0]], %{{.*}} : tensor<1x19x56x64xf32>, tensor<1x1x64x144xf32>)
// CHECK:         %[[X1:.*]] = tensor.extract_slice %[[X]][0, 19, 0, 0] [1, 19, 56, 96] [1, 1, 1, 1]
// CHECK:         linalg.generic {{.*}} ins(%[[X1]], %[[G]] : tensor<1x19x56x96xf32>, tensor<1x96xf32>)
// CHECK:         %[[X2:.*]] = tensor.extract_slice %[[X]][0, 38, 0, 0] [1, 18, 56, 96] [1, 1, 1, 1]
// CHECK:         linalg.generic {{.*}} ins(%[[X2]], %[[G]] : tensor<1x18x56x96xf32>, tensor<1x96xf32>)
// CHECK-NOT:     tensor<1x56x56x96xf32>

// Through the pipeline each strip's conv folds its rows of the product.
// PIPELINE:      remark: cascaded 'linalg.generic' at line {{[0-9]+}}, 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} in
// PIPELINE:      remark: 'linalg.generic' at line {{[0-9]+}} folded into this op as a prologue on its input tiles
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d0, d3)>
func.func @gated(%x: tensor<1x56x56x96xf32>, %gate: tensor<1x96xf32>) -> tensor<1x56x56x144xf32> {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<0.125> : tensor<1x1x96x64xf32>
  %w2 = arith.constant dense<0.25> : tensor<1x1x64x144xf32>
  %e0 = tensor.empty() : tensor<1x56x56x96xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #chan, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %gate : tensor<1x56x56x96xf32>, tensor<1x96xf32>) outs(%e0 : tensor<1x56x56x96xf32>) {
  ^bb0(%a: f32, %g: f32, %o: f32):
    %m = arith.mulf %a, %g : f32
    linalg.yield %m : f32
  } -> tensor<1x56x56x96xf32>
  %e1 = tensor.empty() : tensor<1x56x56x64xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%scaled, %w1 : tensor<1x56x56x96xf32>, tensor<1x1x96x64xf32>) outs(%i1 : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  %e2 = tensor.empty() : tensor<1x56x56x144xf32>
  %i2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x56x56x144xf32>) -> tensor<1x56x56x144xf32>
  // expected-remark @below {{cascaded 'linalg.generic' at line 38, 'linalg.conv_2d_nhwc_hwcf' at line 46, 'linalg.conv_2d_nhwc_hwcf' at line 50 in 3 strips of 19 rows: the 2007040 B between them stay in SRAM a strip at a time (estimated 73088 -> 58288 cycles)}}
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%c1, %w2 : tensor<1x56x56x64xf32>, tensor<1x1x64x144xf32>) outs(%i2 : tensor<1x56x56x144xf32>) -> tensor<1x56x56x144xf32>
  return %c2 : tensor<1x56x56x144xf32>
}

// -----

// The product read by one conv whose result is the function's: no chain of
// two convolutions, so the product stays whole for the conv to fold, without
// a remark from this pass (the only tensor over 40% of the SRAM is the
// product, which is never made).

// CHECK-LABEL: func.func @one_conv
// CHECK:         %[[S:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x56x56x96xf32>, tensor<1x96xf32>)
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[S]], %{{.*}} : tensor<1x56x56x96xf32>, tensor<1x1x96x64xf32>)
// CHECK-NOT:     tensor.extract_slice
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#chan = affine_map<(d0, d1, d2, d3) -> (d0, d3)>
func.func @one_conv(%x: tensor<1x56x56x96xf32>, %gate: tensor<1x96xf32>) -> tensor<1x56x56x64xf32> {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<0.125> : tensor<1x1x96x64xf32>
  %e0 = tensor.empty() : tensor<1x56x56x96xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #chan, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %gate : tensor<1x56x56x96xf32>, tensor<1x96xf32>) outs(%e0 : tensor<1x56x56x96xf32>) {
  ^bb0(%a: f32, %g: f32, %o: f32):
    %m = arith.mulf %a, %g : f32
    linalg.yield %m : f32
  } -> tensor<1x56x56x96xf32>
  %e1 = tensor.empty() : tensor<1x56x56x64xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%scaled, %w1 : tensor<1x56x56x96xf32>, tensor<1x1x96x64xf32>) outs(%i1 : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  return %c1 : tensor<1x56x56x64xf32>
}
