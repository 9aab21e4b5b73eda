// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-reuse-dead-inputs --target='npu -max-sram-bytes=1024' | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -npu-reuse-dead-inputs --target='npu -max-sram-bytes=1024 -fusion=1' | FileCheck %s --check-prefix=FUSION1
// RUN: atvoss-opt %s -split-input-file -npu-reuse-dead-inputs --target='npu -max-sram-bytes=2048' | FileCheck %s --check-prefix=SMALL

// The tensors here are 512 B: more than a quarter of a 1 KiB SRAM. In 2 KiB
// the buffer plan keeps two of them as they are: no reuse.

#id = affine_map<(d0, d1) -> (d0, d1)>

// A residual add reads its skip last (another op read it before): its result
// is written over the skip, one buffer for both.

// CHECK-LABEL: func.func @add$over_its_skip
// CHECK:         %[[X:.*]] = memref.alloc() : memref<8x16xf32>
// CHECK-NOT:     memref.alloc
// CHECK:         linalg.generic {{.*}} ins(%[[X]], %{{.*}} : memref<8x16xf32>, memref<8x16xf32>) outs(%[[X]] : memref<8x16xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[X]] : memref<8x16xf32>) outs(%arg3 : memref<8x16xf32>)
// FUSION1-LABEL: func.func @add$over_its_skip
// FUSION1-COUNT-2: memref.alloc()
// SMALL-LABEL: func.func @add$over_its_skip
// SMALL-COUNT-2: memref.alloc()
func.func @add$over_its_skip(%a: memref<8x16xf32>, %b: memref<8x16xf32>, %r: memref<8x16xf32>, %out: memref<8x16xf32>) {
  %x = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<8x16xf32>) outs(%x : memref<8x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = arith.negf %i : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x16xf32>) outs(%r : memref<8x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = math.absf %i : f32
    linalg.yield %n : f32
  }
  %y = memref.alloc() : memref<8x16xf32>
  // expected-remark @below {{'linalg.generic' at line 38 writes its result over its input #0 (512 B), which nothing reads after it: one buffer for both}}
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<8x16xf32>, memref<8x16xf32>) outs(%y : memref<8x16xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %s = arith.addf %i, %j : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<8x16xf32>) outs(%out : memref<8x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = arith.negf %i : f32
    linalg.yield %n : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The skip read after the add: the add writes a buffer of its own.

// CHECK-LABEL: func.func @add$skip_read_after
// CHECK-COUNT-2: memref.alloc()
func.func @add$skip_read_after(%a: memref<8x16xf32>, %b: memref<8x16xf32>, %r: memref<8x16xf32>, %out: memref<8x16xf32>) {
  %x = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<8x16xf32>) outs(%x : memref<8x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = arith.negf %i : f32
    linalg.yield %n : f32
  }
  %y = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<8x16xf32>, memref<8x16xf32>) outs(%y : memref<8x16xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %s = arith.addf %i, %j : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : memref<8x16xf32>, memref<8x16xf32>) outs(%out : memref<8x16xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %s = arith.mulf %i, %j : f32
    linalg.yield %s : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// Only the op reads its input (a chain, not a skip): nothing to gain, and a
// chain's ops fold into their readers elsewhere (a conv's prologue).

// CHECK-LABEL: func.func @neg$chain
// CHECK-COUNT-2: memref.alloc()
func.func @neg$chain(%a: memref<8x16xf32>, %out: memref<8x16xf32>) {
  %x = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<8x16xf32>) outs(%x : memref<8x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = arith.negf %i : f32
    linalg.yield %n : f32
  }
  %y = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x16xf32>) outs(%y : memref<8x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = math.absf %i : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%y : memref<8x16xf32>) outs(%out : memref<8x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = arith.negf %i : f32
    linalg.yield %n : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#c = affine_map<(d0, d1, d2, d3) -> (d3)>

// ShuffleNet's unit: two grouped 1x1 convs read channel slices of the skip,
// and each group's residual start (skip + bias) writes its slice of the
// result. Each slice of the skip is read last by its own group's start, the
// other group's slices are disjoint: the result takes the skip's buffer.

// CHECK-LABEL: func.func @groups$over_the_skip
// CHECK:         %[[X:.*]] = memref.alloc() : memref<1x4x4x8xf32>
// CHECK:         %[[S0:.*]] = memref.subview %[[X]][0, 0, 0, 0] [1, 4, 4, 4]
// CHECK:         memref.alloc() : memref<1x4x4x4xf32>
// CHECK-NOT:     memref.alloc()
// CHECK:         %[[Y0:.*]] = memref.subview %[[X]][0, 0, 0, 0] [1, 4, 4, 4]
// CHECK:         linalg.generic {{.*}} ins(%[[S0]], %{{.*}} : {{.*}}) outs(%[[Y0]] :
// CHECK:         linalg.generic {{.*}} ins(%[[X]] : memref<1x4x4x8xf32>) outs(%arg3
func.func @groups$over_the_skip(%a: memref<1x4x4x8xf32>, %w: memref<1x1x4x4xf32>, %bias: memref<4xf32>, %out: memref<1x4x4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %x = memref.alloc() : memref<1x4x4x8xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a : memref<1x4x4x8xf32>) outs(%x : memref<1x4x4x8xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = arith.maximumf %i, %zero : f32
    linalg.yield %n : f32
  }
  %x0 = memref.subview %x[0, 0, 0, 0] [1, 4, 4, 4] [1, 1, 1, 1] : memref<1x4x4x8xf32> to memref<1x4x4x4xf32, strided<[128, 32, 8, 1]>>
  %x1 = memref.subview %x[0, 0, 0, 4] [1, 4, 4, 4] [1, 1, 1, 1] : memref<1x4x4x8xf32> to memref<1x4x4x4xf32, strided<[128, 32, 8, 1], offset: 4>>
  %t = memref.alloc() : memref<1x4x4x4xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<1x4x4x4xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x0, %w : memref<1x4x4x4xf32, strided<[128, 32, 8, 1]>>, memref<1x1x4x4xf32>) outs(%t : memref<1x4x4x4xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x1, %w : memref<1x4x4x4xf32, strided<[128, 32, 8, 1], offset: 4>>, memref<1x1x4x4xf32>) outs(%t : memref<1x4x4x4xf32>)
  %y = memref.alloc() : memref<1x4x4x8xf32>
  %y0 = memref.subview %y[0, 0, 0, 0] [1, 4, 4, 4] [1, 1, 1, 1] : memref<1x4x4x8xf32> to memref<1x4x4x4xf32, strided<[128, 32, 8, 1]>>
  %y1 = memref.subview %y[0, 0, 0, 4] [1, 4, 4, 4] [1, 1, 1, 1] : memref<1x4x4x8xf32> to memref<1x4x4x4xf32, strided<[128, 32, 8, 1], offset: 4>>
  // expected-remark @below {{'linalg.generic' at line 157 writes its result over its input #0 (512 B), which nothing reads after it: one buffer for both}}
  linalg.generic {indexing_maps = [#id, #c, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x0, %bias : memref<1x4x4x4xf32, strided<[128, 32, 8, 1]>>, memref<4xf32>) outs(%y0 : memref<1x4x4x4xf32, strided<[128, 32, 8, 1]>>) {
  ^bb0(%i: f32, %b: f32, %o: f32):
    %s = arith.addf %i, %b : f32
    linalg.yield %s : f32
  }
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%t, %w : memref<1x4x4x4xf32>, memref<1x1x4x4xf32>) outs(%y0 : memref<1x4x4x4xf32, strided<[128, 32, 8, 1]>>)
  linalg.generic {indexing_maps = [#id, #c, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x1, %bias : memref<1x4x4x4xf32, strided<[128, 32, 8, 1], offset: 4>>, memref<4xf32>) outs(%y1 : memref<1x4x4x4xf32, strided<[128, 32, 8, 1], offset: 4>>) {
  ^bb0(%i: f32, %b: f32, %o: f32):
    %s = arith.addf %i, %b : f32
    linalg.yield %s : f32
  }
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%t, %w : memref<1x4x4x4xf32>, memref<1x1x4x4xf32>) outs(%y1 : memref<1x4x4x4xf32, strided<[128, 32, 8, 1], offset: 4>>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y : memref<1x4x4x8xf32>) outs(%out : memref<1x4x4x8xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = arith.negf %i : f32
    linalg.yield %n : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The result copied into a padded buffer (a conv's padded input): the
// buffer plan keeps it padded, written by its producer in the interior. It
// stays a buffer of its own.

// CHECK-LABEL: func.func @add$padded_after
// CHECK-COUNT-3: memref.alloc()
func.func @add$padded_after(%a: memref<8x16xf32>, %b: memref<8x16xf32>, %r: memref<8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %x = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<8x16xf32>) outs(%x : memref<8x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = arith.negf %i : f32
    linalg.yield %n : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<8x16xf32>) outs(%r : memref<8x16xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = math.absf %i : f32
    linalg.yield %n : f32
  }
  %y = memref.alloc() : memref<8x16xf32>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<8x16xf32>, memref<8x16xf32>) outs(%y : memref<8x16xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %s = arith.addf %i, %j : f32
    linalg.yield %s : f32
  }
  %p = memref.alloc() : memref<10x18xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<10x18xf32>)
  %in = memref.subview %p[1, 1] [8, 16] [1, 1] : memref<10x18xf32> to memref<8x16xf32, strided<[18, 1], offset: 19>>
  memref.copy %y, %in : memref<8x16xf32> to memref<8x16xf32, strided<[18, 1], offset: 19>>
  return
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// The add's other input is a conv of the skip: npu-tile folds the add into
// the conv's epilogue, and the fused conv would write over the skip while its
// later tiles still read it (each tile of filters reads every channel; a 3x3
// window, neighbouring rows). Two buffers.

