// RUN: atvoss-opt %s -split-input-file -npu-fuse-epilogue | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-fuse-epilogue
// RUN: atvoss-opt %s -split-input-file -npu-fuse-epilogue --target='npu -fusion=0' | FileCheck %s --check-prefix=NOFUSION

#id = affine_map<(d0, d1) -> (d0, d1)>

// CHECK-LABEL: func.func @matmul$relu
// CHECK:         %[[R:.*]] = linalg.matmul {npu.activation = "relu"}
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
// NOFUSION-LABEL: func.func @matmul$relu
// NOFUSION:         linalg.generic
func.func @matmul$relu(%a: tensor<64x32xf16>, %b: tensor<32x16xf16>, %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{'linalg.matmul': relu folded into its epilogue}}
  %r = linalg.matmul ins(%a, %b : tensor<64x32xf16>, tensor<32x16xf16>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  %e = tensor.empty() : tensor<64x16xf32>
  %act = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<64x16xf32>) outs(%e : tensor<64x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %x, %zero : f32
    linalg.yield %y : f32
  } -> tensor<64x16xf32>
  return %act : tensor<64x16xf32>
}

// -----

#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// A clamp (relu6) after a convolution becomes a clip epilogue.

// CHECK-LABEL: func.func @conv$relu6
// CHECK:         linalg.conv_2d_nhwc_hwcf {{{.*}}npu.activation = "clip", npu.clip_max = 6.000000e+00 : f64, npu.clip_min = 0.000000e+00 : f64
// CHECK-NOT:     linalg.generic
func.func @conv$relu6(%x: tensor<1x8x8x4xf16>, %w: tensor<3x3x4x8xf16>, %y: tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32> {
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': clip folded into its epilogue}}
  %r = linalg.conv_2d_nhwc_hwcf ins(%x, %w : tensor<1x8x8x4xf16>, tensor<3x3x4x8xf16>) outs(%y : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  %e = tensor.empty() : tensor<1x6x6x8xf32>
  %act = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%r : tensor<1x6x6x8xf32>) outs(%e : tensor<1x6x6x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %lo = arith.constant 0.0 : f32
    %hi = arith.constant 6.0 : f32
    %0 = arith.maximumf %v, %lo : f32
    %1 = arith.minimumf %0, %hi : f32
    linalg.yield %1 : f32
  } -> tensor<1x6x6x8xf32>
  return %act : tensor<1x6x6x8xf32>
}
