// RUN: atvoss-opt %s --target='npu -dataflow=ws' -split-input-file -npu-tile | FileCheck %s
// RUN: atvoss-opt %s --target='npu -dataflow=ws' -split-input-file -verify-diagnostics -npu-tile
// RUN: not atvoss-opt %s -split-input-file --pass-pipeline='builtin.module(npu-tile{tile-sizes=64,32,48})' 2>&1 \
// RUN:   | FileCheck %s --check-prefix=EXPLICIT
// (Tile choices and cycles here are the weight-stationary dataflow's.)

// Explicit tile sizes apply to every op; one with another number of loops is an error.
// EXPLICIT: npu-tile.mlir:[[@LINE+56]]:3: error: 'linalg.conv_2d_nhwc_hwcf' has 5 loop dimensions (n, oh, ow, f, c), tile-sizes gives 3

// The cost model streams the whole M through the array (amortising its weight
// fill), so only N and K are tiled: upstream tiling makes an scf.for per tiled
// dim (outermost marked npu.tile_loop) over the matmul on subviews.

// CHECK-LABEL: func.func @matmul$gemm_512
// CHECK:         scf.for %[[N:.*]] = %{{.*}} to %{{.*}} step %c64 {
// CHECK-NEXT:      scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %c128 {
// CHECK-NEXT:        %[[A:.*]] = memref.subview %arg0[0, %[[K]]] [512, 128] [1, 1]
// CHECK-NEXT:        %[[B:.*]] = memref.subview %arg1[%[[K]], %[[N]]] [128, 64] [1, 1]
// CHECK-NEXT:        %[[C:.*]] = memref.subview %arg2[0, %[[N]]] [512, 64] [1, 1]
// CHECK-NEXT:        linalg.matmul {npu.dataflow = "ws", npu.loop_order = array<i64: 0, 1, 2>, npu.tile_sizes = array<i64: 512, 64, 128>} ins(%[[A]], %[[B]] : {{.*}}) outs(%[[C]] :
// CHECK:         } {npu.tile_loop}
// EXPLICIT-LABEL: func.func @matmul$gemm_512
// EXPLICIT:         npu.tile_sizes = array<i64: 64, 32, 48>
func.func @matmul$gemm_512(%a: memref<512x512xf16>, %b: memref<512x512xf16>, %c: memref<512x512xf32>) {
  // expected-remark @below {{'linalg.matmul': tiles m512xn64xk128, loops (m,n,k), working set 557056 B}}
  linalg.matmul ins(%a, %b : memref<512x512xf16>, memref<512x512xf16>) outs(%c : memref<512x512xf32>)
  return
}

// -----

// A zero fill of a fresh buffer right before the matmul is folded into it
// (it is not tiled on its own).

// CHECK-LABEL: func.func @matmul$fill_folded
// CHECK:         linalg.fill
// CHECK-NOT:       npu.tile_sizes
// CHECK:         linalg.matmul {{{.*}}npu.tile_sizes = array<i64: 100, 32, 70>}
func.func @matmul$fill_folded(%a: memref<100x70xf16>, %b: memref<70x50xf16>) -> memref<100x50xf32> {
  %zero = arith.constant 0.0 : f32
  %c = memref.alloc() : memref<100x50xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<100x50xf32>)
  // expected-remark @below {{'linalg.matmul': tiles m100xn32xk70, loops (m,n,k)}}
  linalg.matmul ins(%a, %b : memref<100x70xf16>, memref<70x50xf16>) outs(%c : memref<100x50xf32>)
  return %c : memref<100x50xf32>
}

// -----

// Convolutions tile output rows (with the input halo: 28 output rows read 30
// input rows), filters and input channels; the output width stays whole.

// CHECK-LABEL: func.func @conv$3x3
// CHECK:         scf.for %[[OH:.*]] = %{{.*}} to %c56 step %c28 {
// CHECK-NEXT:      scf.for %[[F:.*]] = %{{.*}} to %c64 step %c32
// CHECK-NEXT:        scf.for %[[C:.*]] = %{{.*}} to %{{.*}} step %c32
// CHECK-NEXT:          %[[X:.*]] = memref.subview %arg0[0, %[[OH]], 0, %[[C]]] [1, 30, 58, 32] [1, 1, 1, 1]
// CHECK-NEXT:          %[[W:.*]] = memref.subview %arg1[0, 0, %[[C]], %[[F]]] [3, 3, 32, 32] [1, 1, 1, 1]
// CHECK-NEXT:          %[[Y:.*]] = memref.subview %arg2[0, %[[OH]], 0, %[[F]]] [1, 28, 56, 32] [1, 1, 1, 1]
// CHECK-NEXT:          linalg.conv_2d_nhwc_hwcf {{{.*}}npu.tile_sizes = array<i64: 1, 28, 56, 32, 32>{{.*}}} ins(%[[X]], %[[W]] : {{.*}}) outs(%[[Y]] :
// CHECK:         } {npu.tile_loop}
func.func @conv$3x3(%x: memref<1x58x58x64xf16>, %w: memref<3x3x64x64xf16>, %y: memref<1x56x56x64xf32>) {
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': tiles n1xoh28xow56xf32xc32}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x58x58x64xf16>, memref<3x3x64x64xf16>) outs(%y : memref<1x56x56x64xf32>)
  return
}

