// RUN: atvoss-opt %s -split-input-file -npu-pad-in-place | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-pad-in-place

// LRN's zero-padded squares, as bufferization leaves them: the squares are
// copied into the interior of a buffer filled with zeros, which shifted slices
// read. The squares are written into the interior itself; only the halo (two
// channels on each side) is filled, and the copy and the squares' own buffer go.

// CHECK-LABEL: func.func @padded_squares$in_place
// CHECK-SAME:    (%[[X:[a-z0-9]+]]: memref<1x4x4x8xf32>
// CHECK:         %[[P:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x12xf32>
// CHECK:         %[[LOW:.*]] = memref.subview %[[P]][0, 0, 0, 0] [1, 4, 4, 2] [1, 1, 1, 1]
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[LOW]]
// CHECK:         %[[HIGH:.*]] = memref.subview %[[P]][0, 0, 0, 10] [1, 4, 4, 2] [1, 1, 1, 1]
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[HIGH]]
// CHECK:         %[[IN:.*]] = memref.subview %[[P]][0, 0, 0, 2] [1, 4, 4, 8] [1, 1, 1, 1]
// CHECK:         linalg.generic {{.*}} ins(%[[X]] : memref<1x4x4x8xf32>) outs(%[[IN]] :
// CHECK-NOT:     memref.copy
// CHECK-NOT:     linalg.map
// CHECK:         linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} :
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @padded_squares$in_place(%x: memref<1x4x4x8xf32>, %y: memref<1x4x4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %squares = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x8xf32>
  // expected-remark @below {{'linalg.generic' writes the interior of the padded buffer read after it: no copy into it (saves 1536 B of DRAM traffic)}}
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<1x4x4x8xf32>) outs(%squares : memref<1x4x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  }
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x12xf32>
  linalg.map outs(%padded : memref<1x4x4x12xf32>)
    (%init: f32) {
      linalg.yield %zero : f32
    }
  %interior = memref.subview %padded[0, 0, 0, 2] [1, 4, 4, 8] [1, 1, 1, 1] : memref<1x4x4x12xf32> to memref<1x4x4x8xf32, strided<[192, 48, 12, 1], offset: 2>>
  memref.copy %squares, %interior : memref<1x4x4x8xf32> to memref<1x4x4x8xf32, strided<[192, 48, 12, 1], offset: 2>>
  %s0 = memref.subview %padded[0, 0, 0, 0] [1, 4, 4, 8] [1, 1, 1, 1] : memref<1x4x4x12xf32> to memref<1x4x4x8xf32, strided<[192, 48, 12, 1]>>
  %s4 = memref.subview %padded[0, 0, 0, 4] [1, 4, 4, 8] [1, 1, 1, 1] : memref<1x4x4x12xf32> to memref<1x4x4x8xf32, strided<[192, 48, 12, 1], offset: 4>>
  linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%s0, %s4 : memref<1x4x4x8xf32, strided<[192, 48, 12, 1]>>, memref<1x4x4x8xf32, strided<[192, 48, 12, 1], offset: 4>>)
      outs(%y : memref<1x4x4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A conv reads the padded buffer: its recipe folds the padding into its own
// loads (no padded buffer in DRAM at all), so the copy stays for it.

// CHECK-LABEL: func.func @conv_padding$stays
// CHECK:         memref.copy
// CHECK:         linalg.conv_2d_nhwc_hwcf
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @conv_padding$stays(%x: memref<1x4x4x8xf32>, %w: memref<3x3x8x8xf32>, %y: memref<1x4x4x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %relu = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x8xf32>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<1x4x4x8xf32>) outs(%relu : memref<1x4x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x6x6x8xf32>
  linalg.map outs(%padded : memref<1x6x6x8xf32>)
    (%init: f32) {
      linalg.yield %zero : f32
    }
  %interior = memref.subview %padded[0, 1, 1, 0] [1, 4, 4, 8] [1, 1, 1, 1] : memref<1x6x6x8xf32> to memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>
  memref.copy %relu, %interior : memref<1x4x4x8xf32> to memref<1x4x4x8xf32, strided<[288, 48, 8, 1], offset: 56>>
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%padded, %w : memref<1x6x6x8xf32>, memref<3x3x8x8xf32>) outs(%y : memref<1x4x4x8xf32>)
  return
}

// -----

// The source is read again after the copy, and another one is reshaped (a
// strided interior may not be): both copies stay.

// CHECK-LABEL: func.func @other_readers$stay
// CHECK:         memref.copy
// CHECK:         memref.copy
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @other_readers$stay(%x: memref<1x4x4x8xf32>, %y: memref<1x4x4x12xf32>, %z: memref<1x4x4x8xf32>, %u: memref<1x4x4x12xf32>) -> memref<16x8xf32> {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x8xf32>
  linalg.copy ins(%x : memref<1x4x4x8xf32>) outs(%a : memref<1x4x4x8xf32>)
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x12xf32>
  linalg.map outs(%padded : memref<1x4x4x12xf32>)
    (%init: f32) {
      linalg.yield %zero : f32
    }
  %interior = memref.subview %padded[0, 0, 0, 2] [1, 4, 4, 8] [1, 1, 1, 1] : memref<1x4x4x12xf32> to memref<1x4x4x8xf32, strided<[192, 48, 12, 1], offset: 2>>
  memref.copy %a, %interior : memref<1x4x4x8xf32> to memref<1x4x4x8xf32, strided<[192, 48, 12, 1], offset: 2>>
  linalg.copy ins(%padded : memref<1x4x4x12xf32>) outs(%y : memref<1x4x4x12xf32>)
  linalg.copy ins(%a : memref<1x4x4x8xf32>) outs(%z : memref<1x4x4x8xf32>)
  %b = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x8xf32>
  linalg.copy ins(%x : memref<1x4x4x8xf32>) outs(%b : memref<1x4x4x8xf32>)
  %flat = memref.collapse_shape %b [[0, 1, 2], [3]] : memref<1x4x4x8xf32> into memref<16x8xf32>
  %padded2 = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x12xf32>
  linalg.map outs(%padded2 : memref<1x4x4x12xf32>)
    (%init: f32) {
      linalg.yield %zero : f32
    }
  %interior2 = memref.subview %padded2[0, 0, 0, 2] [1, 4, 4, 8] [1, 1, 1, 1] : memref<1x4x4x12xf32> to memref<1x4x4x8xf32, strided<[192, 48, 12, 1], offset: 2>>
  memref.copy %b, %interior2 : memref<1x4x4x8xf32> to memref<1x4x4x8xf32, strided<[192, 48, 12, 1], offset: 2>>
  linalg.copy ins(%padded2 : memref<1x4x4x12xf32>) outs(%u : memref<1x4x4x12xf32>)
  return %flat : memref<16x8xf32>
}

