// RUN: atvoss-opt %s -split-input-file --target='npu -max-sram-bytes=128' -npu-decompose-linalg | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -npu-decompose-linalg | FileCheck %s --check-prefix=KEEP
// RUN: atvoss-opt %s -split-input-file --target='npu -max-sram-bytes=128' -npu-decompose-linalg --remarks -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=REMARK
// RUN: atvoss-opt %s -split-input-file -npu-decompose-linalg --remarks -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=KEEP-REMARK

// A softmax whose rows fit the SRAM budget stays for the one-pass recipe; with
// 128 B a row of 4 f32 (16 B, 32 with alignment) needs 2 stages x (input +
// output) x 32 B + 64 B for its max and sum = 192 B, so it is decomposed.

// KEEP-LABEL: func.func @softmax$dim0
// KEEP:         linalg.softmax dimension(0)
// KEEP-NOT:     linalg.generic
// KEEP-REMARK: remark: 'linalg.softmax' in one pass: its rows of 4 stay whole in SRAM
// REMARK: remark: 'linalg.softmax' decomposed into max, exp, sum and divide passes: a row of 4 elements needs 192 B of SRAM with 2 stages, above the budget 128 B

// CHECK-LABEL: func.func @softmax$dim0
// CHECK-NOT:     linalg.softmax
// CHECK:         %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]} ins(%arg0 : tensor<4x6xf32>)
// CHECK:           arith.maxnumf
// CHECK:         %[[EXP:.*]] = linalg.generic {{.*}} ins(%arg0, %[[MAX]] : tensor<4x6xf32>, tensor<6xf32>)
// CHECK:           arith.subf
// CHECK:           math.exp
// CHECK:         %[[SUM:.*]] = linalg.generic {{.*}} ins(%[[EXP]] : tensor<4x6xf32>)
// CHECK:           arith.addf
// CHECK:         %[[R:.*]] = linalg.generic {{.*}} ins(%[[EXP]], %[[SUM]] : tensor<4x6xf32>, tensor<6xf32>)
// CHECK:           arith.divf
// CHECK:         return %[[R]]
func.func @softmax$dim0(%x: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %e = tensor.empty() : tensor<4x6xf32>
  %r = linalg.softmax dimension(0) ins(%x : tensor<4x6xf32>) outs(%e : tensor<4x6xf32>) -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func.func @pack$tiles_2x2
// CHECK:         %[[X:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2, 3]] output_shape [2, 2, 3, 2]
// CHECK:         linalg.transpose ins(%[[X]] : tensor<2x2x3x2xf32>) outs(%{{.*}} : tensor<2x3x2x2xf32>) permutation = [0, 2, 1, 3]
func.func @pack$tiles_2x2(%x: tensor<4x6xf32>) -> tensor<2x3x2x2xf32> {
  %e = tensor.empty() : tensor<2x3x2x2xf32>
  %r = linalg.pack %x inner_dims_pos = [0, 1] inner_tiles = [2, 2] into %e : tensor<4x6xf32> -> tensor<2x3x2x2xf32>
  return %r : tensor<2x3x2x2xf32>
}

// -----

// CHECK-LABEL: func.func @unpack$tiles_2x2
// CHECK:         %[[T:.*]] = linalg.transpose ins(%arg0 : tensor<2x3x2x2xf32>) outs(%{{.*}} : tensor<2x2x3x2xf32>) permutation = [0, 2, 1, 3]
// CHECK:         tensor.collapse_shape %[[T]] {{\[\[}}0, 1], [2, 3]] : tensor<2x2x3x2xf32> into tensor<4x6xf32>
func.func @unpack$tiles_2x2(%x: tensor<2x3x2x2xf32>) -> tensor<4x6xf32> {
  %e = tensor.empty() : tensor<4x6xf32>
  %r = linalg.unpack %x inner_dims_pos = [0, 1] inner_tiles = [2, 2] into %e : tensor<2x3x2x2xf32> -> tensor<4x6xf32>
  return %r : tensor<4x6xf32>
}

// -----

// CHECK-LABEL: func.func @winograd$filter_f4_3
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             linalg.matmul
// CHECK:             linalg.matmul
// CHECK-NOT:     linalg.winograd_filter_transform
func.func @winograd$filter_f4_3(%w: tensor<2x3x3x5xf32>) -> tensor<6x6x5x2xf32> {
  %e = tensor.empty() : tensor<6x6x5x2xf32>
  %r = linalg.winograd_filter_transform fmr(F_4_3) ins(%w : tensor<2x3x3x5xf32>) outs(%e : tensor<6x6x5x2xf32>) -> tensor<6x6x5x2xf32>
  return %r : tensor<6x6x5x2xf32>
}

// -----

// The one-pass recipe takes f16 and f32: an f64 softmax is decomposed at any budget.

// CHECK-LABEL: func.func @softmax$f64
// CHECK-NOT:     linalg.softmax
// KEEP-LABEL: func.func @softmax$f64
// KEEP-NOT:     linalg.softmax
// KEEP:         math.exp
// KEEP-REMARK: remark: 'linalg.softmax' decomposed into max, exp, sum and divide passes: the one-pass form takes static f16/f32 tensors
func.func @softmax$f64(%x: tensor<4x6xf64>) -> tensor<4x6xf64> {
  %e = tensor.empty() : tensor<4x6xf64>
  %r = linalg.softmax dimension(1) ins(%x : tensor<4x6xf64>) outs(%e : tensor<4x6xf64>) -> tensor<4x6xf64>
  return %r : tensor<4x6xf64>
}
