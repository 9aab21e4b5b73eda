func.func @conv$malformed_clip_bound(%x: memref<1x4x4x8xf16, 1>, %w: memref<1x1x8x16xf16, 1>, %y: memref<1x4x4x16xf32, 1>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, npu.activation = "clip", npu.clip_min = 0.0 : f64, npu.clip_max = "six}"}
    ins(%x, %w : memref<1x4x4x8xf16, 1>, memref<1x1x8x16xf16, 1>) outs(%y : memref<1x4x4x16xf32, 1>)
  return
}
