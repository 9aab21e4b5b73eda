// RUN: atvoss-opt %s --npu-pipeline --target='npu -fusion=1' | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline --target='npu -fusion=1' | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM

// A window sum over three channel-shifted slices of padded squares (LRN's):
// each tile of the padded squares is loaded once, two channels wider than the
// output's (npu-share-input-windows), and the adds read views of it at
// channel offsets 0, 1 and 2. The squares' tiles cross the DRAM interface
// once, not three times.

// CHECK-LABEL: func.func @lrn$window_sum
// CHECK:         "npu.elementwise"({{.*}}) {kind = "mul"}
// CHECK:         "npu.dma_load"(%{{.*}}, %{{.*}}) {channel = {{[0-9]}} : i64} : (memref<1x16x32x66xf32, strided<[67584, 2112, 66, 1]>>, memref<1x16x32x66xf32, 1>)
// CHECK:         scf.for
// CHECK:           "npu.dma_load"(%{{.*}}, %{{.*}}) {{.*}} : (memref<1x16x32x66xf32, {{.*}}>, memref<1x16x32x66xf32, 1>)
// CHECK-NOT:       "npu.dma_load"
// CHECK:           "npu.elementwise"({{.*}}, {{.*}}, {{.*}}) {kind = "add"} : (memref<1x16x32x64xf32, strided<[33792, 2112, 66, 1]>, 1>, memref<1x16x32x64xf32, strided<[33792, 2112, 66, 1], offset: 1>, 1>
// CHECK:           "npu.elementwise"({{.*}}, {{.*}}, {{.*}}) {kind = "add"} : ({{.*}}, memref<1x16x32x64xf32, strided<[33792, 2112, 66, 1], offset: 2>, 1>

// (With each slice loaded on its own: 32,436 cycles, 1,310,720 B read.)
// SIM: total cycles              22,944
// SIM: DRAM read / write        794,624 / 532,480 B
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @lrn$window_sum(%x: tensor<1x32x32x64xf32>, %y: tensor<1x32x32x64xf32>) -> tensor<1x32x32x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x32x32x64xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %y : tensor<1x32x32x64xf32>, tensor<1x32x32x64xf32>) outs(%e : tensor<1x32x32x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    linalg.yield %m : f32
  } -> tensor<1x32x32x64xf32>
  %p = tensor.pad %sq low[0, 0, 0, 1] high[0, 0, 0, 1] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x32x32x64xf32> to tensor<1x32x32x66xf32>
  %s0 = tensor.extract_slice %p[0, 0, 0, 0] [1, 32, 32, 64] [1, 1, 1, 1] : tensor<1x32x32x66xf32> to tensor<1x32x32x64xf32>
  %s1 = tensor.extract_slice %p[0, 0, 0, 1] [1, 32, 32, 64] [1, 1, 1, 1] : tensor<1x32x32x66xf32> to tensor<1x32x32x64xf32>
  %s2 = tensor.extract_slice %p[0, 0, 0, 2] [1, 32, 32, 64] [1, 1, 1, 1] : tensor<1x32x32x66xf32> to tensor<1x32x32x64xf32>
  %e2 = tensor.empty() : tensor<1x32x32x64xf32>
  %sum = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s0, %s1, %s2 : tensor<1x32x32x64xf32>, tensor<1x32x32x64xf32>, tensor<1x32x32x64xf32>) outs(%e2 : tensor<1x32x32x64xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %ab = arith.addf %a, %b : f32
    %abc = arith.addf %ab, %c : f32
    linalg.yield %abc : f32
  } -> tensor<1x32x32x64xf32>
  return %sum : tensor<1x32x32x64xf32>
}
