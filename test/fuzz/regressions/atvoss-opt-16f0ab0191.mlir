func.func @conv2d$input_channels(%in: memref<1x10x10x16xf16, 1>, %w: memref<3x3x8x32xf16, 1>, %out: memref<1x8x8x32xf32, 1>) {
  "npu.conv2d"(%in, %w, %out) {accumulate = false, activation = "none", strides = array<ui8: 1, 1>, dilations = array<i64: 1, 1>} : (memref<1x10x10x16xf16, 1>, memref<3x3x8x32xf16, 1>, memref<1x8x8x32xf32, 1>) -> ()
  return
}
