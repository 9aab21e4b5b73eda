// RUN: atvoss-opt %s -split-input-file -npu-share-input-windows | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-share-input-windows

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// LRN's window sum: three channel-shifted slices of the padded squares. The
// first keeps its view; the others read the union of the slices at their shift.

// CHECK-DAG:   #[[S1:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 + 1, d2, d3)>
// CHECK-DAG:   #[[S2:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1 + 2, d2, d3)>
// CHECK-LABEL: func.func @window$three_slices
// CHECK:         %[[FIRST:.*]] = memref.subview %[[P:.*]][0, 0, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1]
// CHECK:         %[[UNION:.*]] = memref.subview %[[P]][0, 0, 0, 0] [1, 10, 4, 4] [1, 1, 1, 1]
// CHECK:         linalg.generic {indexing_maps = [#[[ID:.*]], #[[S1]], #[[S2]], #[[ID]]]
// CHECK-SAME:        ins(%[[FIRST]], %[[UNION]], %[[UNION]] :
// CHECK-NOT:     memref.subview %[[P]][0, 1, 0, 0]
func.func @window$three_slices(%p: memref<1x10x4x4xf32>, %out: memref<1x8x4x4xf32>) {
  %s0 = memref.subview %p[0, 0, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1] : memref<1x10x4x4xf32> to memref<1x8x4x4xf32, strided<[160, 16, 4, 1]>>
  %s1 = memref.subview %p[0, 1, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1] : memref<1x10x4x4xf32> to memref<1x8x4x4xf32, strided<[160, 16, 4, 1], offset: 16>>
  %s2 = memref.subview %p[0, 2, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1] : memref<1x10x4x4xf32> to memref<1x8x4x4xf32, strided<[160, 16, 4, 1], offset: 32>>
  // expected-remark @below {{3 inputs slicing one buffer at shifts along dim 1 read it once, as one window}}
  linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s0, %s1, %s2 : memref<1x8x4x4xf32, strided<[160, 16, 4, 1]>>, memref<1x8x4x4xf32, strided<[160, 16, 4, 1], offset: 16>>, memref<1x8x4x4xf32, strided<[160, 16, 4, 1], offset: 32>>)
      outs(%out : memref<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %o: f32):
    %ab = arith.addf %a, %b : f32
    %abc = arith.addf %ab, %c : f32
    linalg.yield %abc : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// Slices shifted along two dims are no window along one: left alone.

// CHECK-LABEL: func.func @two_dims$left_alone
// CHECK:         linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}]
// CHECK-NOT:     d1 + 1
func.func @two_dims$left_alone(%p: memref<1x10x6x4xf32>, %out: memref<1x8x4x4xf32>) {
  %s0 = memref.subview %p[0, 0, 0, 0] [1, 8, 4, 4] [1, 1, 1, 1] : memref<1x10x6x4xf32> to memref<1x8x4x4xf32, strided<[240, 24, 4, 1]>>
  %s1 = memref.subview %p[0, 1, 1, 0] [1, 8, 4, 4] [1, 1, 1, 1] : memref<1x10x6x4xf32> to memref<1x8x4x4xf32, strided<[240, 24, 4, 1], offset: 28>>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s0, %s1 : memref<1x8x4x4xf32, strided<[240, 24, 4, 1]>>, memref<1x8x4x4xf32, strided<[240, 24, 4, 1], offset: 28>>)
      outs(%out : memref<1x8x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %ab = arith.addf %a, %b : f32
    linalg.yield %ab : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#sum = affine_map<(d0, d1) -> (d0)>

// A reduction is not an elementwise op: left alone.

// CHECK-LABEL: func.func @reduction$left_alone
// CHECK-NOT:     d1 + 1
func.func @reduction$left_alone(%p: memref<10x4xf32>, %out: memref<8xf32>) {
  %s0 = memref.subview %p[0, 0] [8, 4] [1, 1] : memref<10x4xf32> to memref<8x4xf32, strided<[4, 1]>>
  %s1 = memref.subview %p[1, 0] [8, 4] [1, 1] : memref<10x4xf32> to memref<8x4xf32, strided<[4, 1], offset: 4>>
  linalg.generic {indexing_maps = [#id, #id, #sum], iterator_types = ["parallel", "reduction"]}
      ins(%s0, %s1 : memref<8x4xf32, strided<[4, 1]>>, memref<8x4xf32, strided<[4, 1], offset: 4>>)
      outs(%out : memref<8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %ab = arith.addf %a, %b : f32
    %s = arith.addf %ab, %o : f32
    linalg.yield %s : f32
  }
  return
}
