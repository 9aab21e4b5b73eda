// RUN: atvoss-opt %s -npu-overlap-ops -npu-narrow-barriers -npu-allocate-sram | atvoss-sim - --timing-only --report=table | FileCheck %s --check-prefix=AFTER
// RUN: atvoss-opt %s -npu-overlap-ops -npu-narrow-barriers -npu-interleave-loops -npu-allocate-sram | atvoss-sim - --timing-only --report=table | FileCheck %s --check-prefix=BESIDE

// npu-interleave-loops.mlir's first program, simulated: the matmul's loop
// starts once the relu's last tile is issued (each relu tile's barrier holds
// the sequencer); interleaved, a matmul tile runs beside each of the first
// two relu tiles.

// AFTER:  total cycles {{ *}}5,252
// BESIDE: total cycles {{ *}}4,192
func.func @relu_loop$beside_matmul_loop(%x: memref<4x64x64xf32>, %w: memref<64x128xf32>,
                                        %y: memref<4x64x64xf32>, %z: memref<64x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %a = "npu.alloc"() : () -> memref<1x64x64xf32, 1>
  %r = "npu.alloc"() : () -> memref<4x64x64xf32, 1>
  scf.for %i = %c0 to %c4 step %c1 {
    "npu.barrier"() {engines = "compute"} : () -> ()
    %xs = memref.subview %x[%i, 0, 0] [1, 64, 64] [1, 1, 1] : memref<4x64x64xf32> to memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>>
    %t = "npu.dma_load"(%xs, %a) {channel = 0 : i64} : (memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>>, memref<1x64x64xf32, 1>) -> !npu.token
    "npu.wait"(%t) : (!npu.token) -> ()
    %rs = memref.subview %r[%i, 0, 0] [1, 64, 64] [1, 1, 1] : memref<4x64x64xf32, 1> to memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>, 1>
    "npu.activation"(%a, %rs) {kind = "relu"} : (memref<1x64x64xf32, 1>, memref<1x64x64xf32, strided<[4096, 64, 1], offset: ?>, 1>) -> ()
  } {npu.tile_loop}
  "npu.barrier"() {engines = "compute"} : () -> ()
  %b = "npu.alloc"() : () -> memref<64x64xf32, 1>
  %o = "npu.alloc"() : () -> memref<64x128xf32, 1>
  scf.for %i = %c0 to %c2 step %c1 {
    "npu.barrier"() {engines = "compute"} : () -> ()
    %off = arith.muli %i, %c64 : index
    %ws = memref.subview %w[0, %off] [64, 64] [1, 1] : memref<64x128xf32> to memref<64x64xf32, strided<[128, 1], offset: ?>>
    %t = "npu.dma_load"(%ws, %b) {channel = 1 : i64} : (memref<64x64xf32, strided<[128, 1], offset: ?>>, memref<64x64xf32, 1>) -> !npu.token
    "npu.wait"(%t) : (!npu.token) -> ()
    %os = memref.subview %o[0, %off] [64, 64] [1, 1] : memref<64x128xf32, 1> to memref<64x64xf32, strided<[128, 1], offset: ?>, 1>
    "npu.matmul"(%b, %b, %os) {accumulate = false, activation = "none", dataflow = "ws"} : (memref<64x64xf32, 1>, memref<64x64xf32, 1>, memref<64x64xf32, strided<[128, 1], offset: ?>, 1>) -> ()
  } {npu.tile_loop}
  "npu.barrier"() {engines = "compute"} : () -> ()
  %t2 = "npu.dma_store"(%o, %z) {channel = 0 : i64} : (memref<64x128xf32, 1>, memref<64x128xf32>) -> !npu.token
  %t3 = "npu.dma_store"(%r, %y) {channel = 1 : i64} : (memref<4x64x64xf32, 1>, memref<4x64x64xf32>) -> !npu.token
  "npu.wait"(%t2, %t3) : (!npu.token, !npu.token) -> ()
  "npu.dealloc"(%o) : (memref<64x128xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<64x64xf32, 1>) -> ()
  "npu.dealloc"(%r) : (memref<4x64x64xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<1x64x64xf32, 1>) -> ()
  return
}
