// A @matrix barrier waits for the matmul issued before it, and so for the
// im2col whose columns it reads: the image tile may be reloaded while the
// requantisation runs on.

func.func @barrier$matrix_after_im2col(%src: memref<1x8x8x32xi8>, %w: memref<288x64xi8, 1>, %cols: memref<36x288xi8, 1>, %acc: memref<36x64xi32, 1>, %o: memref<36x64xi8, 1>) {
  %x = "npu.alloc"() : () -> memref<1x8x8x32xi8, 1>
  %t0 = "npu.dma_load"(%src, %x) {channel = 0 : i64} : (memref<1x8x8x32xi8>, memref<1x8x8x32xi8, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  "npu.im2col"(%x, %cols) {window = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (memref<1x8x8x32xi8, 1>, memref<36x288xi8, 1>) -> ()
  "npu.matmul"(%cols, %w, %acc) {accumulate = false, activation = "none"} : (memref<36x288xi8, 1>, memref<288x64xi8, 1>, memref<36x64xi32, 1>) -> ()
  "npu.requantize"(%acc, %o) {scale = 1.0 : f64, zero_point = 0 : i64} : (memref<36x64xi32, 1>, memref<36x64xi8, 1>) -> ()
  "npu.barrier"() {engines = "matrix"} : () -> ()
  %t1 = "npu.dma_load"(%src, %x) {channel = 1 : i64} : (memref<1x8x8x32xi8>, memref<1x8x8x32xi8, 1>) -> !npu.token
@  "npu.wait"(%t1) : (!npu.token) -> ()
  "npu.barrier"() {engines = "compute"} : () -> ()
  "npu.dealloc"(%x) : (memref<1x8x8x32xi8, 1>) -> ()
  return
}
