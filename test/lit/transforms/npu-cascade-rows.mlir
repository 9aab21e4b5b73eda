// RUN: atvoss-opt %s -split-input-file --pass-pipeline='builtin.module(npu-cascade-rows{pipeline=false})' | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics --pass-pipeline='builtin.module(npu-cascade-rows{pipeline=false})'
// RUN: atvoss-opt %s -split-input-file --pass-pipeline='builtin.module(npu-cascade-rows{pipeline=false})' --target='npu -fusion=1' | FileCheck %s --check-prefix=FUSION1

// Chains of convolutions whose tensors exceed the SRAM, run in strips of rows.
// -----

// MobileNetV2's inverted residual: a 1x1 conv expands 16 channels to 96 (a
// 614,400 B tensor), a 3x3 stride-2 depthwise conv reads it padded, a 1x1 conv
// projects to 24. In two strips of 10 output rows, the depthwise conv of a
// strip reads 21 padded rows: 20 of the expanded tensor and the zero row above
// the image (first strip, pad low 1) or 21 of it (second strip, rows 19..39,
// the halo row 19 computed twice). Each strip's last conv writes its rows of
// the result in place: its bias starts on a slice of the result.

// CHECK-LABEL: func.func @inverted_residual
// CHECK-SAME:    (%[[X:.*]]: tensor<1x40x40x16xf32>)
// CHECK:         %[[X0:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 20, 40, 16] [1, 1, 1, 1]
// CHECK:         %[[E0:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[X0]], %{{.*}} : tensor<1x20x40x16xf32>, tensor<1x1x16x96xf32>) outs(%{{.*}} : tensor<1x20x40x96xf32>)
// CHECK:         %[[P0:.*]] = tensor.pad %[[E0]] low[0, 1, 1, 0] high[0, 0, 1, 0]
// CHECK:         } : tensor<1x20x40x96xf32> to tensor<1x21x42x96xf32>
// CHECK:         %[[D0:.*]] = linalg.depthwise_conv_2d_nhwc_hwc {{.*}} ins(%[[P0]], %{{.*}} : tensor<1x21x42x96xf32>, tensor<3x3x96xf32>) outs(%{{.*}} : tensor<1x10x20x96xf32>)
// CHECK:         %[[R:.*]] = tensor.empty() : tensor<1x20x20x24xf32>
// CHECK:         %[[R0:.*]] = tensor.extract_slice %[[R]][0, 0, 0, 0] [1, 10, 20, 24] [1, 1, 1, 1]
// CHECK:         %[[B0:.*]] = linalg.broadcast ins(%{{.*}} : tensor<24xf32>) outs(%[[R0]] : tensor<1x10x20x24xf32>)
// CHECK:         %[[C0:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[D0]], %{{.*}} : tensor<1x10x20x96xf32>, tensor<1x1x96x24xf32>) outs(%[[B0]] : tensor<1x10x20x24xf32>)
// CHECK:         %[[I0:.*]] = tensor.insert_slice %[[C0]] into %[[R]][0, 0, 0, 0] [1, 10, 20, 24] [1, 1, 1, 1]
// CHECK:         %[[X1:.*]] = tensor.extract_slice %[[X]][0, 19, 0, 0] [1, 21, 40, 16] [1, 1, 1, 1]
// CHECK:         %[[E1:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[X1]], %{{.*}}) outs(%{{.*}} : tensor<1x21x40x96xf32>)
// CHECK:         %[[P1:.*]] = tensor.pad %[[E1]] low[0, 0, 1, 0] high[0, 0, 1, 0]
// CHECK:         %[[D1:.*]] = linalg.depthwise_conv_2d_nhwc_hwc {{.*}} ins(%[[P1]], %{{.*}} : tensor<1x21x42x96xf32>, tensor<3x3x96xf32>)
// CHECK:         %[[R1:.*]] = tensor.extract_slice %[[I0]][0, 10, 0, 0] [1, 10, 20, 24] [1, 1, 1, 1]
// CHECK:         %[[B1:.*]] = linalg.broadcast ins(%{{.*}} : tensor<24xf32>) outs(%[[R1]] : tensor<1x10x20x24xf32>)
// CHECK:         %[[C1:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[D1]], %{{.*}}) outs(%[[B1]] : tensor<1x10x20x24xf32>)
// CHECK:         %[[I1:.*]] = tensor.insert_slice %[[C1]] into %[[I0]][0, 10, 0, 0] [1, 10, 20, 24] [1, 1, 1, 1]
// CHECK:         return %[[I1]]
// CHECK-NOT:     tensor<1x40x40x96xf32>

