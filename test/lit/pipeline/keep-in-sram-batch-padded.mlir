// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s --check-prefix=NOCOPY

// A 1x1 conv, then a 3x3 conv over its zero-padded result, on a batch of two
// images. The 16 KiB intermediate is kept in SRAM padded (npu-select-conv-strategy
// makes the 1x1 conv direct, so it can write a strided view): its halo is
// filled once, the 1x1 conv writes each image into the padded buffer's
// interior, and the 3x3 conv reads each image's padded window in place, with
// no copy on the vector unit (there were two, one per image, when the 1x1 conv
// ran as an implicit GEMM and the intermediate was kept unpadded). DRAM moves
// the compulsory 36,864 B, where the intermediate through DRAM made 73,728 B.

// CHECK-LABEL: func.func @conv$batch_padded
// CHECK:         %[[R:.*]] = "npu.alloc"() {npu.resident, offset = {{[0-9]+}} : i64} : () -> memref<2x10x10x32xf32, 1>
// CHECK-COUNT-4: "npu.fill"(%{{.*}}) {value = 0.000000e+00 : f64} : (memref<2x{{.*}}x32xf32, strided<[3200, 320, 32, 1]{{.*}}>, 1>) -> ()
// CHECK:         %[[INTERIOR:.*]] = memref.subview %[[R]][0, 1, 1, 0] [2, 8, 8, 32]
// CHECK:         scf.for %[[B:.*]] = %c0 to %c2
// CHECK:           %[[OUT:.*]] = memref.subview %[[INTERIOR]][%[[B]], 0, 0, 0] [1, 8, 8, 32]
// CHECK:           "npu.conv2d"(%{{.*}}, %{{.*}}, %[[OUT]])
// CHECK:         scf.for %[[B2:.*]] = %c0 to %c2
// CHECK:           %[[IMAGE:.*]] = memref.subview %[[R]][%[[B2]], 0, 0, 0] [1, 10, 10, 32]
// CHECK-NEXT:      "npu.conv2d"(%[[IMAGE]],
// CHECK-NOT:     "npu.activation"
// CHECK-NOT:     npu.dma_load{{.*}}2x8x8x32
// NOCOPY-LABEL: func.func @conv$batch_padded
// NOCOPY-NOT:   "npu.activation"

// SIM: DRAM read / write         28,672 / 8,192 B   (compulsory 36,864 B)

func.func @conv$batch_padded(%x: tensor<2x8x8x16xf32>, %w1: tensor<1x1x16x32xf32>, %w2: tensor<3x3x32x16xf32>) -> tensor<2x8x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x8x32xf32>) -> tensor<2x8x8x32xf32>
  %t = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w1 : tensor<2x8x8x16xf32>, tensor<1x1x16x32xf32>) outs(%f : tensor<2x8x8x32xf32>) -> tensor<2x8x8x32xf32>
  %p = tensor.pad %t low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<2x8x8x32xf32> to tensor<2x10x10x32xf32>
  %e2 = tensor.empty() : tensor<2x8x8x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x8x8x16xf32>) -> tensor<2x8x8x16xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w2 : tensor<2x10x10x32xf32>, tensor<3x3x32x16xf32>) outs(%f2 : tensor<2x8x8x16xf32>) -> tensor<2x8x8x16xf32>
  return %r : tensor<2x8x8x16xf32>
}
