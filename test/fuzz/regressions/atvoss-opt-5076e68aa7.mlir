func.func @transpose$and_fill(%x: memref<4x8xf16, 1>, %y: memref<8x4xf16, 1>) {
  %minus = arith.constant -1.0 : f16
  linalg.transpose ins(%x : memref<4x8xf16, 1>) outs(%y : memref<8x4xf16, 1>) permutation = [1, 0]
  return
}
