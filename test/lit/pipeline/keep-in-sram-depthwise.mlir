// RUN: atvoss-opt %s --npu-pipeline --target='npu -max-sram-bytes=196608' | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline --target='npu -max-sram-bytes=196608' | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --target='npu -max-sram-bytes=196608' --remarks 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK

// A depthwise conv whose 128 KiB result a 1x1 conv reads, in a 192 KiB SRAM:
// kept there, the result leaves 64 KiB below it, too little for the whole
// padded input (145 KiB). The depthwise conv then writes the kept tensor a
// block of rows at a time (all channels: a channel slice would load a slice
// of the weights per tile), each block a view of the tensor, from row tiles
// of its input loaded with their halo. Nothing is stored to DRAM but the
// result of the function (once: 163,840 B written whole before).

// CHECK-LABEL: func.func @depthwise$then$pointwise
// CHECK:         %[[R:.*]] = "npu.alloc"() {npu.resident, offset = {{.*}}} : () -> memref<1x32x32x32xf32, 1>
// CHECK:         scf.for
// CHECK:           %[[ROWS:.*]] = memref.subview %[[R]][0, %{{.*}}, 0, 0] [1, %{{.*}}, 32, 32] [1, 1, 1, 1]
// CHECK:           "npu.depthwise_conv2d"(%{{.*}}, %{{.*}}, %[[ROWS]])
// CHECK-NOT:     "npu.dma_store"
// CHECK:         "npu.matmul"
// CHECK:         "npu.dma_store"
// CHECK-NOT:     "npu.dma_store"
// CHECK:         "npu.dealloc"(%[[R]])

// SIM: DRAM read / write        215,168 / 32,768 B

// REMARK: :36:8: remark: kept 'linalg.depthwise_conv_2d_nhwc_hwc' output in SRAM for 'linalg.conv_2d_nhwc_hwcf' at line 40 (131072 B at offset 65536;
// REMARK: :36:8: remark: 'linalg.depthwise_conv_2d_nhwc_hwc': tiles n1xoh3xow32xc32,
func.func @depthwise$then$pointwise(%x: tensor<1x32x32x32xf32>, %wd: tensor<3x3x32xf32>, %w: tensor<1x1x32x8xf32>) -> tensor<1x32x32x8xf32> {
  %zero = arith.constant 0.0 : f32
  %p = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x32x32x32xf32> to tensor<1x34x34x32xf32>
  %e1 = tensor.empty() : tensor<1x32x32x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<1x32x32x32xf32>) -> tensor<1x32x32x32xf32>
  %d = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %wd : tensor<1x34x34x32xf32>, tensor<3x3x32xf32>) outs(%f1 : tensor<1x32x32x32xf32>) -> tensor<1x32x32x32xf32>
  %e2 = tensor.empty() : tensor<1x32x32x8xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x32x32x8xf32>) -> tensor<1x32x32x8xf32>
  %c = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%d, %w : tensor<1x32x32x32xf32>, tensor<1x1x32x8xf32>) outs(%f2 : tensor<1x32x32x8xf32>) -> tensor<1x32x32x8xf32>
  return %c : tensor<1x32x32x8xf32>
}