// CHECK-LABEL: func.func @add$of_a_conv_of_the_skip
// CHECK-COUNT-3: memref.alloc()
func.func @add$of_a_conv_of_the_skip(%a: memref<1x8x8x4xf32>, %w: memref<1x1x4x4xf32>, %out: memref<1x8x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %x = memref.alloc() : memref<1x8x8x4xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a : memref<1x8x8x4xf32>) outs(%x : memref<1x8x8x4xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = arith.maximumf %i, %zero : f32
    linalg.yield %n : f32
  }
  %c = memref.alloc() : memref<1x8x8x4xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<1x8x8x4xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : memref<1x8x8x4xf32>, memref<1x1x4x4xf32>) outs(%c : memref<1x8x8x4xf32>)
  %y = memref.alloc() : memref<1x8x8x4xf32>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %c : memref<1x8x8x4xf32>, memref<1x8x8x4xf32>) outs(%y : memref<1x8x8x4xf32>) {
  ^bb0(%i: f32, %j: f32, %o: f32):
    %s = arith.addf %i, %j : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%y : memref<1x8x8x4xf32>) outs(%out : memref<1x8x8x4xf32>) {
  ^bb0(%i: f32, %o: f32):
    %n = arith.negf %i : f32
    linalg.yield %n : f32
  }
  return
}
