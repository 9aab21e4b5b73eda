// RUN: atvoss-opt %s -split-input-file --npu-pipeline --target='npu -max-sram-bytes=524288' | FileCheck %s
// RUN: atvoss-opt %s -split-input-file --npu-pipeline --target='npu -max-sram-bytes=65536' | FileCheck %s --check-prefix=SPLIT

// A conv that starts from a folded residual (skip + bias), each output tile
// one whole reduction: the skip tile is loaded straight into the output tile
// (the store of that buffer and the load refilling it share a DMA channel, so
// they run in order), the conv accumulates onto it and adds the bias in its
// epilogue. No vector-unit add, and no SRAM buffers of the skip's own: the
// tiles grow (7 rows here, 5 with the skip's buffers).

// CHECK-LABEL: func.func @conv1x1$plus_skip
// CHECK-SAME:    (%[[X:.*]]: memref<1x64x64x64xf32>, %[[SKIP:.*]]: memref<1x64x64x64xf32>)
// CHECK-NOT:     "npu.elementwise"
// CHECK-COUNT-2: "npu.alloc"() {{.*}} -> memref<1x7x64x64xf32, 1>
// CHECK-NEXT:    "npu.alloc"() {{.*}} -> memref<1x1x64x64xf32, 1>
// CHECK-NEXT:    "npu.alloc"() {{.*}} -> memref<64xf32, 1>
// CHECK-NEXT:    %[[OUT0:.*]] = "npu.alloc"() {{.*}} -> memref<1x7x64x64xf32, 1>
// CHECK-NEXT:    %[[OUT1:.*]] = "npu.alloc"() {{.*}} -> memref<1x7x64x64xf32, 1>
// CHECK-NOT:     "npu.alloc"
// CHECK:         %[[FIRST:.*]] = memref.subview %[[SKIP]][0, 0, 0, 0] [1, 7, 64, 64]
// CHECK-NEXT:    "npu.dma_load"(%[[FIRST]], %[[OUT0]]) {channel = 0 : i64}
// CHECK:         scf.for
// CHECK:           "npu.dma_store"(%{{.*}}) {channel = 0 : i64}
// CHECK:           %[[NEXT:.*]] = memref.subview %[[SKIP]]
// CHECK:           "npu.dma_load"(%[[NEXT]], %{{.*}}) {channel = 0 : i64}
// CHECK:           "npu.matmul"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {accumulate = true
// CHECK:         } {npu.tile_loop}
// CHECK-NOT:     "npu.elementwise"
// CHECK:         "npu.dma_store"(%{{.*}}) {channel = 0 : i64}
// CHECK:         return

// -----

// The same for a padded 3x3 conv.

// CHECK-LABEL: func.func @conv3x3$plus_skip
// CHECK-NOT:     "npu.elementwise"
// CHECK:         scf.for
// CHECK:           "npu.conv2d"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {accumulate = true
// CHECK-NOT:     "npu.elementwise"
// CHECK:         return

// -----

// With the reduction split over tiles the skip has its own tiles: the first
// step's output tile starts as skip + bias on the vector unit, and the steps
// accumulate onto it.

// SPLIT-LABEL: func.func @conv$split_reduction
// SPLIT:         scf.for
// SPLIT:           scf.if
// SPLIT:             "npu.elementwise"(%{{.*}}) {kind = "add"}
// SPLIT:             "npu.matmul"({{.*}}) {accumulate = true
#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
func.func @conv1x1$plus_skip(%x: tensor<1x64x64x64xf32>, %skip: tensor<1x64x64x64xf32>) -> tensor<1x64x64x64xf32> {
  %w = arith.constant dense<0.125> : tensor<1x1x64x64xf32>
  %b = arith.constant dense<0.5> : tensor<64xf32>
  %e = tensor.empty() : tensor<1x64x64x64xf32>
  %bias = linalg.broadcast ins(%b : tensor<64xf32>) outs(%e : tensor<1x64x64x64xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x64x64x64xf32>, tensor<1x1x64x64xf32>) outs(%bias : tensor<1x64x64x64xf32>) -> tensor<1x64x64x64xf32>
  %e1 = tensor.empty() : tensor<1x64x64x64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%conv, %skip : tensor<1x64x64x64xf32>, tensor<1x64x64x64xf32>) outs(%e1 : tensor<1x64x64x64xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %r = arith.addf %v, %s : f32
    linalg.yield %r : f32
  } -> tensor<1x64x64x64xf32>
  return %sum : tensor<1x64x64x64xf32>
}


// -----

#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
func.func @conv3x3$plus_skip(%x: tensor<1x32x32x64xf32>, %skip: tensor<1x32x32x64xf32>) -> tensor<1x32x32x64xf32> {
  %w = arith.constant dense<0.125> : tensor<3x3x64x64xf32>
  %b = arith.constant dense<0.5> : tensor<64xf32>
  %zero = arith.constant 0.0 : f32
  %xp = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x32x32x64xf32> to tensor<1x34x34x64xf32>
  %e = tensor.empty() : tensor<1x32x32x64xf32>
  %bias = linalg.broadcast ins(%b : tensor<64xf32>) outs(%e : tensor<1x32x32x64xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%xp, %w : tensor<1x34x34x64xf32>, tensor<3x3x64x64xf32>) outs(%bias : tensor<1x32x32x64xf32>) -> tensor<1x32x32x64xf32>
  %e1 = tensor.empty() : tensor<1x32x32x64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%conv, %skip : tensor<1x32x32x64xf32>, tensor<1x32x32x64xf32>) outs(%e1 : tensor<1x32x32x64xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %r = arith.addf %v, %s : f32
    linalg.yield %r : f32
  } -> tensor<1x32x32x64xf32>
  return %sum : tensor<1x32x32x64xf32>
}


