// RUN: atvoss-opt %s -npu-fuse-elementwise --target='npu -max-sram-bytes=65536' | FileCheck %s
// RUN: atvoss-opt %s -verify-diagnostics -npu-fuse-elementwise --target='npu -max-sram-bytes=65536'
// RUN: atvoss-opt %s --npu-pipeline --target='npu -max-sram-bytes=65536' | FileCheck %s --check-prefix=PROGRAM

// A relu, then QuantizeLinear with a scale per channel (an input of the op):
// merged, the division by the channel's scale is a step of its own
// (npu.elementwise div, the scales broadcast) and the rest a requantisation
// by 1, so the f32 relu result is not written to DRAM.

// CHECK-LABEL: func.func @per_channel_quantize
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT:     linalg.generic
// PROGRAM-LABEL: func.func @per_channel_quantize
// PROGRAM:         "npu.activation"({{.*}}) {kind = "relu"}
// PROGRAM:         "npu.elementwise"({{.*}}) {kind = "div"}
// PROGRAM:         "npu.requantize"({{.*}}) {divide = true, scale = 1.000000e+00 : f64, zero_point = 0 : i64}
#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
#channel = affine_map<(n, h, w, c) -> (c)>
func.func @per_channel_quantize(%x: tensor<1x16x16x64xf32>, %scales: tensor<64xf32>) -> tensor<1x16x16x64xi8> {
  %zero = arith.constant 0.0 : f32
  %low = arith.constant -128.0 : f32
  %high = arith.constant 127.0 : f32
  %e0 = tensor.empty() : tensor<1x16x16x64xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x16x16x64xf32>) outs(%e0 : tensor<1x16x16x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x64xf32>
  %e1 = tensor.empty() : tensor<1x16x16x64xi8>
  // expected-remark @below {{elementwise producer merged into this op (saves 131072 B of DRAM traffic)}}
  %q = linalg.generic {indexing_maps = [#id, #channel, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%relu, %scales : tensor<1x16x16x64xf32>, tensor<64xf32>) outs(%e1 : tensor<1x16x16x64xi8>) {
  ^bb0(%v: f32, %s: f32, %o: i8):
    %d = arith.divf %v, %s : f32
    %r = math.roundeven %d : f32
    %z = arith.addf %r, %zero : f32
    %lo = arith.maximumf %z, %low : f32
    %hi = arith.minimumf %lo, %high : f32
    %i = arith.fptosi %hi : f32 to i8
    linalg.yield %i : i8
  } -> tensor<1x16x16x64xi8>
  return %q : tensor<1x16x16x64xi8>
}
