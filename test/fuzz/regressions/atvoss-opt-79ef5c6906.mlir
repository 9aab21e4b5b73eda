

// A 1x1 convolution as implicit GEMM: npu.matmul on the collapsed tiles.

func.func @conv$implicit_gemm(%x: memref<1x4x4x8xf16, 1>, %w: memref<1x1x8x16xf16, 1>, %y: memref<1x4x4x16xf32, 1>) {
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                            npu.conv_strategy = @"implicit-gemm"}
    ins(%x, %w : memref<1x4x4x8xf16, 1>, memref<1x1x8x16xf16, 1>) outs(%y : memref<1x4x4x16xf32, 1>)
  return
}
