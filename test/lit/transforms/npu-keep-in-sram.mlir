// RUN: atvoss-opt %s -split-input-file -npu-keep-in-sram | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-keep-in-sram
// RUN: atvoss-opt %s -split-input-file -npu-keep-in-sram --target='npu -fusion=1' | FileCheck %s --check-prefix=FUSION1

#id = affine_map<(d0, d1) -> (d0, d1)>

// The matmul's result is only read by the relu: it stays in SRAM between them,
// placed at the top of SRAM, released after its reader.

// CHECK-LABEL: func.func @matmul$relu
// CHECK:         %[[T:.*]] = "npu.alloc"() {npu.resident, offset = 1032192 : i64} : () -> memref<64x64xf32, 1>
// CHECK:         linalg.fill {{.*}} outs(%[[T]] : memref<64x64xf32, 1>)
// CHECK:         linalg.matmul {{.*}} outs(%[[T]] : memref<64x64xf32, 1>)
// CHECK:         linalg.generic {{.*}} ins(%[[T]] : memref<64x64xf32, 1>)
// CHECK-NEXT:    ^bb0
// CHECK:         "npu.dealloc"(%[[T]])
// CHECK-NEXT:    return
// FUSION1-LABEL: func.func @matmul$relu
// FUSION1:         memref.alloc() : memref<64x64xf32>
// FUSION1-NOT:     npu.alloc
func.func @matmul$relu(%a: memref<64x128xf32>, %b: memref<128x64xf32>, %out: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<64x64xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<64x64xf32>)
  // expected-remark @below {{kept 'linalg.matmul' output in SRAM for 'linalg.generic' at line 27 (16384 B at offset 1032192; saves 484 estimated cycles)}}
  linalg.matmul ins(%a, %b : memref<64x128xf32>, memref<128x64xf32>) outs(%t : memref<64x64xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<64x64xf32>) outs(%out : memref<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %x, %zero : f32
    linalg.yield %y : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A view of the kept tensor is rebuilt in SRAM.

// CHECK-LABEL: func.func @add$through_a_reshape
// CHECK:         %[[T:.*]] = "npu.alloc"() {npu.resident, offset = {{[0-9]+}} : i64} : () -> memref<32x64xf32, 1>
// CHECK:         memref.expand_shape %[[T]] {{.*}} : memref<32x64xf32, 1> into memref<32x2x32xf32, 1>
func.func @add$through_a_reshape(%a: memref<32x64xf32>, %out: memref<32x2x32xf32>) {
  %t = memref.alloc() : memref<32x64xf32>
  // expected-remark @below {{kept 'linalg.generic' output in SRAM}}
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %a : memref<32x64xf32>, memref<32x64xf32>) outs(%t : memref<32x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  %e = memref.expand_shape %t [[0], [1, 2]] output_shape [32, 2, 32] : memref<32x64xf32> into memref<32x2x32xf32>
  linalg.copy ins(%e : memref<32x2x32xf32>) outs(%out : memref<32x2x32xf32>)
  return
}
