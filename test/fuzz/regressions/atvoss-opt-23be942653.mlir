func.func @conv2d$batch(%in: memref<2x10x10x16xf16, 1>, %w: memref<3x3x16x32xf16, 1>, %out: memref<1x8x8x32xf32, 65535>) {
  "npu.conv2d"(%in, %w, %out) {accumulate = false, activation = "none", strides = array<i64: 1, 1>, dilations = array<index: 1, 1>} : (memref<2x10x10x16xf16, 1>, memref<3x3x16x32xf16, 1>, memref<1x8x8x32xf32, 1>) -> ()
  return
}
