// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-repeat-depthwise-channels
// RUN: atvoss-opt %s -split-input-file -npu-repeat-depthwise-channels | FileCheck %s

// A depthwise conv with a channel multiplier whose shapes are not static
// stays as it is, with a remark saying why.

// CHECK-LABEL: func.func @dynamic
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwcm
// CHECK-NOT:     linalg.depthwise_conv_2d_nhwc_hwc {
func.func @dynamic(%x: tensor<?x9x9x4xf32>, %w: tensor<3x3x4x2xf32>, %init: tensor<?x7x7x4x2xf32>) -> tensor<?x7x7x4x2xf32> {
  // expected-remark @below {{the depthwise conv with a channel multiplier stays on the fallback engine: its shapes are not static}}
  %r = linalg.depthwise_conv_2d_nhwc_hwcm {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<?x9x9x4xf32>, tensor<3x3x4x2xf32>) outs(%init : tensor<?x7x7x4x2xf32>) -> tensor<?x7x7x4x2xf32>
  return %r : tensor<?x7x7x4x2xf32>
}
