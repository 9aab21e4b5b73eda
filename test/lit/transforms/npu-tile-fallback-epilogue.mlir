// RUN: not atvoss-opt %s -split-input-file -npu-tile 2>/dev/null | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-tile

// An op with an activation folded into it (npu-fuse-epilogue) that stays on
// the fallback engine: the fallback engine runs the linalg op as written, so
// the activation becomes an elementwise op of its own on the op's output,
// right after it. Here the depthwise conv's output starts from a copied
// tensor, not from zero, which the vector unit cannot start from.

// CHECK-LABEL: func.func @relu
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-NOT:     npu.activation
// CHECK-SAME:    outs(%[[Y:.*]] : memref<1x4x4x8xf32>)
// CHECK-NEXT:    linalg.generic {{.*}} ins(%[[Y]] : memref<1x4x4x8xf32>) outs(%[[Y]] : memref<1x4x4x8xf32>)
// CHECK:           arith.maximumf
// CHECK-NOT:       arith.minimumf
// CHECK:           linalg.yield
func.func @relu(%x: memref<1x6x6x8xf32>, %w: memref<3x3x8xf32>, %init: memref<1x4x4x8xf32>, %y: memref<1x4x4x8xf32>) {
  memref.copy %init, %y : memref<1x4x4x8xf32> to memref<1x4x4x8xf32>
  // expected-remark @below {{'linalg.depthwise_conv_2d_nhwc_hwc' stays on the fallback engine: the output must start as 0.0 (a fill folded into the op)}}
  linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, npu.activation = "relu", strides = dense<1> : tensor<2xi64>} ins(%x, %w : memref<1x6x6x8xf32>, memref<3x3x8xf32>) outs(%y : memref<1x4x4x8xf32>)
  return
}

// -----

// A clip (relu6 from ONNX's Clip 0..6) keeps both bounds.

// CHECK-LABEL: func.func @clip
// CHECK:         linalg.generic
// CHECK:           arith.constant 0.000000e+00 : f32
// CHECK:           arith.maximumf
// CHECK:           arith.constant 6.000000e+00 : f32
// CHECK:           arith.minimumf
func.func @clip(%x: memref<1x6x6x8xf32>, %w: memref<3x3x8xf32>, %init: memref<1x4x4x8xf32>, %y: memref<1x4x4x8xf32>) {
  memref.copy %init, %y : memref<1x4x4x8xf32> to memref<1x4x4x8xf32>
  // expected-remark @below {{stays on the fallback engine}}
  linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, npu.activation = "clip", npu.clip_min = 0.0 : f64, npu.clip_max = 6.0 : f64, strides = dense<1> : tensor<2xi64>} ins(%x, %w : memref<1x6x6x8xf32>, memref<3x3x8xf32>) outs(%y : memref<1x4x4x8xf32>)
  return
}

// -----

// An activation npu-fuse-epilogue never folds (only relu and clips) is an
// error at the op, never dropped.

func.func @unknown(%x: memref<1x6x6x8xf32>, %w: memref<3x3x8xf32>, %init: memref<1x4x4x8xf32>, %y: memref<1x4x4x8xf32>) {
  memref.copy %init, %y : memref<1x4x4x8xf32> to memref<1x4x4x8xf32>
  // expected-remark @below {{stays on the fallback engine}}
  // expected-error @below {{'linalg.depthwise_conv_2d_nhwc_hwc': it stays on the fallback engine with a folded sigmoid it cannot apply}}
  linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, npu.activation = "sigmoid", strides = dense<1> : tensor<2xi64>} ins(%x, %w : memref<1x6x6x8xf32>, memref<3x3x8xf32>) outs(%y : memref<1x4x4x8xf32>)
  return
}

// -----

// A malformed epilogue attribute is an error at the op.

func.func @malformed(%x: memref<1x6x6x8xf32>, %w: memref<3x3x8xf32>, %init: memref<1x4x4x8xf32>, %y: memref<1x4x4x8xf32>) {
  memref.copy %init, %y : memref<1x4x4x8xf32> to memref<1x4x4x8xf32>
  // expected-remark @below {{stays on the fallback engine}}
  // expected-error @below {{'linalg.depthwise_conv_2d_nhwc_hwc': malformed npu.clip_min "six": expected a float}}
  linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, npu.activation = "clip", npu.clip_min = "six", strides = dense<1> : tensor<2xi64>} ins(%x, %w : memref<1x6x6x8xf32>, memref<3x3x8xf32>) outs(%y : memref<1x4x4x8xf32>)
  return
}
