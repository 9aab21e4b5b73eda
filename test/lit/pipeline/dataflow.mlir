// RUN: atvoss-opt %s --npu-pipeline --target='npu -tile-max=1024' | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline --target='npu -tile-max=1024 -dataflow=ws' | FileCheck %s --check-prefix=WS
// RUN: atvoss-opt %s --npu-pipeline --target='npu -tile-max=1024' | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --target='npu -tile-max=1024 -dataflow=ws' | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM-WS
// RUN: atvoss-opt %s --npu-pipeline --target='npu -tile-max=1024' --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// The matrix unit's dataflow is chosen per op by the machine model and written
// on the op; the simulator times the op in it. A GEMM with a long reduction
// and few rows (32x32, K=1024, in K tiles of 640 and 384) is
// output-stationary: 32 + 32 + K - 2 cycles per tile in one fold, 702 + 446 =
// 1148 in all. Forced weight-stationary, every 32 rows of K take a fold
// of 2*32 + 32 + 32 - 2 = 126 cycles (4032 in all, whatever the tiles).

// CHECK-LABEL: func.func @main
// CHECK-COUNT-3: "npu.matmul"({{.*}}) {accumulate = {{.*}}, activation = "none", dataflow = "os"} : (memref<32x?xf16, strided<[640, 1]>, 1>, memref<?x32xf16, strided<[32, 1]>, 1>, memref<32x32xf32, 1>)
// WS-NOT:        dataflow = "os"
// WS:            "npu.matmul"({{.*}}) {accumulate = false, activation = "none", dataflow = "ws"}
// SIM:           matrix 1,148
// SIM-WS:        matrix 4,032
// REMARK:        remark: 'linalg.matmul': tiles m32xn32xk640, {{.*}}; dataflow os
func.func @main(%a: tensor<32x1024xf16>, %b: tensor<1024x32xf16>) -> tensor<32x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<32x32xf32>) -> tensor<32x32xf32>
  %r = linalg.matmul ins(%a, %b : tensor<32x1024xf16>, tensor<1024x32xf16>) outs(%f : tensor<32x32xf32>) -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}
