// RUN: atvoss-opt %s --npu-pipeline --target='npu -pipeline-stages=1' | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline --target='npu -pipeline-stages=1' | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --target='npu -pipeline-stages=1 -fusion=1' | atvoss-sim - --report=table | FileCheck %s --check-prefix=DRAM

// Two padded 3x3 convs in a row: the tensor between them stays in SRAM with
// its padding (npu-keep-in-sram). The halo is filled once, the first conv
// writes the interior of the padded buffer and the second reads that buffer
// itself: no copy into a padded tile on the vector unit, no DRAM round trip.

// CHECK-LABEL: func.func @conv$conv
// CHECK:         %[[P:.*]] = "npu.alloc"() {npu.resident, offset = {{[0-9]+}} : i64} : () -> memref<1x18x18x16xf32, 1>
// CHECK-COUNT-4: "npu.fill"
// CHECK:         %[[IN:.*]] = memref.subview %[[P]][0, 1, 1, 0] [1, 16, 16, 16] [1, 1, 1, 1]
// CHECK:         "npu.conv2d"(%{{.*}}, %{{.*}}, %[[IN]])
// CHECK-NOT:     "npu.activation"
// CHECK-NOT:     "npu.dma_store"
// CHECK:         "npu.conv2d"(%[[P]], %{{.*}}, %{{.*}})
// CHECK:         "npu.dealloc"(%[[P]])

// SIM: total cycles               4,152
// SIM: DRAM read / write         34,816 / 16,384 B
// DRAM: total cycles               4,968
// DRAM: DRAM read / write         51,200 / 32,768 B
func.func @conv$conv(%x: tensor<1x16x16x16xf32>, %w1: tensor<3x3x16x16xf32>, %w2: tensor<3x3x16x16xf32>) -> tensor<1x16x16x16xf32> {
  %zero = arith.constant 0.0 : f32
  %xp = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x16x16x16xf32> to tensor<1x18x18x16xf32>
  %e = tensor.empty() : tensor<1x16x16x16xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %a = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%xp, %w1 : tensor<1x18x18x16xf32>, tensor<3x3x16x16xf32>) outs(%f : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %ap = tensor.pad %a low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x16x16x16xf32> to tensor<1x18x18x16xf32>
  %e2 = tensor.empty() : tensor<1x16x16x16xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  %b = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%ap, %w2 : tensor<1x18x18x16xf32>, tensor<3x3x16x16xf32>) outs(%f2 : tensor<1x16x16x16xf32>) -> tensor<1x16x16x16xf32>
  return %b : tensor<1x16x16x16xf32>
}
