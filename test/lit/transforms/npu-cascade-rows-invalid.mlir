// RUN: atvoss-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(npu-cascade-rows{pipeline=false})'
// RUN: atvoss-opt %s -split-input-file --pass-pipeline='builtin.module(npu-cascade-rows{pipeline=false})' | FileCheck %s

// Chains that stay whole, each with the reason (or, where nothing needs
// saying, without a remark).
// -----

// A 3x3 conv, then a 3x3 stride-2 max pool over its 512 KiB result: in strips
// the conv recomputes the pool's halo rows and every strip starts two ops; no
// strip height saves enough of the 21,282 estimated cycles.

// CHECK-LABEL: func.func @unprofitable
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x64x64x32xf32>)
// CHECK:         linalg.pooling_nhwc_max {{.*}} outs(%{{.*}} : tensor<1x32x32x32xf32>)
// CHECK-NOT:     tensor.insert_slice
func.func @unprofitable(%x: tensor<1x64x64x8xf32>) -> tensor<1x32x32x32xf32> {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant 0xFF800000 : f32
  %w = arith.constant dense<0.125> : tensor<3x3x8x32xf32>
  %b = arith.constant dense<0.5> : tensor<32xf32>
  %px = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x64x64x8xf32> to tensor<1x66x66x8xf32>
  %e0 = tensor.empty() : tensor<1x64x64x32xf32>
  %bias = linalg.broadcast ins(%b : tensor<32xf32>) outs(%e0 : tensor<1x64x64x32xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%px, %w : tensor<1x66x66x8xf32>, tensor<3x3x8x32xf32>) outs(%bias : tensor<1x64x64x32xf32>) -> tensor<1x64x64x32xf32>
  %pc = tensor.pad %conv low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %lowest : f32
  } : tensor<1x64x64x32xf32> to tensor<1x66x66x32xf32>
  %e1 = tensor.empty() : tensor<1x32x32x32xf32>
  %init = linalg.fill ins(%lowest : f32) outs(%e1 : tensor<1x32x32x32xf32>) -> tensor<1x32x32x32xf32>
  %window = tensor.empty() : tensor<3x3xf32>
  // expected-remark-re @below {{'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.pooling_nhwc_max' at line {{[0-9]+}} not cascaded: the 524288 B between them go through DRAM; in strips whose tensors take at most 40% of the SRAM, none saves 10% of their estimated 21282 cycles}}
  %pool = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%pc, %window : tensor<1x66x66x32xf32>, tensor<3x3xf32>) outs(%init : tensor<1x32x32x32xf32>) -> tensor<1x32x32x32xf32>
  return %pool : tensor<1x32x32x32xf32>
}
// -----

// The expanded tensor is read by the depthwise conv and by a second 1x1 conv:
// cut into strips for one reader, it would still be needed whole by the other.

// CHECK-LABEL: func.func @two_readers
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x40x40x96xf32>)
// CHECK-NOT:     tensor.insert_slice
func.func @two_readers(%x: tensor<1x40x40x16xf32>) -> (tensor<1x20x20x96xf32>, tensor<1x40x40x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<0.125> : tensor<1x1x16x96xf32>
  %wd = arith.constant dense<0.25> : tensor<3x3x96xf32>
  %w2 = arith.constant dense<0.5> : tensor<1x1x96x8xf32>
  %e1 = tensor.empty() : tensor<1x40x40x96xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x40x40x96xf32>) -> tensor<1x40x40x96xf32>
  // expected-remark-re @below {{'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} not cascaded with its readers: its 614400 B result goes through DRAM whole, 2 ops read it}}
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w1 : tensor<1x40x40x16xf32>, tensor<1x1x16x96xf32>) outs(%i1 : tensor<1x40x40x96xf32>) -> tensor<1x40x40x96xf32>
  %p = tensor.pad %c1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x40x40x96xf32> to tensor<1x42x42x96xf32>
  %e2 = tensor.empty() : tensor<1x20x20x96xf32>
  %i2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x20x20x96xf32>) -> tensor<1x20x20x96xf32>
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%p, %wd : tensor<1x42x42x96xf32>, tensor<3x3x96xf32>) outs(%i2 : tensor<1x20x20x96xf32>) -> tensor<1x20x20x96xf32>
  %e3 = tensor.empty() : tensor<1x40x40x8xf32>
  %i3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x40x40x8xf32>) -> tensor<1x40x40x8xf32>
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%c1, %w2 : tensor<1x40x40x96xf32>, tensor<1x1x96x8xf32>) outs(%i3 : tensor<1x40x40x8xf32>) -> tensor<1x40x40x8xf32>
  return %d, %c2 : tensor<1x20x20x96xf32>, tensor<1x40x40x8xf32>
}
// -----

// The same inverted residual on an 8x8 image: its tensors (24 KiB) fit in SRAM
// whole, where the buffer plan keeps them; nothing to cut, nothing to say.

