// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A matmul with B transposed through indexing_maps: the NPU does not run it,
// the fallback engine does (generalized: 16x12x8 points x 2 body ops x 8 cycles).

// CHECK-LABEL: func.func @main
// CHECK:         "npu.fill"
// CHECK:         linalg.matmul indexing_maps = [#map, #map1, #map2] ins(%arg0, %arg1 : memref<16x8xf32>, memref<12x8xf32>)

// SIM: fallback 24,576
// SIM: linalg.generic {{.*}} fallback 1 24,576 1,536

// REMARK: remark: 'linalg.matmul' stays on the fallback engine: linalg.matmul with non-default indexing maps (transposed operands)
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
