// RUN: atvoss-opt %s -split-input-file --target='npu -max-sram-bytes=65536' \
// RUN:   --pass-pipeline='builtin.module(npu-tile,npu-promote-to-sram,canonicalize,npu-convert-linalg-to-npu,canonicalize,cse)' | FileCheck %s
// RUN: atvoss-opt %s -split-input-file --target='npu -max-sram-bytes=65536' -verify-diagnostics -npu-tile
// RUN: atvoss-opt %s -split-input-file --target='npu -max-sram-bytes=65536 -fusion=1' -npu-tile \
// RUN:   | FileCheck %s --check-prefix=FUSION1

// A pre-activation (batch-norm scale and shift, relu) writing a DRAM buffer
// that only a conv reads is folded into the conv as a prologue on its input
// tiles: the conv loads the pre-activation's input, and the vector unit
// applies the body to each loaded tile in SRAM, in place, before the matmul.
// The pre-activated tensor is never written. At -fusion=1 both ops stay.

// CHECK-LABEL: func.func @conv$pre_activation
// CHECK-NOT:     memref<1x16x16x64xf32>) -> ()
// CHECK:         %[[X:.*]] = "npu.dma_load"(%{{.*}}, %[[TILE:.*]]) {{.*}} : (memref<1x{{[0-9]+}}x16x{{[0-9]+}}xf32, strided<[16384, 1024, 64, 1]{{.*}}>>, memref<1x{{.*}}xf32, 1>)
// CHECK:         "npu.wait"(
// The relu rides on the add before it, as its epilogue: two vector passes.
// CHECK:         "npu.elementwise"(%[[TILE]], %{{.*}}, %[[TILE]]) {kind = "mul"}
// CHECK-NEXT:    "npu.elementwise"(%[[TILE]], %{{.*}}, %[[TILE]]) {activation = "relu", kind = "add"}
// CHECK-NOT:     "npu.activation"
// Pipelined, tile t+1's prologue follows the matmul of tile t (the vector
// unit beside the matrix unit), once tile t+1's load is done.
// CHECK:         scf.for
// CHECK:           "npu.dma_load"
// CHECK:           "npu.matmul"
// CHECK-NEXT:      scf.if %{{.*}} {
// CHECK-NEXT:        "npu.wait"
// CHECK:             "npu.elementwise"(%[[NEXT:[0-9]+]], %{{.*}}, %[[NEXT]]) {kind = "mul"}
// FUSION1-LABEL: func.func @conv$pre_activation
// FUSION1:         linalg.generic {{{.*}}npu.tile_sizes
// FUSION1:         linalg.conv_2d_nhwc_hwcf {{{.*}}npu.tile_sizes
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
func.func @conv$pre_activation(%x: memref<1x16x16x64xf32>, %s: memref<64xf32>, %b: memref<64xf32>,
                               %w: memref<1x1x64x32xf32>) -> memref<1x16x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<1x16x16x64xf32>
  linalg.generic {indexing_maps = [#id, #ch, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%x, %s, %b : memref<1x16x16x64xf32>, memref<64xf32>, memref<64xf32>) outs(%t : memref<1x16x16x64xf32>) {
  ^bb0(%in: f32, %scale: f32, %shift: f32, %out: f32):
    %m = arith.mulf %in, %scale : f32
    %a = arith.addf %m, %shift : f32
    %r = arith.maximumf %a, %zero : f32
    linalg.yield %r : f32
  }
  %y = memref.alloc() : memref<1x16x16x32xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<1x16x16x32xf32>)
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': tiles}}
  // expected-remark @below {{folded into this op as a prologue on its input tiles, applied in SRAM after each load (saves 131072 B of DRAM traffic)}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, npu.conv_strategy = "implicit-gemm", strides = dense<1> : tensor<2xi64>}
    ins(%t, %w : memref<1x16x16x64xf32>, memref<1x1x64x32xf32>) outs(%y : memref<1x16x16x32xf32>)
  return %y : memref<1x16x16x32xf32>
}

// -----

// A 2x2 average pool (a sum pool) takes the prologue the same way.

