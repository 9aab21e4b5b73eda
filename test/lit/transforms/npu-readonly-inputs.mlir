// RUN: atvoss-opt %s -split-input-file -npu-readonly-inputs | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-readonly-inputs
// RUN: atvoss-opt %s -split-input-file --pass-pipeline='builtin.module(npu-readonly-inputs, one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map})' \
// RUN:   | FileCheck %s --check-prefix=BUFFERS

// A slice inserted into an input: the tensor arguments are read-only, so
// bufferization copies the input and writes the copy, which is returned.

// CHECK-LABEL: func.func @insert$into_input
// CHECK-SAME:    (%{{.*}}: tensor<4x8xf32> {bufferization.writable = false}, %{{.*}}: tensor<2x8xf32> {bufferization.writable = false, npu.name = "b"})
// BUFFERS-LABEL: func.func @insert$into_input
// BUFFERS-SAME:    (%[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<2x8xf32>
// BUFFERS:         %[[COPY:.*]] = memref.alloc
// BUFFERS:         memref.copy %[[A]], %[[COPY]]
// BUFFERS:         %[[SLICE:.*]] = memref.subview %[[COPY]][1, 0] [2, 8] [1, 1]
// BUFFERS:         memref.copy %[[B]], %[[SLICE]]
// BUFFERS:         return %[[COPY]]
func.func @insert$into_input(%a: tensor<4x8xf32>, %b: tensor<2x8xf32> {npu.name = "b"}) -> tensor<4x8xf32> {
  %r = tensor.insert_slice %b into %a[1, 0] [2, 8] [1, 1] : tensor<2x8xf32> into tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}

// -----

// Left alone: a scalar argument, a function already on memrefs, a declaration.

// CHECK-LABEL: func.func @scalar$and_tensor
// CHECK-SAME:    (%{{.*}}: f32, %{{.*}}: tensor<4xf32> {bufferization.writable = false})
func.func @scalar$and_tensor(%s: f32, %t: tensor<4xf32>) -> tensor<4xf32> {
  return %t : tensor<4xf32>
}
// CHECK-LABEL: func.func @memrefs
// CHECK-SAME:    (%{{.*}}: memref<4xf32>)
// CHECK-NOT:     writable
func.func @memrefs(%m: memref<4xf32>) {
  return
}
// CHECK-LABEL: func.func private @declared(tensor<4xf32>)
func.func private @declared(tensor<4xf32>)