// -----

#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
func.func @conv$split_reduction(%x: tensor<1x16x16x256xf32>, %skip: tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32> {
  %w = arith.constant dense<0.125> : tensor<1x1x256x64xf32>
  %b = arith.constant dense<0.5> : tensor<64xf32>
  %e = tensor.empty() : tensor<1x16x16x64xf32>
  %bias = linalg.broadcast ins(%b : tensor<64xf32>) outs(%e : tensor<1x16x16x64xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x16x16x256xf32>, tensor<1x1x256x64xf32>) outs(%bias : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  %e1 = tensor.empty() : tensor<1x16x16x64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%conv, %skip : tensor<1x16x16x64xf32>, tensor<1x16x16x64xf32>) outs(%e1 : tensor<1x16x16x64xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %r = arith.addf %v, %s : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x64xf32>
  return %sum : tensor<1x16x16x64xf32>
}


// -----

// A skip kept in SRAM (npu.resident) and read by nothing after the add: the
// add's result is written over it (npu-reuse-dead-inputs), so the conv's output
// tile is the skip's own view. The conv accumulates onto it in place, its bias
// and the relu in its epilogue: no load, no vector-unit add.

// CHECK-LABEL: func.func @skip$written_over
// CHECK:         %[[SKIP:.*]] = "npu.alloc"() {npu.resident, {{.*}}} : () -> memref<1x16x16x160xf32, 1>
// CHECK-NOT:     "npu.elementwise"
// CHECK:         scf.for
// CHECK:         scf.for
// CHECK:           %[[VIEW:.*]] = memref.subview %[[SKIP]][0, 0, 0, %{{.*}}] [1, 16, 16, 32]
// CHECK-NOT:       "npu.dma_load"
// CHECK:           %[[TILE:.*]] = memref.collapse_shape %[[VIEW]]
// CHECK:           "npu.matmul"(%{{.*}}, %{{.*}}, %[[TILE]], %{{.*}}) {accumulate = true, activation = "relu"
// CHECK:         } {npu.tile_loop}
// CHECK-NOT:     "npu.elementwise"
// CHECK:         return
#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
func.func @skip$written_over(%x: tensor<1x16x16x64xf32>) -> tensor<1x16x16x32xf32> {
  %wa = arith.constant dense<0.125> : tensor<1x1x64x160xf32>
  %wb = arith.constant dense<0.25> : tensor<1x1x160x32xf32>
  %wc = arith.constant dense<0.5> : tensor<1x1x32x160xf32>
  %b160 = arith.constant dense<0.5> : tensor<160xf32>
  %b32 = arith.constant dense<0.25> : tensor<32xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x16x16x160xf32>
  %ba = linalg.broadcast ins(%b160 : tensor<160xf32>) outs(%e : tensor<1x16x16x160xf32>) dimensions = [0, 1, 2]
  %s = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %wa : tensor<1x16x16x64xf32>, tensor<1x1x64x160xf32>) outs(%ba : tensor<1x16x16x160xf32>) -> tensor<1x16x16x160xf32>
  %e32 = tensor.empty() : tensor<1x16x16x32xf32>
  %bb = linalg.broadcast ins(%b32 : tensor<32xf32>) outs(%e32 : tensor<1x16x16x32xf32>) dimensions = [0, 1, 2]
  %t = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%s, %wb : tensor<1x16x16x160xf32>, tensor<1x1x160x32xf32>) outs(%bb : tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32>
  %e2 = tensor.empty() : tensor<1x16x16x160xf32>
  %bc = linalg.broadcast ins(%b160 : tensor<160xf32>) outs(%e2 : tensor<1x16x16x160xf32>) dimensions = [0, 1, 2]
  %u = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%t, %wc : tensor<1x16x16x32xf32>, tensor<1x1x32x160xf32>) outs(%bc : tensor<1x16x16x160xf32>) -> tensor<1x16x16x160xf32>
  %e3 = tensor.empty() : tensor<1x16x16x160xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%u, %s : tensor<1x16x16x160xf32>, tensor<1x16x16x160xf32>) outs(%e3 : tensor<1x16x16x160xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %r = arith.addf %v, %w : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x160xf32>
  %e4 = tensor.empty() : tensor<1x16x16x160xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sum : tensor<1x16x16x160xf32>) outs(%e4 : tensor<1x16x16x160xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x160xf32>
  %wd = arith.constant dense<0.5> : tensor<1x1x160x32xf32>
  %e5 = tensor.empty() : tensor<1x16x16x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e5 : tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32>
  %out = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%relu, %wd : tensor<1x16x16x160xf32>, tensor<1x1x160x32xf32>) outs(%z : tensor<1x16x16x32xf32>) -> tensor<1x16x16x32xf32>
  return %out : tensor<1x16x16x32xf32>
}