// CHECK-LABEL: func.func @pool$pre_activation
// CHECK:         "npu.elementwise"(%[[T:.*]], %{{.*}}, %[[T]]) {activation = "relu", kind = "mul"}
// CHECK-NOT:     "npu.activation"
// CHECK:         scf.for
// A pool's prologue runs on its own tile right before it (the same unit).
// CHECK:           "npu.elementwise"(%[[U:.*]], %{{.*}}, %[[U]]) {activation = "relu", kind = "mul"}
// CHECK:           "npu.pool2d"
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
func.func @pool$pre_activation(%x: memref<1x16x16x64xf32>, %s: memref<64xf32>) -> memref<1x8x8x64xf32> {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<1x16x16x64xf32>
  linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%x, %s : memref<1x16x16x64xf32>, memref<64xf32>) outs(%t : memref<1x16x16x64xf32>) {
  ^bb0(%in: f32, %scale: f32, %out: f32):
    %m = arith.mulf %in, %scale : f32
    %r = arith.maximumf %m, %zero : f32
    linalg.yield %r : f32
  }
  %window = memref.alloc() : memref<2x2xf32>
  %y = memref.alloc() : memref<1x8x8x64xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<1x8x8x64xf32>)
  // expected-remark @below {{'linalg.pooling_nhwc_sum': tiles}}
  // expected-remark @below {{folded into this op as a prologue}}
  linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%t, %window : memref<1x16x16x64xf32>, memref<2x2xf32>) outs(%y : memref<1x8x8x64xf32>)
  return %y : memref<1x8x8x64xf32>
}

// -----

// Not folded: another op reads the pre-activated tensor too (it must exist),
// and a body that reads its input after overwriting it (x * s + x: each step
// in place would lose x).

// (-verify-diagnostics checks that neither gets the prologue remark.)
// CHECK-LABEL: func.func @conv$two_readers
// CHECK:         "npu.activation"(%{{.*}}, %{{.*}}) {kind = "relu"} : (memref<1x4x16x64xf32, 1>
// CHECK:         "npu.matmul"
// CHECK-LABEL: func.func @conv$input_read_twice
// CHECK:         "npu.elementwise"(%[[X:[a-z_0-9]+]], %{{.*}}, %[[M:[a-z_0-9]+]]) {kind = "mul"}
// CHECK-NEXT:    "npu.elementwise"(%[[M]], %[[X]], %{{.*}}) {kind = "add"}
// CHECK:         "npu.matmul"
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
func.func @conv$two_readers(%x: memref<1x16x16x64xf32>, %w: memref<1x1x64x32xf32>,
                            %z: memref<1x16x16x64xf32>) -> memref<1x16x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<1x16x16x64xf32>
  // expected-remark @below {{'linalg.generic': tiles}}
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%x : memref<1x16x16x64xf32>) outs(%t : memref<1x16x16x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  %y = memref.alloc() : memref<1x16x16x32xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<1x16x16x32xf32>)
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': tiles}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, npu.conv_strategy = "implicit-gemm", strides = dense<1> : tensor<2xi64>}
    ins(%t, %w : memref<1x16x16x64xf32>, memref<1x1x64x32xf32>) outs(%y : memref<1x16x16x32xf32>)
  // expected-remark @below {{'linalg.copy': tiles}}
  linalg.copy ins(%t : memref<1x16x16x64xf32>) outs(%z : memref<1x16x16x64xf32>)
  return %y : memref<1x16x16x32xf32>
}
func.func @conv$input_read_twice(%x: memref<1x16x16x64xf32>, %s: memref<64xf32>,
                                 %w: memref<1x1x64x32xf32>) -> memref<1x16x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<1x16x16x64xf32>
  // expected-remark @below {{'linalg.generic': tiles}}
  linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%x, %s : memref<1x16x16x64xf32>, memref<64xf32>) outs(%t : memref<1x16x16x64xf32>) {
  ^bb0(%in: f32, %scale: f32, %out: f32):
    %m = arith.mulf %in, %scale : f32
    %a = arith.addf %m, %in : f32
    linalg.yield %a : f32
  }
  %y = memref.alloc() : memref<1x16x16x32xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<1x16x16x32xf32>)
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': tiles}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, npu.conv_strategy = "implicit-gemm", strides = dense<1> : tensor<2xi64>}
    ins(%t, %w : memref<1x16x16x64xf32>, memref<1x1x64x32xf32>) outs(%y : memref<1x16x16x32xf32>)
  return %y : memref<1x16x16x32xf32>
}

