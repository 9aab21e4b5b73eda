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

// -----

// A 1x1 convolution whose result a pad reads (the 3x3 conv after it): direct
// and implicit GEMM tie, and direct wins the tie, since it writes the padded
// buffer's interior in place (an implicit GEMM views its output as a matrix,
// which the interior's row stride does not allow).

// CHECK-LABEL: func.func @conv$1x1_padded
// CHECK:         npu.conv_strategy = "direct"
// CHECK:         tensor.pad
// CHECK:         npu.conv_strategy = "direct"
func.func @conv$1x1_padded(%x: tensor<1x28x28x64xf32>, %w: tensor<1x1x64x96xf32>, %y: tensor<1x28x28x96xf32>,
                           %k: tensor<3x3x96x32xf32>, %z: tensor<1x28x28x32xf32>) -> tensor<1x28x28x32xf32> {
  // expected-remark @below {{conv strategy direct (direct ~8224 cycles, implicit-gemm ~8224 cycles, im2col ~9016 cycles; direct at a tie: only a pad reads the result, and a direct conv writes the padded buffer's interior in place)}}
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x28x28x64xf32>, tensor<1x1x64x96xf32>) outs(%y : tensor<1x28x28x96xf32>) -> tensor<1x28x28x96xf32>
  %c = arith.constant 0.0 : f32
  %p = tensor.pad %r low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %l: index, %m: index):
    tensor.yield %c : f32
  } : tensor<1x28x28x96xf32> to tensor<1x30x30x96xf32>
  // expected-remark @below {{conv strategy direct}}
  %s = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %k : tensor<1x30x30x96xf32>, tensor<3x3x96x32xf32>) outs(%z : tensor<1x28x28x32xf32>) -> tensor<1x28x28x32xf32>
  return %s : tensor<1x28x28x32xf32>
}

// -----

// The same 1x1 conv writing its rows into the interior of a padded strip (a
// cascade's rolling window: the strip is a wider tensor, its border filled)
// takes the direct strategy at the tie too. Inserted into a slice of channels
// (a grouped conv's group), its pixels are a matrix's rows: the implicit GEMM
// keeps the tie.

// CHECK-LABEL: func.func @conv$1x1_into_padded_strip
// CHECK:         npu.conv_strategy = "direct"
// CHECK:         npu.conv_strategy = "implicit-gemm"
func.func @conv$1x1_into_padded_strip(%x: tensor<1x28x28x64xf32>, %w: tensor<1x1x64x96xf32>, %y: tensor<1x28x28x96xf32>,
                                      %strip: tensor<1x30x30x96xf32>, %wide: tensor<1x28x28x192xf32>) -> (tensor<1x30x30x96xf32>, tensor<1x28x28x192xf32>) {
  // expected-remark @below {{conv strategy direct (direct ~8224 cycles, implicit-gemm ~8224 cycles, im2col ~9016 cycles; direct at a tie: the result is written into a slice of a wider tensor, which a direct conv writes in place)}}
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x28x28x64xf32>, tensor<1x1x64x96xf32>) outs(%y : tensor<1x28x28x96xf32>) -> tensor<1x28x28x96xf32>
  %i = tensor.insert_slice %r into %strip[0, 1, 1, 0] [1, 28, 28, 96] [1, 1, 1, 1] : tensor<1x28x28x96xf32> into tensor<1x30x30x96xf32>
  // expected-remark @below {{conv strategy implicit-gemm (direct ~8224 cycles, implicit-gemm ~8224 cycles, im2col ~9016 cycles)}}
  %g = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<1x28x28x64xf32>, tensor<1x1x64x96xf32>) outs(%y : tensor<1x28x28x96xf32>) -> tensor<1x28x28x96xf32>
  %j = tensor.insert_slice %g into %wide[0, 0, 0, 96] [1, 28, 28, 96] [1, 1, 1, 1] : tensor<1x28x28x96xf32> into tensor<1x28x28x192xf32>
  return %i, %j : tensor<1x30x30x96xf32>, tensor<1x28x28x192xf32>
}

// -----

// A 1x1 conv whose result a pad and another conv read (SqueezeNet's squeeze,
// read by its 1x1 and its padded 3x3 expand): the tie stays with the implicit
// GEMM. Kept padded, the result's interior would be a strided view that the
// other reader, an implicit GEMM too, cannot read as its matrix.

// CHECK-LABEL: func.func @conv$1x1_padded_and_read
// CHECK:         npu.conv_strategy = "implicit-gemm"
func.func @conv$1x1_padded_and_read(%x: tensor<2x27x27x64xf32>, %w: tensor<1x1x64x16xf32>, %y: tensor<2x27x27x16xf32>,
                                    %w1: tensor<1x1x16x64xf32>, %y1: tensor<2x27x27x64xf32>,
                                    %k: tensor<3x3x16x64xf32>, %z: tensor<2x27x27x64xf32>) -> (tensor<2x27x27x64xf32>, tensor<2x27x27x64xf32>) {
  // expected-remark @below {{conv strategy implicit-gemm (direct ~7354 cycles, implicit-gemm ~7354 cycles, im2col ~8820 cycles)}}
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : tensor<2x27x27x64xf32>, tensor<1x1x64x16xf32>) outs(%y : tensor<2x27x27x16xf32>) -> tensor<2x27x27x16xf32>
  // expected-remark @below {{conv strategy implicit-gemm}}
  %e1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%r, %w1 : tensor<2x27x27x16xf32>, tensor<1x1x16x64xf32>) outs(%y1 : tensor<2x27x27x64xf32>) -> tensor<2x27x27x64xf32>
  %c = arith.constant 0.0 : f32
  %p = tensor.pad %r low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %l: index, %m: index):
    tensor.yield %c : f32
  } : tensor<2x27x27x16xf32> to tensor<2x29x29x16xf32>
  // expected-remark @below {{conv strategy direct}}
  %e3 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %k : tensor<2x29x29x16xf32>, tensor<3x3x16x64xf32>) outs(%z : tensor<2x27x27x64xf32>) -> tensor<2x27x27x64xf32>
  return %e1, %e3 : tensor<2x27x27x64xf32>, tensor<2x27x27x64xf32>
}
