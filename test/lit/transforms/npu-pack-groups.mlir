// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-pack-groups --target=npu | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -npu-pack-groups --target='npu -array-rows=8 -array-cols=8' \
// RUN:   | FileCheck %s --check-prefix=ARRAY8

// A grouped conv imports as one conv per group, their results inserted into
// consecutive channels. Groups of 4 filters over 4 inputs fill an eighth of
// the 32-wide array: all 8 run as one conv over the 32 channels with
// block-diagonal weights (group g's 4x4 block holds its weights, g + 1
// everywhere, zeros elsewhere) and the groups' biases in order. On an 8x8
// array two groups fill it.

// CHECK-LABEL: func.func @groups$of_4
// CHECK:         %[[X:.*]] = tensor.extract_slice %arg0[0, 0, 0, 0] [1, 8, 8, 32] [1, 1, 1, 1]
// CHECK:         %[[B:.*]] = linalg.broadcast ins(%{{.*}} : tensor<32xf32>)
// CHECK:         %[[C:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[X]], %{{.*}} : tensor<1x8x8x32xf32>, tensor<1x1x32x32xf32>) outs(%[[B]] : tensor<1x8x8x32xf32>)
// CHECK:         tensor.insert_slice %[[C]] into %{{.*}}[0, 0, 0, 0] [1, 8, 8, 32]
// CHECK-NOT:     linalg.conv_2d_nhwc_hwcf
// ARRAY8-LABEL:  func.func @groups$of_4
// ARRAY8-COUNT-4: linalg.conv_2d_nhwc_hwcf {{.*}} tensor<1x1x8x8xf32>
// ARRAY8-NOT:    linalg.conv_2d_nhwc_hwcf