// At -fusion=1 the chain stays whole.
// FUSION1-LABEL: func.func @inverted_residual
// FUSION1:         linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x40x40x96xf32>)
// FUSION1:         tensor.pad
// FUSION1:         linalg.depthwise_conv_2d_nhwc_hwc
// FUSION1:         linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x20x20x24xf32>)
// FUSION1-NOT:     tensor.insert_slice
func.func @inverted_residual(%x: tensor<1x40x40x16xf32>) -> tensor<1x20x20x24xf32> {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<0.125> : tensor<1x1x16x96xf32>
  %wd = arith.constant dense<0.25> : tensor<3x3x96xf32>
  %w2 = arith.constant dense<0.5> : tensor<1x1x96x24xf32>
  %b2 = arith.constant dense<1.0> : tensor<24xf32>
  %e1 = tensor.empty() : tensor<1x40x40x96xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x40x40x96xf32>) -> tensor<1x40x40x96xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w1 : tensor<1x40x40x16xf32>, tensor<1x1x16x96xf32>) outs(%i1 : tensor<1x40x40x96xf32>) -> tensor<1x40x40x96xf32>
  %p = tensor.pad %c1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x40x40x96xf32> to tensor<1x42x42x96xf32>
  %e2 = tensor.empty() : tensor<1x20x20x96xf32>
  %i2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x20x20x96xf32>) -> tensor<1x20x20x96xf32>
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%p, %wd : tensor<1x42x42x96xf32>, tensor<3x3x96xf32>) outs(%i2 : tensor<1x20x20x96xf32>) -> tensor<1x20x20x96xf32>
  %e3 = tensor.empty() : tensor<1x20x20x24xf32>
  %i3 = linalg.broadcast ins(%b2 : tensor<24xf32>) outs(%e3 : tensor<1x20x20x24xf32>) dimensions = [0, 1, 2]
  // expected-remark-re @below {{cascaded 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.depthwise_conv_2d_nhwc_hwc' at line {{[0-9]+}}, 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} in 2 strips of 10 rows: the 768000 B between them stay in SRAM a strip at a time (estimated 21816 -> 16264 cycles)}}
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%d, %w2 : tensor<1x20x20x96xf32>, tensor<1x1x96x24xf32>) outs(%i3 : tensor<1x20x20x24xf32>) -> tensor<1x20x20x24xf32>
  return %c2 : tensor<1x20x20x24xf32>
}
// -----

// The inverted residual at 112x112 (MobileNetV2's block1.0): strips of 3
// output rows, whose depthwise conv reads 7 padded rows. A row both strips read
// is a seventh of a strip, too much to compute twice (ROLL_MIN_SHARE): the
// expand conv writes its 6 new rows into the interior of the padded strip,
// whose border alone is filled (the zero row above the image in the first
// strip, the columns left and right in every strip), and from the second
// strip on the row above them (the halo) is copied from the strip before.

