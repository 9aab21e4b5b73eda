// RUN: atvoss-opt %s -split-input-file --target='npu -pipeline-stages=2' \
// RUN:   --pass-pipeline='builtin.module(npu-tile,npu-promote-to-sram,canonicalize,npu-convert-linalg-to-npu,canonicalize,cse)' | FileCheck %s
// RUN: atvoss-opt %s -split-input-file --target='npu -pipeline-stages=3' \
// RUN:   --pass-pipeline='builtin.module(npu-tile,npu-promote-to-sram,canonicalize,npu-convert-linalg-to-npu,canonicalize,cse)' | FileCheck %s --check-prefix=STAGES3
// RUN: atvoss-opt %s -split-input-file --target='npu -pipeline-stages=1' \
// RUN:   --pass-pipeline='builtin.module(npu-tile,npu-promote-to-sram,canonicalize,npu-convert-linalg-to-npu,canonicalize,cse)' | FileCheck %s --check-prefix=STAGES1

// Double buffering: two SRAM buffers per changing tile. Iteration t waits for
// the compute of tile t-1 only (a compute barrier), stores its finished
// accumulator, starts the loads of tile t+1 into the other buffers, then waits
// for tile t's loads (started an iteration earlier) and the previous store, and
// computes tile t. Tokens in flight are loop-carried. The zero fill is folded
// (accumulate = false on the first K step), the relu epilogue runs on the last
// K step only, and the accumulator is stored once per output tile.

// Three stages: three buffers per changing tile; the prologue starts tile 1's
// loads without waiting, iteration t starts tile t+2's, and two tokens per
// operand are in flight across iterations.

// STAGES3-LABEL: func.func @matmul$relu_epilogue
// STAGES3-COUNT-9: "npu.alloc"() : () -> memref<{{128x48xf16|48x32xf16|128x32xf32}}, 1>
// STAGES3:         %[[A0:.*]] = "npu.dma_load"
// STAGES3:         %[[B0:.*]] = "npu.dma_load"
// STAGES3:         "npu.wait"(%[[A0]], %[[B0]])
// STAGES3:         %[[A1:.*]] = "npu.dma_load"
// STAGES3:         %[[B1:.*]] = "npu.dma_load"
// STAGES3-NOT:     "npu.wait"
// STAGES3:         scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args(%[[TA0:.*]] = %[[A0]], %[[TA1:.*]] = %[[A1]], %[[TB0:.*]] = %[[B0]], %[[TB1:.*]] = %[[B1]], %[[TS:.*]] = %[[A0]])
// STAGES3:           "npu.barrier"() {engines = "compute"}
// STAGES3:           %[[N:.*]]:2 = scf.if %{{.*}} -> (!npu.token, !npu.token) {
// STAGES3:             "npu.dma_load"
// STAGES3:           } else {
// STAGES3-NEXT:        scf.yield %[[TA1]], %[[TB1]]
// STAGES3:           "npu.wait"(%[[TA0]], %[[TB0]], %[[TS]])
// STAGES3:           scf.yield %[[TA1]], %[[N]]#0, %[[TB1]], %[[N]]#1, %{{.*}}

// CHECK-LABEL: func.func @matmul$relu_epilogue
// CHECK-NOT:     linalg.fill
// CHECK-COUNT-6: "npu.alloc"() : () -> memref<{{128x48xf16|48x32xf16|128x32xf32}}, 1>
// CHECK:         %[[A0:.*]] = "npu.dma_load"(%{{.*}}, %{{.*}}) {channel = 0 : i64} : (memref<128x48xf16
// CHECK:         %[[B0:.*]] = "npu.dma_load"(%{{.*}}, %{{.*}}) {channel = 1 : i64} : (memref<48x32xf16
// CHECK:         "npu.wait"(%[[A0]], %[[B0]])
// CHECK:         scf.for %[[T:.*]] = %c0 to %c4 step %c1 iter_args(%[[TA:.*]] = %[[A0]], %[[TB:.*]] = %[[B0]], %[[TS:.*]] = %[[A0]])
// CHECK:           "npu.barrier"() {engines = "compute"}
// CHECK:           %[[S:.*]] = scf.if %{{.*}} -> (!npu.token) {
// CHECK:             %[[ST:.*]] = "npu.dma_store"
// CHECK-NEXT:        scf.yield %[[ST]]
// CHECK-NEXT:      } else {
// CHECK-NEXT:        scf.yield %[[TS]]
// CHECK:           %[[N:.*]]:2 = scf.if %{{.*}} -> (!npu.token, !npu.token) {
// CHECK:             %[[NA:.*]] = "npu.dma_load"
// CHECK:             %[[NB:.*]] = "npu.dma_load"
// CHECK:             scf.yield %[[NA]], %[[NB]]
// CHECK-NEXT:      } else {
// CHECK-NEXT:        scf.yield %[[TA]], %[[TB]]
// CHECK:           "npu.wait"(%[[TA]], %[[TB]], %[[TS]])
// CHECK:           scf.if
// CHECK:             "npu.matmul"({{.*}}) {accumulate = false, activation = "none", dataflow = "os"}
// CHECK:           } else {
// CHECK:             scf.if
// CHECK:               "npu.matmul"({{.*}}) {accumulate = true, activation = "relu", dataflow = "os"}
// CHECK:             } else {
// CHECK:               "npu.matmul"({{.*}}) {accumulate = true, activation = "none", dataflow = "os"}
// CHECK:           scf.yield %[[N]]#0, %[[N]]#1, %[[S]]
// CHECK:         } {npu.tile_loop}
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"} : () -> ()
// CHECK-NEXT:    "npu.wait"(%{{.*}}#0, %{{.*}}#1, %{{.*}}#2)
// CHECK:         %[[LAST:.*]] = "npu.dma_store"
// CHECK:         "npu.wait"(%[[LAST]])
// CHECK-COUNT-6: "npu.dealloc"

