// RUN: atvoss-opt %s -npu-cascade-rows --target='npu -max-sram-bytes=1572864' | FileCheck %s
// RUN: atvoss-opt %s -verify-diagnostics -npu-cascade-rows --target='npu -max-sram-bytes=1572864'

// ResNet's and DenseNet's stem on its NCHW input, with 1.5 MiB of SRAM. The
// 602,112 B transposed image is now under the share of the SRAM (40%) the
// strips assume the buffer plan keeps; left out of the chain it would be
// kept whole, beside every strip of the conv and pool after it, which no
// longer fit: the chain without the transpose counts it among each strip's
// tensors, and the transpose heads the chain as with 1 MiB.

// CHECK-LABEL: func.func @nchw_stem$larger_sram
// CHECK:         linalg.transpose ins(%{{.*}} : tensor<1x3x{{[0-9]+}}x224xf32>)
// CHECK:         linalg.conv_2d_nhwc_hwcf
// CHECK:         linalg.transpose ins(%{{.*}} : tensor<1x3x{{[0-9]+}}x224xf32>)
// CHECK:         linalg.conv_2d_nhwc_hwcf
// CHECK:         linalg.pooling_nhwc_max
// CHECK-NOT:     tensor<1x224x224x3xf32>
func.func @nchw_stem$larger_sram(%x: tensor<1x3x224x224xf32>) -> tensor<1x56x56x64xf32> {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant 0xFF800000 : f32
  %w = arith.constant dense<0.125> : tensor<7x7x3x64xf32>
  %b = arith.constant dense<0.5> : tensor<64xf32>
  %et = tensor.empty() : tensor<1x224x224x3xf32>
  %t = linalg.transpose ins(%x : tensor<1x3x224x224xf32>) outs(%et : tensor<1x224x224x3xf32>) permutation = [0, 2, 3, 1]
  %px = tensor.pad %t low[0, 3, 3, 0] high[0, 3, 3, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x224x224x3xf32> to tensor<1x230x230x3xf32>
  %e0 = tensor.empty() : tensor<1x112x112x64xf32>
  %bias = linalg.broadcast ins(%b : tensor<64xf32>) outs(%e0 : tensor<1x112x112x64xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%px, %w : tensor<1x230x230x3xf32>, tensor<7x7x3x64xf32>) outs(%bias : tensor<1x112x112x64xf32>) -> tensor<1x112x112x64xf32>
  %pc = tensor.pad %conv low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %lowest : f32
  } : tensor<1x112x112x64xf32> to tensor<1x114x114x64xf32>
  %e1 = tensor.empty() : tensor<1x56x56x64xf32>
  %init = linalg.fill ins(%lowest : f32) outs(%e1 : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  %window = tensor.empty() : tensor<3x3xf32>
  // expected-remark-re @below {{cascaded 'linalg.transpose' at line {{[0-9]+}}, 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.pooling_nhwc_max' at line {{[0-9]+}} in {{[0-9]+}} strips of {{[0-9]+}} rows, pipelined: 'linalg.transpose' at line {{[0-9]+}}, 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} of the next strip runs beside the rest of each strip: {{.*}}}}
  %pool = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%pc, %window : tensor<1x114x114x64xf32>, tensor<3x3xf32>) outs(%init : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  return %pool : tensor<1x56x56x64xf32>
}
