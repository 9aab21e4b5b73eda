// RUN: atvoss-opt %s -split-input-file \
// RUN:   --pass-pipeline='builtin.module(npu-tile,npu-promote-to-sram,canonicalize,npu-convert-linalg-to-npu,canonicalize,cse)' | FileCheck %s
// RUN: atvoss-opt %s -split-input-file --target='npu -max-sram-bytes=36864' -verify-diagnostics -npu-tile

// A 3x3 max pool of stride 1 across the columns runs separably: a 3x1 pool
// down each input column into a scratch tile, then a 1x3 pool across it, 6
// taps per output instead of 9. When that scratch tile does not fit (36 KiB
// here), the pool takes its whole window at once, with a remark.

// CHECK-LABEL: func.func @pool$max_3x3
// CHECK:         "npu.pool2d"(%{{.*}}, %[[DOWN:.*]]) {kind = "max", strides = array<i64: 1, 1>, window = array<i64: 3, 1>}
// CHECK-NEXT:    "npu.pool2d"(%[[DOWN]], %{{.*}}) {kind = "max", strides = array<i64: 1, 1>, window = array<i64: 1, 3>}
func.func @pool$max_3x3(%x: memref<1x4x4000x8xf16>) -> memref<1x2x3998x8xf16> {
  %lowest = arith.constant 0xFC00 : f16
  %y = memref.alloc() : memref<1x2x3998x8xf16>
  linalg.fill ins(%lowest : f16) outs(%y : memref<1x2x3998x8xf16>)
  %k = memref.alloc() : memref<3x3xf16>
  // expected-remark @below {{'linalg.pooling_nhwc_max' pools its whole window at once: a row pool after a column pool needs a scratch tile that does not fit}}
  // expected-remark @below {{'linalg.pooling_nhwc_max': tiles}}
  linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %k : memref<1x4x4000x8xf16>, memref<3x3xf16>) outs(%y : memref<1x2x3998x8xf16>)
  return %y : memref<1x2x3998x8xf16>
}

// -----

// Stride 2 across the columns: the column pool would cover every input
// column, as many taps as the whole window. One pool.

// CHECK-LABEL: func.func @pool$max_3x3_stride2
// CHECK:         "npu.pool2d"(%{{.*}}, %{{.*}}) {kind = "max", strides = array<i64: 2, 2>, window = array<i64: 3, 3>}
// CHECK-NOT:     "npu.pool2d"
func.func @pool$max_3x3_stride2(%x: memref<1x17x17x8xf32>) -> memref<1x8x8x8xf32> {
  %lowest = arith.constant 0xFF800000 : f32
  %y = memref.alloc() : memref<1x8x8x8xf32>
  linalg.fill ins(%lowest : f32) outs(%y : memref<1x8x8x8xf32>)
  %k = memref.alloc() : memref<3x3xf32>
  // expected-remark @below {{'linalg.pooling_nhwc_max': tiles}}
  linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %k : memref<1x17x17x8xf32>, memref<3x3xf32>) outs(%y : memref<1x8x8x8xf32>)
  return %y : memref<1x8x8x8xf32>
}
