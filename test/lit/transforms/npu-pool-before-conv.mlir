// RUN: atvoss-opt %s -split-input-file -npu-pool-before-conv | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-pool-before-conv
// RUN: atvoss-opt %s -split-input-file -npu-pool-before-conv --target='npu -fusion=0' | FileCheck %s --check-prefix=FUSION0
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --entry=transition --report=table | FileCheck %s --check-prefix=SIM

// DenseNet's transition: a 1x1 conv, then a 2x2 stride-2 average pool (a sum
// pool and a division). The sum pool moves before the conv, onto its 64 input
// channels, and the conv multiplies the 64 pooled pixels instead of 256; its
// bias, added once per pooled pixel, is scaled by the window's 4 elements.
// (Kept after the conv, the program takes 2,117 cycles and 524,288 MACs.)

// CHECK-LABEL: func.func @transition
// CHECK-SAME:    (%[[X:.*]]: tensor<1x16x16x64xf32>)
// CHECK:         %[[W:.*]] = arith.constant dense<5.000000e-01> : tensor<1x1x64x32xf32>
// CHECK:         %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x8x8x64xf32>)
// CHECK:         %[[P:.*]] = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[X]], %{{.*}} : tensor<1x16x16x64xf32>, tensor<2x2xf32>) outs(%[[Z]] : tensor<1x8x8x64xf32>)
// CHECK:         %[[B:.*]] = arith.constant dense<[4.000000e+00, 8.000000e+00, 1.200000e+01, 1.600000e+01, {{.*}}]> : tensor<32xf32>
// CHECK:         %[[S:.*]] = linalg.broadcast ins(%[[B]] : tensor<32xf32>) outs(%{{.*}} : tensor<1x8x8x32xf32>) dimensions = [0, 1, 2]
// CHECK:         %[[C:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[P]], %[[W]] : tensor<1x8x8x64xf32>, tensor<1x1x64x32xf32>) outs(%[[S]] : tensor<1x8x8x32xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[C]] : tensor<1x8x8x32xf32>)
// CHECK-NOT:     linalg.conv_2d_nhwc_hwcf

// FUSION0-LABEL: func.func @transition
// FUSION0:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x16x16x64xf32>, tensor<1x1x64x32xf32>)
// FUSION0:         linalg.pooling_nhwc_sum

// SIM:           total cycles               1,908
// SIM:           MACs                     131,072
func.func @transition(%x: tensor<1x16x16x64xf32>) -> tensor<1x8x8x32xf32> {
  %w = arith.constant dense<0.5> : tensor<1x1x64x32xf32>
  %b = arith.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<32xf32>
  %zero = arith.constant 0.0 : f32
  %four = arith.constant 4.0 : f32
  %e0 = tensor.empty() : tensor<1x16x16x32xf32>
  %bias = linalg.broadcast ins(%b : tensor<32xf32>) outs(%e0 : tensor<1x16x16x32xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x16x16x64xf32>, tensor<1x1x64x32xf32>) outs(%bias : tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32>
  %e1 = tensor.empty() : tensor<1x8x8x32xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  // expected-remark @below {{sum pooling moved before the 1x1 convolution it reads: the convolution computes 64 pixels instead of 256 (~516 estimated cycles instead of ~836)}}
  %sum = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%conv, %window : tensor<1x16x16x32xf32>, tensor<2x2xf32>) outs(%init : tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32>
  %e2 = tensor.empty() : tensor<1x8x8x32xf32>
  %avg = linalg.generic {indexing_maps = [affine_map<(n, h, w, c) -> (n, h, w, c)>, affine_map<(n, h, w, c) -> (n, h, w, c)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sum : tensor<1x8x8x32xf32>) outs(%e2 : tensor<1x8x8x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %d = arith.divf %v, %four : f32
    linalg.yield %d : f32
  } -> tensor<1x8x8x32xf32>
  return %avg : tensor<1x8x8x32xf32>
}

// -----

// A conv that starts from zero: the pooled conv starts from zero too.

// CHECK-LABEL: func.func @no_bias
// CHECK:         linalg.pooling_nhwc_sum {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x8x8x32xf32>, tensor<3x3xf32>) outs(%{{.*}} : tensor<1x3x3x32xf32>)
// CHECK:         %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x3x3x16xf32>)
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} outs(%[[Z]] : tensor<1x3x3x16xf32>)
func.func @no_bias(%x: tensor<1x8x8x32xf32>, %w: tensor<1x1x32x16xf32>) -> tensor<1x3x3x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x8x8x16xf32>
  %start = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x8x32xf32>, tensor<1x1x32x16xf32>) outs(%start : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %e1 = tensor.empty() : tensor<1x3x3x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x3x3x16xf32>) -> tensor<1x3x3x16xf32>
  %window = tensor.empty() : tensor<3x3xf32>
  // expected-remark @below {{sum pooling moved before the 1x1 convolution it reads}}
  %sum = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%conv, %window : tensor<1x8x8x16xf32>, tensor<3x3xf32>) outs(%init : tensor<1x3x3x16xf32>) -> tensor<1x3x3x16xf32>
  return %sum : tensor<1x3x3x16xf32>
}
