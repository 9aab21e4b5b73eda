// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A padded 3x3 depthwise convolution on the vector unit.

// CHECK-LABEL: func.func @main
// CHECK-NOT:     linalg.
// CHECK:         "npu.alloc"() {offset = 0 : i64}
// CHECK:         scf.for
// CHECK:           "npu.depthwise_conv2d"
// CHECK:           "npu.barrier"()

// SIM: total cycles
// SIM: fallback 0 0.0%

// REMARK: remark: 'linalg.depthwise_conv_2d_nhwc_hwc': tiles n1xoh8xow32xc16, loops (n,oh,ow,c), working set 38720 B, estimated {{[0-9]+}} cycles
func.func @main(%x: tensor<1x32x32x48xf16>, %w: tensor<3x3x48xf16>) -> tensor<1x32x32x48xf16> {
  %pv = arith.constant 0.0 : f16
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %pv : f16
  } : tensor<1x32x32x48xf16> to tensor<1x34x34x48xf16>
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<1x32x32x48xf16>
  %f = linalg.fill ins(%z : f16) outs(%e : tensor<1x32x32x48xf16>) -> tensor<1x32x32x48xf16>
  %r = linalg.depthwise_conv_2d_nhwc_hwc
      {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %w : tensor<1x34x34x48xf16>, tensor<3x3x48xf16>)
      outs(%f : tensor<1x32x32x48xf16>) -> tensor<1x32x32x48xf16>
  return %r : tensor<1x32x32x48xf16>
}