func.func @groups$of_4(%x: tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %bias = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0]> : tensor<32xf32>
  %e = tensor.empty() : tensor<1x8x8x32xf32>
  %x0 = tensor.extract_slice %x[0, 0, 0, 0] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xf32> to tensor<1x8x8x4xf32>
  %cw0 = arith.constant dense<1.0> : tensor<1x1x4x4xf32>
  %b0 = tensor.extract_slice %bias[0] [4] [1] : tensor<32xf32> to tensor<4xf32>
  %i0 = tensor.empty() : tensor<1x8x8x4xf32>
  %s0 = linalg.broadcast ins(%b0 : tensor<4xf32>) outs(%i0 : tensor<1x8x8x4xf32>) dimensions = [0, 1, 2]
  // expected-remark @below {{8 groups of 4 filters over 4 inputs run 8 at a time, as 1 conv with block-diagonal weights}}
  %c0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x0, %cw0 : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%s0 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %r0 = tensor.insert_slice %c0 into %e[0, 0, 0, 0] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x32xf32>
  %x1 = tensor.extract_slice %x[0, 0, 0, 4] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xf32> to tensor<1x8x8x4xf32>
  %cw1 = arith.constant dense<2.0> : tensor<1x1x4x4xf32>
  %b1 = tensor.extract_slice %bias[4] [4] [1] : tensor<32xf32> to tensor<4xf32>
  %i1 = tensor.empty() : tensor<1x8x8x4xf32>
  %s1 = linalg.broadcast ins(%b1 : tensor<4xf32>) outs(%i1 : tensor<1x8x8x4xf32>) dimensions = [0, 1, 2]
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x1, %cw1 : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%s1 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %r1 = tensor.insert_slice %c1 into %r0[0, 0, 0, 4] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x32xf32>
  %x2 = tensor.extract_slice %x[0, 0, 0, 8] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xf32> to tensor<1x8x8x4xf32>
  %cw2 = arith.constant dense<3.0> : tensor<1x1x4x4xf32>
  %b2 = tensor.extract_slice %bias[8] [4] [1] : tensor<32xf32> to tensor<4xf32>
  %i2 = tensor.empty() : tensor<1x8x8x4xf32>
  %s2 = linalg.broadcast ins(%b2 : tensor<4xf32>) outs(%i2 : tensor<1x8x8x4xf32>) dimensions = [0, 1, 2]
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x2, %cw2 : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%s2 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %r2 = tensor.insert_slice %c2 into %r1[0, 0, 0, 8] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x32xf32>
  %x3 = tensor.extract_slice %x[0, 0, 0, 12] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xf32> to tensor<1x8x8x4xf32>
  %cw3 = arith.constant dense<4.0> : tensor<1x1x4x4xf32>
  %b3 = tensor.extract_slice %bias[12] [4] [1] : tensor<32xf32> to tensor<4xf32>
  %i3 = tensor.empty() : tensor<1x8x8x4xf32>
  %s3 = linalg.broadcast ins(%b3 : tensor<4xf32>) outs(%i3 : tensor<1x8x8x4xf32>) dimensions = [0, 1, 2]
  %c3 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x3, %cw3 : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%s3 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %r3 = tensor.insert_slice %c3 into %r2[0, 0, 0, 12] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x32xf32>
  %x4 = tensor.extract_slice %x[0, 0, 0, 16] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xf32> to tensor<1x8x8x4xf32>
  %cw4 = arith.constant dense<5.0> : tensor<1x1x4x4xf32>
  %b4 = tensor.extract_slice %bias[16] [4] [1] : tensor<32xf32> to tensor<4xf32>
  %i4 = tensor.empty() : tensor<1x8x8x4xf32>
  %s4 = linalg.broadcast ins(%b4 : tensor<4xf32>) outs(%i4 : tensor<1x8x8x4xf32>) dimensions = [0, 1, 2]
  %c4 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x4, %cw4 : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%s4 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %r4 = tensor.insert_slice %c4 into %r3[0, 0, 0, 16] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x32xf32>
  %x5 = tensor.extract_slice %x[0, 0, 0, 20] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xf32> to tensor<1x8x8x4xf32>
  %cw5 = arith.constant dense<6.0> : tensor<1x1x4x4xf32>
  %b5 = tensor.extract_slice %bias[20] [4] [1] : tensor<32xf32> to tensor<4xf32>
  %i5 = tensor.empty() : tensor<1x8x8x4xf32>
  %s5 = linalg.broadcast ins(%b5 : tensor<4xf32>) outs(%i5 : tensor<1x8x8x4xf32>) dimensions = [0, 1, 2]
  %c5 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x5, %cw5 : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%s5 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %r5 = tensor.insert_slice %c5 into %r4[0, 0, 0, 20] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x32xf32>
  %x6 = tensor.extract_slice %x[0, 0, 0, 24] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xf32> to tensor<1x8x8x4xf32>
  %cw6 = arith.constant dense<7.0> : tensor<1x1x4x4xf32>
  %b6 = tensor.extract_slice %bias[24] [4] [1] : tensor<32xf32> to tensor<4xf32>
  %i6 = tensor.empty() : tensor<1x8x8x4xf32>
  %s6 = linalg.broadcast ins(%b6 : tensor<4xf32>) outs(%i6 : tensor<1x8x8x4xf32>) dimensions = [0, 1, 2]
  %c6 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x6, %cw6 : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%s6 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %r6 = tensor.insert_slice %c6 into %r5[0, 0, 0, 24] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x32xf32>
  %x7 = tensor.extract_slice %x[0, 0, 0, 28] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xf32> to tensor<1x8x8x4xf32>
  %cw7 = arith.constant dense<8.0> : tensor<1x1x4x4xf32>
  %b7 = tensor.extract_slice %bias[28] [4] [1] : tensor<32xf32> to tensor<4xf32>
  %i7 = tensor.empty() : tensor<1x8x8x4xf32>
  %s7 = linalg.broadcast ins(%b7 : tensor<4xf32>) outs(%i7 : tensor<1x8x8x4xf32>) dimensions = [0, 1, 2]
  %c7 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x7, %cw7 : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%s7 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %r7 = tensor.insert_slice %c7 into %r6[0, 0, 0, 28] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x32xf32>
  return %r7 : tensor<1x8x8x32xf32>
}

// -----

// Groups starting from a fill of zeros: the packed conv does too. Three
// groups, all in one conv; on an 8x8 array two, then the one left.

