// RUN: atvoss-opt %s -npu-fuse-epilogue --target='npu -max-sram-bytes=10240' | FileCheck %s --check-prefixes=CHECK,HALF
// RUN: atvoss-opt %s -npu-fuse-epilogue --target='npu -max-sram-bytes=16384' | FileCheck %s
// RUN: atvoss-opt %s -npu-fuse-epilogue --target='npu -max-sram-bytes=16384' --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=PADDED
// RUN: atvoss-opt %s -npu-fuse-epilogue --target='npu -max-sram-bytes=32768' --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=KEPT

// ShuffleNet's unit tail: a conv of three groups, the skip added, a relu. Each
// group's 2 KiB result is at most a quarter of every SRAM below, which leaves
// a residual add to the buffer plan; but in a 10 KiB or 16 KiB SRAM the 6 KiB
// skip is over a quarter of it: the sum is written over the skip
// (npu-reuse-dead-inputs), which each group's conv can then accumulate onto in
// place. So each group's conv starts from its slice of the skip (and takes the
// relu as its epilogue). In a 32 KiB SRAM the skip is at most a quarter too:
// the add is left to the buffer plan, with a remark.
//
// Where a window op pads the sum (a pool of the unit's output, as in the
// stride-2 unit after ShuffleNet's last unit of a stage), npu-reuse-dead-inputs
// keeps the sum's own buffer, which the buffer plan pads: no conv accumulates
// in place, and the add folds only where the skip exceeds half the SRAM.

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @three_groups$add_relu
// CHECK-COUNT-3: linalg.conv_2d_nhwc_hwcf {{.*}}npu.activation = "relu"{{.*}} outs(%{{.*}} : tensor<1x8x8x8xf32>)
// CHECK-NOT:     linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}]
// KEPT-COUNT-3:  remark: residual add not folded into 'linalg.conv_2d_nhwc_hwcf': its 2048 B result is left to the buffer plan (at most a quarter of the SRAM, and the 6144 B skip too)
func.func @three_groups$add_relu(%x: tensor<1x8x8x24xf32>, %w: tensor<1x1x8x8xf32>, %skip: tensor<1x8x8x24xf32>, %b: tensor<8xf32>) -> tensor<1x8x8x24xf32> {
  %x0 = tensor.extract_slice %x[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x24xf32> to tensor<1x8x8x8xf32>
  %e0 = tensor.empty() : tensor<1x8x8x8xf32>
  %i0 = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e0 : tensor<1x8x8x8xf32>) dimensions = [0, 1, 2]
  %c0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x0, %w : tensor<1x8x8x8xf32>, tensor<1x1x8x8xf32>) outs(%i0 : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %x1 = tensor.extract_slice %x[0, 0, 0, 8] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x24xf32> to tensor<1x8x8x8xf32>
  %e1 = tensor.empty() : tensor<1x8x8x8xf32>
  %i1 = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e1 : tensor<1x8x8x8xf32>) dimensions = [0, 1, 2]
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x1, %w : tensor<1x8x8x8xf32>, tensor<1x1x8x8xf32>) outs(%i1 : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %x2 = tensor.extract_slice %x[0, 0, 0, 16] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x24xf32> to tensor<1x8x8x8xf32>
  %e2 = tensor.empty() : tensor<1x8x8x8xf32>
  %i2 = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e2 : tensor<1x8x8x8xf32>) dimensions = [0, 1, 2]
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x2, %w : tensor<1x8x8x8xf32>, tensor<1x1x8x8xf32>) outs(%i2 : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %empty = tensor.empty() : tensor<1x8x8x24xf32>
  %j0 = tensor.insert_slice %c0 into %empty[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  %j1 = tensor.insert_slice %c1 into %j0[0, 0, 0, 8] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  %j2 = tensor.insert_slice %c2 into %j1[0, 0, 0, 16] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  %ea = tensor.empty() : tensor<1x8x8x24xf32>
  %a = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%j2, %skip : tensor<1x8x8x24xf32>, tensor<1x8x8x24xf32>) outs(%ea : tensor<1x8x8x24xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<1x8x8x24xf32>
  %er = tensor.empty() : tensor<1x8x8x24xf32>
  %zero = arith.constant 0.0 : f32
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a : tensor<1x8x8x24xf32>) outs(%er : tensor<1x8x8x24xf32>) {
  ^bb0(%p: f32, %o: f32):
    %m = arith.maximumf %p, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x8x24xf32>
  return %r : tensor<1x8x8x24xf32>
}

// CHECK-LABEL: func.func @three_groups$add_relu_padded
// HALF-COUNT-3:  linalg.conv_2d_nhwc_hwcf {{.*}}npu.activation = "relu"
// PADDED-COUNT-3: remark: residual add not folded into 'linalg.conv_2d_nhwc_hwcf': its 2048 B result is left to the buffer plan (at most a quarter of the SRAM, and the 6144 B skip at most half, its sum padded for a window op)
// PADDED-NOT:    residual add not folded
func.func @three_groups$add_relu_padded(%x: tensor<1x8x8x24xf32>, %w: tensor<1x1x8x8xf32>, %skip: tensor<1x8x8x24xf32>, %b: tensor<8xf32>) -> (tensor<1x8x8x24xf32>, tensor<1x10x10x24xf32>) {
  %x0 = tensor.extract_slice %x[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x24xf32> to tensor<1x8x8x8xf32>
  %e0 = tensor.empty() : tensor<1x8x8x8xf32>
  %i0 = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e0 : tensor<1x8x8x8xf32>) dimensions = [0, 1, 2]
  %c0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x0, %w : tensor<1x8x8x8xf32>, tensor<1x1x8x8xf32>) outs(%i0 : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %x1 = tensor.extract_slice %x[0, 0, 0, 8] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x24xf32> to tensor<1x8x8x8xf32>
  %e1 = tensor.empty() : tensor<1x8x8x8xf32>
  %i1 = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e1 : tensor<1x8x8x8xf32>) dimensions = [0, 1, 2]
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x1, %w : tensor<1x8x8x8xf32>, tensor<1x1x8x8xf32>) outs(%i1 : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %x2 = tensor.extract_slice %x[0, 0, 0, 16] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x24xf32> to tensor<1x8x8x8xf32>
  %e2 = tensor.empty() : tensor<1x8x8x8xf32>
  %i2 = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e2 : tensor<1x8x8x8xf32>) dimensions = [0, 1, 2]
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x2, %w : tensor<1x8x8x8xf32>, tensor<1x1x8x8xf32>) outs(%i2 : tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %empty = tensor.empty() : tensor<1x8x8x24xf32>
  %j0 = tensor.insert_slice %c0 into %empty[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  %j1 = tensor.insert_slice %c1 into %j0[0, 0, 0, 8] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  %j2 = tensor.insert_slice %c2 into %j1[0, 0, 0, 16] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  %ea = tensor.empty() : tensor<1x8x8x24xf32>
  %a = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%j2, %skip : tensor<1x8x8x24xf32>, tensor<1x8x8x24xf32>) outs(%ea : tensor<1x8x8x24xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<1x8x8x24xf32>
  %er = tensor.empty() : tensor<1x8x8x24xf32>
  %zero = arith.constant 0.0 : f32
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a : tensor<1x8x8x24xf32>) outs(%er : tensor<1x8x8x24xf32>) {
  ^bb0(%p: f32, %o: f32):
    %m = arith.maximumf %p, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x8x24xf32>
  %pad = arith.constant 0.0 : f32
  %p = tensor.pad %r low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %pad : f32
  } : tensor<1x8x8x24xf32> to tensor<1x10x10x24xf32>
  return %r, %p : tensor<1x8x8x24xf32>, tensor<1x10x10x24xf32>
}