// STAGES1-LABEL: func.func @matmul$relu_epilogue
// STAGES1-COUNT-3: "npu.alloc"
// STAGES1-NOT:     "npu.alloc"
// STAGES1:         scf.for
// STAGES1:           scf.if
// STAGES1:             "npu.dma_load"
// STAGES1:             "npu.dma_load"
// STAGES1:             "npu.wait"
// STAGES1:           "npu.matmul"
// STAGES1:           "npu.barrier"()
// STAGES1:           scf.if
// STAGES1:             "npu.dma_store"
func.func @matmul$relu_epilogue(%a: memref<128x96xf16>, %b: memref<96x64xf16>) -> memref<128x64xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<128x64xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x64xf32>)
  linalg.matmul {npu.activation = "relu", npu.tile_sizes = array<i64: 128, 32, 48>, npu.loop_order = array<i64: 0, 1, 2>}
    ins(%a, %b : memref<128x96xf16>, memref<96x64xf16>) outs(%c : memref<128x64xf32>)
  return %c : memref<128x64xf32>
}

// -----

// Partial tiles: buffers have the full tile size, DMA and compute use subviews
// sized min(tile, size - offset) (upstream tiling's affine.min). The output is
// an argument, so it is loaded and accumulated onto.

// CHECK-LABEL: func.func @matmul$partial_tiles
// CHECK:         "npu.alloc"() : () -> memref<64x48xf16, 1>
// CHECK:         affine.min
// CHECK:         memref.subview %{{.*}}[0, 0] [%{{.*}}, %{{.*}}] [1, 1] : memref<64x48xf16, 1> to memref<?x?xf16, strided<[48, 1]>, 1>
// CHECK:         "npu.matmul"({{.*}}) {accumulate = true, activation = "none", dataflow = "os"} : (memref<?x?xf16
func.func @matmul$partial_tiles(%a: memref<100x70xf16>, %b: memref<70x50xf16>, %c: memref<100x50xf32>) {
  linalg.matmul {npu.tile_sizes = array<i64: 64, 32, 48>, npu.loop_order = array<i64: 0, 1, 2>}
    ins(%a, %b : memref<100x70xf16>, memref<70x50xf16>) outs(%c : memref<100x50xf32>)
  return
}

// -----

// A padded input (a bufferized tensor.pad) is read from its source: the buffers
// are filled with the pad value once, the DMA writes the interior, and the halo
// rows of later tiles are refilled an iteration before their DMA (which the
// next iteration's compute barrier orders after the fill).

// CHECK-LABEL: func.func @conv$padded
// CHECK-NOT:     memref.copy
// CHECK:         "npu.fill"(%{{.*}}) {value = 0.000000e+00 : f64} : (memref<1x6x18x8xf16, 1>) -> ()
// CHECK:         "npu.barrier"()
// CHECK:         "npu.dma_load"(%{{.*}}, %{{.*}}) {channel = {{[01]}} : i64} : (memref<1x5x16x8xf16, strided<[2048, 128, 8, 1]>>, memref<1x5x16x8xf16, strided<[864, 144, 8, 1], offset: 152>, 1>)
// CHECK:         scf.for
// CHECK:           "npu.barrier"() {engines = "compute"}
// CHECK:           "npu.dma_load"
// CHECK:           "npu.conv2d"
// CHECK:           scf.if
// CHECK:             "npu.fill"
// CHECK:         } {npu.tile_loop}
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"} : () -> ()
func.func @conv$padded(%x: memref<1x16x16x8xf16>, %w: memref<3x3x8x8xf16>) -> memref<1x16x16x8xf32> {
  %pad = arith.constant 0.0 : f16
  %zero = arith.constant 0.0 : f32
  %padded = memref.alloc() : memref<1x18x18x8xf16>
  linalg.map outs(%padded : memref<1x18x18x8xf16>) (%init: f16) { linalg.yield %pad : f16 }
  %interior = memref.subview %padded[0, 1, 1, 0] [1, 16, 16, 8] [1, 1, 1, 1] : memref<1x18x18x8xf16> to memref<1x16x16x8xf16, strided<[2592, 144, 8, 1], offset: 152>>
  memref.copy %x, %interior : memref<1x16x16x8xf16> to memref<1x16x16x8xf16, strided<[2592, 144, 8, 1], offset: 152>>
  %y = memref.alloc() : memref<1x16x16x8xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<1x16x16x8xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                            npu.tile_sizes = array<i64: 1, 4, 16, 8, 8>, npu.loop_order = array<i64: 0, 1, 2, 3, 4>}
    ins(%padded, %w : memref<1x18x18x8xf16>, memref<3x3x8x8xf16>) outs(%y : memref<1x16x16x8xf32>)
  return %y : memref<1x16x16x8xf32>
}