// CHECK-LABEL: func.func @groups$started_at_zero
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x8x8x12xf32>)
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} tensor<1x1x12x12xf32>
// CHECK-NOT:     linalg.conv_2d_nhwc_hwcf
// ARRAY8-LABEL:  func.func @groups$started_at_zero
// ARRAY8:        linalg.conv_2d_nhwc_hwcf {{.*}} tensor<1x1x8x8xf32>
// ARRAY8:        linalg.conv_2d_nhwc_hwcf {{.*}} tensor<1x1x4x4xf32>
// ARRAY8-NOT:    linalg.conv_2d_nhwc_hwcf
func.func @groups$started_at_zero(%x: tensor<1x8x8x12xf32>) -> tensor<1x8x8x12xf32> {
  %zero = arith.constant 0.0 : f32
  %bias = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0]> : tensor<12xf32>
  %e = tensor.empty() : tensor<1x8x8x12xf32>
  %x0 = tensor.extract_slice %x[0, 0, 0, 0] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x12xf32> to tensor<1x8x8x4xf32>
  %cw0 = arith.constant dense<1.0> : tensor<1x1x4x4xf32>
  %i0 = tensor.empty() : tensor<1x8x8x4xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%i0 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  // expected-remark @below {{3 groups of 4 filters over 4 inputs run 3 at a time}}
  %c0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x0, %cw0 : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%s0 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %r0 = tensor.insert_slice %c0 into %e[0, 0, 0, 0] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x12xf32>
  %x1 = tensor.extract_slice %x[0, 0, 0, 4] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x12xf32> to tensor<1x8x8x4xf32>
  %cw1 = arith.constant dense<2.0> : tensor<1x1x4x4xf32>
  %i1 = tensor.empty() : tensor<1x8x8x4xf32>
  %s1 = linalg.fill ins(%zero : f32) outs(%i1 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x1, %cw1 : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%s1 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %r1 = tensor.insert_slice %c1 into %r0[0, 0, 0, 4] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x12xf32>
  %x2 = tensor.extract_slice %x[0, 0, 0, 8] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x12xf32> to tensor<1x8x8x4xf32>
  %cw2 = arith.constant dense<3.0> : tensor<1x1x4x4xf32>
  %i2 = tensor.empty() : tensor<1x8x8x4xf32>
  %s2 = linalg.fill ins(%zero : f32) outs(%i2 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x2, %cw2 : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%s2 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %r2 = tensor.insert_slice %c2 into %r1[0, 0, 0, 8] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x12xf32>
  return %r2 : tensor<1x8x8x12xf32>
}

// -----

// Weights that are no constants cannot be laid out block-diagonally: the
// groups stay, without a remark.

// CHECK-LABEL: func.func @groups$weights_not_constant
// ARRAY8-LABEL: func.func @groups$weights_not_constant
// CHECK-COUNT-4: linalg.conv_2d_nhwc_hwcf {{.*}} tensor<1x1x4x4xf32>
func.func @groups$weights_not_constant(%x: tensor<1x8x8x16xf32>, %w0: tensor<1x1x4x4xf32>, %w1: tensor<1x1x4x4xf32>, %w2: tensor<1x1x4x4xf32>, %w3: tensor<1x1x4x4xf32>) -> tensor<1x8x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %bias = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0]> : tensor<16xf32>
  %e = tensor.empty() : tensor<1x8x8x16xf32>
  %x0 = tensor.extract_slice %x[0, 0, 0, 0] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x16xf32> to tensor<1x8x8x4xf32>
  %b0 = tensor.extract_slice %bias[0] [4] [1] : tensor<16xf32> to tensor<4xf32>
  %i0 = tensor.empty() : tensor<1x8x8x4xf32>
  %s0 = linalg.broadcast ins(%b0 : tensor<4xf32>) outs(%i0 : tensor<1x8x8x4xf32>) dimensions = [0, 1, 2]
  %c0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x0, %w0 : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%s0 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %r0 = tensor.insert_slice %c0 into %e[0, 0, 0, 0] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x16xf32>
  %x1 = tensor.extract_slice %x[0, 0, 0, 4] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x16xf32> to tensor<1x8x8x4xf32>
  %b1 = tensor.extract_slice %bias[4] [4] [1] : tensor<16xf32> to tensor<4xf32>
  %i1 = tensor.empty() : tensor<1x8x8x4xf32>
  %s1 = linalg.broadcast ins(%b1 : tensor<4xf32>) outs(%i1 : tensor<1x8x8x4xf32>) dimensions = [0, 1, 2]
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x1, %w1 : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%s1 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %r1 = tensor.insert_slice %c1 into %r0[0, 0, 0, 4] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x16xf32>
  %x2 = tensor.extract_slice %x[0, 0, 0, 8] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x16xf32> to tensor<1x8x8x4xf32>
  %b2 = tensor.extract_slice %bias[8] [4] [1] : tensor<16xf32> to tensor<4xf32>
  %i2 = tensor.empty() : tensor<1x8x8x4xf32>
  %s2 = linalg.broadcast ins(%b2 : tensor<4xf32>) outs(%i2 : tensor<1x8x8x4xf32>) dimensions = [0, 1, 2]
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x2, %w2 : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%s2 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %r2 = tensor.insert_slice %c2 into %r1[0, 0, 0, 8] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x16xf32>
  %x3 = tensor.extract_slice %x[0, 0, 0, 12] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x16xf32> to tensor<1x8x8x4xf32>
  %b3 = tensor.extract_slice %bias[12] [4] [1] : tensor<16xf32> to tensor<4xf32>
  %i3 = tensor.empty() : tensor<1x8x8x4xf32>
  %s3 = linalg.broadcast ins(%b3 : tensor<4xf32>) outs(%i3 : tensor<1x8x8x4xf32>) dimensions = [0, 1, 2]
  %c3 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x3, %w3 : tensor<1x8x8x4xf32>, tensor<1x1x4x4xf32>) outs(%s3 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %r3 = tensor.insert_slice %c3 into %r2[0, 0, 0, 12] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xf32> into tensor<1x8x8x16xf32>
  return %r3 : tensor<1x8x8x16xf32>
}

