// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-promote-to-sram

// Tile sizes that do not match the op's loops are rejected at the op.

func.func @matmul$bad_tile_attr(%a: memref<64x64xf16>, %b: memref<64x64xf16>, %c: memref<64x64xf32>) {
  // expected-error @below {{'linalg.matmul' has malformed npu.tile_sizes/npu.loop_order}}
  linalg.matmul {npu.tile_sizes = array<i64: 32, 32>, npu.loop_order = array<i64: 0, 1, 2>}
    ins(%a, %b : memref<64x64xf16>, memref<64x64xf16>) outs(%c : memref<64x64xf32>)
  return
}

// -----

// Tile sizes given as an i32 array (they are i64) are malformed too.

func.func @matmul$i32_tile_attr(%a: memref<64x64xf16>, %b: memref<64x64xf16>, %c: memref<64x64xf32>) {
  // expected-error @below {{'linalg.matmul' has malformed npu.tile_sizes/npu.loop_order}}
  linalg.matmul {npu.tile_sizes = array<i32: 32, 32, 32>, npu.loop_order = array<i64: 0, 1, 2>}
    ins(%a, %b : memref<64x64xf16>, memref<64x64xf16>) outs(%c : memref<64x64xf32>)
  return
}

// -----

// An op annotated for tiling that the NPU cannot run is an error, not a crash.

func.func @matmul$mixed_types(%a: memref<64x64xf16>, %b: memref<64x64xf32>, %c: memref<64x64xf32>) {
  // expected-error @below {{'linalg.matmul' cannot be lowered: the matrix unit takes fp16/fp32/int8 operands of one type, got f16 and f32}}
  linalg.matmul {npu.tile_sizes = array<i64: 32, 32, 32>, npu.loop_order = array<i64: 0, 1, 2>}
    ins(%a, %b : memref<64x64xf16>, memref<64x64xf32>) outs(%c : memref<64x64xf32>)
  return
}
