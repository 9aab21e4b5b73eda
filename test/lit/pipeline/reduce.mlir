// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A max over the rows with linalg.reduce: generalized for the fallback engine,
// 8x32 points x 1 body op x 8 cycles.

// CHECK-LABEL: func.func @main
// CHECK:         "npu.fill"
// CHECK:         linalg.reduce ins(%arg0 : memref<8x32xf32>) outs(%{{.*}} : memref<32xf32>) dimensions = [0]

// SIM: fallback 2,048
// SIM: linalg.generic {{.*}} fallback 1 2,048

// REMARK: remark: 'linalg.reduce' stays on the fallback engine
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
