// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table --timing-only | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline | not atvoss-sim - --report=table 2>&1 | FileCheck %s --check-prefix=RANGE

// An embedding lookup as the ONNX importer writes a Gather by runtime indices:
// a loop over the 14 token ids, each reading its id (a negative one counts from
// the end) and copying that row of the 50x16 table into its place. Bufferized,
// the id is a scalar load and the row one DMA into SRAM and one out: 896 B
// read of the 3,200 B table.

// CHECK-LABEL: func.func @embed
// CHECK:         scf.for %[[T:.*]] = %c0 to %c14 step %c1 {
// CHECK:           %[[ID:.*]] = memref.load %arg1[%[[T]]] : memref<14xi64>
// CHECK:           %[[ROW:.*]] = memref.subview %arg0[%{{.*}}, 0] [1, 16] [1, 1] : memref<50x16xf32> to memref<1x16xf32, strided<[16, 1], offset: ?>>
// CHECK:           %[[PLACE:.*]] = memref.subview %{{.*}}[%[[T]], 0] [1, 16] [1, 1]
// CHECK:           "npu.dma_load"(%[[ROW]], %{{.*}})
// CHECK:           "npu.dma_store"(%{{.*}}, %[[PLACE]])
// CHECK-NOT:     linalg.generic

// SIM:           DRAM read / write            896 / 896 B

// Random ids run past the table: the simulator names the view, never reads
// outside the table.
// RANGE:         error: memref.subview: slice [{{[0-9]+}}, +1, step 1] of dimension 0 is out of bounds of size 50

func.func @embed(%table: tensor<50x16xf32>, %ids: tensor<14xi64>) -> tensor<14x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c14 = arith.constant 14 : index
  %zero = arith.constant 0 : i64
  %rows = arith.constant 50 : i64
  %init = tensor.empty() : tensor<14x16xf32>
  %r = scf.for %s = %c0 to %c14 step %c1 iter_args(%acc = %init) -> (tensor<14x16xf32>) {
    %id = tensor.extract %ids[%s] : tensor<14xi64>
    %negative = arith.cmpi slt, %id, %zero : i64
    %from_end = arith.addi %id, %rows : i64
    %wrapped = arith.select %negative, %from_end, %id : i64
    %i = arith.index_cast %wrapped : i64 to index
    %row = tensor.extract_slice %table[%i, 0] [1, 16] [1, 1] : tensor<50x16xf32> to tensor<1x16xf32>
    %next = tensor.insert_slice %row into %acc[%s, 0] [1, 16] [1, 1] : tensor<1x16xf32> into tensor<14x16xf32>
    scf.yield %next : tensor<14x16xf32>
  }
  return %r : tensor<14x16xf32>
}
