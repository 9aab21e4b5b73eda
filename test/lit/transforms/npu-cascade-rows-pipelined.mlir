// RUN: atvoss-opt %s -split-input-file -npu-cascade-rows | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-cascade-rows

// Cascaded strips, pipelined: the lead of the chain (its first ops, up to a
// matrix op) of strip k + 1 runs before the rest of strip k, so the matrix
// unit computes the next strip while the vector unit finishes this one.
// -----

// A stem: a 3x3 stride-2 conv, then a 3x3 stride-2 max pool over its 1 MiB
// result. The conv of strip 1 comes before the pool of strip 0, the conv of
// strip 2 before the pool of strip 1, and so on; the pool of a strip reads
// its own strip's conv rows. Five strips of 7 pooled rows (the last of 4).

// CHECK-LABEL: func.func @conv_then_pool
// CHECK-SAME:    (%[[X:.*]]: tensor<1x128x128x3xf32>)
// CHECK:         tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 29, 128, 3] [1, 1, 1, 1]
// CHECK:         %[[C0:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x14x64x64xf32>)
// CHECK:         %[[P0:.*]] = tensor.pad %[[C0]] low[0, 1, 1, 0] high[0, 0, 1, 0]
// CHECK:         tensor.extract_slice %[[X]][0, 26, 0, 0] [1, 31, 128, 3] [1, 1, 1, 1]
// CHECK:         %[[C1:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x15x64x64xf32>)
// CHECK:         %[[P1:.*]] = tensor.pad %[[C1]] low[0, 0, 1, 0] high[0, 0, 1, 0]
// CHECK-NOT:     linalg.conv_2d_nhwc_hwcf
// CHECK:         linalg.pooling_nhwc_max {{.*}} ins(%[[P0]], %{{.*}} : tensor<1x15x66x64xf32>, tensor<3x3xf32>) outs(%{{.*}} : tensor<1x7x32x64xf32>)
// CHECK:         %[[R0:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0, 0] [1, 7, 32, 64] [1, 1, 1, 1]
// CHECK:         tensor.extract_slice %[[X]][0, 54, 0, 0] [1, 31, 128, 3] [1, 1, 1, 1]
// CHECK:         linalg.conv_2d_nhwc_hwcf
// CHECK-NOT:     linalg.conv_2d_nhwc_hwcf
// CHECK:         linalg.pooling_nhwc_max {{.*}} ins(%[[P1]], %{{.*}} : tensor<1x15x66x64xf32>, tensor<3x3xf32>)
// CHECK:         tensor.insert_slice %{{.*}} into %[[R0]][0, 7, 0, 0] [1, 7, 32, 64] [1, 1, 1, 1]
// CHECK:         linalg.conv_2d_nhwc_hwcf
// CHECK:         linalg.pooling_nhwc_max
// CHECK:         linalg.conv_2d_nhwc_hwcf
// CHECK-NOT:     linalg.conv_2d_nhwc_hwcf
// CHECK-COUNT-2: linalg.pooling_nhwc_max
// CHECK:         %[[LAST:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 28, 0, 0] [1, 4, 32, 64] [1, 1, 1, 1]
// CHECK-NEXT:    return %[[LAST]]
func.func @conv_then_pool(%x: tensor<1x128x128x3xf32>) -> tensor<1x32x32x64xf32> {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant 0xFF800000 : f32
  %w = arith.constant dense<0.125> : tensor<3x3x3x64xf32>
  %b = arith.constant dense<0.5> : tensor<64xf32>
  %px = tensor.pad %x low[0, 0, 0, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x128x128x3xf32> to tensor<1x129x129x3xf32>
  %e0 = tensor.empty() : tensor<1x64x64x64xf32>
  %bias = linalg.broadcast ins(%b : tensor<64xf32>) outs(%e0 : tensor<1x64x64x64xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%px, %w : tensor<1x129x129x3xf32>, tensor<3x3x3x64xf32>) outs(%bias : tensor<1x64x64x64xf32>) -> tensor<1x64x64x64xf32>
  %pc = tensor.pad %conv low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %lowest : f32
  } : tensor<1x64x64x64xf32> to tensor<1x66x66x64xf32>
  %e1 = tensor.empty() : tensor<1x32x32x64xf32>
  %init = linalg.fill ins(%lowest : f32) outs(%e1 : tensor<1x32x32x64xf32>) -> tensor<1x32x32x64xf32>
  %window = tensor.empty() : tensor<3x3xf32>
  // expected-remark-re @below {{cascaded 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.pooling_nhwc_max' at line {{[0-9]+}} in 5 strips of 7 rows, pipelined: 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} of the next strip runs beside the rest of each strip: the 1048576 B between them stay in SRAM a strip at a time (estimated 33916 -> {{[0-9]+}} cycles)}}
  %pool = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%pc, %window : tensor<1x66x66x64xf32>, tensor<3x3xf32>) outs(%init : tensor<1x32x32x64xf32>) -> tensor<1x32x32x64xf32>
  return %pool : tensor<1x32x32x64xf32>
}
// -----

// A depthwise conv then a max pool: both on the vector unit, nothing would run
// beside the next strip's lead, so the strips run one after another.

