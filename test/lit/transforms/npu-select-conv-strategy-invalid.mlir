// RUN: atvoss-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(npu-select-conv-strategy{strategy=implicit-gemm})'
// RUN: not atvoss-opt %s --pass-pipeline='builtin.module(npu-select-conv-strategy{strategy=winograd})' 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: unknown conv strategy 'winograd' (auto, implicit-gemm, direct, im2col)

// Implicit GEMM needs a 1x1 kernel: forcing it on a 3x3 conv leaves the op as it is.

func.func @conv$forced_implicit_gemm_3x3(%x: tensor<1x10x10x8xf16>, %w: tensor<3x3x8x8xf16>, %y: tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32> {
  // expected-remark @below {{conv strategy 'implicit-gemm' does not apply (needs a 1x1 unpadded conv)}}
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x10x10x8xf16>, tensor<3x3x8x8xf16>) outs(%y : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  return %r : tensor<1x8x8x8xf32>
}
