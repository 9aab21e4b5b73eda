// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-decompose-linalg

// The decompositions build tensors: on memrefs it is too late.

func.func @softmax$on_memrefs(%x: memref<4x6xf32>, %y: memref<4x6xf32>) {
  // expected-error @below {{'linalg.softmax' is decomposed on tensors, before bufferization: it cannot run on memrefs}}
  linalg.softmax dimension(1) ins(%x : memref<4x6xf32>) outs(%y : memref<4x6xf32>)
  return
}
