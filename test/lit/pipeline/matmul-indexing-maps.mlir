// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A matmul with B transposed through indexing_maps is a matmul all the same:
// npu-normalize-contractions transposes B (vector unit) and the matrix unit
// runs the product; nothing is left on the fallback engine.

// CHECK-LABEL: func.func @main
// CHECK:         "npu.transpose"({{.*}}) {permutation = array<i64: 1, 0>} : (memref<12x8xf32, 1>, memref<8x12xf32, 1>)
// CHECK:         "npu.matmul"({{.*}}) {accumulate = false, activation = "none", dataflow = "os"} : (memref<16x8xf32, 1>, memref<8x12xf32, 1>, memref<16x12xf32, 1>)
// CHECK-NOT:     linalg.

// SIM: fallback 0 0.0%
// SIM: npu.matmul {{.*}} matrix 1 {{[0-9,]+}} 1,536

// REMARK: remark: 'linalg.matmul' is a contraction: runs as 'linalg.matmul', rhs transposed first
func.func @main(%a: tensor<16x8xf32>, %b: tensor<12x8xf32>) -> tensor<16x12xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x12xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x12xf32>) -> tensor<16x12xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>,
                                      affine_map<(d0, d1, d2) -> (d1, d2)>,
                                      affine_map<(d0, d1, d2) -> (d0, d1)>]
      ins(%a, %b : tensor<16x8xf32>, tensor<12x8xf32>) outs(%f : tensor<16x12xf32>) -> tensor<16x12xf32>
  return %r : tensor<16x12xf32>
}
