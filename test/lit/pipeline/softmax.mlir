// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: atvoss-opt %s --target='npu -max-sram-bytes=256' --npu-pipeline | FileCheck %s --check-prefix=PASSES
// RUN: atvoss-opt %s --target='npu -max-sram-bytes=256' --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --target='npu -max-sram-bytes=256' --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=PASSES-REMARK

// linalg.softmax over the rows. Its rows fit SRAM, so it runs in one pass:
// the tile is loaded once, its row max, x - max, exp, row sum and division
// run on it in SRAM (the row max and sum as 4x1 tiles that broadcast), and
// it is stored once.

// CHECK-LABEL: func.func @main
// CHECK-COUNT-1: "npu.dma_load"
// CHECK:         "npu.reduce"(%[[X:.*]], %{{.*}}) {accumulate = false, dims = array<i64: 1>, kind = "max"}
// CHECK:         "npu.elementwise"(%[[X]], %{{.*}}, %[[Y:.*]]) {kind = "sub"} : (memref<4x16xf32, 1>, memref<4x1xf32{{.*}}>, memref<4x16xf32, 1>)
// CHECK:         "npu.activation"(%[[Y]], %[[Y]]) {kind = "exp"}
// CHECK:         "npu.reduce"(%[[Y]], %{{.*}}) {accumulate = false, dims = array<i64: 1>, kind = "sum"}
// CHECK:         "npu.elementwise"(%[[Y]], %{{.*}}, %[[Y]]) {kind = "div"} : (memref<4x16xf32, 1>, memref<4x1xf32{{.*}}>, memref<4x16xf32, 1>)
// CHECK-COUNT-1: "npu.dma_store"
// CHECK-NOT:     "npu.dma_load"
// CHECK-NOT:     linalg.

// REMARK: remark: 'linalg.softmax' in one pass: its rows of 16 stay whole in SRAM
// REMARK: remark: 'linalg.softmax': tiles d04xd116
// REMARK-NOT: fallback engine

// With 256 B of SRAM a row (320 B with two stages) does not fit: softmax is
// decomposed on tensors (npu-decompose-linalg) into a max, exp(x - max), a
// sum and a division, each tiled on its own; the max starts from NaN, which
// maxnumf ignores (its identity), and the reductions split their rows.

// PASSES-LABEL: func.func @main
// PASSES-NOT:     linalg.softmax
// PASSES:         "npu.reduce"(%{{.*}}, %{{.*}}) {accumulate = false, dims = array<i64: 1>, kind = "max"}
// PASSES:         "npu.reduce"(%{{.*}}, %{{.*}}) {accumulate = true, dims = array<i64: 1>, kind = "max"}
// PASSES:         "npu.elementwise"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "sub"}
// PASSES:         "npu.activation"(%{{.*}}, %{{.*}}) {kind = "exp"}
// PASSES:         "npu.reduce"(%{{.*}}, %{{.*}}) {accumulate = false, dims = array<i64: 1>, kind = "sum"}
// PASSES:         "npu.elementwise"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "div"}
// PASSES-NOT:     linalg.generic

// PASSES-REMARK: remark: 'linalg.softmax' decomposed into max, exp, sum and divide passes: a row of 16 elements needs 320 B of SRAM with 2 stages, above the budget 256 B
// PASSES-REMARK: reduction in 2 tiles, accumulated in SRAM
// PASSES-REMARK-NOT: fallback engine

// SIM: fallback 0
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %e = tensor.empty() : tensor<4x16xf32>
  %r = linalg.softmax dimension(1) ins(%x : tensor<4x16xf32>) outs(%e : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
