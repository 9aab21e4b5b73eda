// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --target='npu -pipeline-stages=1' --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// A 3x3 conv over 7x7 pixels and 512 channels (ResNet-50's layer4), its
// output kept in SRAM for the 1x1 conv after it. The reduction goes outside
// the output channels: each 256-channel input chunk is loaded once for all
// sixteen 32-channel output tiles, whose partial sums wait in the kept
// tensor; the first step starts from the bias, the last applies the relu.
// With the reduction innermost only, a kept output had to be computed whole
// (its weights far beyond the SRAM): the output went to DRAM, the conv took
// 128-channel output tiles, each loading its input again, and the program
// ran 180,758 cycles.

// CHECK-LABEL: func.func @main
// CHECK:         %[[KEPT:.*]] = "npu.alloc"() {npu.resident, offset = {{[0-9]+}} : i64} : () -> memref<1x7x7x512xf32, 1>
// CHECK:         scf.for
// CHECK:           memref.subview %[[KEPT]]
// CHECK:           "npu.conv2d"({{.*}}) {accumulate = false, activation = "none"
// CHECK:           "npu.conv2d"({{.*}}) {accumulate = true, activation = "relu"

// SIM: total cycles             167,948

// REMARK: remark: kept 'linalg.conv_2d_nhwc_hwcf' output in SRAM for 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} (100352 B
// REMARK: remark: 'linalg.conv_2d_nhwc_hwcf': tiles n1xoh7xow7xf{{[0-9]+}}xc256, loops (n,ow,oh,c,f)
// REMARK: remark: 'linalg.conv_2d_nhwc_hwcf': tiles n1xoh7xow7xf{{[0-9]+}}xc512, loops (n,ow,oh,f,c)
func.func @main(%x: tensor<1x7x7x512xf32>, %w1: tensor<3x3x512x512xf32>, %b1: tensor<512xf32>,
                %w2: tensor<1x1x512x256xf32>) -> tensor<1x7x7x256xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x7x7x512xf32> to tensor<1x9x9x512xf32>
  %e1 = tensor.empty() : tensor<1x7x7x512xf32>
  %bias = linalg.broadcast ins(%b1 : tensor<512xf32>) outs(%e1 : tensor<1x7x7x512xf32>) dimensions = [0, 1, 2]
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w1 : tensor<1x9x9x512xf32>, tensor<3x3x512x512xf32>) outs(%bias : tensor<1x7x7x512xf32>) -> tensor<1x7x7x512xf32>
  %r1 = linalg.generic {indexing_maps = [affine_map<(a, b, c, d) -> (a, b, c, d)>, affine_map<(a, b, c, d) -> (a, b, c, d)>],
      iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c1 : tensor<1x7x7x512xf32>) outs(%e1 : tensor<1x7x7x512xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.maximumf %in, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x7x7x512xf32>
  %e2 = tensor.empty() : tensor<1x7x7x256xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x7x7x256xf32>) -> tensor<1x7x7x256xf32>
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%r1, %w2 : tensor<1x7x7x512xf32>, tensor<1x1x512x256xf32>) outs(%f2 : tensor<1x7x7x256xf32>) -> tensor<1x7x7x256xf32>
  return %c2 : tensor<1x7x7x256xf32>
}
