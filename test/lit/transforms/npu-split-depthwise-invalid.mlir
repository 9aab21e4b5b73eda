// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-split-depthwise
// RUN: atvoss-opt %s -split-input-file -npu-split-depthwise | FileCheck %s

// Depthwise convs read in slices of channels that stay whole, each with the
// reason (or, where nothing would run beside a slice, without a remark).

// -----

// Its slices are read by their own ops, but an add reads the whole result too:
// it stays whole.

// CHECK-LABEL: func.func @read_whole_too
// CHECK-COUNT-1: linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-NOT:     linalg.depthwise_conv_2d_nhwc_hwc
func.func @read_whole_too(%x: tensor<1x14x14x60xf32>) -> tensor<1x14x14x60xf32> {
  %zero = arith.constant 0.0 : f32
  %wd = arith.constant dense<0.25> : tensor<3x3x60xf32>
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x14x14x60xf32> to tensor<1x16x16x60xf32>
  %e1 = tensor.empty() : tensor<1x14x14x60xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x14x14x60xf32>) -> tensor<1x14x14x60xf32>
  // expected-remark-re @below {{'linalg.depthwise_conv_2d_nhwc_hwc' at line {{[0-9]+}} read in slices of channels not split: 'linalg.add' at line {{[0-9]+}} also reads it whole}}
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %wd : tensor<1x16x16x60xf32>, tensor<3x3x60xf32>) outs(%f1 : tensor<1x14x14x60xf32>) -> tensor<1x14x14x60xf32>
  %acc0 = tensor.empty() : tensor<1x14x14x60xf32>
  %s0 = tensor.extract_slice %dw[0, 0, 0, 0] [1, 14, 14, 20] [1, 1, 1, 1] : tensor<1x14x14x60xf32> to tensor<1x14x14x20xf32>
  %acc1 = tensor.insert_slice %s0 into %acc0[0, 0, 0, 0] [1, 14, 14, 20] [1, 1, 1, 1] : tensor<1x14x14x20xf32> into tensor<1x14x14x60xf32>
  %s1 = tensor.extract_slice %dw[0, 0, 0, 20] [1, 14, 14, 20] [1, 1, 1, 1] : tensor<1x14x14x60xf32> to tensor<1x14x14x20xf32>
  %acc2 = tensor.insert_slice %s1 into %acc1[0, 0, 0, 20] [1, 14, 14, 20] [1, 1, 1, 1] : tensor<1x14x14x20xf32> into tensor<1x14x14x60xf32>
  %s2 = tensor.extract_slice %dw[0, 0, 0, 40] [1, 14, 14, 20] [1, 1, 1, 1] : tensor<1x14x14x60xf32> to tensor<1x14x14x20xf32>
  %acc3 = tensor.insert_slice %s2 into %acc2[0, 0, 0, 40] [1, 14, 14, 20] [1, 1, 1, 1] : tensor<1x14x14x20xf32> into tensor<1x14x14x60xf32>
  %sum = linalg.add ins(%acc3, %dw : tensor<1x14x14x60xf32>, tensor<1x14x14x60xf32>) outs(%e1 : tensor<1x14x14x60xf32>) -> tensor<1x14x14x60xf32>
  return %sum : tensor<1x14x14x60xf32>
}

// -----

// Two slices overlap (channels 20 to 29 in both): it stays whole.

// CHECK-LABEL: func.func @overlapping_slices
// CHECK-COUNT-1: linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-NOT:     linalg.depthwise_conv_2d_nhwc_hwc
func.func @overlapping_slices(%x: tensor<1x14x14x60xf32>) -> tensor<1x14x14x60xf32> {
  %zero = arith.constant 0.0 : f32
  %wd = arith.constant dense<0.25> : tensor<3x3x60xf32>
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x14x14x60xf32> to tensor<1x16x16x60xf32>
  %e1 = tensor.empty() : tensor<1x14x14x60xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x14x14x60xf32>) -> tensor<1x14x14x60xf32>
  // expected-remark-re @below {{'linalg.depthwise_conv_2d_nhwc_hwc' at line {{[0-9]+}} read in slices of channels not split: its slices overlap}}
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %wd : tensor<1x16x16x60xf32>, tensor<3x3x60xf32>) outs(%f1 : tensor<1x14x14x60xf32>) -> tensor<1x14x14x60xf32>
  %acc0 = tensor.empty() : tensor<1x14x14x60xf32>
  %s0 = tensor.extract_slice %dw[0, 0, 0, 0] [1, 14, 14, 30] [1, 1, 1, 1] : tensor<1x14x14x60xf32> to tensor<1x14x14x30xf32>
  %acc1 = tensor.insert_slice %s0 into %acc0[0, 0, 0, 0] [1, 14, 14, 30] [1, 1, 1, 1] : tensor<1x14x14x30xf32> into tensor<1x14x14x60xf32>
  %s1 = tensor.extract_slice %dw[0, 0, 0, 20] [1, 14, 14, 40] [1, 1, 1, 1] : tensor<1x14x14x60xf32> to tensor<1x14x14x40xf32>
  %acc2 = tensor.insert_slice %s1 into %acc1[0, 0, 0, 20] [1, 14, 14, 40] [1, 1, 1, 1] : tensor<1x14x14x40xf32> into tensor<1x14x14x60xf32>
  return %acc2 : tensor<1x14x14x60xf32>
}

// -----

// One slice: nothing would run beside it, and no remark.

// CHECK-LABEL: func.func @one_slice
// CHECK-COUNT-1: linalg.depthwise_conv_2d_nhwc_hwc
// CHECK-NOT:     linalg.depthwise_conv_2d_nhwc_hwc
func.func @one_slice(%x: tensor<1x14x14x60xf32>) -> tensor<1x14x14x60xf32> {
  %zero = arith.constant 0.0 : f32
  %wd = arith.constant dense<0.25> : tensor<3x3x60xf32>
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x14x14x60xf32> to tensor<1x16x16x60xf32>
  %e1 = tensor.empty() : tensor<1x14x14x60xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x14x14x60xf32>) -> tensor<1x14x14x60xf32>
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %wd : tensor<1x16x16x60xf32>, tensor<3x3x60xf32>) outs(%f1 : tensor<1x14x14x60xf32>) -> tensor<1x14x14x60xf32>
  %acc0 = tensor.empty() : tensor<1x14x14x60xf32>
  %s0 = tensor.extract_slice %dw[0, 0, 0, 0] [1, 14, 14, 60] [1, 1, 1, 1] : tensor<1x14x14x60xf32> to tensor<1x14x14x60xf32>
  %acc1 = tensor.insert_slice %s0 into %acc0[0, 0, 0, 0] [1, 14, 14, 60] [1, 1, 1, 1] : tensor<1x14x14x60xf32> into tensor<1x14x14x60xf32>
  return %acc1 : tensor<1x14x14x60xf32>
}
