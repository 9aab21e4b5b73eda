// RUN: atvoss-opt %s -split-input-file -npu-split-depthwise | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-split-depthwise

// A ShuffleNet unit's depthwise conv (60 channels, padded input) read by the
// three groups of the grouped 1x1 conv after it, 20 channels each: it splits
// into one depthwise conv per group (its slice of the padded input, weights
// and bias), the slice of group k + 1 made before group k's conv, so the
// vector unit filters the next slice while the matrix unit runs this group.

// CHECK-LABEL: func.func @grouped_readers
// CHECK-SAME:    (%[[X:.*]]: tensor<1x14x14x60xf32>)
// CHECK-DAG:     %[[WD:.*]] = arith.constant dense<2.500000e-01> : tensor<3x3x60xf32>
// CHECK-DAG:     %[[BD:.*]] = arith.constant dense<5.000000e-01> : tensor<60xf32>
// CHECK:         %[[X0:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 14, 14, 20] [1, 1, 1, 1]
// CHECK:         %[[P0:.*]] = tensor.pad %[[X0]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK:         %[[W0:.*]] = tensor.extract_slice %[[WD]][0, 0, 0] [3, 3, 20] [1, 1, 1]
// CHECK:         %[[B0:.*]] = tensor.extract_slice %[[BD]][0] [20] [1]
// CHECK:         %[[I0:.*]] = linalg.broadcast ins(%[[B0]] : tensor<20xf32>)
// CHECK:         %[[D0:.*]] = linalg.depthwise_conv_2d_nhwc_hwc {{.*}} ins(%[[P0]], %[[W0]] : tensor<1x16x16x20xf32>, tensor<3x3x20xf32>) outs(%[[I0]] : tensor<1x14x14x20xf32>)
// CHECK:         tensor.extract_slice %[[X]][0, 0, 0, 20] [1, 14, 14, 20] [1, 1, 1, 1]
// CHECK:         tensor.extract_slice %[[WD]][0, 0, 20] [3, 3, 20] [1, 1, 1]
// CHECK:         %[[D1:.*]] = linalg.depthwise_conv_2d_nhwc_hwc
// CHECK:         %[[G0:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[D0]], %{{.*}} : tensor<1x14x14x20xf32>, tensor<1x1x20x80xf32>)
// CHECK:         tensor.extract_slice %[[X]][0, 0, 0, 40] [1, 14, 14, 20] [1, 1, 1, 1]
// CHECK:         %[[D2:.*]] = linalg.depthwise_conv_2d_nhwc_hwc
// CHECK:         %[[G1:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[D1]], %{{.*}} : tensor<1x14x14x20xf32>, tensor<1x1x20x80xf32>)
// CHECK:         %[[G2:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[D2]], %{{.*}} : tensor<1x14x14x20xf32>, tensor<1x1x20x80xf32>)
// CHECK-NOT:     linalg.depthwise_conv_2d_nhwc_hwc
// CHECK:         return %[[G0]], %[[G1]], %[[G2]]
func.func @grouped_readers(%x: tensor<1x14x14x60xf32>) -> (tensor<1x14x14x80xf32>, tensor<1x14x14x80xf32>, tensor<1x14x14x80xf32>) {
  %zero = arith.constant 0.0 : f32
  %wd = arith.constant dense<0.25> : tensor<3x3x60xf32>
  %bd = arith.constant dense<0.5> : tensor<60xf32>
  %wg = arith.constant dense<0.125> : tensor<1x1x20x80xf32>
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x14x14x60xf32> to tensor<1x16x16x60xf32>
  %e1 = tensor.empty() : tensor<1x14x14x60xf32>
  %b1 = linalg.broadcast ins(%bd : tensor<60xf32>) outs(%e1 : tensor<1x14x14x60xf32>) dimensions = [0, 1, 2]
  // expected-remark-re @below {{'linalg.depthwise_conv_2d_nhwc_hwc' at line {{[0-9]+}} split into 3 slices of channels, each read by its own ops: a slice is filtered beside the matrix work of the slice before}}
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %wd : tensor<1x16x16x60xf32>, tensor<3x3x60xf32>) outs(%b1 : tensor<1x14x14x60xf32>) -> tensor<1x14x14x60xf32>
  %s0 = tensor.extract_slice %dw[0, 0, 0, 0] [1, 14, 14, 20] [1, 1, 1, 1] : tensor<1x14x14x60xf32> to tensor<1x14x14x20xf32>
  %s1 = tensor.extract_slice %dw[0, 0, 0, 20] [1, 14, 14, 20] [1, 1, 1, 1] : tensor<1x14x14x60xf32> to tensor<1x14x14x20xf32>
  %s2 = tensor.extract_slice %dw[0, 0, 0, 40] [1, 14, 14, 20] [1, 1, 1, 1] : tensor<1x14x14x60xf32> to tensor<1x14x14x20xf32>
  %z0 = tensor.empty() : tensor<1x14x14x80xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%z0 : tensor<1x14x14x80xf32>) -> tensor<1x14x14x80xf32>
  %g0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%s0, %wg : tensor<1x14x14x20xf32>, tensor<1x1x20x80xf32>) outs(%f0 : tensor<1x14x14x80xf32>) -> tensor<1x14x14x80xf32>
  %z1 = tensor.empty() : tensor<1x14x14x80xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%z1 : tensor<1x14x14x80xf32>) -> tensor<1x14x14x80xf32>
  %g1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%s1, %wg : tensor<1x14x14x20xf32>, tensor<1x1x20x80xf32>) outs(%f1 : tensor<1x14x14x80xf32>) -> tensor<1x14x14x80xf32>
  %z2 = tensor.empty() : tensor<1x14x14x80xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%z2 : tensor<1x14x14x80xf32>) -> tensor<1x14x14x80xf32>
  %g2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%s2, %wg : tensor<1x14x14x20xf32>, tensor<1x1x20x80xf32>) outs(%f2 : tensor<1x14x14x80xf32>) -> tensor<1x14x14x80xf32>
  return %g0, %g1, %g2 : tensor<1x14x14x80xf32>, tensor<1x14x14x80xf32>, tensor<1x14x14x80xf32>
}

