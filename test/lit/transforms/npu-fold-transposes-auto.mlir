// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-fold-transposes --target='npu -layout-pref=auto -dram-bytes-per-cycle=1024 -dma-setup-cycles=0'
// RUN: atvoss-opt %s -split-input-file -npu-fold-transposes --target='npu -layout-pref=auto -dram-bytes-per-cycle=1024 -dma-setup-cycles=0' | FileCheck %s --check-prefix=AUTO
// RUN: atvoss-opt %s -split-input-file -npu-fold-transposes --target='npu -dram-bytes-per-cycle=1024 -dma-setup-cycles=0' | FileCheck %s --check-prefix=NHWC
// RUN: atvoss-opt %s -split-input-file -npu-fold-transposes --target='npu -layout-pref=NCHW' --remarks -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NCHW

// -layout-pref=auto weighs each fold: with DRAM this fast, the transform as an
// op of its own costs less than transposing it in SRAM in both of its readers,
// so it stays; -layout-pref=NHWC folds it regardless, -layout-pref=NCHW never.

// AUTO-LABEL: func.func @two_readers
// AUTO:         linalg.transpose
// NHWC-LABEL: func.func @two_readers
// NHWC-NOT:     linalg.transpose
// NHWC:         return
// NCHW: remark: transpose of the 1x32x32x16 tensor stays: -layout-pref=NCHW keeps tensors between layers NCHW
#id = affine_map<(n, c, h, w) -> (n, c, h, w)>
func.func @two_readers(%y: tensor<1x32x32x16xf32>) -> (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %et = tensor.empty() : tensor<1x16x32x32xf32>
  // expected-remark @below {{transpose of the 1x32x32x16 tensor stays: folding it costs more (528 estimated cycles in SRAM against 392 as an op)}}
  %x = linalg.transpose ins(%y : tensor<1x32x32x16xf32>) outs(%et : tensor<1x16x32x32xf32>) permutation = [0, 3, 1, 2]
  %e0 = tensor.empty() : tensor<1x16x32x32xf32>
  %relu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x16x32x32xf32>) outs(%e0 : tensor<1x16x32x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.maximumf %v, %zero : f32
    linalg.yield %r : f32
  } -> tensor<1x16x32x32xf32>
  %e1 = tensor.empty() : tensor<1x16x32x32xf32>
  %neg = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x16x32x32xf32>) outs(%e1 : tensor<1x16x32x32xf32>) {
  ^bb0(%v: f32, %o: f32):
    %r = arith.negf %v : f32
    linalg.yield %r : f32
  } -> tensor<1x16x32x32xf32>
  return %relu, %neg : tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>
}
