// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// linalg.softmax over the rows, decomposed on tensors (npu-decompose-linalg)
// into a max, exp(x - max), a sum and a division: all four on the vector
// unit. The max starts from NaN, which maxnumf ignores: its identity. The
// row max and sum broadcast along the rows as 4x1 tiles.

// CHECK-LABEL: func.func @main
// CHECK-NOT:     linalg.softmax
// CHECK:         "npu.reduce"(%{{.*}}, %{{.*}}) {accumulate = false, dims = array<i64: 1>, kind = "max"}
// CHECK:         "npu.elementwise"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "sub"} : (memref<4x16xf32, 1>, memref<4x1xf32{{.*}}>, memref<4x16xf32{{.*}}>)
// CHECK:         "npu.activation"(%{{.*}}, %{{.*}}) {kind = "exp"}
// CHECK:         "npu.reduce"(%{{.*}}, %{{.*}}) {accumulate = false, dims = array<i64: 1>, kind = "sum"}
// CHECK:         "npu.elementwise"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "div"} : (memref<4x16xf32, 1>, memref<4x1xf32{{.*}}>, memref<4x16xf32{{.*}}>)
// CHECK-NOT:     linalg.generic

// SIM: fallback 0
// SIM-DAG: npu.activation {{.*}} vector 1 16
// SIM-DAG: npu.elementwise {{.*}} vector 1 12

// REMARK-NOT: fallback engine
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %r = linalg.softmax dimension(1) ins(%x : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
