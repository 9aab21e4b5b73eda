// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-convert-layout

// On memrefs the layout can no longer change: the op is left as it is.

func.func @conv$nchw_on_memrefs(%x: memref<1x8x12x12xf16>, %w: memref<16x8x3x3xf16>, %y: memref<1x16x10x10xf32>) {
  // expected-remark @below {{'linalg.conv_2d_nchw_fchw' not converted to NHWC: the layout is changed on tensors, before bufferization}}
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x8x12x12xf16>, memref<16x8x3x3xf16>) outs(%y : memref<1x16x10x10xf32>)
  return
}