// -----

// Ops without an npu lowering stay on the fallback engine, with the reason.

// CHECK-LABEL: func.func @fallback$nchw
// CHECK:         linalg.conv_2d_nchw_fchw
// CHECK-NOT:       npu.tile_sizes
func.func @fallback$nchw(%x: memref<1x8x10x10xf32>, %w: memref<4x8x3x3xf32>, %y: memref<1x4x8x8xf32>) {
  // expected-remark @below {{'linalg.conv_2d_nchw_fchw' stays on the fallback engine: NCHW convolutions run on the NPU only after npu-convert-layout (on tensors)}}
  linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %w : memref<1x8x10x10xf32>, memref<4x8x3x3xf32>) outs(%y : memref<1x4x8x8xf32>)
  return
}

// -----

// CHECK-LABEL: func.func @fallback$sin
func.func @fallback$sin(%x: memref<16x16xf32>, %y: memref<16x16xf32>) {
  // expected-remark @below {{'linalg.generic' stays on the fallback engine: 'math.sin' in the body has no vector-unit instruction}}
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<16x16xf32>) outs(%y : memref<16x16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.sin %in : f32
    linalg.yield %e : f32
  }
  return
}

// -----

// A row sum on the vector unit: 64 rows of 4096 do not fit one tile, so the
// reduced dim is split and the tiles accumulate in SRAM. The output (an
// argument, not a fresh buffer) is loaded and accumulated onto.

// CHECK-LABEL: func.func @reduce$rows_split
// CHECK:         linalg.generic {{.*}}npu.tile_sizes = array<i64: 64, 1792>
func.func @reduce$rows_split(%x: memref<64x4096xf32>, %y: memref<64xf32>) {
  // expected-remark @below {{'linalg.generic': tiles d064xd11792, loops (d0,d1), working set 917760 B, estimated 17312 cycles; reduction in 3 tiles, accumulated in SRAM}}
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<64x4096xf32>) outs(%y : memref<64xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A short row stays whole in one tile.

// CHECK-LABEL: func.func @reduce$rows_whole
func.func @reduce$rows_whole(%x: memref<16x128xf32>, %y: memref<16xf32>) {
  // expected-remark @below {{reduction whole in one SRAM tile}}
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x128xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %in, %acc : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// A product has no vector-unit reduction: the fallback engine runs it.

// CHECK-LABEL: func.func @fallback$product
// CHECK-NOT:     npu.tile_sizes
func.func @fallback$product(%x: memref<16x128xf32>, %y: memref<16xf32>) {
  // expected-remark @below {{'linalg.generic' stays on the fallback engine: the reduction body does more than combine an element with the accumulator by add, max or min}}
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x128xf32>) outs(%y : memref<16xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %p = arith.mulf %in, %acc : f32
    linalg.yield %p : f32
  }
  return
}

// -----

// A schedule given on the op (as `atvoss tune` records it) is taken as it
// is: its tiles, loop order, pipeline stages and dataflow; no search.

// CHECK-LABEL: func.func @matmul$given_schedule
// CHECK:         linalg.matmul {npu.dataflow = "os", npu.loop_order = array<i64: 1, 0, 2>, npu.pipeline_stages = 3 : i64, npu.tile_sizes = array<i64: 64, 64, 128>}
func.func @matmul$given_schedule(%a: memref<256x256xf16>, %b: memref<256x256xf16>, %c: memref<256x256xf32>) {
  // expected-remark @below {{'linalg.matmul': tiles m64xn64xk128, loops (n,m,k), working set 147456 B, estimated 32504 cycles; dataflow os}}
  linalg.matmul {npu.tile_sizes = array<i64: 64, 64, 128>, npu.loop_order = array<i64: 1, 0, 2>,
                 npu.pipeline_stages = 3 : i64, npu.dataflow = "os"}
      ins(%a, %b : memref<256x256xf16>, memref<256x256xf16>) outs(%c : memref<256x256xf32>)
  return
}