// -----

// The groups read their slices last first: the slices are made in the order
// they are read (channels 20 to 39, then 0 to 19), each before the reader of
// the slice read before it.

// CHECK-LABEL: func.func @readers_in_reverse
// CHECK:         tensor.extract_slice %{{.*}}[0, 0, 0, 20] [1, 14, 14, 20] [1, 1, 1, 1]
// CHECK:         %[[D1:.*]] = linalg.depthwise_conv_2d_nhwc_hwc
// CHECK:         tensor.extract_slice %{{.*}}[0, 0, 0, 0] [1, 14, 14, 20] [1, 1, 1, 1]
// CHECK:         %[[D0:.*]] = linalg.depthwise_conv_2d_nhwc_hwc
// CHECK:         %[[G1:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[D1]],
// CHECK:         %[[G0:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[D0]],
// CHECK:         return %[[G0]], %[[G1]]
func.func @readers_in_reverse(%x: tensor<1x14x14x40xf32>) -> (tensor<1x14x14x80xf32>, tensor<1x14x14x80xf32>) {
  %zero = arith.constant 0.0 : f32
  %wd = arith.constant dense<0.25> : tensor<3x3x40xf32>
  %wg = arith.constant dense<0.125> : tensor<1x1x20x80xf32>
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x14x14x40xf32> to tensor<1x16x16x40xf32>
  %e1 = tensor.empty() : tensor<1x14x14x40xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x14x14x40xf32>) -> tensor<1x14x14x40xf32>
  // expected-remark-re @below {{'linalg.depthwise_conv_2d_nhwc_hwc' at line {{[0-9]+}} split into 2 slices of channels}}
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %wd : tensor<1x16x16x40xf32>, tensor<3x3x40xf32>) outs(%f1 : tensor<1x14x14x40xf32>) -> tensor<1x14x14x40xf32>
  %s1 = tensor.extract_slice %dw[0, 0, 0, 20] [1, 14, 14, 20] [1, 1, 1, 1] : tensor<1x14x14x40xf32> to tensor<1x14x14x20xf32>
  %z1 = tensor.empty() : tensor<1x14x14x80xf32>
  %g1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%s1, %wg : tensor<1x14x14x20xf32>, tensor<1x1x20x80xf32>) outs(%z1 : tensor<1x14x14x80xf32>) -> tensor<1x14x14x80xf32>
  %s0 = tensor.extract_slice %dw[0, 0, 0, 0] [1, 14, 14, 20] [1, 1, 1, 1] : tensor<1x14x14x40xf32> to tensor<1x14x14x20xf32>
  %z0 = tensor.empty() : tensor<1x14x14x80xf32>
  %g0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%s0, %wg : tensor<1x14x14x20xf32>, tensor<1x1x20x80xf32>) outs(%z0 : tensor<1x14x14x80xf32>) -> tensor<1x14x14x80xf32>
  return %g0, %g1 : tensor<1x14x14x80xf32>, tensor<1x14x14x80xf32>
}
