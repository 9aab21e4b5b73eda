// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM

// MobileNetV2's inverted residual on a 40x40 image: the 614,400 B expanded
// tensor does not fit in the SRAM beside the ops' tiles, so whole it goes to
// DRAM and back (30,002 cycles, 1,388,512 DRAM bytes). npu-cascade-rows runs
// the chain in two strips of 10 output rows; the buffer plan keeps each
// strip's expanded rows in SRAM padded (the expand, a direct conv, writes the
// padded buffer's interior; its halo is filled, the depthwise conv reads it in
// place) and its depthwise result, and each strip stores only its rows of the
// result (17,876 cycles when the expanded rows were kept unpadded and copied
// into a padded tile on the vector unit). The second strip's convs read the
// weights the first loaded (npu-share-constant-tiles: 14,314 cycles and
// 142,784 B read when each strip loaded them).

// CHECK-LABEL: func.func @inverted_residual
// CHECK:         %[[P0:.*]] = "npu.alloc"() {npu.resident, offset = {{.*}}} : () -> memref<1x21x42x96xf32, 1>
// CHECK:         "npu.fill"
// CHECK:         "npu.conv2d"(%{{.*}}, %{{.*}}, %{{.*}}) {{.*}} -> ()
// CHECK:         "npu.alloc"() {npu.resident, offset = {{.*}}} : () -> memref<1x10x20x96xf32, 1>
// CHECK:         "npu.depthwise_conv2d"(%[[P0]],
// CHECK:         "npu.matmul"
// CHECK:         "npu.dma_store"(%{{.*}}, %{{.*}}) {{.*}} : (memref<1x10x20x24xf32, 1>, memref<1x10x20x24xf32, strided<[9600, 480, 24, 1]>>)
// CHECK:         %[[P1:.*]] = "npu.alloc"() {npu.resident, offset = {{.*}}} : () -> memref<1x21x42x96xf32, 1>
// CHECK:         "npu.alloc"() {npu.resident, offset = {{.*}}} : () -> memref<1x10x20x96xf32, 1>
// CHECK:         "npu.depthwise_conv2d"(%[[P1]],
// CHECK:         "npu.dma_store"(%{{.*}}, %{{.*}}) {{.*}} : (memref<1x10x20x24xf32, 1>, memref<1x10x20x24xf32, strided<[9600, 480, 24, 1], offset: 4800>>)
// CHECK-NOT:     memref<1x40x40x96xf32
// CHECK-NOT:     "npu.activation"

// SIM: total cycles              14,140
// SIM: DRAM read / write        123,872 / 38,400 B
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
  %c2 = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%d, %w2 : tensor<1x20x20x96xf32>, tensor<1x1x96x24xf32>) outs(%i3 : tensor<1x20x20x24xf32>) -> tensor<1x20x20x24xf32>
  return %c2 : tensor<1x20x20x24xf32>
}