// -----

// Two groups of 32 filters over 3x3x32 inputs fill the array: packing would
// only multiply zeros. They stay, without a remark.

// CHECK-LABEL: func.func @groups$filling_the_array
// CHECK-COUNT-2: linalg.conv_2d_nhwc_hwcf {{.*}} tensor<3x3x32x32xf32>
func.func @groups$filling_the_array(%x: tensor<1x10x10x64xf32>) -> tensor<1x8x8x64xf32> {
  %zero = arith.constant 0.0 : f32
  %bias = arith.constant dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0, 35.0, 36.0, 37.0, 38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0, 46.0, 47.0, 48.0, 49.0, 50.0, 51.0, 52.0, 53.0, 54.0, 55.0, 56.0, 57.0, 58.0, 59.0, 60.0, 61.0, 62.0, 63.0]> : tensor<64xf32>
  %e = tensor.empty() : tensor<1x8x8x64xf32>
  %x0 = tensor.extract_slice %x[0, 0, 0, 0] [1, 10, 10, 32] [1, 1, 1, 1] : tensor<1x10x10x64xf32> to tensor<1x10x10x32xf32>
  %cw0 = arith.constant dense<1.0> : tensor<3x3x32x32xf32>
  %b0 = tensor.extract_slice %bias[0] [32] [1] : tensor<64xf32> to tensor<32xf32>
  %i0 = tensor.empty() : tensor<1x8x8x32xf32>
  %s0 = linalg.broadcast ins(%b0 : tensor<32xf32>) outs(%i0 : tensor<1x8x8x32xf32>) dimensions = [0, 1, 2]
  %c0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x0, %cw0 : tensor<1x10x10x32xf32>, tensor<3x3x32x32xf32>) outs(%s0 : tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32>
  %r0 = tensor.insert_slice %c0 into %e[0, 0, 0, 0] [1, 8, 8, 32] [1, 1, 1, 1] : tensor<1x8x8x32xf32> into tensor<1x8x8x64xf32>
  %x1 = tensor.extract_slice %x[0, 0, 0, 32] [1, 10, 10, 32] [1, 1, 1, 1] : tensor<1x10x10x64xf32> to tensor<1x10x10x32xf32>
  %cw1 = arith.constant dense<2.0> : tensor<3x3x32x32xf32>
  %b1 = tensor.extract_slice %bias[32] [32] [1] : tensor<64xf32> to tensor<32xf32>
  %i1 = tensor.empty() : tensor<1x8x8x32xf32>
  %s1 = linalg.broadcast ins(%b1 : tensor<32xf32>) outs(%i1 : tensor<1x8x8x32xf32>) dimensions = [0, 1, 2]
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x1, %cw1 : tensor<1x10x10x32xf32>, tensor<3x3x32x32xf32>) outs(%s1 : tensor<1x8x8x32xf32>) -> tensor<1x8x8x32xf32>
  %r1 = tensor.insert_slice %c1 into %r0[0, 0, 0, 32] [1, 8, 8, 32] [1, 1, 1, 1] : tensor<1x8x8x32xf32> into tensor<1x8x8x64xf32>
  return %r1 : tensor<1x8x8x64xf32>
}

// -----

