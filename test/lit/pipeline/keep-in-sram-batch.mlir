// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM

// A batch_matmul takes one batch per tile: its operand kept in SRAM is read in
// place a batch at a time, a slice of the resident tensor, with no DMA.

// CHECK-LABEL: func.func @scale$batch_matmul
// CHECK:         %[[R:.*]] = "npu.alloc"() {npu.resident, offset = {{[0-9]+}} : i64} : () -> memref<4x16x32xf32, 1>
// CHECK:         "npu.activation"(%{{.*}}, %[[R]]) {kind = "neg"}
// CHECK:         scf.for %[[B:.*]] = %c0 to %c4
// CHECK:           memref.subview %[[R]][%[[B]], 0, 0] [1, 16, 32] [1, 1, 1]
// CHECK:           "npu.matmul"
// CHECK:         "npu.dealloc"(%[[R]])

// SIM: DRAM read / write         16,384 / 4,096 B

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @scale$batch_matmul(%q: tensor<4x16x32xf32>, %k: tensor<4x32x16xf32>) -> tensor<4x16x16xf32> {
  %e = tensor.empty() : tensor<4x16x32xf32>
  %s = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%q : tensor<4x16x32xf32>) outs(%e : tensor<4x16x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.negf %x : f32
    linalg.yield %y : f32
  } -> tensor<4x16x32xf32>
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty() : tensor<4x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
  %r = linalg.batch_matmul ins(%s, %k : tensor<4x16x32xf32>, tensor<4x32x16xf32>) outs(%f : tensor<4x16x16xf32>) -> tensor<4x16x16xf32>
  return %r : tensor<4x16x16xf32>
}
