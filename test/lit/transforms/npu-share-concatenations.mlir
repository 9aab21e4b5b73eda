// RUN: atvoss-opt %s -split-input-file -npu-share-concatenations | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-share-concatenations
// RUN: atvoss-opt %s -split-input-file --npu-pipeline | FileCheck %s --check-prefix=PROGRAM

// A dense block's concatenations: each layer's input is Concat(previous
// input, new features) along channels. They become inserts into one tensor of
// the last one's shape; the layers read the earlier concatenations as its
// slices, so no concatenation copies the one before.

// CHECK-LABEL: func.func @dense_block
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<1x8x8x24xf32>
// CHECK:         %[[T0:.*]] = tensor.insert_slice %arg0 into %[[E]][0, 0, 0, 0] [1, 8, 8, 8]
// CHECK:         %[[T1:.*]] = tensor.insert_slice %{{.*}} into %[[T0]][0, 0, 0, 8] [1, 8, 8, 8]
// CHECK:         %[[V1:.*]] = tensor.extract_slice %[[T1]][0, 0, 0, 0] [1, 8, 8, 16]
// CHECK:         linalg.generic {{.*}} ins(%[[V1]] : tensor<1x8x8x16xf32>)
// CHECK:         %[[T2:.*]] = tensor.insert_slice %{{.*}} into %[[T1]][0, 0, 0, 16] [1, 8, 8, 8]
// CHECK-NEXT:    return %[[T2]]
// CHECK-NOT:     tensor.empty() : tensor<1x8x8x16xf32>
// PROGRAM-LABEL: func.func @dense_block
// PROGRAM-NOT:   memref<1x8x8x16xf32>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @dense_block(%x: tensor<1x8x8x8xf32>) -> tensor<1x8x8x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x8x8x8xf32>
  %f1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x8x8x8xf32>) outs(%e1 : tensor<1x8x8x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %m = arith.maximumf %p, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x8x8xf32>
  %c1e = tensor.empty() : tensor<1x8x8x16xf32>
  %c1a = tensor.insert_slice %x into %c1e[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x16xf32>
  %c1 = tensor.insert_slice %f1 into %c1a[0, 0, 0, 8] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x16xf32>
  %e2 = tensor.empty() : tensor<1x8x8x8xf32>
  %f2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3 + 8)>, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c1 : tensor<1x8x8x16xf32>) outs(%e2 : tensor<1x8x8x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %m = arith.maximumf %p, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x8x8xf32>
  %c2e = tensor.empty() : tensor<1x8x8x24xf32>
  %c2a = tensor.insert_slice %c1 into %c2e[0, 0, 0, 0] [1, 8, 8, 16] [1, 1, 1, 1] : tensor<1x8x8x16xf32> into tensor<1x8x8x24xf32>
  // expected-remark @below {{2 concatenations, each extending the one before, write into one tensor: the earlier ones are its slices (4096 B not copied again)}}
  %c2 = tensor.insert_slice %f2 into %c2a[0, 0, 0, 16] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  return %c2 : tensor<1x8x8x24xf32>
}

// -----

// The same block as torchvision's DenseNet exports it: each layer's input is
// the Concat of all the features made so far, (x, f1), then (x, f1, f2), not
// of the previous input and the new features. The same: the later one is
// the shared tensor, the earlier its slice.