// -----

// A count per output pixel (an average pool's divisor, padding not counted)
// is tiled as the conv's input rows and columns, through a view with unit
// batch and channel dims that broadcasts against the input tile. A tensor as
// large as the input (a residual add) stays an op: it would be loaded again
// with every input tile.

// CHECK-LABEL: func.func @conv$per_pixel
// CHECK:         memref.expand_shape %{{.*}} {{\[\[}}0, 1], [2, 3]] output_shape [1, 16, 16, 1] : memref<16x16xf32> into memref<1x16x16x1xf32>
// CHECK:         "npu.elementwise"(%[[T:.*]], %{{.*}}, %[[T]]) {kind = "mul"} : (memref<1x4x16x64xf32, 1>, memref<1x4x16x1xf32, 1>, memref<1x4x16x64xf32, 1>)
// CHECK-LABEL: func.func @conv$full_tensor
// CHECK-NOT:     memref.expand_shape
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#px = affine_map<(d0, d1, d2, d3) -> (d1, d2)>
func.func @conv$per_pixel(%x: memref<1x16x16x64xf32>, %n: memref<16x16xf32>,
                          %w: memref<1x1x64x32xf32>) -> memref<1x16x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<1x16x16x64xf32>
  linalg.generic {indexing_maps = [#id, #px, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%x, %n : memref<1x16x16x64xf32>, memref<16x16xf32>) outs(%t : memref<1x16x16x64xf32>) {
  ^bb0(%in: f32, %count: f32, %out: f32):
    %m = arith.mulf %in, %count : f32
    linalg.yield %m : f32
  }
  %y = memref.alloc() : memref<1x16x16x32xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<1x16x16x32xf32>)
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': tiles}}
  // expected-remark @below {{folded into this op as a prologue on its input tiles}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, npu.conv_strategy = "implicit-gemm", strides = dense<1> : tensor<2xi64>}
    ins(%t, %w : memref<1x16x16x64xf32>, memref<1x1x64x32xf32>) outs(%y : memref<1x16x16x32xf32>)
  return %y : memref<1x16x16x32xf32>
}
func.func @conv$full_tensor(%x: memref<1x16x16x64xf32>, %skip: memref<1x16x16x64xf32>,
                            %w: memref<1x1x64x32xf32>) -> memref<1x16x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<1x16x16x64xf32>
  // expected-remark @below {{'linalg.generic': tiles}}
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%x, %skip : memref<1x16x16x64xf32>, memref<1x16x16x64xf32>) outs(%t : memref<1x16x16x64xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %a = arith.addf %in, %s : f32
    linalg.yield %a : f32
  }
  %y = memref.alloc() : memref<1x16x16x32xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<1x16x16x32xf32>)
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': tiles}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, npu.conv_strategy = "implicit-gemm", strides = dense<1> : tensor<2xi64>}
    ins(%t, %w : memref<1x16x16x64xf32>, memref<1x1x64x32xf32>) outs(%y : memref<1x16x16x32xf32>)
  return %y : memref<1x16x16x32xf32>
}

// -----

// A prologue's constant (the scale) lives in a one-element SRAM buffer made
// before the conv's tile loop; it is freed with the conv's tiles, right after
// the loop. The first deallocation after the loop when the conv is promoted is
// that of a tensor the buffer plan keeps for later ops (the conv's own come
// after): freed there, the constant would stay live across those ops, where
// the plan's tensors and the later tiles were sized without it.

