// RUN: atvoss-opt %s --target='npu -dataflow=ws' --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --target='npu -dataflow=ws' --npu-pipeline | atvoss-sim - --target='npu -dataflow=ws' --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --target='npu -dataflow=ws' --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// (Tile choices and cycles here are the weight-stationary dataflow's.)

// ResNet's stem shape, smaller: 7x7 stride 2, pad 3, three input channels.

// CHECK-LABEL: func.func @main
// CHECK-NOT:     linalg.
// CHECK:         "npu.alloc"() {offset = 0 : i64}
// CHECK:         scf.for
// CHECK:           "npu.conv2d"
// CHECK:           "npu.barrier"()

// SIM: total cycles
// SIM: fallback 0 0.0%

// REMARK: remark: conv strategy direct (direct ~{{[0-9]+}} cycles, im2col ~{{[0-9]+}} cycles)
// REMARK: remark: 'linalg.conv_2d_nhwc_hwcf': tiles n1xoh16xow32xf32xc3, loops (n,ow,oh,f,c), working set 171136 B, estimated {{[0-9]+}} cycles
func.func @main(%x: tensor<1x64x64x3xf16>, %w: tensor<7x7x3x32xf16>) -> tensor<1x32x32x32xf32> {
  %pv = arith.constant 0.0 : f16
  %padded = tensor.pad %x low[0, 3, 3, 0] high[0, 3, 3, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %pv : f16
  } : tensor<1x64x64x3xf16> to tensor<1x70x70x3xf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x32x32x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x32x32x32xf32>) -> tensor<1x32x32x32xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%padded, %w : tensor<1x70x70x3xf16>, tensor<7x7x3x32xf16>)
      outs(%f : tensor<1x32x32x32xf32>) -> tensor<1x32x32x32xf32>
  return %r : tensor<1x32x32x32xf32>
}
