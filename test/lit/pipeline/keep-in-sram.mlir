// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --target='npu -fusion=1' | atvoss-sim - --report=table | FileCheck %s --check-prefix=DRAM

// A matmul whose result only a residual add reads: the result stays in SRAM
// (npu-keep-in-sram), the matmul accumulates into it in place and the add
// reads it there. Only the add's output is stored; with -fusion=1 the matmul's
// result makes a round trip through DRAM.

// CHECK-LABEL: func.func @matmul$residual
// CHECK:         %[[R:.*]] = "npu.alloc"() {npu.resident, offset = 1032192 : i64} : () -> memref<64x64xf32, 1>
// CHECK:         scf.for
// CHECK:           "npu.matmul"({{.*}}, {{.*}}, %[[R]])
// CHECK:         } {npu.tile_loop}
// CHECK-NOT:     "npu.dma_store"
// CHECK:         "npu.elementwise"(%[[R]], {{.*}}) {kind = "add"}
// CHECK:         "npu.dma_store"
// CHECK-NOT:     "npu.dma_store"
// CHECK:         "npu.dealloc"(%[[R]])

// SIM: DRAM read / write         81,920 / 16,384 B
// DRAM: DRAM read / write        98,304 / 32,768 B
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @matmul$residual(%a: tensor<64x128xf32>, %b: tensor<128x64xf32>, %c: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %m = linalg.matmul ins(%a, %b : tensor<64x128xf32>, tensor<128x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  %e2 = tensor.empty() : tensor<64x64xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m, %c : tensor<64x64xf32>, tensor<64x64xf32>) outs(%e2 : tensor<64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
