// RUN: atvoss-opt %s -npu-allocate-sram | atvoss-sim - --timing-only --report=table | FileCheck %s --check-prefix=ALONE
// RUN: atvoss-opt %s -npu-overlap-ops -npu-allocate-sram | atvoss-sim - --timing-only --report=table | FileCheck %s --check-prefix=PASSED
// RUN: atvoss-opt %s -npu-overlap-ops -npu-narrow-barriers -npu-allocate-sram | atvoss-sim - --timing-only --report=table | FileCheck %s --check-prefix=BESIDE

// A relu on the vector unit, then a matmul in a tile loop, simulated. With the
// barrier after the relu, the loop starts once the relu is done. Without it
// (npu-overlap-ops) the loop's own barrier, which waits for both units, still
// holds its first load until the relu is done: no cycle is saved. Once that
// barrier waits for the matrix unit alone (npu-narrow-barriers), the matmuls
// run beside the relu and the program ends sooner.

// ALONE:  total cycles {{ *}}11,912
// PASSED: total cycles {{ *}}11,912
// BESIDE: total cycles {{ *}}10,880
func.func @main(%x: memref<256x256xf32>, %w: memref<64x128xf32>,
                %y: memref<256x256xf32>, %z: memref<64x128xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %a = "npu.alloc"() : () -> memref<256x256xf32, 1>
  %t0 = "npu.dma_load"(%x, %a) {channel = 0 : i64} : (memref<256x256xf32>, memref<256x256xf32, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  %r = "npu.alloc"() : () -> memref<256x256xf32, 1>
  "npu.activation"(%a, %r) {kind = "relu"} : (memref<256x256xf32, 1>, memref<256x256xf32, 1>) -> ()
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
  %t3 = "npu.dma_store"(%r, %y) {channel = 1 : i64} : (memref<256x256xf32, 1>, memref<256x256xf32>) -> !npu.token
  "npu.wait"(%t2, %t3) : (!npu.token, !npu.token) -> ()
  "npu.dealloc"(%o) : (memref<64x128xf32, 1>) -> ()
  "npu.dealloc"(%b) : (memref<64x64xf32, 1>) -> ()
  "npu.dealloc"(%r) : (memref<256x256xf32, 1>) -> ()
  "npu.dealloc"(%a) : (memref<256x256xf32, 1>) -> ()
  return
}
