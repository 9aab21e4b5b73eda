// RUN: atvoss-opt %s -split-input-file -npu-repeat-depthwise-channels | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-repeat-depthwise-channels
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --entry=padded --report=table | FileCheck %s --check-prefix=SIM

// A depthwise conv with two filters per channel (ONNX's Conv with group = 4
// and 8 filters). The NPU's depthwise conv has one filter per channel: each
// input channel is repeated twice (before the padding, which the conv folds
// into its loads), and a depthwise conv over the 8 channels filters them, its
// weights the 3x3x4x2 constant reshaped; its result is reshaped back.

// CHECK-LABEL: func.func @padded
// CHECK-SAME:    (%[[X:.*]]: tensor<1x9x9x4xf32>)
// CHECK:         %[[W:.*]] = arith.constant dense<5.000000e-01> : tensor<3x3x4x2xf32>
// CHECK-NOT:     tensor.pad %[[X]]
// CHECK:         %[[REP:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel"]} ins(%{{.*}} : tensor<1x9x9x4xf32>) outs(%{{.*}} : tensor<1x9x9x4x2xf32>)
// CHECK-NEXT:    ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:      linalg.yield %[[IN]] : f32
// CHECK:         %[[FLAT:.*]] = tensor.collapse_shape %[[REP]] {{\[\[}}0], [1], [2], [3, 4]] : tensor<1x9x9x4x2xf32> into tensor<1x9x9x8xf32>
// CHECK:         %[[PAD:.*]] = tensor.pad %[[FLAT]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK:         %[[WF:.*]] = tensor.collapse_shape %[[W]] {{\[\[}}0], [1], [2, 3]] : tensor<3x3x4x2xf32> into tensor<3x3x8xf32>
// CHECK:         %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x9x9x8xf32>)
// CHECK:         %[[D:.*]] = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%[[PAD]], %[[WF]] : tensor<1x11x11x8xf32>, tensor<3x3x8xf32>) outs(%[[Z]] : tensor<1x9x9x8xf32>)
// CHECK:         %[[R:.*]] = tensor.expand_shape %[[D]] {{\[\[}}0], [1], [2], [3, 4]] output_shape [1, 9, 9, 4, 2]
// CHECK:         return %[[R]]
// CHECK-NOT:     linalg.depthwise_conv_2d_nhwc_hwcm

// Through the pipeline nothing is left on the fallback engine.
// SIM:           fallback 0 0.0%
// SIM:           npu.depthwise_conv2d
func.func @padded(%x: tensor<1x9x9x4xf32>) -> tensor<1x9x9x4x2xf32> {
  %zero = arith.constant 0.0 : f32
  %w = arith.constant dense<0.5> : tensor<3x3x4x2xf32>
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x9x9x4xf32> to tensor<1x11x11x4xf32>
  %e = tensor.empty() : tensor<1x9x9x4x2xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x9x9x4x2xf32>) -> tensor<1x9x9x4x2xf32>
  // expected-remark @below {{depthwise conv with channel multiplier 2: each of its 4 input channels repeated 2 times, filtered by a depthwise conv over 8 channels}}
  %r = linalg.depthwise_conv_2d_nhwc_hwcm {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %w : tensor<1x11x11x4xf32>, tensor<3x3x4x2xf32>) outs(%init : tensor<1x9x9x4x2xf32>) -> tensor<1x9x9x4x2xf32>
  return %r : tensor<1x9x9x4x2xf32>
}

// -----

// Unpadded, strided and dilated, with weights that are an argument: the
// input itself is repeated, the weights are reshaped at run time (a view),
// the strides and dilations are kept.

// CHECK-LABEL: func.func @strided
// CHECK-SAME:    (%[[X:.*]]: tensor<2x13x13x3xf32>, %[[W:.*]]: tensor<2x2x3x3xf32>)
// CHECK:         %[[REP:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<2x13x13x3xf32>) outs(%{{.*}} : tensor<2x13x13x3x3xf32>)
// CHECK:         %[[FLAT:.*]] = tensor.collapse_shape %[[REP]] {{.*}} into tensor<2x13x13x9xf32>
// CHECK:         %[[WF:.*]] = tensor.collapse_shape %[[W]] {{.*}} into tensor<2x2x9xf32>
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<2> : tensor<2xi64>, strides = dense<3> : tensor<2xi64>} ins(%[[FLAT]], %[[WF]] : tensor<2x13x13x9xf32>, tensor<2x2x9xf32>) outs(%{{.*}} : tensor<2x4x4x9xf32>)
func.func @strided(%x: tensor<2x13x13x3xf32>, %w: tensor<2x2x3x3xf32>) -> tensor<2x4x4x3x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4x4x3x3xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4x4x3x3xf32>) -> tensor<2x4x4x3x3xf32>
  // expected-remark @below {{depthwise conv with channel multiplier 3: each of its 3 input channels repeated 3 times, filtered by a depthwise conv over 9 channels}}
  %r = linalg.depthwise_conv_2d_nhwc_hwcm {dilations = dense<2> : tensor<2xi64>, strides = dense<3> : tensor<2xi64>}
      ins(%x, %w : tensor<2x13x13x3xf32>, tensor<2x2x3x3xf32>) outs(%init : tensor<2x4x4x3x3xf32>) -> tensor<2x4x4x3x3xf32>
  return %r : tensor<2x4x4x3x3xf32>
}
