// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-convert-linalg-to-npu

// A linalg op on SRAM tiles that no pattern matches is an error at the op:
// nothing would run it (the fallback engine works on DRAM).

func.func @exp$on_sram(%x: memref<16xf32, 1>, %y: memref<16xf32, 1>) {
  // expected-error @below {{'linalg.generic' on SRAM tiles has no npu instruction: 'math.exp' in the body has no vector-unit instruction}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%x : memref<16xf32, 1>) outs(%y : memref<16xf32, 1>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.exp %a : f32
    linalg.yield %e : f32
  }
  return
}

// -----

func.func @matmul$mixed_on_sram(%a: memref<8x8xf16, 1>, %b: memref<8x8xf32, 1>, %c: memref<8x8xf32, 1>) {
  // expected-error @below {{'linalg.matmul' on SRAM tiles has no npu instruction: the matrix unit takes fp16/fp32/int8 operands of one type, got f16 and f32}}
  linalg.matmul ins(%a, %b : memref<8x8xf16, 1>, memref<8x8xf32, 1>) outs(%c : memref<8x8xf32, 1>)
  return
}
