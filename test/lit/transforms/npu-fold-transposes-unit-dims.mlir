// RUN: atvoss-opt %s -split-input-file -npu-fold-transposes | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -npu-fold-transposes --target='npu -layout-pref=NCHW' | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-fold-transposes
// RUN: atvoss-opt %s -split-input-file -npu-fold-transposes --target='npu -fusion=0' | FileCheck %s --check-prefix=NOFOLD

// A transpose that moves only dims of size 1 keeps every element where it is
// (a squeeze-excitation's pooled 1x96x1x1 tensor into 1x1x1x96 for its 1x1
// conv in NHWC): it becomes a reshape, a view, under any layout preference.

// CHECK-LABEL: func.func @gate
// CHECK-NOT:     linalg.transpose
// CHECK:         %[[C:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2, 3]] : tensor<1x96x1x1xf32> into tensor<1x96xf32>
// CHECK:         tensor.expand_shape %[[C]] {{\[}}[0], [1, 2, 3]] output_shape [1, 1, 1, 96] : tensor<1x96xf32> into tensor<1x1x1x96xf32>
// NOFOLD-LABEL: func.func @gate
// NOFOLD:         linalg.transpose
func.func @gate(%x: tensor<1x96x1x1xf32>) -> tensor<1x1x1x96xf32> {
  %e = tensor.empty() : tensor<1x1x1x96xf32>
  // expected-remark @below {{transpose of the 1x96x1x1 tensor is a reshape: it moves only dims of size 1}}
  %t = linalg.transpose ins(%x : tensor<1x96x1x1xf32>) outs(%e : tensor<1x1x1x96xf32>) permutation = [0, 2, 3, 1]
  return %t : tensor<1x1x1x96xf32>
}

// -----

// One moving a dim larger than 1 past another stays a transpose (here: neither
// of its neighbours is an elementwise op).

// CHECK-LABEL: func.func @image
// CHECK:         linalg.transpose
func.func @image(%x: tensor<1x96x1x7xf32>) -> tensor<1x1x7x96xf32> {
  %e = tensor.empty() : tensor<1x1x7x96xf32>
  // expected-remark @below {{transpose of the 1x96x1x7 tensor stays: neither its producer nor all of its readers are elementwise ops}}
  %t = linalg.transpose ins(%x : tensor<1x96x1x7xf32>) outs(%e : tensor<1x1x7x96xf32>) permutation = [0, 2, 3, 1]
  return %t : tensor<1x1x7x96xf32>
}