// CHECK-LABEL: func.func @dense_block_all_features
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<1x8x8x24xf32>
// CHECK:         %[[T0:.*]] = tensor.insert_slice %arg0 into %[[E]][0, 0, 0, 0] [1, 8, 8, 8]
// CHECK:         %[[T1:.*]] = tensor.insert_slice %{{.*}} into %[[T0]][0, 0, 0, 8] [1, 8, 8, 8]
// CHECK:         %[[V1:.*]] = tensor.extract_slice %[[T1]][0, 0, 0, 0] [1, 8, 8, 16]
// CHECK:         linalg.generic {{.*}} ins(%[[V1]] : tensor<1x8x8x16xf32>)
// CHECK:         %[[T2:.*]] = tensor.insert_slice %{{.*}} into %[[T1]][0, 0, 0, 16] [1, 8, 8, 8]
// CHECK-NEXT:    return %[[T2]]
// CHECK-NOT:     tensor.empty() : tensor<1x8x8x16xf32>
// PROGRAM-LABEL: func.func @dense_block_all_features
// PROGRAM-NOT:   memref<1x8x8x16xf32>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @dense_block_all_features(%x: tensor<1x8x8x8xf32>) -> tensor<1x8x8x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x8x8x8xf32>
  %f1 = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x8x8x8xf32>) outs(%e1 : tensor<1x8x8x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %m = arith.maximumf %p, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x8x8xf32>
  %c1e = tensor.empty() : tensor<1x8x8x16xf32>
  %c1a = tensor.insert_slice %x into %c1e[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x16xf32>
  %c1 = tensor.insert_slice %f1 into %c1a[0, 0, 0, 8] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x16xf32>
  %e2 = tensor.empty() : tensor<1x8x8x8xf32>
  %f2 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3 + 8)>, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c1 : tensor<1x8x8x16xf32>) outs(%e2 : tensor<1x8x8x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %m = arith.maximumf %p, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x8x8x8xf32>
  %c2e = tensor.empty() : tensor<1x8x8x24xf32>
  %c2a = tensor.insert_slice %x into %c2e[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  %c2b = tensor.insert_slice %f1 into %c2a[0, 0, 0, 8] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  // expected-remark @below {{2 concatenations, each extending the one before, write into one tensor: the earlier ones are its slices (4096 B not copied again)}}
  %c2 = tensor.insert_slice %f2 into %c2b[0, 0, 0, 16] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  return %c2 : tensor<1x8x8x24xf32>
}

// -----

// The same pieces in another order: (x, y), then (y, x, z). The first is not
// the second's first channels: each keeps its own tensor (no remark).

// CHECK-LABEL: func.func @pieces_in_another_order$unchanged
// CHECK:         tensor.empty() : tensor<1x8x8x16xf32>
// CHECK:         tensor.empty() : tensor<1x8x8x24xf32>
// CHECK-NOT:     tensor.extract_slice
// PROGRAM-LABEL: func.func @pieces_in_another_order$unchanged
func.func @pieces_in_another_order$unchanged(%x: tensor<1x8x8x8xf32>, %y: tensor<1x8x8x8xf32>, %z: tensor<1x8x8x8xf32>) -> (tensor<1x8x8x16xf32>, tensor<1x8x8x24xf32>) {
  %c1e = tensor.empty() : tensor<1x8x8x16xf32>
  %c1a = tensor.insert_slice %x into %c1e[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x16xf32>
  %c1 = tensor.insert_slice %y into %c1a[0, 0, 0, 8] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x16xf32>
  %c2e = tensor.empty() : tensor<1x8x8x24xf32>
  %c2a = tensor.insert_slice %y into %c2e[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  %c2b = tensor.insert_slice %x into %c2a[0, 0, 0, 8] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  %c2 = tensor.insert_slice %z into %c2b[0, 0, 0, 16] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  return %c1, %c2 : tensor<1x8x8x16xf32>, tensor<1x8x8x24xf32>
}

// -----

// Two concatenations of all the features extend the same one, (x, y), with
// different third pieces: one buffer cannot hold both (no remark).

// CHECK-LABEL: func.func @all_features_extended_twice$unchanged
// CHECK-COUNT-3: tensor.empty()
// CHECK-NOT:     tensor.extract_slice
func.func @all_features_extended_twice$unchanged(%x: tensor<1x8x8x8xf32>, %y: tensor<1x8x8x8xf32>, %z: tensor<1x8x8x8xf32>) -> (tensor<1x8x8x16xf32>, tensor<1x8x8x24xf32>, tensor<1x8x8x24xf32>) {
  %c1e = tensor.empty() : tensor<1x8x8x16xf32>
  %c1a = tensor.insert_slice %x into %c1e[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x16xf32>
  %c1 = tensor.insert_slice %y into %c1a[0, 0, 0, 8] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x16xf32>
  %c2e = tensor.empty() : tensor<1x8x8x24xf32>
  %c2a = tensor.insert_slice %x into %c2e[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  %c2b = tensor.insert_slice %y into %c2a[0, 0, 0, 8] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  %c2 = tensor.insert_slice %z into %c2b[0, 0, 0, 16] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  %c3e = tensor.empty() : tensor<1x8x8x24xf32>
  %c3a = tensor.insert_slice %x into %c3e[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  %c3b = tensor.insert_slice %y into %c3a[0, 0, 0, 8] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  %c3 = tensor.insert_slice %x into %c3b[0, 0, 0, 16] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  return %c1, %c2, %c3 : tensor<1x8x8x16xf32>, tensor<1x8x8x24xf32>, tensor<1x8x8x24xf32>
}

// -----

// The first piece is a concatenation along another dim: each keeps its own
// tensor (no remark).

// CHECK-LABEL: func.func @other_dim$unchanged
// CHECK:         tensor.empty() : tensor<1x16x8x8xf32>
// CHECK:         tensor.empty() : tensor<1x16x8x16xf32>
func.func @other_dim$unchanged(%x: tensor<1x8x8x8xf32>, %y: tensor<1x16x8x8xf32>) -> tensor<1x16x8x16xf32> {
  %c1e = tensor.empty() : tensor<1x16x8x8xf32>
  %c1a = tensor.insert_slice %x into %c1e[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x16x8x8xf32>
  %c1 = tensor.insert_slice %x into %c1a[0, 8, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x16x8x8xf32>
  %c2e = tensor.empty() : tensor<1x16x8x16xf32>
  %c2a = tensor.insert_slice %c1 into %c2e[0, 0, 0, 0] [1, 16, 8, 8] [1, 1, 1, 1] : tensor<1x16x8x8xf32> into tensor<1x16x8x16xf32>
  %c2 = tensor.insert_slice %y into %c2a[0, 0, 0, 8] [1, 16, 8, 8] [1, 1, 1, 1] : tensor<1x16x8x8xf32> into tensor<1x16x8x16xf32>
  return %c2 : tensor<1x16x8x16xf32>
}

// -----

// Two concatenations extend the same one: one buffer cannot hold both, and
// each keeps its own tensor (no remark).

// CHECK-LABEL: func.func @extended_twice$unchanged
// CHECK-COUNT-3: tensor.empty()
// CHECK-NOT:     tensor.extract_slice
func.func @extended_twice$unchanged(%x: tensor<1x8x8x8xf32>, %y: tensor<1x8x8x8xf32>) -> (tensor<1x8x8x24xf32>, tensor<1x8x8x24xf32>) {
  %c1e = tensor.empty() : tensor<1x8x8x16xf32>
  %c1a = tensor.insert_slice %x into %c1e[0, 0, 0, 0] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x16xf32>
  %c1 = tensor.insert_slice %y into %c1a[0, 0, 0, 8] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x16xf32>
  %c2e = tensor.empty() : tensor<1x8x8x24xf32>
  %c2a = tensor.insert_slice %c1 into %c2e[0, 0, 0, 0] [1, 8, 8, 16] [1, 1, 1, 1] : tensor<1x8x8x16xf32> into tensor<1x8x8x24xf32>
  %c2 = tensor.insert_slice %x into %c2a[0, 0, 0, 16] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  %c3e = tensor.empty() : tensor<1x8x8x24xf32>
  %c3a = tensor.insert_slice %c1 into %c3e[0, 0, 0, 0] [1, 8, 8, 16] [1, 1, 1, 1] : tensor<1x8x8x16xf32> into tensor<1x8x8x24xf32>
  %c3 = tensor.insert_slice %y into %c3a[0, 0, 0, 16] [1, 8, 8, 8] [1, 1, 1, 1] : tensor<1x8x8x8xf32> into tensor<1x8x8x24xf32>
  return %c2, %c3 : tensor<1x8x8x24xf32>, tensor<1x8x8x24xf32>
}

// -----

// A U-Net's skip tensor is made long before the concatenation that reads it
// (the decoder's tensor, made from it, is inserted first): its insert moves
// right after it, into the concatenation's tensor, now made first, so that
// bufferization computes it in its slice (eliminate-empty-tensors needs the
// insert's destination before the piece's own tensor). The decoder's piece is
// inserted after it. (A concatenation that fits the SRAM is left to the
// buffer plan, which may keep it there: this one is 2 MiB.)

// CHECK-LABEL: func.func @skip$inserted_where_made
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<1x128x128x32xf32>
// CHECK:         %[[SKIP:.*]] = linalg.generic
// CHECK:         } -> tensor<1x128x128x16xf32>
// CHECK-NEXT:    %[[S0:.*]] = tensor.insert_slice %[[SKIP]] into %[[E]][0, 0, 0, 16] [1, 128, 128, 16]
// CHECK:         linalg.generic
// CHECK:         %[[UP:.*]] = linalg.generic
// CHECK:         } -> tensor<1x128x128x16xf32>
// CHECK-NEXT:    %[[S1:.*]] = tensor.insert_slice %[[UP]] into %[[S0]][0, 0, 0, 0] [1, 128, 128, 16]
// CHECK-NEXT:    return %[[S1]]
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @skip$inserted_where_made(%x: tensor<1x128x128x16xf32>) -> tensor<1x128x128x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x128x128x16xf32>
  %skip = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x128x128x16xf32>) outs(%e1 : tensor<1x128x128x16xf32>) {
  ^bb0(%p: f32, %o: f32):
    %m = arith.maximumf %p, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x128x128x16xf32>
  %e2 = tensor.empty() : tensor<1x128x128x16xf32>
  %deeper = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%skip : tensor<1x128x128x16xf32>) outs(%e2 : tensor<1x128x128x16xf32>) {
  ^bb0(%p: f32, %o: f32):
    %n = arith.negf %p : f32
    linalg.yield %n : f32
  } -> tensor<1x128x128x16xf32>
  %e3 = tensor.empty() : tensor<1x128x128x16xf32>
  %up = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%deeper : tensor<1x128x128x16xf32>) outs(%e3 : tensor<1x128x128x16xf32>) {
  ^bb0(%p: f32, %o: f32):
    %a = math.absf %p : f32
    linalg.yield %a : f32
  } -> tensor<1x128x128x16xf32>
  %ce = tensor.empty() : tensor<1x128x128x32xf32>
  %c0 = tensor.insert_slice %up into %ce[0, 0, 0, 0] [1, 128, 128, 16] [1, 1, 1, 1] : tensor<1x128x128x16xf32> into tensor<1x128x128x32xf32>
  // expected-remark @below {{concatenation: each piece inserted where it is made, so that it is computed in its slice}}
  %c = tensor.insert_slice %skip into %c0[0, 0, 0, 16] [1, 128, 128, 16] [1, 1, 1, 1] : tensor<1x128x128x16xf32> into tensor<1x128x128x32xf32>
  return %c : tensor<1x128x128x32xf32>
}

// -----

// The same at 4x4: the concatenation (1 KiB) is left to the buffer plan, which
// may keep it in SRAM, its pieces copied there; the inserts stay (no remark).

// CHECK-LABEL: func.func @small$left_to_buffer_plan
// CHECK:         linalg.generic
// CHECK:         linalg.generic
// CHECK:         %[[E:.*]] = tensor.empty() : tensor<1x4x4x16xf32>
// CHECK-NEXT:    tensor.insert_slice %{{.*}} into %[[E]][0, 0, 0, 0] [1, 4, 4, 8]
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @small$left_to_buffer_plan(%x: tensor<1x4x4x8xf32>) -> tensor<1x4x4x16xf32> {
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<1x4x4x8xf32>
  %skip = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x4x4x8xf32>) outs(%e1 : tensor<1x4x4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %m = arith.maximumf %p, %zero : f32
    linalg.yield %m : f32
  } -> tensor<1x4x4x8xf32>
  %e2 = tensor.empty() : tensor<1x4x4x8xf32>
  %up = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%skip : tensor<1x4x4x8xf32>) outs(%e2 : tensor<1x4x4x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    %n = arith.negf %p : f32
    linalg.yield %n : f32
  } -> tensor<1x4x4x8xf32>
  %ce = tensor.empty() : tensor<1x4x4x16xf32>
  %c0 = tensor.insert_slice %up into %ce[0, 0, 0, 0] [1, 4, 4, 8] [1, 1, 1, 1] : tensor<1x4x4x8xf32> into tensor<1x4x4x16xf32>
  %c = tensor.insert_slice %skip into %c0[0, 0, 0, 8] [1, 4, 4, 8] [1, 1, 1, 1] : tensor<1x4x4x8xf32> into tensor<1x4x4x16xf32>
  return %c : tensor<1x4x4x16xf32>
}