// CHECK-LABEL: func.func @conv$scaled_then_kept
// CHECK:         %[[C0:.*]] = "npu.alloc"() : () -> memref<1xf32, 1>
// CHECK:         %[[C1:.*]] = "npu.alloc"() : () -> memref<1xf32, 1>
// CHECK:         } {npu.tile_loop}
// CHECK-NOT:     "npu.activation"
// CHECK-DAG:     "npu.dealloc"(%[[C0]])
// CHECK-DAG:     "npu.dealloc"(%[[C1]])
// CHECK:         "npu.activation"
// CHECK:         "npu.activation"
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @conv$scaled_then_kept(%x: memref<1x16x16x64xf32>, %w: memref<1x1x64x32xf32>) -> memref<1x16x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %quarter = arith.constant 0.25 : f32
  %t = memref.alloc() : memref<1x16x16x64xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%x : memref<1x16x16x64xf32>) outs(%t : memref<1x16x16x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %quarter : f32
    linalg.yield %m : f32
  }
  %y = memref.alloc() : memref<1x16x16x32xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<1x16x16x32xf32>)
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': tiles}}
  // expected-remark @below {{folded into this op as a prologue on its input tiles, applied in SRAM after each load (saves 131072 B of DRAM traffic)}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, npu.conv_strategy = "implicit-gemm", strides = dense<1> : tensor<2xi64>}
    ins(%t, %w : memref<1x16x16x64xf32>, memref<1x1x64x32xf32>) outs(%y : memref<1x16x16x32xf32>)
  %kept = "npu.alloc"() {npu.resident, offset = 32768 : i64} : () -> memref<1x16x16x32xf32, 1>
  // expected-remark @below {{'linalg.generic': tiles}}
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%y : memref<1x16x16x32xf32>) outs(%kept : memref<1x16x16x32xf32, 1>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  %z = memref.alloc() : memref<1x16x16x32xf32>
  // expected-remark @below {{'linalg.generic': tiles}}
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%kept : memref<1x16x16x32xf32, 1>) outs(%z : memref<1x16x16x32xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  "npu.dealloc"(%kept) : (memref<1x16x16x32xf32, 1>) -> ()
  return %z : memref<1x16x16x32xf32>
}

// -----

// A squeeze-excitation's scale: the per-channel gate is kept in SRAM by the
// buffer plan. The prologue reads its channels there (a copy of the tile's
// channels, no DMA); the scaled tensor is never written.

// CHECK-LABEL: func.func @conv$resident_gate
// CHECK:         %[[GATE:.*]] = "npu.alloc"() {npu.resident, offset = 65280 : i64} : () -> memref<64xf32, 1>
// CHECK-NOT:     "npu.dma_load"(%[[GATE]]
// CHECK:         "npu.elementwise"(%[[TILE:.*]], %{{.*}}, %[[TILE]]) {kind = "mul"}
// CHECK-NOT:     linalg.generic
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>
func.func @conv$resident_gate(%x: memref<1x16x16x64xf32>, %g: memref<64xf32>,
                              %w: memref<1x1x64x32xf32>) -> memref<1x16x16x32xf32> {
  %zero = arith.constant 0.0 : f32
  %gate = "npu.alloc"() {npu.resident, offset = 65280 : i64} : () -> memref<64xf32, 1>
  // expected-remark @below {{'linalg.copy': tiles}}
  linalg.copy ins(%g : memref<64xf32>) outs(%gate : memref<64xf32, 1>)
  %t = memref.alloc() : memref<1x16x16x64xf32>
  linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%x, %gate : memref<1x16x16x64xf32>, memref<64xf32, 1>) outs(%t : memref<1x16x16x64xf32>) {
  ^bb0(%in: f32, %s: f32, %out: f32):
    %m = arith.mulf %in, %s : f32
    linalg.yield %m : f32
  }
  %y = memref.alloc() : memref<1x16x16x32xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<1x16x16x32xf32>)
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': tiles}}
  // expected-remark @below {{folded into this op as a prologue on its input tiles, applied in SRAM after each load (saves 131072 B of DRAM traffic)}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, npu.conv_strategy = "implicit-gemm", strides = dense<1> : tensor<2xi64>}
    ins(%t, %w : memref<1x16x16x64xf32>, memref<1x1x64x32xf32>) outs(%y : memref<1x16x16x32xf32>)
  "npu.dealloc"(%gate) : (memref<64xf32, 1>) -> ()
  return %y : memref<1x16x16x32xf32>
}
