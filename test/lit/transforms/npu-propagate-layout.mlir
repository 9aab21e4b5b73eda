// RUN: atvoss-opt %s -split-input-file --pass-pipeline='builtin.module(npu-propagate-layout,canonicalize)' | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-propagate-layout
// RUN: atvoss-opt %s -split-input-file --target='npu -layout-pref=NCHW' --pass-pipeline='builtin.module(npu-propagate-layout,canonicalize)' | FileCheck %s --check-prefix=KEEP-NCHW

// A conv's NCHW result feeds a per-channel bias and a relu, then the next conv's
// NHWC transpose: both elementwise ops run in NHWC, and the transposes cancel.

// CHECK-LABEL: func.func @bias_relu$between_convs
// CHECK-SAME:    (%[[Y:.*]]: tensor<1x8x8x16xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK-NOT:     linalg.transpose
// CHECK:         %[[BIAS:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[CHANNEL:.*]], #{{.*}}]{{.*}} ins(%[[Y]], %[[B]] : tensor<1x8x8x16xf32>, tensor<16xf32>) outs(%{{.*}} : tensor<1x8x8x16xf32>)
// CHECK:         %[[RELU:.*]] = linalg.generic {{.*}} ins(%[[BIAS]] : tensor<1x8x8x16xf32>) outs(%{{.*}} : tensor<1x8x8x16xf32>)
// CHECK-NOT:     linalg.transpose
// CHECK:         return %[[RELU]] : tensor<1x8x8x16xf32>
#nchw = affine_map<(n, c, h, w) -> (n, c, h, w)>
#channel = affine_map<(n, c, h, w) -> (c)>
func.func @bias_relu$between_convs(%y: tensor<1x8x8x16xf32>, %b: tensor<16xf32>) -> tensor<1x8x8x16xf32> {
  %e0 = tensor.empty() : tensor<1x16x8x8xf32>
  %x = linalg.transpose ins(%y : tensor<1x8x8x16xf32>) outs(%e0 : tensor<1x16x8x8xf32>) permutation = [0, 3, 1, 2]
  %e1 = tensor.empty() : tensor<1x16x8x8xf32>
  // expected-remark @below {{'linalg.generic' runs in the layout of its transposed input #0: the transpose moves below it}}
  %bias = linalg.generic {indexing_maps = [#nchw, #channel, #nchw], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %b : tensor<1x16x8x8xf32>, tensor<16xf32>) outs(%e1 : tensor<1x16x8x8xf32>) {
  ^bb0(%v: f32, %bv: f32, %o: f32):
    %s = arith.addf %v, %bv : f32
    linalg.yield %s : f32
  } -> tensor<1x16x8x8xf32>
  %e2 = tensor.empty() : tensor<1x16x8x8xf32>
  // expected-remark @below {{'linalg.generic' runs in the layout of its transposed input #0: the transpose moves below it}}
  %relu = linalg.generic {indexing_maps = [#nchw, #nchw], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%bias : tensor<1x16x8x8xf32>) outs(%e2 : tensor<1x16x8x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x16x8x8xf32>
  %e3 = tensor.empty() : tensor<1x8x8x16xf32>
  %back = linalg.transpose ins(%relu : tensor<1x16x8x8xf32>) outs(%e3 : tensor<1x8x8x16xf32>) permutation = [0, 2, 3, 1]
  return %back : tensor<1x8x8x16xf32>
}

// -----

// A residual add of two transposed tensors runs in their layout; the result
// keeps one transpose, back to the NCHW the function returns.

// CHECK-LABEL: func.func @residual_add
// CHECK-SAME:    (%[[A:.*]]: tensor<1x4x4x8xf32>, %[[B:.*]]: tensor<1x4x4x8xf32>)
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[A]], %[[B]] : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>)
// CHECK:         %[[NCHW:.*]] = linalg.transpose ins(%[[SUM]] : tensor<1x4x4x8xf32>) outs(%{{.*}} : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
// CHECK:         return %[[NCHW]]
#map = affine_map<(n, c, h, w) -> (n, c, h, w)>
func.func @residual_add(%a: tensor<1x4x4x8xf32>, %b: tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %ta = linalg.transpose ins(%a : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %e1 = tensor.empty() : tensor<1x8x4x4xf32>
  %tb = linalg.transpose ins(%b : tensor<1x4x4x8xf32>) outs(%e1 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %e2 = tensor.empty() : tensor<1x8x4x4xf32>
  // expected-remark @below {{'linalg.generic' runs in the layout of its transposed input #0, #1: the transpose moves below it}}
  %sum = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ta, %tb : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) outs(%e2 : tensor<1x8x4x4xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s : f32
  } -> tensor<1x8x4x4xf32>
  return %sum : tensor<1x8x4x4xf32>
}

// -----

// One full-size input is not transposed: moving the transpose would put one on
// that input instead, so the op stays as it is.

// CHECK-LABEL: func.func @add$one_input_not_transposed
// CHECK:         linalg.transpose
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>)
#id = affine_map<(n, c, h, w) -> (n, c, h, w)>
func.func @add$one_input_not_transposed(%a: tensor<1x4x4x8xf32>, %b: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %ta = linalg.transpose ins(%a : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %e2 = tensor.empty() : tensor<1x8x4x4xf32>
  // expected-remark @below {{'linalg.generic' keeps its transposed inputs: input #1 is not transposed: moving the transpose would transpose that input instead}}
  %sum = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ta, %b : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) outs(%e2 : tensor<1x8x4x4xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %s = arith.addf %u, %v : f32
    linalg.yield %s : f32
  } -> tensor<1x8x4x4xf32>
  return %sum : tensor<1x8x4x4xf32>
}

// -----

// A global average pool's sum over H and W of a conv's NCHW result reads the
// NHWC result itself: its loops follow NHWC (the channel loop last), its
// output map is remapped, and no transpose is left.

// CHECK-DAG:     #[[IN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-DAG:     #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3)>
// CHECK-LABEL: func.func @reduction$reads_nhwc
// CHECK-SAME:    (%[[A:.*]]: tensor<1x4x4x8xf32>)
// CHECK-NOT:     linalg.transpose
// CHECK:         linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "reduction", "reduction", "parallel"]} ins(%[[A]] : tensor<1x4x4x8xf32>) outs(%{{.*}} : tensor<1x8xf32>)
#in = affine_map<(n, c, h, w) -> (n, c, h, w)>
#out = affine_map<(n, c, h, w) -> (n, c)>
func.func @reduction$reads_nhwc(%a: tensor<1x4x4x8xf32>) -> tensor<1x8xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %ta = linalg.transpose ins(%a : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x8xf32>) -> tensor<1x8xf32>
  // expected-remark @below {{reduction reads the source of its transposed input #0: its loops follow that layout, and the transpose goes}}
  %sum = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%ta : tensor<1x8x4x4xf32>) outs(%f : tensor<1x8xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.addf %v, %o : f32
    linalg.yield %s : f32
  } -> tensor<1x8xf32>
  return %sum : tensor<1x8xf32>
}

