// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A max over the rows with linalg.reduce: one npu.reduce on the vector unit.
// The fill of the lowest value is the identity of the max, so the reduction
// starts from it without a fill (accumulate = false).

// CHECK-LABEL: func.func @main
// CHECK-NOT:     "npu.fill"
// CHECK:         "npu.dma_load"
// CHECK:         "npu.reduce"(%{{.*}}, %{{.*}}) {accumulate = false, dims = array<i64: 0>, kind = "max"} : (memref<8x32xf32, 1>, memref<32xf32, 1>) -> ()
// CHECK:         "npu.dma_store"
// CHECK-NOT:     linalg.

// SIM: fallback 0
// SIM: npu.reduce {{.*}} vector 1

// REMARK: remark: 'linalg.reduce': tiles d08xd132
// REMARK-NOT: fallback engine
func.func @main(%x: tensor<8x32xf32>) -> tensor<32xf32> {
  %lowest = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<32xf32>
  %f = linalg.fill ins(%lowest : f32) outs(%e : tensor<32xf32>) -> tensor<32xf32>
  %r = linalg.reduce ins(%x : tensor<8x32xf32>) outs(%f : tensor<32xf32>) dimensions = [0]
    (%in: f32, %acc: f32) {
      %m = arith.maximumf %in, %acc : f32
      linalg.yield %m : f32
    }
  return %r : tensor<32xf32>
}