// CHECK-LABEL: func.func @depthwise_then_pool
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-NOT:     linalg.depthwise_conv_2d_nhwc_hwc
// CHECK:         linalg.pooling_nhwc_max
// CHECK-NEXT:    tensor.insert_slice
// CHECK-NEXT:    tensor.extract_slice
func.func @depthwise_then_pool(%x: tensor<1x80x80x96xf32>) -> tensor<1x40x40x96xf32> {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant 0xFF800000 : f32
  %wd = arith.constant dense<0.25> : tensor<3x3x96xf32>
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x80x80x96xf32> to tensor<1x82x82x96xf32>
  %e2 = tensor.empty() : tensor<1x80x80x96xf32>
  %i2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x80x80x96xf32>) -> tensor<1x80x80x96xf32>
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p, %wd : tensor<1x82x82x96xf32>, tensor<3x3x96xf32>) outs(%i2 : tensor<1x80x80x96xf32>) -> tensor<1x80x80x96xf32>
  %e3 = tensor.empty() : tensor<1x40x40x96xf32>
  %i3 = linalg.fill ins(%lowest : f32) outs(%e3 : tensor<1x40x40x96xf32>) -> tensor<1x40x40x96xf32>
  %window = tensor.empty() : tensor<2x2xf32>
  // expected-remark-re @below {{cascaded 'linalg.depthwise_conv_2d_nhwc_hwc' at line {{[0-9]+}}, 'linalg.pooling_nhwc_max' at line {{[0-9]+}} in {{[0-9]+}} strips of {{[0-9]+}} rows: the}}
  %pool = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%d, %window : tensor<1x80x80x96xf32>, tensor<2x2xf32>) outs(%i3 : tensor<1x40x40x96xf32>) -> tensor<1x40x40x96xf32>
  return %pool : tensor<1x40x40x96xf32>
}
// -----

// ResNet's stem on its NCHW input: the transpose to NHWC heads the chain. Its
// strips transpose their input rows in SRAM, pipelined with the conv of the
// strip before: the rows load while that conv computes, as the conv's would
// (the 602,112 B transposed image never goes through DRAM). Estimated with
// the transpose's loads on it alone, the chain without it saved more.

// CHECK-LABEL: func.func @nchw_stem
// CHECK:         linalg.transpose ins(%{{.*}} : tensor<1x3x{{[0-9]+}}x224xf32>)
// CHECK:         linalg.conv_2d_nhwc_hwcf
// CHECK:         linalg.transpose ins(%{{.*}} : tensor<1x3x{{[0-9]+}}x224xf32>)
// CHECK:         linalg.conv_2d_nhwc_hwcf
// CHECK:         linalg.pooling_nhwc_max
// CHECK-NOT:     tensor<1x224x224x3xf32>
func.func @nchw_stem(%x: tensor<1x3x224x224xf32>) -> tensor<1x56x56x64xf32> {
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
// -----

// An inverted bottleneck (1x1 expand, 3x3 depthwise, 1x1 project): the
// expand conv of strip k + 1 runs before the depthwise conv of strip k, and
// the project conv of strip k after the depthwise conv of strip k + 1, so
// both convs of the matrix unit run beside a depthwise conv of the vector
// unit. Two strips' depthwise results are live at once.

// CHECK-LABEL: func.func @inverted_bottleneck
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} -> tensor<1x5x56x96xf32>
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} -> tensor<1x4x56x96xf32>
// CHECK-NOT:     linalg.conv_2d_nhwc_hwcf
// CHECK:         %[[D0:.*]] = linalg.depthwise_conv_2d_nhwc_hwc
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} -> tensor<1x4x56x96xf32>
// CHECK-NOT:     linalg.conv_2d_nhwc_hwcf
// CHECK:         %[[D1:.*]] = linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-NOT:     linalg.depthwise_conv_2d_nhwc_hwc
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[D0]], {{.*}} -> tensor<1x4x56x24xf32>
// CHECK:         %[[R0:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0, 0] [1, 4, 56, 24]
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} -> tensor<1x4x56x96xf32>
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-NOT:     linalg.depthwise_conv_2d_nhwc_hwc
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[D1]], {{.*}} -> tensor<1x4x56x24xf32>
// CHECK:         tensor.insert_slice %{{.*}} into %[[R0]][0, 4, 0, 0] [1, 4, 56, 24]
func.func @inverted_bottleneck(%x: tensor<1x56x56x16xf32>) -> tensor<1x56x56x24xf32> {
  %zero = arith.constant 0.0 : f32
  %we = arith.constant dense<0.125> : tensor<1x1x16x96xf32>
  %wd = arith.constant dense<0.25> : tensor<3x3x96xf32>
  %wp = arith.constant dense<0.0625> : tensor<1x1x96x24xf32>
  %e0 = tensor.empty() : tensor<1x56x56x96xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x56x56x96xf32>) -> tensor<1x56x56x96xf32>
  %expand = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %we : tensor<1x56x56x16xf32>, tensor<1x1x16x96xf32>) outs(%f0 : tensor<1x56x56x96xf32>) -> tensor<1x56x56x96xf32>
  %p = tensor.pad %expand low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x56x56x96xf32> to tensor<1x58x58x96xf32>
  %e1 = tensor.empty() : tensor<1x56x56x96xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x56x56x96xf32>) -> tensor<1x56x56x96xf32>
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %wd : tensor<1x58x58x96xf32>, tensor<3x3x96xf32>) outs(%f1 : tensor<1x56x56x96xf32>) -> tensor<1x56x56x96xf32>
  %e2 = tensor.empty() : tensor<1x56x56x24xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x56x56x24xf32>) -> tensor<1x56x56x24xf32>
  // expected-remark-re @below {{cascaded 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.depthwise_conv_2d_nhwc_hwc' at line {{[0-9]+}}, 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} in 14 strips of 4 rows, pipelined: 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} of the next strip runs beside the rest of each strip, and 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} of each strip after the next strip's middle: the}}
  %project = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%dw, %wp : tensor<1x56x56x96xf32>, tensor<1x1x96x24xf32>) outs(%f2 : tensor<1x56x56x24xf32>) -> tensor<1x56x56x24xf32>
  return %project : tensor<1x56x56x24xf32>
}
