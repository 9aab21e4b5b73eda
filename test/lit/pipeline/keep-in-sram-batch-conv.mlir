// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM

// Two 1x1 convs over a batch of two images: each takes one image per tile.
// The first writes its image of the 16 KiB intermediate in place, into a
// slice of the SRAM buffer kept between them (its matmul's result is that
// slice seen as a matrix), and the second reads its image there. DRAM moves
// only the compulsory bytes: 20,480 B, where the intermediate through DRAM
// made 53,248 B and 1,618 cycles.

// CHECK-LABEL: func.func @conv$batch_of_two
// CHECK:         %[[R:.*]] = "npu.alloc"() {npu.resident, offset = {{[0-9]+}} : i64} : () -> memref<2x8x8x32xf32, 1>
// CHECK:         scf.for %[[B:.*]] = %c0 to %c2
// CHECK:           %[[IMAGE:.*]] = memref.subview %[[R]][%[[B]], 0, 0, 0] [1, 8, 8, 32] [1, 1, 1, 1]
// CHECK:           %[[ROWS:.*]] = memref.collapse_shape %[[IMAGE]] {{\[}}[0, 1, 2], [3]] : memref<1x8x8x32xf32, strided<[2048, 256, 32, 1], offset: ?>, 1> into memref<64x32xf32, strided<[32, 1], offset: ?>, 1>
// CHECK:           "npu.matmul"(%{{.*}}, %{{.*}}, %[[ROWS]])
// CHECK:         scf.for %[[B2:.*]] = %c0 to %c2
// CHECK:           %[[IMAGE2:.*]] = memref.subview %[[R]][%[[B2]], 0, 0, 0] [1, 8, 8, 32] [1, 1, 1, 1]
// CHECK:           %[[COLUMNS:.*]] = memref.collapse_shape %[[IMAGE2]]
// CHECK:           "npu.matmul"(%[[COLUMNS]],
// CHECK:         "npu.dealloc"(%[[R]])

// SIM: DRAM read / write         12,288 / 8,192 B   (compulsory 20,480 B)

func.func @conv$batch_of_two(%x: tensor<2x8x8x16xf32>, %w1: tensor<1x1x16x32xf32>, %w2: tensor<1x1x32x16xf32>) -> tensor<2x8x8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x8x32xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x8x32xf32>) -> tensor<2x8x8x32xf32>
  %t = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w1 : tensor<2x8x8x16xf32>, tensor<1x1x16x32xf32>) outs(%f : tensor<2x8x8x32xf32>) -> tensor<2x8x8x32xf32>
  %e2 = tensor.empty() : tensor<2x8x8x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<2x8x8x16xf32>) -> tensor<2x8x8x16xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%t, %w2 : tensor<2x8x8x32xf32>, tensor<1x1x32x16xf32>) outs(%f2 : tensor<2x8x8x16xf32>) -> tensor<2x8x8x16xf32>
  return %r : tensor<2x8x8x16xf32>
}