// CHECK-LABEL: func.func @rolled
// CHECK-SAME:    (%[[X:.*]]: tensor<1x112x112x16xf32>)
// CHECK:         %[[X0:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 6, 112, 16] [1, 1, 1, 1]
// CHECK:         tensor.empty() : tensor<1x7x114x96xf32>
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x1x114x96xf32>)
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<1x7x1x96xf32>)
// CHECK:         %[[F0:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 113, 0] [1, 7, 1, 96] [1, 1, 1, 1]
// CHECK:         %[[E0:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[X0]], %{{.*}} : tensor<1x6x112x16xf32>, tensor<1x1x16x96xf32>) outs(%{{.*}} : tensor<1x6x112x96xf32>)
// CHECK:         %[[P0:.*]] = tensor.insert_slice %[[E0]] into %[[F0]][0, 1, 1, 0] [1, 6, 112, 96] [1, 1, 1, 1]
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc {{.*}} ins(%[[P0]], %{{.*}} : tensor<1x7x114x96xf32>, tensor<3x3x96xf32>) outs(%{{.*}} : tensor<1x3x56x96xf32>)
// CHECK:         %[[R:.*]] = tensor.empty() : tensor<1x56x56x24xf32>
// CHECK:         tensor.insert_slice %{{.*}} into %[[R]][0, 0, 0, 0] [1, 3, 56, 24] [1, 1, 1, 1]
// CHECK:         %[[X1:.*]] = tensor.extract_slice %[[X]][0, 6, 0, 0] [1, 6, 112, 16] [1, 1, 1, 1]
// CHECK-NOT:     tensor<1x1x114x96xf32>
// CHECK:         %[[F1:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 113, 0] [1, 7, 1, 96] [1, 1, 1, 1]
// CHECK:         %[[E1:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[X1]], %{{.*}} : tensor<1x6x112x16xf32>, tensor<1x1x16x96xf32>) outs(%{{.*}} : tensor<1x6x112x96xf32>)
// CHECK:         %[[M1:.*]] = tensor.insert_slice %[[E1]] into %[[F1]][0, 1, 1, 0] [1, 6, 112, 96] [1, 1, 1, 1]
// CHECK:         %[[H1:.*]] = tensor.extract_slice %[[P0]][0, 6, 1, 0] [1, 1, 112, 96] [1, 1, 1, 1]
// CHECK:         %[[P1:.*]] = tensor.insert_slice %[[H1]] into %[[M1]][0, 0, 1, 0] [1, 1, 112, 96] [1, 1, 1, 1]
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc {{.*}} ins(%[[P1]], %{{.*}} : tensor<1x7x114x96xf32>, tensor<3x3x96xf32>) outs(%{{.*}} : tensor<1x3x56x96xf32>)
// CHECK-NOT:     tensor<1x112x112x96xf32>
func.func @rolled(%x: tensor<1x112x112x16xf32>) -> tensor<1x56x56x24xf32> {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<0.125> : tensor<1x1x16x96xf32>
  %wd = arith.constant dense<0.25> : tensor<3x3x96xf32>
  %w2 = arith.constant dense<0.5> : tensor<1x1x96x24xf32>
  %b2 = arith.constant dense<1.0> : tensor<24xf32>
  %e1 = tensor.empty() : tensor<1x112x112x96xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x112x112x96xf32>) -> tensor<1x112x112x96xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w1 : tensor<1x112x112x16xf32>, tensor<1x1x16x96xf32>) outs(%i1 : tensor<1x112x112x96xf32>) -> tensor<1x112x112x96xf32>
  %p = tensor.pad %c1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x112x112x96xf32> to tensor<1x114x114x96xf32>
  %e2 = tensor.empty() : tensor<1x56x56x96xf32>
  %i2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x56x56x96xf32>) -> tensor<1x56x56x96xf32>
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%p, %wd : tensor<1x114x114x96xf32>, tensor<3x3x96xf32>) outs(%i2 : tensor<1x56x56x96xf32>) -> tensor<1x56x56x96xf32>
  %e3 = tensor.empty() : tensor<1x56x56x24xf32>
  %i3 = linalg.broadcast ins(%b2 : tensor<24xf32>) outs(%e3 : tensor<1x56x56x24xf32>) dimensions = [0, 1, 2]
  // expected-remark-re @below {{cascaded 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.depthwise_conv_2d_nhwc_hwc' at line {{[0-9]+}}, 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} in 19 strips of 3 rows: the 6021120 B between them stay in SRAM a strip at a time (estimated 203710 -> 137612 cycles)}}
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%d, %w2 : tensor<1x56x56x96xf32>, tensor<1x1x96x24xf32>) outs(%i3 : tensor<1x56x56x24xf32>) -> tensor<1x56x56x24xf32>
  return %c2 : tensor<1x56x56x24xf32>
}
// -----

// A stem: a 3x3 stride-2 conv (its input padded below and to the right), then
// a 3x3 stride-2 max pool over its 1 MiB result padded with -inf. Four strips
// of 8 pooled rows; each pool strip reads 17 padded rows, of 16 or 17 conv
// rows, each conv strip 33 or 35 input rows (the last one with the input's
// bottom pad row).