// -----

// A reduction of the product of two full-size inputs: only a reduction with
// one full-size input reads its source in place, so the transposes stay.

// CHECK-LABEL: func.func @reduction_of_two$keeps_transposes
// CHECK:         linalg.transpose
// CHECK:         linalg.transpose
// CHECK:         linalg.generic
#in2 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#out2 = affine_map<(n, c, h, w) -> (n, c)>
func.func @reduction_of_two$keeps_transposes(%a: tensor<1x4x4x8xf32>, %b: tensor<1x4x4x8xf32>) -> tensor<1x8xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %ta = linalg.transpose ins(%a : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %tb = linalg.transpose ins(%b : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x8xf32>) -> tensor<1x8xf32>
  %sum = linalg.generic {indexing_maps = [#in2, #in2, #out2], iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%ta, %tb : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) outs(%f : tensor<1x8xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %m = arith.mulf %u, %v : f32
    %s = arith.addf %m, %o : f32
    linalg.yield %s : f32
  } -> tensor<1x8xf32>
  return %sum : tensor<1x8xf32>
}

// -----

// A concatenation of two transposed tensors (insert_slices into an empty
// tensor, as the importer builds Concat) is built in their layout, with the
// channel offset moved to the channel dim; one transpose follows it.

// CHECK-LABEL: func.func @concat$channels
// CHECK-SAME:    (%[[A:.*]]: tensor<1x4x4x8xf32>, %[[B:.*]]: tensor<1x4x4x16xf32>)
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<1x4x4x24xf32>
// CHECK:         %[[S0:.*]] = tensor.insert_slice %[[A]] into %[[E]][0, 0, 0, 0] [1, 4, 4, 8] [1, 1, 1, 1]
// CHECK:         %[[S1:.*]] = tensor.insert_slice %[[B]] into %[[S0]][0, 0, 0, 8] [1, 4, 4, 16] [1, 1, 1, 1]
// CHECK:         %[[T:.*]] = linalg.transpose ins(%[[S1]] : tensor<1x4x4x24xf32>) outs(%{{.*}} : tensor<1x24x4x4xf32>) permutation = [0, 3, 1, 2]
// CHECK:         return %[[T]]
func.func @concat$channels(%a: tensor<1x4x4x8xf32>, %b: tensor<1x4x4x16xf32>) -> tensor<1x24x4x4xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %ta = linalg.transpose ins(%a : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %e1 = tensor.empty() : tensor<1x16x4x4xf32>
  %tb = linalg.transpose ins(%b : tensor<1x4x4x16xf32>) outs(%e1 : tensor<1x16x4x4xf32>) permutation = [0, 3, 1, 2]
  %e = tensor.empty() : tensor<1x24x4x4xf32>
  // expected-remark @below {{concatenation of 2 transposed tensors runs in their layout: the transpose moves below it}}
  %s0 = tensor.insert_slice %ta into %e[0, 0, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1] : tensor<1x8x4x4xf32> into tensor<1x24x4x4xf32>
  %s1 = tensor.insert_slice %tb into %s0[0, 8, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x24x4x4xf32>
  return %s1 : tensor<1x24x4x4xf32>
}

// -----

// One slice is not transposed: the concatenation stays as it is.

// CHECK-LABEL: func.func @concat$mixed
// CHECK:         linalg.transpose
// CHECK:         tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0, 0] [1, 8, 4, 4]
func.func @concat$mixed(%a: tensor<1x4x4x8xf32>, %b: tensor<1x16x4x4xf32>) -> tensor<1x24x4x4xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %ta = linalg.transpose ins(%a : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %e = tensor.empty() : tensor<1x24x4x4xf32>
  %s0 = tensor.insert_slice %ta into %e[0, 0, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1] : tensor<1x8x4x4xf32> into tensor<1x24x4x4xf32>
  %s1 = tensor.insert_slice %b into %s0[0, 8, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x24x4x4xf32>
  return %s1 : tensor<1x24x4x4xf32>
}

// -----

// A channel shuffle written for NCHW between two NHWC convs (transpose to NCHW,
// reshape into groups, swap the groups, reshape back, transpose to NHWC): the
// transposes move through the reshapes and compose into one transpose of the
// channel groups, in NHWC.

// CHECK-LABEL: func.func @shuffle$channel_groups
// CHECK-SAME:    (%[[Y:.*]]: tensor<1x4x4x6xf32>)
// CHECK:         %[[G:.*]] = tensor.expand_shape %[[Y]] {{\[}}[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 2, 3]
// CHECK:         %[[T:.*]] = linalg.transpose ins(%[[G]] : tensor<1x4x4x2x3xf32>) outs(%{{.*}} : tensor<1x4x4x3x2xf32>) permutation = [0, 1, 2, 4, 3]
// CHECK:         %[[C:.*]] = tensor.collapse_shape %[[T]] {{\[}}[0], [1], [2], [3, 4]]
// CHECK-NOT:     linalg.transpose
// CHECK:         return %[[C]] : tensor<1x4x4x6xf32>
// KEEP-NCHW-LABEL: func.func @shuffle$channel_groups
// KEEP-NCHW-COUNT-3: linalg.transpose
func.func @shuffle$channel_groups(%y: tensor<1x4x4x6xf32>) -> tensor<1x4x4x6xf32> {
  %e0 = tensor.empty() : tensor<1x6x4x4xf32>
  %x = linalg.transpose ins(%y : tensor<1x4x4x6xf32>) outs(%e0 : tensor<1x6x4x4xf32>) permutation = [0, 3, 1, 2]
  // expected-remark @below {{'tensor.expand_shape' expands the source of its transposed input: the transpose moves below it}}
  %g = tensor.expand_shape %x [[0], [1, 2], [3], [4]] output_shape [1, 2, 3, 4, 4] : tensor<1x6x4x4xf32> into tensor<1x2x3x4x4xf32>
  %e1 = tensor.empty() : tensor<1x3x2x4x4xf32>
  %s = linalg.transpose ins(%g : tensor<1x2x3x4x4xf32>) outs(%e1 : tensor<1x3x2x4x4xf32>) permutation = [0, 2, 1, 3, 4]
  %c = tensor.collapse_shape %s [[0], [1, 2], [3], [4]] : tensor<1x3x2x4x4xf32> into tensor<1x6x4x4xf32>
  %e2 = tensor.empty() : tensor<1x4x4x6xf32>
  // expected-remark @below {{transpose of a collapsed transposed tensor moves above 'tensor.collapse_shape', where the two compose}}
  %t = linalg.transpose ins(%c : tensor<1x6x4x4xf32>) outs(%e2 : tensor<1x4x4x6xf32>) permutation = [0, 2, 3, 1]
  return %t : tensor<1x4x4x6xf32>
}

// -----

// LRN's window over channels between two NHWC convs: the zero-padded squares
// are sliced at shifted channel offsets and summed. The pad and the slices
// apply to the NHWC source (amounts and offsets on the channel dim, now the
// last), the sum runs in NHWC, and the transposes cancel.

// CHECK-LABEL: func.func @channel_window$between_convs
// CHECK-SAME:    (%[[Y:.*]]: tensor<1x4x4x8xf32>)
// CHECK-NOT:     linalg.transpose
// CHECK:         %[[PADDED:.*]] = tensor.pad %[[Y]] low[0, 0, 0, 1] high[0, 0, 0, 1]
// CHECK:         %[[S0:.*]] = tensor.extract_slice %[[PADDED]][0, 0, 0, 0] [1, 4, 4, 8] [1, 1, 1, 1] : tensor<1x4x4x10xf32> to tensor<1x4x4x8xf32>
// CHECK:         %[[S1:.*]] = tensor.extract_slice %[[PADDED]][0, 0, 0, 2] [1, 4, 4, 8] [1, 1, 1, 1] : tensor<1x4x4x10xf32> to tensor<1x4x4x8xf32>
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[S0]], %[[S1]] : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>)
// CHECK-NOT:     linalg.transpose
// CHECK:         return %[[SUM]] : tensor<1x4x4x8xf32>
#nchw = affine_map<(n, c, h, w) -> (n, c, h, w)>
func.func @channel_window$between_convs(%y: tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %x = linalg.transpose ins(%y : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %zero = arith.constant 0.0 : f32
  // expected-remark @below {{'tensor.pad' applies to the source of its transposed input: the transpose moves below it}}
  %padded = tensor.pad %x low[0, 1, 0, 0] high[0, 1, 0, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x8x4x4xf32> to tensor<1x10x4x4xf32>
  // expected-remark @below {{'tensor.extract_slice' applies to the source of its transposed input: the transpose moves below it}}
  %s0 = tensor.extract_slice %padded[0, 0, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1] : tensor<1x10x4x4xf32> to tensor<1x8x4x4xf32>
  // expected-remark @below {{'tensor.extract_slice' applies to the source of its transposed input: the transpose moves below it}}
  %s1 = tensor.extract_slice %padded[0, 2, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1] : tensor<1x10x4x4xf32> to tensor<1x8x4x4xf32>
  %e1 = tensor.empty() : tensor<1x8x4x4xf32>
  // expected-remark @below {{'linalg.generic' runs in the layout of its transposed input #0, #1: the transpose moves below it}}
  %sum = linalg.generic {indexing_maps = [#nchw, #nchw, #nchw], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s0, %s1 : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) outs(%e1 : tensor<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x8x4x4xf32>
  %e2 = tensor.empty() : tensor<1x4x4x8xf32>
  %back = linalg.transpose ins(%sum : tensor<1x8x4x4xf32>) outs(%e2 : tensor<1x4x4x8xf32>) permutation = [0, 2, 3, 1]
  return %back : tensor<1x4x4x8xf32>
}

// -----

// A conv's own padding of its NHWC input stays next to it: the transpose does
// not move below a pad that a conv reads (no remark), nor below a dynamic slice.

// CHECK-LABEL: func.func @conv_padding$stays
// CHECK:         %[[T:.*]] = linalg.transpose
// CHECK:         tensor.pad %[[T]] low[0, 1, 1, 0]
// CHECK:         linalg.conv_2d_nhwc_hwcf
// CHECK:         %[[T2:.*]] = linalg.transpose
// CHECK:         tensor.extract_slice %[[T2]][0, %{{.*}}, 0, 0]
func.func @conv_padding$stays(%x: tensor<1x3x8x8xf32>, %w: tensor<3x3x3x4xf32>, %i: index) -> (tensor<1x8x8x4xf32>, tensor<1x1x8x8xf32>) {
  %e0 = tensor.empty() : tensor<1x8x8x3xf32>
  %t = linalg.transpose ins(%x : tensor<1x3x8x8xf32>) outs(%e0 : tensor<1x8x8x3xf32>) permutation = [0, 2, 3, 1]
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %t low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%a: index, %b: index, %c: index, %d: index):
    tensor.yield %zero : f32
  } : tensor<1x8x8x3xf32> to tensor<1x10x10x3xf32>
  %e1 = tensor.empty() : tensor<1x8x8x4xf32>
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %w : tensor<1x10x10x3xf32>, tensor<3x3x3x4xf32>) outs(%e1 : tensor<1x8x8x4xf32>) -> tensor<1x8x8x4xf32>
  %e2 = tensor.empty() : tensor<1x4x8x8xf32>
  %t2 = linalg.transpose ins(%conv : tensor<1x8x8x4xf32>) outs(%e2 : tensor<1x4x8x8xf32>) permutation = [0, 3, 1, 2]
  %s = tensor.extract_slice %t2[0, %i, 0, 0] [1, 1, 8, 8] [1, 1, 1, 1] : tensor<1x4x8x8xf32> to tensor<1x1x8x8xf32>
  return %conv, %s : tensor<1x8x8x4xf32>, tensor<1x1x8x8xf32>
}

// -----

// A mean over the last dim of a tensor that is NHWC underneath (a layer norm
// of windows whose last dim was W in NCHW): in NHWC its result would come out
// of order, (n, c, h), which the vector unit's tiles cannot write, and
// subtracting it from the tensor would read it so. The reduction and the
// subtraction keep the transposed input.

// CHECK-LABEL: func.func @reduction$out_of_order_result_keeps_transpose
// CHECK:         %[[T:.*]] = linalg.transpose ins(%arg0 : tensor<1x4x4x8xf32>) outs(%{{.*}} : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
// CHECK:         %[[M:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[T]] : tensor<1x8x4x4xf32>) outs(%{{.*}} : tensor<1x8x4xf32>)
// CHECK:         linalg.generic {{.*}} ins(%[[T]], %[[M]] : tensor<1x8x4x4xf32>, tensor<1x8x4xf32>) outs(%{{.*}} : tensor<1x8x4x4xf32>)
#id5 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#rows5 = affine_map<(n, c, h, w) -> (n, c, h)>
func.func @reduction$out_of_order_result_keeps_transpose(%a: tensor<1x4x4x8xf32>) -> tensor<1x8x4x4xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %ta = linalg.transpose ins(%a : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x8x4xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x8x4xf32>) -> tensor<1x8x4xf32>
  %sum = linalg.generic {indexing_maps = [#id5, #rows5], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%ta : tensor<1x8x4x4xf32>) outs(%f : tensor<1x8x4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<1x8x4xf32>
  %e2 = tensor.empty() : tensor<1x8x4x4xf32>
  // expected-remark @below {{'linalg.generic' keeps its transposed inputs: input #1 would be read with its dims out of order in the moved layout}}
  %centred = linalg.generic {indexing_maps = [#id5, #rows5, #id5], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ta, %sum : tensor<1x8x4x4xf32>, tensor<1x8x4xf32>) outs(%e2 : tensor<1x8x4x4xf32>) {
  ^bb0(%x: f32, %m: f32, %o: f32):
    %d = arith.subf %x, %m : f32
    linalg.yield %d : f32
  } -> tensor<1x8x4x4xf32>
  return %centred : tensor<1x8x4x4xf32>
}

// -----

// An input read through a whole permutation of the loops (a transposed tile)
// is read so in any order: the elementwise op still moves to NHWC, that
// input's map remapped.

// CHECK-DAG:     #[[SWAPPED:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2, d1)>
// CHECK-LABEL: func.func @generic$permuted_input_moves
// CHECK:         %[[R:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[SWAPPED]], #{{.*}}]{{.*}} ins(%arg0, %arg1 : tensor<1x4x4x8xf32>, tensor<1x8x4x4xf32>) outs(%{{.*}} : tensor<1x4x4x8xf32>)
// CHECK:         linalg.transpose ins(%[[R]] : tensor<1x4x4x8xf32>) outs(%{{.*}} : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
#id6 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#swap6 = affine_map<(n, c, h, w) -> (n, c, w, h)>
func.func @generic$permuted_input_moves(%a: tensor<1x4x4x8xf32>, %b: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %ta = linalg.transpose ins(%a : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %e1 = tensor.empty() : tensor<1x8x4x4xf32>
  // expected-remark @below {{'linalg.generic' runs in the layout of its transposed input #0: the transpose moves below it}}
  %sum = linalg.generic {indexing_maps = [#id6, #swap6, #id6], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%ta, %b : tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) outs(%e1 : tensor<1x8x4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<1x8x4x4xf32>
  return %sum : tensor<1x8x4x4xf32>
}

// -----

// An ArgMax over the channels reads its loop positions: with its loops in NHWC
// order the channel loop is the last, and `linalg.index 1` becomes
// `linalg.index 3`.

// CHECK-LABEL: func.func @argmax$positions_follow
// CHECK-SAME:    (%[[A:.*]]: tensor<1x4x4x8xf32>
// CHECK-NOT:     linalg.transpose
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[A]] : tensor<1x4x4x8xf32>)
// CHECK:         linalg.index 3 : index
#in3 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#out3 = affine_map<(n, c, h, w) -> (n, h, w)>
func.func @argmax$positions_follow(%a: tensor<1x4x4x8xf32>, %init: tensor<1x4x4xf32>, %where: tensor<1x4x4xi64>) -> (tensor<1x4x4xf32>, tensor<1x4x4xi64>) {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %ta = linalg.transpose ins(%a : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  // expected-remark @below {{reduction reads the source of its transposed input #0: its loops follow that layout, and the transpose goes}}
  %r:2 = linalg.generic {indexing_maps = [#in3, #out3, #out3], iterator_types = ["parallel", "reduction", "parallel", "parallel"]}
      ins(%ta : tensor<1x8x4x4xf32>) outs(%init, %where : tensor<1x4x4xf32>, tensor<1x4x4xi64>) {
  ^bb0(%v: f32, %best: f32, %at: i64):
    %c = linalg.index 1 : index
    %ci = arith.index_cast %c : index to i64
    %gt = arith.cmpf ogt, %v, %best : f32
    %nb = arith.select %gt, %v, %best : f32
    %na = arith.select %gt, %ci, %at : i64
    linalg.yield %nb, %na : f32, i64
  } -> (tensor<1x4x4xf32>, tensor<1x4x4xi64>)
  return %r#0, %r#1 : tensor<1x4x4xf32>, tensor<1x4x4xi64>
}

// -----

// A U-Net's decoder: a nearest 2x upsampling written for NCHW (a broadcast
// into a unit dim after each row and column, merged back by a collapse) of a
// conv's NHWC result, concatenated with a skip tensor along channels. The
// transpose moves below the broadcast (each added dim stays after the dim it
// follows), below the collapse (the merged dims are runs in NHWC too) and
// below the concatenation, where the next conv's transpose cancels it.

// CHECK-LABEL: func.func @upsample$into_concat
// CHECK-SAME:    (%[[Y:.*]]: tensor<1x4x4x8xf32>, %[[SKIP:.*]]: tensor<1x8x8x4xf32>)
// CHECK-NOT:     linalg.transpose
// CHECK:         %[[UP:.*]] = linalg.broadcast ins(%[[Y]] : tensor<1x4x4x8xf32>) outs(%{{.*}} : tensor<1x4x2x4x2x8xf32>) dimensions = [2, 4]
// CHECK:         %[[MERGED:.*]] = tensor.collapse_shape %[[UP]] {{\[}}[0], [1, 2], [3, 4], [5]] : tensor<1x4x2x4x2x8xf32> into tensor<1x8x8x8xf32>
// CHECK:         %[[S0:.*]] = tensor.insert_slice %[[MERGED]] into %{{.*}}[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1]
// CHECK:         %[[S1:.*]] = tensor.insert_slice %[[SKIP]] into %[[S0]][0, 0, 0, 8] [1, 8, 8, 4] [1, 1, 1, 1]
// CHECK-NOT:     linalg.transpose
// CHECK:         return %[[S1]] : tensor<1x8x8x12xf32>
func.func @upsample$into_concat(%y: tensor<1x4x4x8xf32>, %skip: tensor<1x8x8x4xf32>) -> tensor<1x8x8x12xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %x = linalg.transpose ins(%y : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %e1 = tensor.empty() : tensor<1x8x4x2x4x2xf32>
  // expected-remark @below {{'linalg.broadcast' repeats the source of its transposed input: the transpose moves below it}}
  %up = linalg.broadcast ins(%x : tensor<1x8x4x4xf32>) outs(%e1 : tensor<1x8x4x2x4x2xf32>) dimensions = [3, 5]
  // expected-remark @below {{'tensor.collapse_shape' merges dims of the source of its transposed input: the transpose moves below it}}
  %merged = tensor.collapse_shape %up [[0], [1], [2, 3], [4, 5]] : tensor<1x8x4x2x4x2xf32> into tensor<1x8x8x8xf32>
  %e2 = tensor.empty() : tensor<1x4x8x8xf32>
  %s = linalg.transpose ins(%skip : tensor<1x8x8x4xf32>) outs(%e2 : tensor<1x4x8x8xf32>) permutation = [0, 3, 1, 2]
  %e = tensor.empty() : tensor<1x12x8x8xf32>
  // expected-remark @below {{concatenation of 2 transposed tensors runs in their layout: the transpose moves below it}}
  %c0 = tensor.insert_slice %merged into %e[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x12x8x8xf32>
  %c1 = tensor.insert_slice %s into %c0[0, 8, 0, 0] [1, 4, 8, 8] [1, 1, 1, 1] : tensor<1x4x8x8xf32> into tensor<1x12x8x8xf32>
  %e3 = tensor.empty() : tensor<1x8x8x12xf32>
  %back = linalg.transpose ins(%c1 : tensor<1x12x8x8xf32>) outs(%e3 : tensor<1x8x8x12xf32>) permutation = [0, 2, 3, 1]
  return %back : tensor<1x8x8x12xf32>
}

// -----

// The upsampled tensor is the function's NCHW result: moving the transpose
// below the broadcast would transpose four times the bytes for nothing, so
// the broadcast and the collapse stay as they are (no remark).

// CHECK-LABEL: func.func @upsample$result_stays
// CHECK:         %[[X:.*]] = linalg.transpose
// CHECK:         linalg.broadcast ins(%[[X]] : tensor<1x8x4x4xf32>) outs(%{{.*}} : tensor<1x8x4x2x4x2xf32>) dimensions = [3, 5]
func.func @upsample$result_stays(%y: tensor<1x4x4x8xf32>) -> tensor<1x8x8x8xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %x = linalg.transpose ins(%y : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %e1 = tensor.empty() : tensor<1x8x4x2x4x2xf32>
  %up = linalg.broadcast ins(%x : tensor<1x8x4x4xf32>) outs(%e1 : tensor<1x8x4x2x4x2xf32>) dimensions = [3, 5]
  %merged = tensor.collapse_shape %up [[0], [1], [2, 3], [4, 5]] : tensor<1x8x4x2x4x2xf32> into tensor<1x8x8x8xf32>
  return %merged : tensor<1x8x8x8xf32>
}

// -----

// A collapse that merges the channels with the rows (a flatten) of a
// transposed tensor: those dims are not a run in NHWC, the transpose stays.

// CHECK-LABEL: func.func @collapse$not_a_run
// CHECK:         %[[X:.*]] = linalg.transpose
// CHECK:         tensor.collapse_shape %[[X]] {{\[}}[0], [1, 2], [3]]
func.func @collapse$not_a_run(%y: tensor<1x4x4x8xf32>) -> tensor<1x32x4xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %x = linalg.transpose ins(%y : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %flat = tensor.collapse_shape %x [[0], [1, 2], [3]] : tensor<1x8x4x4xf32> into tensor<1x32x4xf32>
  %e1 = tensor.empty() : tensor<1x32x4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(a, b, c) -> (a, b, c)>, affine_map<(a, b, c) -> (a, b, c)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%flat : tensor<1x32x4xf32>) outs(%e1 : tensor<1x32x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n = arith.negf %v : f32
    linalg.yield %n : f32
  } -> tensor<1x32x4xf32>
  return %r : tensor<1x32x4xf32>
}

// -----

// DeepLab's image-level branch: a pooled vector broadcast over the image is
// a piece of the concatenation of transposed tensors. It has no full-size
// input, so it is computed in their layout (its map remapped) and the
// concatenation still runs in NHWC, where the next conv's transpose cancels.

// CHECK-LABEL: func.func @concat$broadcast_piece
// CHECK-SAME:    (%[[A:.*]]: tensor<1x4x4x8xf32>, %[[V:.*]]: tensor<1x8xf32>)
// CHECK-NOT:     linalg.transpose
// CHECK:         %[[B:.*]] = linalg.generic {indexing_maps = [#[[MAP:.*]], #{{.*}}]{{.*}} ins(%[[V]] : tensor<1x8xf32>) outs(%{{.*}} : tensor<1x4x4x8xf32>)
// CHECK:         %[[S0:.*]] = tensor.insert_slice %[[A]] into %{{.*}}[0, 0, 0, 0] [1, 4, 4, 8] [1, 1, 1, 1]
// CHECK:         %[[S1:.*]] = tensor.insert_slice %[[B]] into %[[S0]][0, 0, 0, 8] [1, 4, 4, 8] [1, 1, 1, 1]
// CHECK-NOT:     linalg.transpose
// CHECK:         return %[[S1]] : tensor<1x4x4x16xf32>
func.func @concat$broadcast_piece(%a: tensor<1x4x4x8xf32>, %v: tensor<1x8xf32>) -> tensor<1x4x4x16xf32> {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %ta = linalg.transpose ins(%a : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %e1 = tensor.empty() : tensor<1x8x4x4xf32>
  %b = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c)>, affine_map<(n, c, h, w) -> (n, c, h, w)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%v : tensor<1x8xf32>) outs(%e1 : tensor<1x8x4x4xf32>) {
  ^bb0(%x: f32, %o: f32):
    linalg.yield %x : f32
  } -> tensor<1x8x4x4xf32>
  %e = tensor.empty() : tensor<1x16x4x4xf32>
  // expected-remark @below {{concatenation of 1 transposed tensors and 1 computed in their layout runs in their layout: the transpose moves below it}}
  %s0 = tensor.insert_slice %ta into %e[0, 0, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1] : tensor<1x8x4x4xf32> into tensor<1x16x4x4xf32>
  %s1 = tensor.insert_slice %b into %s0[0, 8, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1] : tensor<1x8x4x4xf32> into tensor<1x16x4x4xf32>
  %e3 = tensor.empty() : tensor<1x4x4x16xf32>
  %back = linalg.transpose ins(%s1 : tensor<1x16x4x4xf32>) outs(%e3 : tensor<1x4x4x16xf32>) permutation = [0, 2, 3, 1]
  return %back : tensor<1x4x4x16xf32>
}

// -----

// ShuffleNetV2's unit: the NHWC concatenation is shuffled as written for NCHW
// (split the channels into 2 groups, swap, merge) and split in two halves,
// each read by an NHWC conv. The merge of the swapped groups is no run in
// NHWC, so it is collapsed there instead, the channel group last: the
// transposes compose into the shuffle's own (the groups swapped in NHWC), and
// the one after the merge moves below the slices, where the convs' cancel it.

// CHECK-LABEL: func.func @shuffle$split
// CHECK-SAME:    (%[[Y:.*]]: tensor<1x4x4x8xf32>)
// CHECK:         %[[G:.*]] = tensor.expand_shape %[[Y]] {{\[}}[0], [1], [2], [3, 4]] output_shape [1, 4, 4, 2, 4]
// CHECK:         %[[S:.*]] = linalg.transpose ins(%[[G]] : tensor<1x4x4x2x4xf32>) outs(%{{.*}} : tensor<1x4x4x4x2xf32>) permutation = [0, 1, 2, 4, 3]
// CHECK:         %[[M:.*]] = tensor.collapse_shape %[[S]] {{\[}}[0], [1], [2], [3, 4]]
// CHECK-DAG:     %[[A:.*]] = tensor.extract_slice %[[M]][0, 0, 0, 0] [1, 4, 4, 4] [1, 1, 1, 1]
// CHECK-DAG:     %[[B:.*]] = tensor.extract_slice %[[M]][0, 0, 0, 4] [1, 4, 4, 4] [1, 1, 1, 1]
// CHECK-NOT:     linalg.transpose
// CHECK:         return %[[A]], %[[B]]
func.func @shuffle$split(%y: tensor<1x4x4x8xf32>) -> (tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>) {
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %x = linalg.transpose ins(%y : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  // expected-remark @below {{'tensor.expand_shape' expands the source of its transposed input: the transpose moves below it}}
  %g = tensor.expand_shape %x [[0], [1, 2], [3], [4]] output_shape [1, 2, 4, 4, 4] : tensor<1x8x4x4xf32> into tensor<1x2x4x4x4xf32>
  %e1 = tensor.empty() : tensor<1x4x2x4x4xf32>
  %s = linalg.transpose ins(%g : tensor<1x2x4x4x4xf32>) outs(%e1 : tensor<1x4x2x4x4xf32>) permutation = [0, 2, 1, 3, 4]
  // expected-remark @below {{'tensor.collapse_shape' merges a channel shuffle's groups in NHWC: the shuffle is one transpose there, and the transpose back to NCHW moves below it}}
  %m = tensor.collapse_shape %s [[0], [1, 2], [3], [4]] : tensor<1x4x2x4x4xf32> into tensor<1x8x4x4xf32>
  // expected-remark @below {{'tensor.extract_slice' applies to the source of its transposed input: the transpose moves below it}}
  %a = tensor.extract_slice %m[0, 0, 0, 0] [1, 4, 4, 4] [1, 1, 1, 1] : tensor<1x8x4x4xf32> to tensor<1x4x4x4xf32>
  // expected-remark @below {{'tensor.extract_slice' applies to the source of its transposed input: the transpose moves below it}}
  %b = tensor.extract_slice %m[0, 4, 0, 0] [1, 4, 4, 4] [1, 1, 1, 1] : tensor<1x8x4x4xf32> to tensor<1x4x4x4xf32>
  %e2 = tensor.empty() : tensor<1x4x4x4xf32>
  %ta = linalg.transpose ins(%a : tensor<1x4x4x4xf32>) outs(%e2 : tensor<1x4x4x4xf32>) permutation = [0, 2, 3, 1]
  %e3 = tensor.empty() : tensor<1x4x4x4xf32>
  %tb = linalg.transpose ins(%b : tensor<1x4x4x4xf32>) outs(%e3 : tensor<1x4x4x4xf32>) permutation = [0, 2, 3, 1]
  return %ta, %tb : tensor<1x4x4x4xf32>, tensor<1x4x4x4xf32>
}

// -----

// A grouped conv's input as the importer writes it: the relu's NCHW result
// transposed to NHWC, padded there and sliced per group. Once the relu runs
// in NHWC, the transpose to NHWC undoes the one moved below the relu: the pad
// reads the relu's result, and no transpose is left (not a pad moved above
// the transpose to NHWC, into NCHW, between two transposes).

// CHECK-LABEL: func.func @grouped_conv_input$pad_stays_nhwc
// CHECK-SAME:    (%[[Y:.*]]: tensor<1x4x4x8xf32>)
// CHECK-NOT:     linalg.transpose
// CHECK:         %[[R:.*]] = linalg.generic {{.*}} ins(%[[Y]] : tensor<1x4x4x8xf32>)
// CHECK:         %[[P:.*]] = tensor.pad %[[R]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK:         tensor.extract_slice %[[P]][0, 0, 0, 0] [1, 6, 6, 4]
// CHECK:         tensor.extract_slice %[[P]][0, 0, 0, 4] [1, 6, 6, 4]
// CHECK-NOT:     linalg.transpose
func.func @grouped_conv_input$pad_stays_nhwc(%y: tensor<1x4x4x8xf32>) -> (tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<1x8x4x4xf32>
  %x = linalg.transpose ins(%y : tensor<1x4x4x8xf32>) outs(%e0 : tensor<1x8x4x4xf32>) permutation = [0, 3, 1, 2]
  %e1 = tensor.empty() : tensor<1x8x4x4xf32>
  // expected-remark @below {{'linalg.generic' runs in the layout of its transposed input #0: the transpose moves below it}}
  %r = linalg.generic {indexing_maps = [affine_map<(n, c, h, w) -> (n, c, h, w)>, affine_map<(n, c, h, w) -> (n, c, h, w)>], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x8x4x4xf32>) outs(%e1 : tensor<1x8x4x4xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.maximumf %v, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x4x4xf32>
  %e2 = tensor.empty() : tensor<1x4x4x8xf32>
  %t = linalg.transpose ins(%r : tensor<1x8x4x4xf32>) outs(%e2 : tensor<1x4x4x8xf32>) permutation = [0, 2, 3, 1]
  %p = tensor.pad %t low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x4x4x8xf32> to tensor<1x6x6x8xf32>
  %a = tensor.extract_slice %p[0, 0, 0, 0] [1, 6, 6, 4] [1, 1, 1, 1] : tensor<1x6x6x8xf32> to tensor<1x6x6x4xf32>
  %b = tensor.extract_slice %p[0, 0, 0, 4] [1, 6, 6, 4] [1, 1, 1, 1] : tensor<1x6x6x8xf32> to tensor<1x6x6x4xf32>
  return %a, %b : tensor<1x6x6x4xf32>, tensor<1x6x6x4xf32>
}
