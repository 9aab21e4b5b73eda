// RUN: atvoss-opt %s -split-input-file -npu-select-conv-strategy | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-select-conv-strategy
// RUN: atvoss-opt %s -split-input-file --pass-pipeline='builtin.module(npu-select-conv-strategy{strategy=im2col})' | FileCheck %s --check-prefix=FORCED

// A 1x1 convolution is a GEMM over the pixels; a stride-2 one loads only the
// pixels it keeps.

// CHECK-LABEL: func.func @conv$1x1_stride2
// CHECK:         linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, npu.conv_strategy = "implicit-gemm"
// FORCED-LABEL: func.func @conv$1x1_stride2
// FORCED:         npu.conv_strategy = "im2col"
func.func @conv$1x1_stride2(%x: tensor<1x56x56x256xf16>, %w: tensor<1x1x256x128xf16>, %y: tensor<1x28x28x128xf32>) -> tensor<1x28x28x128xf32> {
  // expected-remark @below {{conv strategy implicit-gemm (implicit-gemm ~}}
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : tensor<1x56x56x256xf16>, tensor<1x1x256x128xf16>) outs(%y : tensor<1x28x28x128xf32>) -> tensor<1x28x28x128xf32>
  return %r : tensor<1x28x28x128xf32>
}

// -----

// A 3x3 convolution runs on the conv instruction: im2col would add the
// vector unit's unfolding to the same matrix work.

// CHECK-LABEL: func.func @conv$3x3
// CHECK:         npu.conv_strategy = "direct"
func.func @conv$3x3(%x: tensor<1x58x58x64xf16>, %w: tensor<3x3x64x64xf16>, %y: tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32> {
  // expected-remark @below {{conv strategy direct (direct ~116280 cycles, im2col ~144512 cycles)}}
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x58x58x64xf16>, tensor<3x3x64x64xf16>) outs(%y : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  return %r : tensor<1x56x56x64xf32>
}