// CHECK-LABEL: func.func @conv_then_pool
// CHECK-SAME:    (%[[X:.*]]: tensor<1x128x128x3xf32>)
// CHECK:         %[[X0:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 33, 128, 3] [1, 1, 1, 1]
// CHECK:         tensor.pad %[[X0]] low[0, 0, 0, 0] high[0, 0, 1, 0]
// CHECK:         %[[C0:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x16x64x64xf32>)
// CHECK:         %[[P0:.*]] = tensor.pad %[[C0]] low[0, 1, 1, 0] high[0, 0, 1, 0]
// CHECK:         linalg.pooling_nhwc_max {{.*}} ins(%[[P0]], %{{.*}} : tensor<1x17x66x64xf32>, tensor<3x3xf32>) outs(%{{.*}} : tensor<1x8x32x64xf32>)
// CHECK:         tensor.extract_slice %[[X]][0, 30, 0, 0] [1, 35, 128, 3] [1, 1, 1, 1]
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x17x64x64xf32>)
// CHECK:         tensor.pad %{{.*}} low[0, 0, 1, 0] high[0, 0, 1, 0]
// CHECK:         tensor.extract_slice %[[X]][0, 62, 0, 0] [1, 35, 128, 3] [1, 1, 1, 1]
// CHECK:         %[[X3:.*]] = tensor.extract_slice %[[X]][0, 94, 0, 0] [1, 34, 128, 3] [1, 1, 1, 1]
// CHECK:         tensor.pad %[[X3]] low[0, 0, 0, 0] high[0, 1, 1, 0]
// CHECK:         linalg.pooling_nhwc_max
// CHECK:         %[[LAST:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 24, 0, 0] [1, 8, 32, 64] [1, 1, 1, 1]
// CHECK:         return %[[LAST]]
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
  // expected-remark-re @below {{cascaded 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.pooling_nhwc_max' at line {{[0-9]+}} in 4 strips of 8 rows: the 1048576 B between them stay in SRAM a strip at a time (estimated 33916 -> 23376 cycles)}}
  %pool = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%pc, %window : tensor<1x66x66x64xf32>, tensor<3x3xf32>) outs(%init : tensor<1x32x32x64xf32>) -> tensor<1x32x32x64xf32>
  return %pool : tensor<1x32x32x64xf32>
}
// -----

// Two functions in one module: each is planned with the same budget (the
// second's chain is cascaded as the first's is).

// CHECK-LABEL: func.func @first
// CHECK-COUNT-2: tensor.insert_slice
// CHECK-LABEL: func.func @second
// CHECK-COUNT-2: tensor.insert_slice
func.func @first(%x: tensor<1x40x40x16xf32>) -> tensor<1x20x20x24xf32> {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<0.125> : tensor<1x1x16x96xf32>
  %wd = arith.constant dense<0.25> : tensor<3x3x96xf32>
  %w2 = arith.constant dense<0.5> : tensor<1x1x96x24xf32>
  %b2 = arith.constant dense<1.0> : tensor<24xf32>
  %e1 = tensor.empty() : tensor<1x40x40x96xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x40x40x96xf32>) -> tensor<1x40x40x96xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w1 : tensor<1x40x40x16xf32>, tensor<1x1x16x96xf32>) outs(%i1 : tensor<1x40x40x96xf32>) -> tensor<1x40x40x96xf32>
  %p = tensor.pad %c1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x40x40x96xf32> to tensor<1x42x42x96xf32>
  %e2 = tensor.empty() : tensor<1x20x20x96xf32>
  %i2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x20x20x96xf32>) -> tensor<1x20x20x96xf32>
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%p, %wd : tensor<1x42x42x96xf32>, tensor<3x3x96xf32>) outs(%i2 : tensor<1x20x20x96xf32>) -> tensor<1x20x20x96xf32>
  %e3 = tensor.empty() : tensor<1x20x20x24xf32>
  %i3 = linalg.broadcast ins(%b2 : tensor<24xf32>) outs(%e3 : tensor<1x20x20x24xf32>) dimensions = [0, 1, 2]
  // expected-remark-re @below {{cascaded 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.depthwise_conv_2d_nhwc_hwc' at line {{[0-9]+}}, 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} in 2 strips of 10 rows: the 768000 B between them stay in SRAM a strip at a time (estimated 21816 -> 16264 cycles)}}
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%d, %w2 : tensor<1x20x20x96xf32>, tensor<1x1x96x24xf32>) outs(%i3 : tensor<1x20x20x24xf32>) -> tensor<1x20x20x24xf32>
  return %c2 : tensor<1x20x20x24xf32>
}

func.func @second(%x: tensor<1x40x40x16xf32>) -> tensor<1x20x20x24xf32> {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<0.125> : tensor<1x1x16x96xf32>
  %wd = arith.constant dense<0.25> : tensor<3x3x96xf32>
  %w2 = arith.constant dense<0.5> : tensor<1x1x96x24xf32>
  %b2 = arith.constant dense<1.0> : tensor<24xf32>
  %e1 = tensor.empty() : tensor<1x40x40x96xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x40x40x96xf32>) -> tensor<1x40x40x96xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w1 : tensor<1x40x40x16xf32>, tensor<1x1x16x96xf32>) outs(%i1 : tensor<1x40x40x96xf32>) -> tensor<1x40x40x96xf32>
  %p = tensor.pad %c1 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x40x40x96xf32> to tensor<1x42x42x96xf32>
  %e2 = tensor.empty() : tensor<1x20x20x96xf32>
  %i2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x20x20x96xf32>) -> tensor<1x20x20x96xf32>
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%p, %wd : tensor<1x42x42x96xf32>, tensor<3x3x96xf32>) outs(%i2 : tensor<1x20x20x96xf32>) -> tensor<1x20x20x96xf32>
  %e3 = tensor.empty() : tensor<1x20x20x24xf32>
  %i3 = linalg.broadcast ins(%b2 : tensor<24xf32>) outs(%e3 : tensor<1x20x20x24xf32>) dimensions = [0, 1, 2]
  // expected-remark-re @below {{cascaded 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.depthwise_conv_2d_nhwc_hwc' at line {{[0-9]+}}, 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} in 2 strips of 10 rows: the 768000 B between them stay in SRAM a strip at a time (estimated 21816 -> 16264 cycles)}}
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%d, %w2 : tensor<1x20x20x96xf32>, tensor<1x1x96x24xf32>) outs(%i3 : tensor<1x20x20x24xf32>) -> tensor<1x20x20x24xf32>
  return %c2 : tensor<1x20x20x24xf32>
}