// int8 groups accumulating in i32 (at -precision=int8 the input's zero point
// is folded into each filter's bias, which the zeros off the diagonal blocks
// leave as it is): packed the same way, the i8 weights block-diagonal, the
// i32 biases in order.

// CHECK-LABEL: func.func @groups$int8
// CHECK:         linalg.broadcast ins(%{{.*}} : tensor<32xi32>)
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} tensor<1x8x8x32xi8>, tensor<1x1x32x32xi8>) outs(%{{.*}} : tensor<1x8x8x32xi32>)
// CHECK-NOT:     linalg.conv_2d_nhwc_hwcf
// ARRAY8-LABEL:  func.func @groups$int8
func.func @groups$int8(%x: tensor<1x8x8x32xi8>) -> tensor<1x8x8x32xi32> {
  %bias = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31]> : tensor<32xi32>
  %e = tensor.empty() : tensor<1x8x8x32xi32>
  %x0 = tensor.extract_slice %x[0, 0, 0, 0] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xi8> to tensor<1x8x8x4xi8>
  %cw0 = arith.constant dense<1> : tensor<1x1x4x4xi8>
  %b0 = tensor.extract_slice %bias[0] [4] [1] : tensor<32xi32> to tensor<4xi32>
  %i0 = tensor.empty() : tensor<1x8x8x4xi32>
  %s0 = linalg.broadcast ins(%b0 : tensor<4xi32>) outs(%i0 : tensor<1x8x8x4xi32>) dimensions = [0, 1, 2]
  // expected-remark @below {{8 groups of 4 filters over 4 inputs run 8 at a time}}
  %c0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x0, %cw0 : tensor<1x8x8x4xi8>, tensor<1x1x4x4xi8>) outs(%s0 : tensor<1x8x8x4xi32>) -> tensor<1x8x8x4xi32>
  %r0 = tensor.insert_slice %c0 into %e[0, 0, 0, 0] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xi32> into tensor<1x8x8x32xi32>
  %x1 = tensor.extract_slice %x[0, 0, 0, 4] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xi8> to tensor<1x8x8x4xi8>
  %cw1 = arith.constant dense<2> : tensor<1x1x4x4xi8>
  %b1 = tensor.extract_slice %bias[4] [4] [1] : tensor<32xi32> to tensor<4xi32>
  %i1 = tensor.empty() : tensor<1x8x8x4xi32>
  %s1 = linalg.broadcast ins(%b1 : tensor<4xi32>) outs(%i1 : tensor<1x8x8x4xi32>) dimensions = [0, 1, 2]
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x1, %cw1 : tensor<1x8x8x4xi8>, tensor<1x1x4x4xi8>) outs(%s1 : tensor<1x8x8x4xi32>) -> tensor<1x8x8x4xi32>
  %r1 = tensor.insert_slice %c1 into %r0[0, 0, 0, 4] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xi32> into tensor<1x8x8x32xi32>
  %x2 = tensor.extract_slice %x[0, 0, 0, 8] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xi8> to tensor<1x8x8x4xi8>
  %cw2 = arith.constant dense<3> : tensor<1x1x4x4xi8>
  %b2 = tensor.extract_slice %bias[8] [4] [1] : tensor<32xi32> to tensor<4xi32>
  %i2 = tensor.empty() : tensor<1x8x8x4xi32>
  %s2 = linalg.broadcast ins(%b2 : tensor<4xi32>) outs(%i2 : tensor<1x8x8x4xi32>) dimensions = [0, 1, 2]
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x2, %cw2 : tensor<1x8x8x4xi8>, tensor<1x1x4x4xi8>) outs(%s2 : tensor<1x8x8x4xi32>) -> tensor<1x8x8x4xi32>
  %r2 = tensor.insert_slice %c2 into %r1[0, 0, 0, 8] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xi32> into tensor<1x8x8x32xi32>
  %x3 = tensor.extract_slice %x[0, 0, 0, 12] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xi8> to tensor<1x8x8x4xi8>
  %cw3 = arith.constant dense<4> : tensor<1x1x4x4xi8>
  %b3 = tensor.extract_slice %bias[12] [4] [1] : tensor<32xi32> to tensor<4xi32>
  %i3 = tensor.empty() : tensor<1x8x8x4xi32>
  %s3 = linalg.broadcast ins(%b3 : tensor<4xi32>) outs(%i3 : tensor<1x8x8x4xi32>) dimensions = [0, 1, 2]
  %c3 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x3, %cw3 : tensor<1x8x8x4xi8>, tensor<1x1x4x4xi8>) outs(%s3 : tensor<1x8x8x4xi32>) -> tensor<1x8x8x4xi32>
  %r3 = tensor.insert_slice %c3 into %r2[0, 0, 0, 12] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xi32> into tensor<1x8x8x32xi32>
  %x4 = tensor.extract_slice %x[0, 0, 0, 16] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xi8> to tensor<1x8x8x4xi8>
  %cw4 = arith.constant dense<5> : tensor<1x1x4x4xi8>
  %b4 = tensor.extract_slice %bias[16] [4] [1] : tensor<32xi32> to tensor<4xi32>
  %i4 = tensor.empty() : tensor<1x8x8x4xi32>
  %s4 = linalg.broadcast ins(%b4 : tensor<4xi32>) outs(%i4 : tensor<1x8x8x4xi32>) dimensions = [0, 1, 2]
  %c4 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x4, %cw4 : tensor<1x8x8x4xi8>, tensor<1x1x4x4xi8>) outs(%s4 : tensor<1x8x8x4xi32>) -> tensor<1x8x8x4xi32>
  %r4 = tensor.insert_slice %c4 into %r3[0, 0, 0, 16] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xi32> into tensor<1x8x8x32xi32>
  %x5 = tensor.extract_slice %x[0, 0, 0, 20] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xi8> to tensor<1x8x8x4xi8>
  %cw5 = arith.constant dense<6> : tensor<1x1x4x4xi8>
  %b5 = tensor.extract_slice %bias[20] [4] [1] : tensor<32xi32> to tensor<4xi32>
  %i5 = tensor.empty() : tensor<1x8x8x4xi32>
  %s5 = linalg.broadcast ins(%b5 : tensor<4xi32>) outs(%i5 : tensor<1x8x8x4xi32>) dimensions = [0, 1, 2]
  %c5 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x5, %cw5 : tensor<1x8x8x4xi8>, tensor<1x1x4x4xi8>) outs(%s5 : tensor<1x8x8x4xi32>) -> tensor<1x8x8x4xi32>
  %r5 = tensor.insert_slice %c5 into %r4[0, 0, 0, 20] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xi32> into tensor<1x8x8x32xi32>
  %x6 = tensor.extract_slice %x[0, 0, 0, 24] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xi8> to tensor<1x8x8x4xi8>
  %cw6 = arith.constant dense<7> : tensor<1x1x4x4xi8>
  %b6 = tensor.extract_slice %bias[24] [4] [1] : tensor<32xi32> to tensor<4xi32>
  %i6 = tensor.empty() : tensor<1x8x8x4xi32>
  %s6 = linalg.broadcast ins(%b6 : tensor<4xi32>) outs(%i6 : tensor<1x8x8x4xi32>) dimensions = [0, 1, 2]
  %c6 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x6, %cw6 : tensor<1x8x8x4xi8>, tensor<1x1x4x4xi8>) outs(%s6 : tensor<1x8x8x4xi32>) -> tensor<1x8x8x4xi32>
  %r6 = tensor.insert_slice %c6 into %r5[0, 0, 0, 24] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xi32> into tensor<1x8x8x32xi32>
  %x7 = tensor.extract_slice %x[0, 0, 0, 28] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x32xi8> to tensor<1x8x8x4xi8>
  %cw7 = arith.constant dense<8> : tensor<1x1x4x4xi8>
  %b7 = tensor.extract_slice %bias[28] [4] [1] : tensor<32xi32> to tensor<4xi32>
  %i7 = tensor.empty() : tensor<1x8x8x4xi32>
  %s7 = linalg.broadcast ins(%b7 : tensor<4xi32>) outs(%i7 : tensor<1x8x8x4xi32>) dimensions = [0, 1, 2]
  %c7 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x7, %cw7 : tensor<1x8x8x4xi8>, tensor<1x1x4x4xi8>) outs(%s7 : tensor<1x8x8x4xi32>) -> tensor<1x8x8x4xi32>
  %r7 = tensor.insert_slice %c7 into %r6[0, 0, 0, 28] [1, 8, 8, 4] [1, 1, 1, 1] : tensor<1x8x8x4xi32> into tensor<1x8x8x32xi32>
  return %r7 : tensor<1x8x8x32xi32>
}
