// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-cascade-channels
// RUN: atvoss-opt %s -split-input-file -npu-cascade-channels | FileCheck %s

// Inverted bottlenecks that stay whole, each with the reason (or, where the
// ops are not one for the pass, without a remark).
// -----

// 16 -> 96 -> 16 channels: fewer than two groups of 64 (the vector lanes;
// the array's rows and columns are 32). The block stays whole.

// CHECK-LABEL: func.func @too_few_channels
// CHECK-NOT:     tensor.extract_slice
// CHECK-COUNT-2: linalg.conv_2d_nhwc_hwcf
func.func @too_few_channels(%x: tensor<1x14x14x16xf32>) -> tensor<1x14x14x16xf32> {
  %zero = arith.constant 0.0 : f32
  %we = arith.constant dense<0.125> : tensor<1x1x16x96xf32>
  %be = arith.constant dense<0.5> : tensor<96xf32>
  %wd = arith.constant dense<0.25> : tensor<3x3x96xf32>
  %bd = arith.constant dense<0.5> : tensor<96xf32>
  %wp = arith.constant dense<0.0625> : tensor<1x1x96x16xf32>
  %bp = arith.constant dense<0.5> : tensor<16xf32>
  %e0 = tensor.empty() : tensor<1x14x14x96xf32>
  %b0 = linalg.broadcast ins(%be : tensor<96xf32>) outs(%e0 : tensor<1x14x14x96xf32>) dimensions = [0, 1, 2]
  %expand = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %we : tensor<1x14x14x16xf32>, tensor<1x1x16x96xf32>) outs(%b0 : tensor<1x14x14x96xf32>) -> tensor<1x14x14x96xf32>
  %padded = tensor.pad %expand low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x14x14x96xf32> to tensor<1x16x16x96xf32>
  %e1 = tensor.empty() : tensor<1x14x14x96xf32>
  %b1 = linalg.broadcast ins(%bd : tensor<96xf32>) outs(%e1 : tensor<1x14x14x96xf32>) dimensions = [0, 1, 2]
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %wd : tensor<1x16x16x96xf32>, tensor<3x3x96xf32>) outs(%b1 : tensor<1x14x14x96xf32>) -> tensor<1x14x14x96xf32>
  %e2 = tensor.empty() : tensor<1x14x14x16xf32>
  %b2 = linalg.broadcast ins(%bp : tensor<16xf32>) outs(%e2 : tensor<1x14x14x16xf32>) dimensions = [0, 1, 2]
  // expected-remark-re @below {{'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.depthwise_conv_2d_nhwc_hwc' at line {{[0-9]+}}, 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} not cascaded by channels: its 96 channels make fewer than two groups of 64 (a group fills the vector lanes and the array's rows and columns)}}
  %project = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%dw, %wp : tensor<1x14x14x96xf32>, tensor<1x1x96x16xf32>) outs(%b2 : tensor<1x14x14x16xf32>) -> tensor<1x14x14x16xf32>
  return %project : tensor<1x14x14x16xf32>
}

// -----

// 32 -> 192 -> 32 channels at 28x28: two groups' expanded and filtered
// channels beside the input and the result exceed 60% of the SRAM in every
// group of 64 or more channels. The block stays whole (npu-cascade-rows may
// run it in strips).

// CHECK-LABEL: func.func @groups_too_large
// CHECK-NOT:     tensor.extract_slice
// CHECK-COUNT-2: linalg.conv_2d_nhwc_hwcf
func.func @groups_too_large(%x: tensor<1x28x28x32xf32>) -> tensor<1x28x28x32xf32> {
  %zero = arith.constant 0.0 : f32
  %we = arith.constant dense<0.125> : tensor<1x1x32x192xf32>
  %be = arith.constant dense<0.5> : tensor<192xf32>
  %wd = arith.constant dense<0.25> : tensor<3x3x192xf32>
  %bd = arith.constant dense<0.5> : tensor<192xf32>
  %wp = arith.constant dense<0.0625> : tensor<1x1x192x32xf32>
  %bp = arith.constant dense<0.5> : tensor<32xf32>
  %e0 = tensor.empty() : tensor<1x28x28x192xf32>
  %b0 = linalg.broadcast ins(%be : tensor<192xf32>) outs(%e0 : tensor<1x28x28x192xf32>) dimensions = [0, 1, 2]
  %expand = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %we : tensor<1x28x28x32xf32>, tensor<1x1x32x192xf32>) outs(%b0 : tensor<1x28x28x192xf32>) -> tensor<1x28x28x192xf32>
  %padded = tensor.pad %expand low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x28x28x192xf32> to tensor<1x30x30x192xf32>
  %e1 = tensor.empty() : tensor<1x28x28x192xf32>
  %b1 = linalg.broadcast ins(%bd : tensor<192xf32>) outs(%e1 : tensor<1x28x28x192xf32>) dimensions = [0, 1, 2]
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %wd : tensor<1x30x30x192xf32>, tensor<3x3x192xf32>) outs(%b1 : tensor<1x28x28x192xf32>) -> tensor<1x28x28x192xf32>
  %e2 = tensor.empty() : tensor<1x28x28x32xf32>
  %b2 = linalg.broadcast ins(%bp : tensor<32xf32>) outs(%e2 : tensor<1x28x28x32xf32>) dimensions = [0, 1, 2]
  // expected-remark-re @below {{'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.depthwise_conv_2d_nhwc_hwc' at line {{[0-9]+}}, 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} not cascaded by channels: in groups of a multiple of 64 channels whose tensors take at most 60% of the SRAM, none saves 10% of their estimated {{[0-9]+}} cycles}}
  %project = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%dw, %wp : tensor<1x28x28x192xf32>, tensor<1x1x192x32xf32>) outs(%b2 : tensor<1x28x28x32xf32>) -> tensor<1x28x28x32xf32>
  return %project : tensor<1x28x28x32xf32>
}