// -----

// A model's NCHW input transposed to NHWC for its first conv (MobileNetV2's
// stem): the transpose keeps the batch dim and maps the result's rows to the
// input's dim 2, so it heads the chain. Each strip slices its rows of the NCHW
// input (a strided DMA of three row blocks) and transposes them in SRAM: the
// 602,112 B transposed image never goes through DRAM. The first strip's 13
// output rows need 28 input rows (stem rows 0..13 at stride 2, the pad row
// above); the second's stem makes rows 14..26 (its rows 12 and 13 are
// copied from the first strip's), from input rows 27..53.

// CHECK-LABEL: func.func @nchw_input
// CHECK-SAME:    (%[[X:.*]]: tensor<1x3x224x224xf32>)
// CHECK:         %[[S0:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 3, 28, 224] [1, 1, 1, 1]
// CHECK:         linalg.transpose ins(%[[S0]] : tensor<1x3x28x224xf32>) outs(%{{.*}} : tensor<1x28x224x3xf32>) permutation = [0, 2, 3, 1]
// CHECK:         tensor.insert_slice
// CHECK:         %[[S1:.*]] = tensor.extract_slice %[[X]][0, 0, 27, 0] [1, 3, 27, 224] [1, 1, 1, 1]
// CHECK:         linalg.transpose ins(%[[S1]] : tensor<1x3x27x224xf32>) outs(%{{.*}} : tensor<1x27x224x3xf32>) permutation = [0, 2, 3, 1]
// CHECK-NOT:     tensor<1x224x224x3xf32>
func.func @nchw_input(%x: tensor<1x3x224x224xf32>) -> tensor<1x112x112x16xf32> {
  %zero = arith.constant 0.0 : f32
  %w0 = arith.constant dense<0.125> : tensor<3x3x3x32xf32>
  %wd = arith.constant dense<0.25> : tensor<3x3x32xf32>
  %w1 = arith.constant dense<0.5> : tensor<1x1x32x16xf32>
  %et = tensor.empty() : tensor<1x224x224x3xf32>
  %t = linalg.transpose ins(%x : tensor<1x3x224x224xf32>) outs(%et : tensor<1x224x224x3xf32>) permutation = [0, 2, 3, 1]
  %p0 = tensor.pad %t low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x224x224x3xf32> to tensor<1x226x226x3xf32>
  %e0 = tensor.empty() : tensor<1x112x112x32xf32>
  %i0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x112x112x32xf32>) -> tensor<1x112x112x32xf32>
  %c0 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%p0, %w0 : tensor<1x226x226x3xf32>, tensor<3x3x3x32xf32>) outs(%i0 : tensor<1x112x112x32xf32>) -> tensor<1x112x112x32xf32>
  %p1 = tensor.pad %c0 low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x112x112x32xf32> to tensor<1x114x114x32xf32>
  %e1 = tensor.empty() : tensor<1x112x112x32xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x112x112x32xf32>) -> tensor<1x112x112x32xf32>
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%p1, %wd : tensor<1x114x114x32xf32>, tensor<3x3x32xf32>) outs(%i1 : tensor<1x112x112x32xf32>) -> tensor<1x112x112x32xf32>
  %e2 = tensor.empty() : tensor<1x112x112x16xf32>
  %i2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x112x112x16xf32>) -> tensor<1x112x112x16xf32>
  // expected-remark-re @below {{cascaded 'linalg.transpose' at line {{[0-9]+}}, 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.depthwise_conv_2d_nhwc_hwc' at line {{[0-9]+}}, 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} in 9 strips of 13 rows: the 3813376 B between them stay in SRAM a strip at a time (estimated 147655 -> 115604 cycles)}}
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%d, %w1 : tensor<1x112x112x32xf32>, tensor<1x1x32x16xf32>) outs(%i2 : tensor<1x112x112x16xf32>) -> tensor<1x112x112x16xf32>
  return %c1 : tensor<1x112x112x16xf32>
}

