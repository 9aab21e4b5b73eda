// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-fuse-elementwise --target='npu -max-sram-bytes=65536'
// RUN: atvoss-opt %s -split-input-file -npu-fuse-elementwise --target='npu -max-sram-bytes=65536' | FileCheck %s

// A broadcast (an Expand), then QuantizeLinear: npu.requantize writes a tile
// of its input's shape, so it cannot quantise a broadcast operand. The two
// stay apart, with a remark (MobileViTv2's attention, quantised).

// CHECK-LABEL: func.func @broadcast_quantize$unmerged
// CHECK-COUNT-2: linalg.generic
#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
#row = affine_map<(n, h, w, c) -> (n, h, w, 0)>
func.func @broadcast_quantize$unmerged(%x: tensor<1x16x16x1xf32>) -> tensor<1x16x16x64xi8> {
  %scale = arith.constant 0.05 : f32
  %zp = arith.constant -128.0 : f32
  %low = arith.constant -128.0 : f32
  %high = arith.constant 127.0 : f32
  %e0 = tensor.empty() : tensor<1x16x16x64xf32>
  %expanded = linalg.generic {indexing_maps = [#row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x16x16x1xf32>) outs(%e0 : tensor<1x16x16x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    linalg.yield %v : f32
  } -> tensor<1x16x16x64xf32>
  %e1 = tensor.empty() : tensor<1x16x16x64xi8>
  // expected-remark @below {{elementwise producer not merged: a quantisation of a broadcast operand}}
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%expanded : tensor<1x16x16x64xf32>) outs(%e1 : tensor<1x16x16x64xi8>) {
  ^bb0(%v: f32, %o: i8):
    %d = arith.divf %v, %scale : f32
    %r = math.roundeven %d : f32
    %z = arith.addf %r, %zp : f32
    %lo = arith.maximumf %z, %low : f32
    %hi = arith.minimumf %lo, %high : f32
    %i = arith.fptosi %hi : f32 to i8
    linalg.yield %i : i8
  } -> tensor<1x16x16x64xi8>
  return %q : tensor<1x16x16x64xi8>
}
