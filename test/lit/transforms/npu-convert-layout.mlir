// RUN: atvoss-opt %s -split-input-file -npu-convert-layout | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-convert-layout

// CHECK-LABEL: func.func @conv$nchw
// CHECK-DAG:     %[[X:.*]] = linalg.transpose ins(%arg0 : tensor<1x8x12x12xf16>) outs(%{{.*}} : tensor<1x12x12x8xf16>) permutation = [0, 2, 3, 1]
// CHECK-DAG:     %[[W:.*]] = linalg.transpose ins(%arg1 : tensor<16x8x3x3xf16>) outs(%{{.*}} : tensor<3x3x8x16xf16>) permutation = [2, 3, 1, 0]
// CHECK-DAG:     %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x5x5x16xf32>)
// CHECK:         %[[Y:.*]] = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%[[X]], %[[W]] : {{.*}}) outs(%[[F]] : tensor<1x5x5x16xf32>)
// CHECK:         %[[R:.*]] = linalg.transpose ins(%[[Y]] : tensor<1x5x5x16xf32>) outs(%{{.*}} : tensor<1x16x5x5xf32>) permutation = [0, 3, 1, 2]
// CHECK:         return %[[R]]
func.func @conv$nchw(%x: tensor<1x8x12x12xf16>, %w: tensor<16x8x3x3xf16>) -> tensor<1x16x5x5xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x5x5xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x16x5x5xf32>) -> tensor<1x16x5x5xf32>
  // expected-remark @below {{'linalg.conv_2d_nchw_fchw' runs as 'linalg.conv_2d_nhwc_hwcf' between NCHW <-> NHWC transposes}}
  %r = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x12x12xf16>, tensor<16x8x3x3xf16>) outs(%f : tensor<1x16x5x5xf32>) -> tensor<1x16x5x5xf32>
  return %r : tensor<1x16x5x5xf32>
}

// -----

// CHECK-LABEL: func.func @pool$nchw
// CHECK:         linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
func.func @pool$nchw(%x: tensor<1x4x8x8xf32>, %out: tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32> {
  %k = tensor.empty() : tensor<2x2xf32>
  // expected-remark @below {{'linalg.pooling_nchw_max' runs as 'linalg.pooling_nhwc_max' between NCHW <-> NHWC transposes}}
  %r = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%x, %k : tensor<1x4x8x8xf32>, tensor<2x2xf32>) outs(%out : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %r : tensor<1x4x4x4xf32>
}
