// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM

// Subtractions whose left operand the vector unit cannot take as its lhs: a
// broadcast row (npu.elementwise broadcasts only its rhs) and a constant
// (1 - x). Each is the negation of the right operand plus the left one, the
// same value, on the vector unit; the fallback engine took 3,072 cycles.

// CHECK-LABEL: func.func @main
// CHECK:         "npu.activation"(%[[X:.*]], %[[NEG:.*]]) {kind = "neg"}
// CHECK:         "npu.elementwise"(%[[NEG]], %[[ROW:.*]], %[[R:.*]]) {kind = "add"} : (memref<8x16xf32, strided<[16, 1]>, 1>, memref<1x16xf32, strided<[16, 1]>, 1>, memref<8x16xf32, 1>)
// CHECK:         "npu.activation"(%[[R]], %[[NEG2:.*]]) {kind = "neg"}
// CHECK:         "npu.elementwise"(%[[NEG2]], %{{.*}}, %{{.*}}) {kind = "add"} : (memref<8x16xf32, strided<[16, 1]>, 1>, memref<1xf32, 1>,
// CHECK-NOT:     linalg.generic

// SIM: total cycles                 276
// SIM: fallback {{ *}}0

#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @main(%b: tensor<16xf32>, %x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %r = linalg.generic {indexing_maps = [#row, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%b, %x : tensor<16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>) {
  ^bb0(%v: f32, %w: f32, %o: f32):
    %d = arith.subf %v, %w : f32
    linalg.yield %d : f32
  } -> tensor<8x16xf32>
  %one = arith.constant 1.0 : f32
  %e2 = tensor.empty() : tensor<8x16xf32>
  %s = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<8x16xf32>) outs(%e2 : tensor<8x16xf32>) {
  ^bb0(%v: f32, %o: f32):
    %d = arith.subf %one, %v : f32
    %m = arith.mulf %d, %d : f32
    linalg.yield %m : f32
  } -> tensor<8x16xf32>
  return %s : tensor<8x16xf32>
}
