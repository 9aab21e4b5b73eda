// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// linalg.softmax over the rows, decomposed on tensors (npu-decompose-linalg):
// max, exp(x - max), sum and divide run on the fallback engine, the two
// fills of the reductions' initial values on the vector unit.

// CHECK-LABEL: func.func @main
// CHECK-NOT:     linalg.softmax
// CHECK:         "npu.fill"
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:           arith.maxnumf
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK:           math.exp
// CHECK:         "npu.fill"
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:           arith.addf
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK:           arith.divf

// SIM: fallback 2,560
// SIM-COUNT-4: linalg.generic {{.*}} fallback 1

// REMARK-COUNT-2: remark: 'linalg.generic' stays on the fallback engine
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %r = linalg.softmax dimension(1) ins(%x : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