// -----

// A Pad node read whole by an elementwise op (no slices): the same rewrite;
// here the pad value is -1 and the halo is a row above and below.

// CHECK-LABEL: func.func @padded_rows$read_whole
// CHECK:         %[[P:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x6x4x8xf32>
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<1x1x4x8xf32, strided<[192, 32, 8, 1]>>)
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : memref<1x1x4x8xf32, strided<[192, 32, 8, 1], offset: 160>>)
// CHECK-NOT:     memref.copy
// CHECK:         linalg.generic {{.*}} ins(%[[P]] : memref<1x6x4x8xf32>)
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @padded_rows$read_whole(%x: memref<1x4x4x8xf32>, %y: memref<1x6x4x8xf32>) {
  %minus = arith.constant -1.0 : f32
  %relu = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x8xf32>
  // expected-remark @below {{'linalg.generic' writes the interior of the padded buffer read after it: no copy into it (saves 1536 B of DRAM traffic)}}
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<1x4x4x8xf32>) outs(%relu : memref<1x4x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x6x4x8xf32>
  linalg.map outs(%padded : memref<1x6x4x8xf32>)
    (%init: f32) {
      linalg.yield %minus : f32
    }
  %interior = memref.subview %padded[0, 1, 0, 0] [1, 4, 4, 8] [1, 1, 1, 1] : memref<1x6x4x8xf32> to memref<1x4x4x8xf32, strided<[192, 32, 8, 1], offset: 32>>
  memref.copy %relu, %interior : memref<1x4x4x8xf32> to memref<1x4x4x8xf32, strided<[192, 32, 8, 1], offset: 32>>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%padded : memref<1x6x4x8xf32>) outs(%y : memref<1x6x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The pad value is a function argument (a Pad node whose constant_value is a
// graph input): it dominates every op, so the rewrite applies as for a constant.

// CHECK-LABEL: func.func @pad_value$argument
// CHECK-SAME:    %[[V:[a-z0-9]+]]: f32
// CHECK:         linalg.fill ins(%[[V]] : f32)
// CHECK-NOT:     memref.copy
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @pad_value$argument(%x: memref<1x4x4x8xf32>, %v: f32, %y: memref<1x6x4x8xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x8xf32>
  // expected-remark @below {{'linalg.generic' writes the interior of the padded buffer read after it: no copy into it (saves 1536 B of DRAM traffic)}}
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<1x4x4x8xf32>) outs(%a : memref<1x4x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  }
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x6x4x8xf32>
  linalg.map outs(%padded : memref<1x6x4x8xf32>)
    (%init: f32) {
      linalg.yield %v : f32
    }
  %interior = memref.subview %padded[0, 1, 0, 0] [1, 4, 4, 8] [1, 1, 1, 1] : memref<1x6x4x8xf32> to memref<1x4x4x8xf32, strided<[192, 32, 8, 1], offset: 32>>
  memref.copy %a, %interior : memref<1x4x4x8xf32> to memref<1x4x4x8xf32, strided<[192, 32, 8, 1], offset: 32>>
  linalg.copy ins(%padded : memref<1x6x4x8xf32>) outs(%y : memref<1x6x4x8xf32>)
  return
}

// -----

// The pad value is computed per element from its index (bufferization's map
// for a tensor.pad whose value depends on the channel): no single fill value,
// so the copy stays.

// CHECK-LABEL: func.func @pad_value$per_element
// CHECK:         linalg.map
// CHECK:         memref.copy
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @pad_value$per_element(%x: memref<1x4x4x8xf32>, %y: memref<1x6x4x8xf32>) {
  %a = memref.alloc() {alignment = 64 : i64} : memref<1x4x4x8xf32>
  linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<1x4x4x8xf32>) outs(%a : memref<1x4x4x8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  }
  %padded = memref.alloc() {alignment = 64 : i64} : memref<1x6x4x8xf32>
  linalg.map outs(%padded : memref<1x6x4x8xf32>)
    (%init: f32) {
      %c = linalg.index 3 : index
      %i = arith.index_cast %c : index to i32
      %v = arith.sitofp %i : i32 to f32
      linalg.yield %v : f32
    }
  %interior = memref.subview %padded[0, 1, 0, 0] [1, 4, 4, 8] [1, 1, 1, 1] : memref<1x6x4x8xf32> to memref<1x4x4x8xf32, strided<[192, 32, 8, 1], offset: 32>>
  memref.copy %a, %interior : memref<1x4x4x8xf32> to memref<1x4x4x8xf32, strided<[192, 32, 8, 1], offset: 32>>
  linalg.copy ins(%padded : memref<1x6x4x8xf32>) outs(%y : memref<1x6x4x8xf32>)
  return
}
