// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A 1x1 convolution runs as an implicit GEMM (npu.matmul on the pixels).

// CHECK-LABEL: func.func @main
// CHECK-NOT:     linalg.
// CHECK:         "npu.alloc"() {offset = 0 : i64}
// CHECK:         scf.for
// CHECK:           "npu.matmul"
// CHECK:           "npu.barrier"()

// SIM: total cycles
// SIM: fallback 0 0.0%

// REMARK: remark: conv strategy implicit-gemm (direct ~{{[0-9]+}} cycles, implicit-gemm ~{{[0-9]+}} cycles, im2col ~{{[0-9]+}} cycles)
// REMARK: remark: 'linalg.conv_2d_nhwc_hwcf': tiles n1xoh28xow28xf32xc64, loops (n,ow,oh,f,c), working set 309248 B, estimated {{[0-9]+}} cycles
func.func @main(%x: tensor<1x28x28x64xf16>, %w: tensor<1x1x64x96xf16>) -> tensor<1x28x28x96xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x28x28x96xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x28x28x96xf32>) -> tensor<1x28x28x96xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x28x28x64xf16>, tensor<1x1x64x96xf16>)
      outs(%f : tensor<1x28x28x96xf32>) -> tensor<1x28x28x96xf32>
  return %r : tensor<1x28x28x96xf32>
}
