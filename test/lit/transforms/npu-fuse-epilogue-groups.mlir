// RUN: atvoss-opt %s -split-input-file -npu-fuse-epilogue --target='npu -max-sram-bytes=16384' | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-fuse-epilogue --target='npu -max-sram-bytes=16384'
// RUN: atvoss-opt %s -split-input-file -npu-fuse-epilogue --target='npu -max-sram-bytes=16384 -fusion=1' | FileCheck %s --check-prefix=FUSION1

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#bias = affine_map<(d0, d1, d2, d3) -> (d3)>

// A grouped conv (a conv per group, the results concatenated along channels),
// then a residual add and a relu: both are applied to each group's result, so
// each group's conv starts from its slice of the skip tensor plus its bias and
// has the relu as its epilogue. At -fusion=1 only the relu is distributed.

// CHECK-LABEL: func.func @grouped$add_relu
// CHECK:         %[[SKIP0:.*]] = tensor.extract_slice %arg2[0, 0, 0, 0] [1, 16, 16, 8]
// CHECK:         %[[START0:.*]] = linalg.generic {{.*}} ins(%[[SKIP0]], %{{.*}} : tensor<1x16x16x8xf32>, tensor<8xf32>) {{.*}} attrs = {npu.residual_start}
// CHECK:         %[[C0:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}}npu.activation = "relu"{{.*}} outs(%[[START0]] :
// CHECK:         %[[SKIP1:.*]] = tensor.extract_slice %arg2[0, 0, 0, 8] [1, 16, 16, 8]
// CHECK:         %[[START1:.*]] = linalg.generic {{.*}} ins(%[[SKIP1]], %{{.*}} : tensor<1x16x16x8xf32>, tensor<8xf32>) {{.*}} attrs = {npu.residual_start}
// CHECK:         %[[C1:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}}npu.activation = "relu"{{.*}} outs(%[[START1]] :
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<1x16x16x16xf32>
// CHECK:         %[[I0:.*]] = tensor.insert_slice %[[C0]] into %[[E]][0, 0, 0, 0] [1, 16, 16, 8]
// CHECK:         %[[I1:.*]] = tensor.insert_slice %[[C1]] into %[[I0]][0, 0, 0, 8] [1, 16, 16, 8]
// CHECK:         return %[[I1]]
// FUSION1-LABEL: func.func @grouped$add_relu
// FUSION1:         arith.addf
// FUSION1-NOT:     npu.residual_start
func.func @grouped$add_relu(%x: tensor<1x16x16x16xf32>, %w: tensor<1x1x8x8xf32>, %skip: tensor<1x16x16x16xf32>, %b: tensor<8xf32>) -> tensor<1x16x16x16xf32> {
  %x0 = tensor.extract_slice %x[0, 0, 0, 0] [1, 16, 16, 8] [1, 1, 1, 1] : tensor<1x16x16x16xf32> to tensor<1x16x16x8xf32>
  %e0 = tensor.empty() : tensor<1x16x16x8xf32>
  %i0 = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e0 : tensor<1x16x16x8xf32>) dimensions = [0, 1, 2]
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': residual add folded in}}
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': relu folded into its epilogue}}
  %c0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x0, %w : tensor<1x16x16x8xf32>, tensor<1x1x8x8xf32>) outs(%i0 : tensor<1x16x16x8xf32>) -> tensor<1x16x16x8xf32>
  %x1 = tensor.extract_slice %x[0, 0, 0, 8] [1, 16, 16, 8] [1, 1, 1, 1] : tensor<1x16x16x16xf32> to tensor<1x16x16x8xf32>
  %e1 = tensor.empty() : tensor<1x16x16x8xf32>
  %i1 = linalg.broadcast ins(%b : tensor<8xf32>) outs(%e1 : tensor<1x16x16x8xf32>) dimensions = [0, 1, 2]
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': residual add folded in}}
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': relu folded into its epilogue}}
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x1, %w : tensor<1x16x16x8xf32>, tensor<1x1x8x8xf32>) outs(%i1 : tensor<1x16x16x8xf32>) -> tensor<1x16x16x8xf32>
  %empty = tensor.empty() : tensor<1x16x16x16xf32>
  %j0 = tensor.insert_slice %c0 into %empty[0, 0, 0, 0] [1, 16, 16, 8] [1, 1, 1, 1] : tensor<1x16x16x8xf32> into tensor<1x16x16x16xf32>
  %j1 = tensor.insert_slice %c1 into %j0[0, 0, 0, 8] [1, 16, 16, 8] [1, 1, 1, 1] : tensor<1x16x16x8xf32> into tensor<1x16x16x16xf32>
  %ea = tensor.empty() : tensor<1x16x16x16xf32>
  %a = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%j1, %skip : tensor<1x16x16x16xf32>, tensor<1x16x16x16xf32>) outs(%ea : tensor<1x16x16x16xf32>) {
  ^bb0(%p: f32, %q: f32, %o: f32):
    %s = arith.addf %p, %q : f32
    linalg.yield %s : f32
  } -> tensor<1x16x16x16xf32>
  %er = tensor.empty() : tensor<1x16x16x16xf32>
  %zero = arith.constant 0.0 : f32
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a : tensor<1x16x16x16xf32>) outs(%er : tensor<1x16x16x16xf32>) {
  ^bb0(%p: f32, %o: f32):
    %m = arith.maximumf %p, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x16x16x16xf32>
  return %r : tensor<1x16x16x16xf32>
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// Not distributed: the concatenation is also returned (each group's result is
// read twice), so the relu stays after it.

// CHECK-LABEL: func.func @grouped$concatenation_returned
// CHECK:         tensor.insert_slice
// CHECK:         tensor.insert_slice
// CHECK:         linalg.generic
// CHECK:         arith.maximumf
func.func @grouped$concatenation_returned(%x: tensor<1x8x8x8xf32>, %w: tensor<1x1x4x4xf32>) -> (tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %x0 = tensor.extract_slice %x[0, 0, 0, 0] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x8xf32> to tensor<1x8x8x4xf32>
  %e0 = tensor.empty() : tensor<1x8x8x4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %c0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x0, %w : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%f0 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %x1 = tensor.extract_slice %x[0, 0, 0, 4] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x8xf32> to tensor<1x8x8x4xf32>
  %e1 = tensor.empty() : tensor<1x8x8x4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x1, %w : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%f1 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %empty = tensor.empty() : tensor<1x8x8x8xf32>
  %j0 = tensor.insert_slice %c0 into %empty[0, 0, 0, 0] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x8xf32>
  %j1 = tensor.insert_slice %c1 into %j0[0, 0, 0, 4] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x8xf32>
  %er = tensor.empty() : tensor<1x8x8x8xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%j1 : tensor<1x8x8x8xf32>) outs(%er : tensor<1x8x8x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %m = arith.maximumf %p, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x8x8xf32>
  return %r, %j1 : tensor<1x8x8x8xf32>, tensor<1x8x8x8xf32>
}

// -----

// ShuffleNet's stride-2 unit: the groups' results concatenated, then
// concatenated again after a shortcut, then a relu. The inner concatenation
// counts as its pieces: the relu is applied to the shortcut and to each
// group's result, and folds into the groups' convs.

// CHECK-LABEL: func.func @grouped$concatenated_after_a_shortcut
// CHECK:         %[[S:.*]] = linalg.generic {{.*}} ins(%arg2 : tensor<1x8x8x4xf32>)
// CHECK:         arith.mulf
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}}npu.activation = "relu"
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}}npu.activation = "relu"
// CHECK:         linalg.generic {{.*}} ins(%[[S]] : tensor<1x8x8x4xf32>)
// CHECK:         arith.maximumf
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<1x8x8x12xf32>
// CHECK:         tensor.insert_slice %{{.*}} into %[[E]][0, 0, 0, 0] [1, 8, 8, 4]
// CHECK:         tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0, 4] [1, 8, 8, 4]
// CHECK:         %[[R:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0, 8] [1, 8, 8, 4]
// CHECK-NEXT:    return %[[R]]
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @grouped$concatenated_after_a_shortcut(%x: tensor<1x8x8x8xf32>, %w: tensor<1x1x4x4xf32>, %s: tensor<1x8x8x4xf32>) -> tensor<1x8x8x12xf32> {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %es = tensor.empty() : tensor<1x8x8x4xf32>
  %short = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s : tensor<1x8x8x4xf32>) outs(%es : tensor<1x8x8x4xf32>) {
  ^bb0(%p: f32, %o: f32):
    %m = arith.mulf %p, %half : f32
    linalg.yield %m : f32
  } -> tensor<1x8x8x4xf32>
  %x0 = tensor.extract_slice %x[0, 0, 0, 0] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x8xf32> to tensor<1x8x8x4xf32>
  %e0 = tensor.empty() : tensor<1x8x8x4xf32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': relu folded into its epilogue}}
  %c0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x0, %w : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%i0 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %x1 = tensor.extract_slice %x[0, 0, 0, 4] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x8xf32> to tensor<1x8x8x4xf32>
  %e1 = tensor.empty() : tensor<1x8x8x4xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': relu folded into its epilogue}}
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x1, %w : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%i1 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %eg = tensor.empty() : tensor<1x8x8x8xf32>
  %g0 = tensor.insert_slice %c0 into %eg[0, 0, 0, 0] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x8xf32>
  %g1 = tensor.insert_slice %c1 into %g0[0, 0, 0, 4] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x8xf32>
  %ec = tensor.empty() : tensor<1x8x8x12xf32>
  %j0 = tensor.insert_slice %short into %ec[0, 0, 0, 0] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x12xf32>
  %j1 = tensor.insert_slice %g1 into %j0[0, 0, 0, 4] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x12xf32>
  %er = tensor.empty() : tensor<1x8x8x12xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%j1 : tensor<1x8x8x12xf32>) outs(%er : tensor<1x8x8x12xf32>) {
  ^bb0(%p: f32, %o: f32):
    %m = arith.maximumf %p, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x8x12xf32>
  return %r : tensor<1x8x8x12xf32>
}
