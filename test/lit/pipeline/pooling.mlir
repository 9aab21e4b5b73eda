// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A 3x3 stride-2 max pooling with -inf padding.

// CHECK-LABEL: func.func @main
// CHECK-NOT:     linalg.
// CHECK:         "npu.alloc"() {offset = 0 : i64}
// CHECK:         scf.for
// CHECK:           "npu.pool2d"
// CHECK:           "npu.barrier"()

// SIM: total cycles
// SIM: fallback 0 0.0%

// REMARK: remark: 'linalg.pooling_nhwc_max': tiles n1xoh8xow16xc16, loops (n,oh,ow,c), working set 44096 B, estimated {{[0-9]+}} cycles
func.func @main(%x: tensor<1x32x32x64xf16>) -> tensor<1x16x16x64xf16> {
  %pv = arith.constant 0xFC00 : f16
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %pv : f16
  } : tensor<1x32x32x64xf16> to tensor<1x34x34x64xf16>
  %init = arith.constant 0xFC00 : f16
  %e = tensor.empty() : tensor<1x16x16x64xf16>
  %f = linalg.fill ins(%init : f16) outs(%e : tensor<1x16x16x64xf16>) -> tensor<1x16x16x64xf16>
  %k = tensor.empty() : tensor<3x3xf16>
  %r = linalg.pooling_nhwc_max
      {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%padded, %k : tensor<1x34x34x64xf16>, tensor<3x3xf16>)
      outs(%f : tensor<1x16x16x64xf16>) -> tensor<1x16x16x64xf16>
  return %r : tensor<1x16x16x64xf16>
}