// -----

// The last conv accumulates onto a skip tensor (a residual add folded into it:
// its initial value is skip + bias, marked npu.residual_start). Each strip
// makes its own start from its rows of the skip, in its rows of the result,
// and the whole-size start goes. Whole, the 3,211,264 B between the 1x1 convs
// go to DRAM and back.

// CHECK-LABEL: func.func @residual
// CHECK-SAME:    (%[[X:.*]]: tensor<1x56x56x16xf32>, %[[SKIP:.*]]: tensor<1x56x56x16xf32>)
// CHECK-NOT:     npu.residual_start
// CHECK:         %[[R:.*]] = tensor.empty() : tensor<1x56x56x16xf32>
// CHECK:         %[[R0:.*]] = tensor.extract_slice %[[R]][0, 0, 0, 0] [1, 7, 56, 16] [1, 1, 1, 1]
// CHECK:         %[[S0:.*]] = tensor.extract_slice %[[SKIP]][0, 0, 0, 0] [1, 7, 56, 16] [1, 1, 1, 1]
// CHECK:         %[[B0:.*]] = linalg.generic {{.*}} ins(%[[S0]], %{{.*}} : tensor<1x7x56x16xf32>, tensor<16xf32>) outs(%[[R0]] : tensor<1x7x56x16xf32>) attrs =  {npu.residual_start}
// CHECK:         %[[C0:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} outs(%[[B0]] : tensor<1x7x56x16xf32>)
// CHECK:         tensor.insert_slice %[[C0]] into %[[R]][0, 0, 0, 0] [1, 7, 56, 16] [1, 1, 1, 1]
// CHECK:         tensor.extract_slice %[[SKIP]][0, 7, 0, 0] [1, 7, 56, 16] [1, 1, 1, 1]
// CHECK-NOT:     tensor<1x56x56x256xf32>
func.func @residual(%x: tensor<1x56x56x16xf32>, %skip: tensor<1x56x56x16xf32>) -> tensor<1x56x56x16xf32> {
  %zero = arith.constant 0.0 : f32
  %w1 = arith.constant dense<0.125> : tensor<1x1x16x256xf32>
  %w2 = arith.constant dense<0.5> : tensor<1x1x256x16xf32>
  %b2 = arith.constant dense<1.0> : tensor<16xf32>
  %e1 = tensor.empty() : tensor<1x56x56x256xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x56x56x256xf32>) -> tensor<1x56x56x256xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w1 : tensor<1x56x56x16xf32>, tensor<1x1x16x256xf32>) outs(%i1 : tensor<1x56x56x256xf32>) -> tensor<1x56x56x256xf32>
  %e3 = tensor.empty() : tensor<1x56x56x16xf32>
  %i3 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%skip, %b2 : tensor<1x56x56x16xf32>, tensor<16xf32>) outs(%e3 : tensor<1x56x56x16xf32>) attrs = {npu.residual_start} {
  ^bb0(%in: f32, %bias: f32, %out: f32):
    %s = arith.addf %in, %bias : f32
    linalg.yield %s : f32
  } -> tensor<1x56x56x16xf32>
  // expected-remark-re @below {{cascaded 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} in 8 strips of 7 rows: the 3211264 B between them stay in SRAM a strip at a time (estimated 100864 -> 71808 cycles)}}
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%c1, %w2 : tensor<1x56x56x256xf32>, tensor<1x1x256x16xf32>) outs(%i3 : tensor<1x56x56x16xf32>) -> tensor<1x56x56x16xf32>
  return %c2 : tensor<1x56x56x16xf32>
}
// -----

// The stem above whose pooled result a 1x1 conv reads and a sum pool reads
// padded (ShuffleNet's stem and its first unit's shortcut): the sum pool folds
// the padding into its loads, so the strips write the pooled rows and the pad
// reads the whole result they make.

