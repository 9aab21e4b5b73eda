// RUN: atvoss-opt %s -split-input-file -npu-forward-copies | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-forward-copies

// A nearest 2x upsampling into the first channels of a concatenation, as
// bufferization leaves it: the broadcast fills a buffer of its own, whose
// collapse is copied into the slice. The broadcast writes the expand_shape of
// the slice instead; the copy, the collapse and the buffer go.

// CHECK-LABEL: func.func @upsample$into_concat_slice
// CHECK-SAME:    (%[[X:.*]]: memref<1x4x4x8xf32>, %[[SKIP:.*]]: memref<1x8x8x4xf32>)
// CHECK:         %[[CAT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x8x8x12xf32>
// CHECK:         %[[SLICE:.*]] = memref.subview %[[CAT]][0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1]
// CHECK:         %[[SPLIT:.*]] = memref.expand_shape %[[SLICE]] {{\[}}[0], [1, 2], [3, 4], [5]] output_shape [1, 4, 2, 4, 2, 8] : memref<1x8x8x8xf32, strided<[768, 96, 12, 1]>> into memref<1x4x2x4x2x8xf32, strided<[768, 192, 96, 24, 12, 1]>>
// CHECK:         linalg.broadcast ins(%[[X]] : memref<1x4x4x8xf32>) outs(%[[SPLIT]] : {{.*}}) dimensions = [2, 4]
// CHECK-NOT:     memref.collapse_shape
// CHECK-NOT:     memref.copy %{{.*}}, %[[SLICE]]
// CHECK:         memref.copy %[[SKIP]]
func.func @upsample$into_concat_slice(%x: memref<1x4x4x8xf32>, %skip: memref<1x8x8x4xf32>) -> memref<1x8x8x12xf32> {
  %cat = memref.alloc() {alignment = 64 : i64} : memref<1x8x8x12xf32>
  %up = memref.alloc() {alignment = 64 : i64} : memref<1x4x2x4x2x8xf32>
  // expected-remark @below {{'linalg.broadcast' writes the view its reshaped result was copied into: no copy (saves 4096 B of DRAM traffic)}}
  linalg.broadcast ins(%x : memref<1x4x4x8xf32>) outs(%up : memref<1x4x2x4x2x8xf32>) dimensions = [2, 4]
  %merged = memref.collapse_shape %up [[0], [1, 2], [3, 4], [5]] : memref<1x4x2x4x2x8xf32> into memref<1x8x8x8xf32>
  %slice = memref.subview %cat[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : memref<1x8x8x12xf32> to memref<1x8x8x8xf32, strided<[768, 96, 12, 1]>>
  memref.copy %merged, %slice : memref<1x8x8x8xf32> to memref<1x8x8x8xf32, strided<[768, 96, 12, 1]>>
  %rest = memref.subview %cat[0, 0, 0, 8] [1, 8, 8, 4] [1, 1, 1, 1] : memref<1x8x8x12xf32> to memref<1x8x8x4xf32, strided<[768, 96, 12, 1], offset: 8>>
  memref.copy %skip, %rest : memref<1x8x8x4xf32> to memref<1x8x8x4xf32, strided<[768, 96, 12, 1], offset: 8>>
  return %cat : memref<1x8x8x12xf32>
}

// -----

// The upsampled buffer is also read by another op: it stays, with its copy
// (no remark).

// CHECK-LABEL: func.func @buffer_read_again$kept
// CHECK:         linalg.broadcast ins(%{{.*}} : memref<1x4x4x8xf32>) outs(%[[UP:.*]] : memref<1x4x2x4x2x8xf32>)
// CHECK:         memref.copy %{{.*}}, %{{.*}} : memref<1x8x8x8xf32> to
func.func @buffer_read_again$kept(%x: memref<1x4x4x8xf32>, %out: memref<1x4x2x4x2x8xf32>) -> memref<1x8x8x12xf32> {
  %cat = memref.alloc() {alignment = 64 : i64} : memref<1x8x8x12xf32>
  %up = memref.alloc() {alignment = 64 : i64} : memref<1x4x2x4x2x8xf32>
  linalg.broadcast ins(%x : memref<1x4x4x8xf32>) outs(%up : memref<1x4x2x4x2x8xf32>) dimensions = [2, 4]
  linalg.copy ins(%up : memref<1x4x2x4x2x8xf32>) outs(%out : memref<1x4x2x4x2x8xf32>)
  %merged = memref.collapse_shape %up [[0], [1, 2], [3, 4], [5]] : memref<1x4x2x4x2x8xf32> into memref<1x8x8x8xf32>
  %slice = memref.subview %cat[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : memref<1x8x8x12xf32> to memref<1x8x8x8xf32, strided<[768, 96, 12, 1]>>
  memref.copy %merged, %slice : memref<1x8x8x8xf32> to memref<1x8x8x8xf32, strided<[768, 96, 12, 1]>>
  return %cat : memref<1x8x8x12xf32>
}

// -----

// An op writes the concatenation's buffer between the broadcast and the copy
// (a fill of all of it): the broadcast may not write its slice before that
// op, so the copy stays (no remark).

// CHECK-LABEL: func.func @target_written_between$kept
// CHECK:         linalg.broadcast ins(%{{.*}} : memref<1x4x4x8xf32>) outs(%{{.*}} : memref<1x4x2x4x2x8xf32>)
// CHECK:         linalg.fill
// CHECK:         memref.copy %{{.*}}, %{{.*}} : memref<1x8x8x8xf32> to
func.func @target_written_between$kept(%x: memref<1x4x4x8xf32>) -> memref<1x8x8x12xf32> {
  %zero = arith.constant 0.0 : f32
  %cat = memref.alloc() {alignment = 64 : i64} : memref<1x8x8x12xf32>
  %up = memref.alloc() {alignment = 64 : i64} : memref<1x4x2x4x2x8xf32>
  linalg.broadcast ins(%x : memref<1x4x4x8xf32>) outs(%up : memref<1x4x2x4x2x8xf32>) dimensions = [2, 4]
  linalg.fill ins(%zero : f32) outs(%cat : memref<1x8x8x12xf32>)
  %merged = memref.collapse_shape %up [[0], [1, 2], [3, 4], [5]] : memref<1x4x2x4x2x8xf32> into memref<1x8x8x8xf32>
  %slice = memref.subview %cat[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : memref<1x8x8x12xf32> to memref<1x8x8x8xf32, strided<[768, 96, 12, 1]>>
  memref.copy %merged, %slice : memref<1x8x8x8xf32> to memref<1x8x8x8xf32, strided<[768, 96, 12, 1]>>
  return %cat : memref<1x8x8x12xf32>
}