// -----

// A padded input loaded once (one tile) has a fixed halo: only its rows and
// columns outside the DMA's interior are filled, not the whole buffer.

// CHECK-LABEL: func.func @conv$padded_once
// CHECK-NOT:     "npu.fill"(%{{.*}}) {value = 0.000000e+00 : f64} : (memref<1x18x18x8xf16, 1>) -> ()
// CHECK:         "npu.fill"(%{{.*}}) {value = 0.000000e+00 : f64} : (memref<1x1x18x8xf16, strided<[2592, 144, 8, 1]>, 1>) -> ()
// CHECK:         "npu.fill"(%{{.*}}) {value = 0.000000e+00 : f64} : (memref<1x1x18x8xf16, strided<[2592, 144, 8, 1], offset: 2448>, 1>) -> ()
// CHECK:         "npu.fill"(%{{.*}}) {value = 0.000000e+00 : f64} : (memref<1x18x1x8xf16, strided<[2592, 144, 8, 1]>, 1>) -> ()
// CHECK:         "npu.fill"(%{{.*}}) {value = 0.000000e+00 : f64} : (memref<1x18x1x8xf16, strided<[2592, 144, 8, 1], offset: 136>, 1>) -> ()
// CHECK-NEXT:    "npu.barrier"() {engines = "compute"}
// CHECK:         "npu.dma_load"(%{{.*}}, %{{.*}}) {channel = {{[01]}} : i64} : (memref<1x16x16x8xf16>, memref<1x16x16x8xf16, strided<[2592, 144, 8, 1], offset: 152>, 1>)
func.func @conv$padded_once(%x: memref<1x16x16x8xf16>, %w: memref<3x3x8x8xf16>) -> memref<1x16x16x8xf32> {
  %pad = arith.constant 0.0 : f16
  %zero = arith.constant 0.0 : f32
  %padded = memref.alloc() : memref<1x18x18x8xf16>
  linalg.map outs(%padded : memref<1x18x18x8xf16>) (%init: f16) { linalg.yield %pad : f16 }
  %interior = memref.subview %padded[0, 1, 1, 0] [1, 16, 16, 8] [1, 1, 1, 1] : memref<1x18x18x8xf16> to memref<1x16x16x8xf16, strided<[2592, 144, 8, 1], offset: 152>>
  memref.copy %x, %interior : memref<1x16x16x8xf16> to memref<1x16x16x8xf16, strided<[2592, 144, 8, 1], offset: 152>>
  %y = memref.alloc() : memref<1x16x16x8xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<1x16x16x8xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>,
                            npu.tile_sizes = array<i64: 1, 16, 16, 8, 8>, npu.loop_order = array<i64: 0, 1, 2, 3, 4>}
    ins(%padded, %w : memref<1x18x18x8xf16>, memref<3x3x8x8xf16>) outs(%y : memref<1x16x16x8xf32>)
  return %y : memref<1x16x16x8xf32>
}

// -----

// An op left on the fallback engine writes the matmul's input. DMA engines do
// not wait for compute, so the tile program starts with a barrier before its
// first DMA.

// CHECK-LABEL: func.func @matmul$after_fallback
// CHECK:         linalg.generic
// CHECK:         "npu.alloc"
// CHECK-NOT:     "npu.dma_load"
// CHECK:         "npu.barrier"()
// CHECK:         "npu.dma_load"
func.func @matmul$after_fallback(%a: memref<64x32xf16>, %b: memref<32x32xf16>, %c: memref<64x32xf32>) {
  %e = memref.alloc() : memref<64x32xf16>
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<64x32xf16>) outs(%e : memref<64x32xf16>) {
  ^bb0(%x: f16, %y: f16):
    %r = math.sin %x : f16
    linalg.yield %r : f16
  }
  linalg.matmul {npu.tile_sizes = array<i64: 64, 32, 32>, npu.loop_order = array<i64: 0, 1, 2>}
    ins(%e, %b : memref<64x32xf16>, memref<32x32xf16>) outs(%c : memref<64x32xf32>)
  return
}
