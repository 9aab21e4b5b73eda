// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// linalg.elementwise with a transposed second operand: generalized for the
// fallback engine, 8x16 points x 1 body op x 8 cycles.

// CHECK-LABEL: func.func @main
// CHECK:         linalg.elementwise kind=#linalg.elementwise_kind<mul>

// SIM: fallback 1,024
// SIM: linalg.generic {{.*}} fallback 1 1,024

// REMARK: remark: 'linalg.elementwise' stays on the fallback engine
func.func @main(%a: tensor<8x16xf32>, %b: tensor<16x8xf32>) -> tensor<8x16xf32> {
  %e = tensor.empty() : tensor<8x16xf32>
  %r = linalg.elementwise kind=#linalg.elementwise_kind<mul>
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1, d0)>,
                       affine_map<(d0, d1) -> (d0, d1)>]
      ins(%a, %b : tensor<8x16xf32>, tensor<16x8xf32>) outs(%e : tensor<8x16xf32>) -> tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}
