// RUN: atvoss-opt %s -split-input-file --npu-pipeline --target='npu -tile-max=256' --mlir-print-ir-after=npu-tile -o /dev/null 2>&1 | FileCheck %s
// RUN: atvoss-opt %s -split-input-file --npu-pipeline --target='npu -tile-max=256' --mlir-print-ir-before=npu-promote-to-sram,npu-convert-linalg-to-npu -o /dev/null 2>&1 | FileCheck %s --check-prefix=BEFORE

// The tiled program is real IR: after npu-tile, scf.for loops (from upstream
// tiling) over the linalg op on memref.subviews of the DRAM buffers. Tiles of
// at most 256 split the GEMM's reduction too (at the default -tile-max it
// takes K=300 whole).

// CHECK:        // -----// IR Dump After npu-tile //----- //
// CHECK-LABEL:  func.func @matmul
// CHECK:          scf.for %[[M:.*]] = %{{.*}} to %c200 step %c64 {
// CHECK:            scf.for %[[K:.*]] = %{{.*}} to %c300 step %c192 {
// CHECK:              %[[A:.*]] = memref.subview %arg0[%[[M]], %[[K]]] [%{{.*}}, %{{.*}}] [1, 1]
// CHECK:              %[[B:.*]] = memref.subview %arg1[%[[K]], 0] [%{{.*}}, 100] [1, 1]
// CHECK:              %[[C:.*]] = memref.subview %{{.*}}[%[[M]], 0] [%{{.*}}, 100] [1, 1]
// CHECK:            linalg.matmul {{.*}}ins(%[[A]], %[[B]] : {{.*}}) outs(%[[C]] :
// CHECK:          } {npu.tile_loop}

// BEFORE:       // -----// IR Dump Before npu-promote-to-sram //----- //
// BEFORE:         linalg.matmul
// BEFORE:       // -----// IR Dump Before npu-convert-linalg-to-npu //----- //
// BEFORE:         linalg.matmul {{.*}}memref<?x?xf16, strided<[192, 1]>, 1>
func.func @matmul(%a: tensor<200x300xf16>, %b: tensor<300x100xf16>) -> tensor<200x100xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<200x100xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<200x100xf32>) -> tensor<200x100xf32>
  %r = linalg.matmul ins(%a, %b : tensor<200x300xf16>, tensor<300x100xf16>)
      outs(%f : tensor<200x100xf32>) -> tensor<200x100xf32>
  return %r : tensor<200x100xf32>
}

// -----

// A 3x3 conv: loops over output rows, filters and input channels; the input
// subview of a row tile carries its halo (28 output rows read 30 input rows).

// CHECK:        // -----// IR Dump After npu-tile //----- //
// CHECK-LABEL:  func.func @conv
// CHECK:          scf.for %[[OH:.*]] = %{{.*}} to %c56 step %c28 {
// CHECK:            scf.for %[[F:.*]] = %{{.*}} to %c64 step %c32 {
// CHECK:              scf.for %[[C:.*]] = %{{.*}} to %c64{{.*}} step %c32
// CHECK:                %[[X:.*]] = memref.subview %arg0[0, %[[OH]], 0, %[[C]]] [1, 30, 58, 32] [1, 1, 1, 1]
// CHECK:                %[[W:.*]] = memref.subview %arg1[0, 0, %[[C]], %[[F]]] [3, 3, 32, 32] [1, 1, 1, 1]
// CHECK:                %[[Y:.*]] = memref.subview %{{.*}}[0, %[[OH]], 0, %[[F]]] [1, 28, 56, 32] [1, 1, 1, 1]
// CHECK:                linalg.conv_2d_nhwc_hwcf {{.*}}ins(%[[X]], %[[W]] : {{.*}}) outs(%[[Y]] :
// CHECK:          } {npu.tile_loop}
func.func @conv(%x: tensor<1x58x58x64xf16>, %w: tensor<3x3x64x64xf16>) -> tensor<1x56x56x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x56x56x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x58x58x64xf16>, tensor<3x3x64x64xf16>) outs(%f : tensor<1x56x56x64xf32>) -> tensor<1x56x56x64xf32>
  return %r : tensor<1x56x56x64xf32>
}