// CHECK-LABEL: func.func @pool_read_padded
// CHECK:         linalg.pooling_nhwc_max {{.*}} outs(%{{.*}} : tensor<1x8x32x64xf32>)
// CHECK:         %[[POOLED:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 24, 0, 0] [1, 8, 32, 64] [1, 1, 1, 1]
// CHECK:         %[[PADDED:.*]] = tensor.pad %[[POOLED]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK:         linalg.pooling_nhwc_sum {{.*}} ins(%[[PADDED]], %{{.*}} : tensor<1x34x34x64xf32>, tensor<3x3xf32>)
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[POOLED]], %{{.*}} : tensor<1x32x32x64xf32>, tensor<1x1x64x16xf32>)
func.func @pool_read_padded(%x: tensor<1x128x128x3xf32>) -> (tensor<1x16x16x64xf32>, tensor<1x32x32x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant 0xFF800000 : f32
  %w = arith.constant dense<0.125> : tensor<3x3x3x64xf32>
  %w1 = arith.constant dense<0.25> : tensor<1x1x64x16xf32>
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
  // expected-remark-re @below {{cascaded 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.pooling_nhwc_max' at line {{[0-9]+}} in 4 strips of 8 rows: the 1048576 B between them stay in SRAM a strip at a time (estimated 33916 -> 23376 cycles)}}
  %pool = linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%pc, %window : tensor<1x66x66x64xf32>, tensor<3x3xf32>) outs(%init : tensor<1x32x32x64xf32>) -> tensor<1x32x32x64xf32>
  %pp = tensor.pad %pool low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x32x32x64xf32> to tensor<1x34x34x64xf32>
  %e2 = tensor.empty() : tensor<1x16x16x64xf32>
  %zinit = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  %sum = linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
      ins(%pp, %window : tensor<1x34x34x64xf32>, tensor<3x3xf32>) outs(%zinit : tensor<1x16x16x64xf32>) -> tensor<1x16x16x64xf32>
  %e3 = tensor.empty() : tensor<1x32x32x16xf32>
  %cinit = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x32x32x16xf32>) -> tensor<1x32x32x16xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%pool, %w1 : tensor<1x32x32x64xf32>, tensor<1x1x64x16xf32>) outs(%cinit : tensor<1x32x32x16xf32>) -> tensor<1x32x32x16xf32>
  return %sum, %c1 : tensor<1x16x16x64xf32>, tensor<1x32x32x16xf32>
}
// -----

// An elementwise op between two convolutions (EfficientNet's batch norm and
// swish, x * sigmoid(x), between its 1x1 expand conv and the depthwise conv
// reading it padded) is a member of the chain: it reads its rows of the
// conv's result and its per-channel scale and shift whole, and writes its
// rows, which the strip pads for the depthwise conv. Whole, the 614,400 B
// tensors before and after it go to DRAM and back.

