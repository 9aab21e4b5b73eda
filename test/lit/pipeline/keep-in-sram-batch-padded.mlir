// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM

// A 1x1 conv, then a 3x3 conv over its zero-padded result, on a batch of two
// images. The 16 KiB intermediate is kept in SRAM unpadded; the 3x3 conv takes
// one image per tile and copies that image out of it (on the vector unit, a
// slice at the image's offset) into the interior of its padded tile, whose
// halo was filled once. DRAM moves the compulsory 36,864 B, where the
// intermediate through DRAM made 73,728 B (2,918 cycles).

// CHECK-LABEL: func.func @conv$batch_padded
// CHECK:         %[[R:.*]] = "npu.alloc"() {npu.resident, offset = {{[0-9]+}} : i64} : () -> memref<2x8x8x32xf32, 1>
// CHECK:         "npu.fill"(%[[PAD0:.*]]) {value = 0.000000e+00 : f64} : (memref<1x10x10x32xf32, 1>) -> ()
// CHECK:         "npu.fill"(%[[PAD1:.*]]) {value = 0.000000e+00 : f64} : (memref<1x10x10x32xf32, 1>) -> ()
// CHECK:         "npu.activation"(%{{.*}}, %{{.*}}) {kind = "none"} : (memref<1x8x8x32xf32, strided<[2048, 256, 32, 1]>, 1>, memref<1x8x8x32xf32, strided<[3200, 320, 32, 1], offset: 352>, 1>)
// CHECK:         scf.for %[[B:.*]] = %c0 to %c2
// CHECK:           %[[IMAGE:.*]] = memref.subview %[[R]][%[[B]], 0, 0, 0] [1, 8, 8, 32] [1, 1, 1, 1]
// CHECK:           "npu.activation"(%[[IMAGE]], %{{.*}}) {kind = "none"}
// CHECK:           "npu.conv2d"
// CHECK-NOT:     npu.dma_load{{.*}}2x8x8x32

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