// -----

// A project conv with an activation: it would apply to each group's partial
// sum. Not an inverted bottleneck for the pass, and nothing to say.

// CHECK-LABEL: func.func @activation_on_the_sum
// CHECK-NOT:     tensor.extract_slice
// CHECK-COUNT-2: linalg.conv_2d_nhwc_hwcf
func.func @activation_on_the_sum(%x: tensor<1x14x14x64xf32>) -> tensor<1x14x14x64xf32> {
  %zero = arith.constant 0.0 : f32
  %we = arith.constant dense<0.125> : tensor<1x1x64x384xf32>
  %be = arith.constant dense<0.5> : tensor<384xf32>
  %wd = arith.constant dense<0.25> : tensor<3x3x384xf32>
  %bd = arith.constant dense<0.5> : tensor<384xf32>
  %wp = arith.constant dense<0.0625> : tensor<1x1x384x64xf32>
  %bp = arith.constant dense<0.5> : tensor<64xf32>
  %e0 = tensor.empty() : tensor<1x14x14x384xf32>
  %b0 = linalg.broadcast ins(%be : tensor<384xf32>) outs(%e0 : tensor<1x14x14x384xf32>) dimensions = [0, 1, 2]
  %expand = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %we : tensor<1x14x14x64xf32>, tensor<1x1x64x384xf32>) outs(%b0 : tensor<1x14x14x384xf32>) -> tensor<1x14x14x384xf32>
  %padded = tensor.pad %expand low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x14x14x384xf32> to tensor<1x16x16x384xf32>
  %e1 = tensor.empty() : tensor<1x14x14x384xf32>
  %b1 = linalg.broadcast ins(%bd : tensor<384xf32>) outs(%e1 : tensor<1x14x14x384xf32>) dimensions = [0, 1, 2]
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %wd : tensor<1x16x16x384xf32>, tensor<3x3x384xf32>) outs(%b1 : tensor<1x14x14x384xf32>) -> tensor<1x14x14x384xf32>
  %e2 = tensor.empty() : tensor<1x14x14x64xf32>
  %b2 = linalg.broadcast ins(%bp : tensor<64xf32>) outs(%e2 : tensor<1x14x14x64xf32>) dimensions = [0, 1, 2]
  %project = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, npu.activation = "relu", strides = dense<1> : tensor<2xi64>}
      ins(%dw, %wp : tensor<1x14x14x384xf32>, tensor<1x1x384x64xf32>) outs(%b2 : tensor<1x14x14x64xf32>) -> tensor<1x14x14x64xf32>
  return %project : tensor<1x14x14x64xf32>
}

// -----

// The depthwise conv's result is also returned: the project conv is not its
// only reader, so no group may leave it partial.

// CHECK-LABEL: func.func @filtered_read_twice
// CHECK-NOT:     tensor.extract_slice
// CHECK-COUNT-2: linalg.conv_2d_nhwc_hwcf
func.func @filtered_read_twice(%x: tensor<1x14x14x64xf32>) -> (tensor<1x14x14x64xf32>, tensor<1x14x14x384xf32>) {
  %zero = arith.constant 0.0 : f32
  %we = arith.constant dense<0.125> : tensor<1x1x64x384xf32>
  %be = arith.constant dense<0.5> : tensor<384xf32>
  %wd = arith.constant dense<0.25> : tensor<3x3x384xf32>
  %bd = arith.constant dense<0.5> : tensor<384xf32>
  %wp = arith.constant dense<0.0625> : tensor<1x1x384x64xf32>
  %bp = arith.constant dense<0.5> : tensor<64xf32>
  %e0 = tensor.empty() : tensor<1x14x14x384xf32>
  %b0 = linalg.broadcast ins(%be : tensor<384xf32>) outs(%e0 : tensor<1x14x14x384xf32>) dimensions = [0, 1, 2]
  %expand = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %we : tensor<1x14x14x64xf32>, tensor<1x1x64x384xf32>) outs(%b0 : tensor<1x14x14x384xf32>) -> tensor<1x14x14x384xf32>
  %padded = tensor.pad %expand low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x14x14x384xf32> to tensor<1x16x16x384xf32>
  %e1 = tensor.empty() : tensor<1x14x14x384xf32>
  %b1 = linalg.broadcast ins(%bd : tensor<384xf32>) outs(%e1 : tensor<1x14x14x384xf32>) dimensions = [0, 1, 2]
  %dw = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %wd : tensor<1x16x16x384xf32>, tensor<3x3x384xf32>) outs(%b1 : tensor<1x14x14x384xf32>) -> tensor<1x14x14x384xf32>
  %e2 = tensor.empty() : tensor<1x14x14x64xf32>
  %b2 = linalg.broadcast ins(%bp : tensor<64xf32>) outs(%e2 : tensor<1x14x14x64xf32>) dimensions = [0, 1, 2]
  %project = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%dw, %wp : tensor<1x14x14x384xf32>, tensor<1x1x384x64xf32>) outs(%b2 : tensor<1x14x14x64xf32>) -> tensor<1x14x14x64xf32>
  return %project, %dw : tensor<1x14x14x64xf32>, tensor<1x14x14x384xf32>
}