// CHECK-LABEL: func.func @swish_between
// CHECK-SAME:    (%[[X:.*]]: tensor<1x40x40x16xf32>)
// CHECK:         %[[X0:.*]] = tensor.extract_slice %[[X]][0, 0, 0, 0] [1, 20, 40, 16] [1, 1, 1, 1]
// CHECK:         %[[E0:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[X0]], %{{.*}} : tensor<1x20x40x16xf32>, tensor<1x1x16x96xf32>) outs(%{{.*}} : tensor<1x20x40x96xf32>)
// CHECK:         %[[S0:.*]] = linalg.generic {{.*}} ins(%[[E0]], %{{.*}}, %{{.*}} : tensor<1x20x40x96xf32>, tensor<96xf32>, tensor<96xf32>) outs(%{{.*}} : tensor<1x20x40x96xf32>)
// CHECK:         math.exp
// CHECK:         %[[P0:.*]] = tensor.pad %[[S0]] low[0, 1, 1, 0] high[0, 0, 1, 0]
// CHECK:         linalg.depthwise_conv_2d_nhwc_hwc {{.*}} ins(%[[P0]], %{{.*}} : tensor<1x21x42x96xf32>, tensor<3x3x96xf32>) outs(%{{.*}} : tensor<1x10x20x96xf32>)
// CHECK:         %[[X1:.*]] = tensor.extract_slice %[[X]][0, 19, 0, 0] [1, 21, 40, 16] [1, 1, 1, 1]
// CHECK:         %[[E1:.*]] = linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[X1]], %{{.*}} : tensor<1x21x40x16xf32>, tensor<1x1x16x96xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[E1]], %{{.*}}, %{{.*}} : tensor<1x21x40x96xf32>, tensor<96xf32>, tensor<96xf32>)
// CHECK-NOT:     tensor<1x40x40x96xf32>
func.func @swish_between(%x: tensor<1x40x40x16xf32>) -> tensor<1x20x20x24xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %w1 = arith.constant dense<0.125> : tensor<1x1x16x96xf32>
  %scale = arith.constant dense<0.5> : tensor<96xf32>
  %shift = arith.constant dense<0.25> : tensor<96xf32>
  %wd = arith.constant dense<0.25> : tensor<3x3x96xf32>
  %w2 = arith.constant dense<0.5> : tensor<1x1x96x24xf32>
  %e1 = tensor.empty() : tensor<1x40x40x96xf32>
  %i1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x40x40x96xf32>) -> tensor<1x40x40x96xf32>
  %c1 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%x, %w1 : tensor<1x40x40x16xf32>, tensor<1x1x16x96xf32>) outs(%i1 : tensor<1x40x40x96xf32>) -> tensor<1x40x40x96xf32>
  %e2 = tensor.empty() : tensor<1x40x40x96xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d3)>, affine_map<(d0, d1, d2, d3) -> (d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%c1, %scale, %shift : tensor<1x40x40x96xf32>, tensor<96xf32>, tensor<96xf32>) outs(%e2 : tensor<1x40x40x96xf32>) {
  ^bb0(%in: f32, %a: f32, %b: f32, %out: f32):
    %0 = arith.mulf %in, %a : f32
    %1 = arith.addf %0, %b : f32
    %2 = arith.negf %1 : f32
    %3 = math.exp %2 : f32
    %4 = arith.addf %3, %one : f32
    %5 = arith.divf %one, %4 : f32
    %6 = arith.mulf %1, %5 : f32
    linalg.yield %6 : f32
  } -> tensor<1x40x40x96xf32>
  %p = tensor.pad %s low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x40x40x96xf32> to tensor<1x42x42x96xf32>
  %e3 = tensor.empty() : tensor<1x20x20x96xf32>
  %i3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<1x20x20x96xf32>) -> tensor<1x20x20x96xf32>
  // expected-remark-re @below {{cascaded 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.generic' at line {{[0-9]+}}, 'linalg.depthwise_conv_2d_nhwc_hwc' at line {{[0-9]+}} in 2 strips of 10 rows: the 1228800 B between them stay in SRAM a strip at a time (estimated 46766 -> 41624 cycles)}}
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>} ins(%p, %wd : tensor<1x42x42x96xf32>, tensor<3x3x96xf32>) outs(%i3 : tensor<1x20x20x96xf32>) -> tensor<1x20x20x96xf32>
  %e4 = tensor.empty() : tensor<1x20x20x24xf32>
  %i4 = linalg.fill ins(%zero : f32) outs(%e4 : tensor<1x20x20x24xf32>) -> tensor<1x20x20x24xf32>
  // expected-remark-re @below {{'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}}, 'linalg.generic' at line {{[0-9]+}}, 'linalg.depthwise_conv_2d_nhwc_hwc' at line {{[0-9]+}}, 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} not cascaded: {{.*}}}}
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%d, %w2 : tensor<1x20x20x96xf32>, tensor<1x1x96x24xf32>) outs(%i4 : tensor<1x20x20x24xf32>) -> tensor<1x20x20x24xf32>
  return %c2 : tensor<1x20x20x24xf32>
}

// -----

// An elementwise op heading a chain, read by a conv unpadded (DenseNet's
// pre-activation batch norm and relu), is not a member: the conv folds it into
// its input loads as a prologue, where it costs no op of its own. What is left
// is one conv: no chain.

// CHECK-LABEL: func.func @prologue_head
// CHECK:         linalg.generic {{.*}} outs(%{{.*}} : tensor<1x40x40x96xf32>)
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} outs(%{{.*}} : tensor<1x40x40x16xf32>)
// CHECK-NOT:     tensor.insert_slice
func.func @prologue_head(%x: tensor<1x40x40x96xf32>) -> tensor<1x40x40x16xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant dense<0.5> : tensor<96xf32>
  %w = arith.constant dense<0.125> : tensor<1x1x96x16xf32>
  %e1 = tensor.empty() : tensor<1x40x40x96xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%x, %scale : tensor<1x40x40x96xf32>, tensor<96xf32>) outs(%e1 : tensor<1x40x40x96xf32>) {
  ^bb0(%in: f32, %a: f32, %out: f32):
    %0 = arith.mulf %in, %a : f32
    %1 = arith.maximumf %0, %zero : f32
    linalg.yield %1 : f32
  } -> tensor<1x40x40x96xf32>
  %e2 = tensor.empty() : tensor<1x40x40x16xf32>
  %i2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x40x40x16xf32>) -> tensor<1x40x40x16xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%r, %w : tensor<1x40x40x96xf32>, tensor<1x1x96x16xf32>) outs(%i2 : tensor<1x40x40x16xf32>) -> tensor<1x40x40x16xf32>
  return %c : tensor<1x40x40x16xf32>
}
