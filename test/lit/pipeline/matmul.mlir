// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A 200x300x100 fp16 GEMM with fp32 results (partial tiles) and a relu epilogue.

// CHECK-LABEL: func.func @main
// CHECK-NOT:     linalg.
// CHECK:         "npu.alloc"() {offset = 0 : i64}
// CHECK:         scf.for
// CHECK:           "npu.matmul"
// CHECK:           activation = "relu"
// CHECK:           "npu.barrier"()

// SIM: total cycles
// SIM: fallback 0 0.0%

// REMARK: remark: 'linalg.matmul': relu folded into its epilogue
// REMARK: remark: 'linalg.matmul': tiles m32xn100xk300, loops (m,n,k), working set 124000 B, estimated {{[0-9]+}} cycles
func.func @main(%a: tensor<200x300xf16>, %b: tensor<300x100xf16>) -> tensor<200x100xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<200x100xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<200x100xf32>) -> tensor<200x100xf32>
  %r = linalg.matmul ins(%a, %b : tensor<200x300xf16>, tensor<300x100xf16>)
      outs(%f : tensor<200x100xf32>) -> tensor<200x100xf32>
  %e2 = tensor.empty() : tensor<200x100xf32>
  %act = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]} ins(%r : tensor<200x100xf32>) outs(%e2 : tensor<200x100xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %x, %z : f32
    linalg.yield %y : f32
  } -> tensor<200x100xf32>
  return %act : tensor<200x100xf32>
}
