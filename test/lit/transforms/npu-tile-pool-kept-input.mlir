// RUN: atvoss-opt %s -split-input-file --target='npu -max-sram-bytes=327680' \
// RUN:   --pass-pipeline='builtin.module(npu-tile,npu-promote-to-sram,canonicalize,npu-convert-linalg-to-npu,canonicalize,cse,npu-allocate-sram)' | FileCheck %s
// RUN: atvoss-opt %s -split-input-file --target='npu -max-sram-bytes=327680' -verify-diagnostics -npu-tile

// A 3x3 pool reading a tensor kept in SRAM through a padding: the vector unit
// copies the padded window into an SRAM tile, on which the pool runs
// separably like on any other tile. Its scratch tile (the column pool's
// result, 72 KiB here) is part of the working set: beside the padded tile
// (81 KiB) and the output tile (64 KiB), 217 KiB of the 256 KiB below the kept tensor.

// CHECK-LABEL: func.func @pool$max_3x3_kept
// CHECK:         "npu.alloc"() {npu.resident, offset = 262144 : i64} : () -> memref<1x16x16x64xf32, 1>
// CHECK:         "npu.alloc"() {offset = {{[0-9]+}} : i64} : () -> memref<1x16x18x64xf32, 1>
// CHECK:         "npu.pool2d"(%{{.*}}, %[[DOWN:.*]]) {kind = "max", strides = array<i64: 1, 1>, window = array<i64: 3, 1>}
// CHECK-NEXT:    "npu.pool2d"(%[[DOWN]], %{{.*}}) {kind = "max", strides = array<i64: 1, 1>, window = array<i64: 1, 3>}
func.func @pool$max_3x3_kept(%x: memref<1x16x16x64xf32>) -> memref<1x16x16x64xf32> {
  %lowest = arith.constant 0xFF800000 : f32
  %kept = "npu.alloc"() {npu.resident, offset = 262144 : i64} : () -> memref<1x16x16x64xf32, 1>
  // expected-remark @below {{'linalg.copy': tiles}}
  linalg.copy ins(%x : memref<1x16x16x64xf32>) outs(%kept : memref<1x16x16x64xf32, 1>)
  %p = memref.alloc() : memref<1x18x18x64xf32>
  linalg.fill ins(%lowest : f32) outs(%p : memref<1x18x18x64xf32>)
  %interior = memref.subview %p[0, 1, 1, 0] [1, 16, 16, 64] [1, 1, 1, 1] : memref<1x18x18x64xf32> to memref<1x16x16x64xf32, strided<[20736, 1152, 64, 1], offset: 1216>>
  memref.copy %kept, %interior : memref<1x16x16x64xf32, 1> to memref<1x16x16x64xf32, strided<[20736, 1152, 64, 1], offset: 1216>>
  %y = memref.alloc() : memref<1x16x16x64xf32>
  linalg.fill ins(%lowest : f32) outs(%y : memref<1x16x16x64xf32>)
  %k = memref.alloc() : memref<3x3xf32>
  // expected-remark @below {{'linalg.pooling_nhwc_max': tiles n1xoh16xow16xc64, loops (n,oh,ow,c), working set 222208 B}}
  linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %k : memref<1x18x18x64xf32>, memref<3x3xf32>) outs(%y : memref<1x16x16x64xf32>)
  "npu.dealloc"(%kept) : (memref<1x16x16x64xf32, 1>) -> ()
  return %y : memref<1x16x16x64xf32>
}

// -----

// 192 KiB below the kept tensor: the padded and output tiles fit, the scratch
// tile beside them does not. The pool takes its whole window at once (9 taps
// per output, no scratch), where it used to write the scratch tile over the
// kept tensor's SRAM (an allocation error).

// CHECK-LABEL: func.func @pool$max_3x3_kept_no_scratch
// CHECK-NOT:     memref<1x16x18x64xf32, 1>
// CHECK:         "npu.pool2d"(%{{.*}}, %{{.*}}) {kind = "max", strides = array<i64: 1, 1>, window = array<i64: 3, 3>}
func.func @pool$max_3x3_kept_no_scratch(%x: memref<1x16x16x64xf32>) -> memref<1x16x16x64xf32> {
  %lowest = arith.constant 0xFF800000 : f32
  %kept = "npu.alloc"() {npu.resident, offset = 196608 : i64} : () -> memref<1x16x16x64xf32, 1>
  // expected-remark @below {{'linalg.copy': tiles}}
  linalg.copy ins(%x : memref<1x16x16x64xf32>) outs(%kept : memref<1x16x16x64xf32, 1>)
  %p = memref.alloc() : memref<1x18x18x64xf32>
  linalg.fill ins(%lowest : f32) outs(%p : memref<1x18x18x64xf32>)
  %interior = memref.subview %p[0, 1, 1, 0] [1, 16, 16, 64] [1, 1, 1, 1] : memref<1x18x18x64xf32> to memref<1x16x16x64xf32, strided<[20736, 1152, 64, 1], offset: 1216>>
  memref.copy %kept, %interior : memref<1x16x16x64xf32, 1> to memref<1x16x16x64xf32, strided<[20736, 1152, 64, 1], offset: 1216>>
  %y = memref.alloc() : memref<1x16x16x64xf32>
  linalg.fill ins(%lowest : f32) outs(%y : memref<1x16x16x64xf32>)
  %k = memref.alloc() : memref<3x3xf32>
  // expected-remark @below {{'linalg.pooling_nhwc_max' pools its whole window at once: a row pool after a column pool needs a scratch tile that does not fit}}
  // expected-remark @below {{'linalg.pooling_nhwc_max': tiles n1xoh16xow16xc64, loops (n,oh,ow,c), working set 148480 B}}
  linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%p, %k : memref<1x18x18x64xf32>, memref<3x3xf32>) outs(%y : memref<1x16x16x64xf32>)
  "npu.dealloc"(%kept) : (memref<1x16x16x64xf32, 1>) -> ()
  return %y : memref<1x16x16x64xf32>
}
