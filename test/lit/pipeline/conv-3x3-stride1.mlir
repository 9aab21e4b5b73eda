// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A padded 3x3 stride-1 convolution on the conv instruction, relu epilogue.

// CHECK-LABEL: func.func @main
// CHECK-NOT:     linalg.
// CHECK:         "npu.alloc"() {offset = 0 : i64}
// CHECK:         scf.for
// CHECK:           "npu.conv2d"
// CHECK:           activation = "relu"
// CHECK:           "npu.barrier"()

// SIM: total cycles
// SIM: fallback 0 0.0%

// REMARK: remark: 'linalg.conv_2d_nhwc_hwcf': relu folded into its epilogue
// REMARK: remark: conv strategy direct (direct ~{{[0-9]+}} cycles, im2col ~{{[0-9]+}} cycles)
// REMARK: remark: 'linalg.conv_2d_nhwc_hwcf': tiles n1xoh28xow28xf32xc32, loops (n,ow,oh,f,c), working set 295168 B, estimated {{[0-9]+}} cycles
func.func @main(%x: tensor<1x28x28x32xf16>, %w: tensor<3x3x32x64xf16>) -> tensor<1x28x28x64xf32> {
  %pv = arith.constant 0.0 : f16
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i0: index, %i1: index, %i2: index, %i3: index):
    tensor.yield %pv : f16
  } : tensor<1x28x28x32xf16> to tensor<1x30x30x32xf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x28x28x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x28x28x64xf32>) -> tensor<1x28x28x64xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %w : tensor<1x30x30x32xf16>, tensor<3x3x32x64xf16>)
      outs(%f : tensor<1x28x28x64xf32>) -> tensor<1x28x28x64xf32>
  %e2 = tensor.empty() : tensor<1x28x28x64xf32>
  %act = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%r : tensor<1x28x28x64xf32>) outs(%e2 : tensor<1x28x28x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %y = arith.maximumf %v, %z : f32
    linalg.yield %y : f32
  } -> tensor<1x28x28x64xf32>
  return %act : tensor<1x28x28x64xf32>
}
