// RUN: atvoss-opt %s -split-input-file --npu-pipeline --mlir-print-ir-after=npu-convert-copies -o /dev/null 2>&1 | FileCheck %s
// RUN: atvoss-opt %s -split-input-file --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK
// RUN: atvoss-opt %s --npu-pipeline -o %t.mlir && atvoss-sim %t.mlir --report=table | FileCheck %s --check-prefix=SIM

// A concatenation's producers write straight into their slices of it
// (upstream eliminate-empty-tensors before bufferization: each producer's
// tensor.empty becomes the slice it is inserted into), where each had a buffer
// of its own and a DMA copy into the slice after it (75,620 cycles then).

// CHECK-LABEL: func.func @main
// CHECK:         %[[CAT:.*]] = memref.alloc() {{.*}} : memref<1x56x56x96xf32>
// CHECK-NOT:     memref.alloc
// CHECK:         %[[A:.*]] = memref.subview %[[CAT]][0, 0, 0, 0] [1, 56, 56, 64]
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} outs(%[[A]] :
// CHECK-NOT:     linalg.copy
// CHECK:         %[[B:.*]] = memref.subview %[[CAT]][0, 0, 0, 64] [1, 56, 56, 32]
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} outs(%[[B]] :
// CHECK-NOT:     linalg.copy
// CHECK:         return %[[CAT]]

// REMARK: concat-in-place.mlir:31:8: remark: 'linalg.conv_2d_nhwc_hwcf' output stays in DRAM: it is a result of the function

// SIM: total cycles {{[34][0-9],[0-9][0-9][0-9]$}}
// SIM: fallback 0 0.0%

func.func @main(%x: tensor<1x56x56x64xf32>, %w1: tensor<1x1x64x64xf32>,
                    %w2: tensor<1x1x64x32xf32>) -> tensor<1x56x56x96xf32> {
  %z = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x56x56x64xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  %a = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w1 : tensor<1x56x56x64xf32>, tensor<1x1x64x64xf32>) outs(%f1 : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  %e2 = tensor.empty() : tensor<1x56x56x32xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<1x56x56x32xf32>) -> tensor<1x56x56x32xf32>
  %b = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w2 : tensor<1x56x56x64xf32>, tensor<1x1x64x32xf32>) outs(%f2 : tensor<1x56x56x32xf32>) -> tensor<1x56x56x32xf32>
  %e = tensor.empty() : tensor<1x56x56x96xf32>
  %i1 = tensor.insert_slice %a into %e[0, 0, 0, 0] [1, 56, 56, 64] [1, 1, 1, 1] : tensor<1x56x56x64xf32> into tensor<1x56x56x96xf32>
  %i2 = tensor.insert_slice %b into %i1[0, 0, 0, 64] [1, 56, 56, 32] [1, 1, 1, 1] : tensor<1x56x56x32xf32> into tensor<1x56x56x96xf32>
  return %i2 : tensor<1x56x56x96xf32>
}

// -----

// A piece another op reads too keeps a buffer of its own (bufferization's
// analysis leaves it out of place): it is copied into its slice by a tiled
// DMA program, not on the fallback engine.

// CHECK-LABEL: func.func @read_twice
// CHECK:         %[[CAT:.*]] = memref.alloc() {{.*}} : memref<1x8x8x32xf32>
// CHECK:         %[[A:.*]] = memref.alloc() {{.*}} : memref<1x8x8x16xf32>
// CHECK:         linalg.add {{.*}} outs(%[[A]] :
// CHECK:         %[[SLICE:.*]] = memref.subview %[[CAT]][0, 0, 0, 0]
// CHECK:         linalg.copy {{.*}} ins(%[[A]] : {{.*}} outs(%[[SLICE]] :

// REMARK: concat-in-place.mlir:63:9: remark: 'linalg.copy': tiles

func.func @read_twice(%x: tensor<1x8x8x16xf32>, %y: tensor<1x8x8x16xf32>)
    -> (tensor<1x8x8x32xf32>, tensor<1x8x8x16xf32>) {
  %e1 = tensor.empty() : tensor<1x8x8x16xf32>
  %a = linalg.add ins(%x, %y : tensor<1x8x8x16xf32>, tensor<1x8x8x16xf32>) outs(%e1 : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %e = tensor.empty() : tensor<1x8x8x32xf32>
  %i1 = tensor.insert_slice %a into %e[0, 0, 0, 0] [1, 8, 8, 16] [1, 1, 1, 1] : tensor<1x8x8x16xf32> into tensor<1x8x8x32xf32>
  %i2 = tensor.insert_slice %x into %i1[0, 0, 0, 16] [1, 8, 8, 16] [1, 1, 1, 1] : tensor<1x8x8x16xf32> into tensor<1x8x8x32xf32>
  %e2 = tensor.empty() : tensor<1x8x8x16xf32>
  %r = linalg.mul ins(%a, %a : tensor<1x8x8x16xf32>, tensor<1x8x8x16xf32>) outs(%e2 : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  return %i2, %r : tensor<1x8x8x32xf32>, tensor<1x8x8x16xf32>
}