// CHECK-LABEL: func.func @fits_whole
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x8x8x96xf32>)
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc {{.*}} outs(%{{.*}} : tensor<1x4x4x96xf32>)
// CHECK-NOT:     tensor.insert_slice
func.func @fits_whole(%x: tensor<1x8x8x16xf32>) -> tensor<1x4x4x24xf32> {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<0.125> : tensor<1x1x16x96xf32>
  %wd = arith.constant dense<0.25> : tensor<3x3x96xf32>
  %w2 = arith.constant dense<0.5> : tensor<1x1x96x24xf32>
  %e1 = tensor.empty() : tensor<1x8x8x96xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x8x8x96xf32>) -> tensor<1x8x8x96xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w1 : tensor<1x8x8x16xf32>, tensor<1x1x16x96xf32>) outs(%i1 : tensor<1x8x8x96xf32>) -> tensor<1x8x8x96xf32>
  %p = tensor.pad %c1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x96xf32> to tensor<1x10x10x96xf32>
  %e2 = tensor.empty() : tensor<1x4x4x96xf32>
  %i2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x4x4x96xf32>) -> tensor<1x4x4x96xf32>
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%p, %wd : tensor<1x10x10x96xf32>, tensor<3x3x96xf32>) outs(%i2 : tensor<1x4x4x96xf32>) -> tensor<1x4x4x96xf32>
  %e3 = tensor.empty() : tensor<1x4x4x24xf32>
  %i3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x4x4x24xf32>) -> tensor<1x4x4x24xf32>
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%d, %w2 : tensor<1x4x4x96xf32>, tensor<1x1x96x24xf32>) outs(%i3 : tensor<1x4x4x24xf32>) -> tensor<1x4x4x24xf32>
  return %c2 : tensor<1x4x4x24xf32>
}
// -----

// The same stem as a cascaded one (npu-cascade-rows.mlir), but an elementwise
// op reads the pooled result padded: the pool writes the padded buffer's
// interior in place (npu-pad-in-place), which strips do not, so the chain
// stays whole and the remark says what strips would have saved.

// CHECK-LABEL: func.func @pool_padded_in_place
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x64x64x64xf32>)
// CHECK:         linalg.pooling_nhwc_max {{.*}} outs(%{{.*}} : tensor<1x32x32x64xf32>)
// CHECK-NOT:     tensor.insert_slice
func.func @pool_padded_in_place(%x: tensor<1x128x128x3xf32>) -> (tensor<1x34x34x64xf32>, tensor<1x32x32x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant 0xFF800000 : f32
  %w = arith.constant dense<0.125> : tensor<3x3x3x64xf32>
  %w1 = arith.constant dense<0.25> : tensor<1x1x64x16xf32>
  %b = arith.constant dense<0.5> : tensor<64xf32>
  %px = tensor.pad %x low[0, 0, 0, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x128x128x3xf32> to tensor<1x129x129x3xf32>
  %e0 = tensor.empty() : tensor<1x64x64x64xf32>
  %bias = linalg.broadcast ins(%b : tensor<64xf32>) outs(%e0 : tensor<1x64x64x64xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%px, %w : tensor<1x129x129x3xf32>, tensor<3x3x3x64xf32>) outs(%bias : tensor<1x64x64x64xf32>) -> tensor<1x64x64x64xf32>
  %pc = tensor.pad %conv low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %lowest : f32
  } : tensor<1x64x64x64xf32> to tensor<1x66x66x64xf32>
  %e1 = tensor.empty() : tensor<1x32x32x64xf32>
  %init = linalg.fill ins(%lowest : f32) outs(%e1 : tensor<1x32x32x64xf32>) -> tensor<1x32x32x64xf32>
  %window = tensor.empty() : tensor<3x3xf32>
  // expected-remark-re @below {{'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.pooling_nhwc_max' at line {{[0-9]+}} not cascaded: 'linalg.generic' at line {{[0-9]+}} reads the result padded and does not fold the padding into its loads, so 'linalg.pooling_nhwc_max' at line {{[0-9]+}} writes the padded buffer's interior whole (in strips estimated 33916 -> 23376 cycles)}}
  %pool = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%pc, %window : tensor<1x66x66x64xf32>, tensor<3x3xf32>) outs(%init : tensor<1x32x32x64xf32>) -> tensor<1x32x32x64xf32>
  %pp = tensor.pad %pool low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x32x32x64xf32> to tensor<1x34x34x64xf32>
  %e2 = tensor.empty() : tensor<1x34x34x64xf32>
  %sum = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%pp : tensor<1x34x34x64xf32>) outs(%e2 : tensor<1x34x34x64xf32>) {
  ^bb0(%in: f32, %out: f32):
    %n = arith.negf %in : f32
    linalg.yield %n : f32
  } -> tensor<1x34x34x64xf32>
  %e3 = tensor.empty() : tensor<1x32x32x16xf32>
  %cinit = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x32x32x16xf32>) -> tensor<1x32x32x16xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%pool, %w1 : tensor<1x32x32x64xf32>, tensor<1x1x64x16xf32>) outs(%cinit : tensor<1x32x32x16xf32>) -> tensor<1x32x32x16xf32>
  return %sum, %c1 : tensor<1x34x34x64xf32>, tensor<1x32x32x16xf32>
}
