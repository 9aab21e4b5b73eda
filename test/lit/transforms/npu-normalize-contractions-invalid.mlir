// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-normalize-contractions

// The pass reads structure only; malformed input is rejected by the parser and
// verifier before it runs, at its location.

func.func @generic$maps_do_not_match(%a: tensor<8x4xf32>, %b: tensor<4x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  // expected-error @below {{'linalg.generic' op inferred input/output operand #1 has shape's dimension #0 to be 8, but found 4}}
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(k, n) -> (k, n)>,
                                        affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<8x4xf32>, tensor<4x8xf32>) outs(%c : tensor<8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %r : tensor<8x8xf32>
}

// -----

// On memrefs (after bufferization) a contraction is not rewritten: the pass
// says so at the op.

func.func @generic$on_memrefs(%a: memref<8x4xf32>, %b: memref<8x4xf32>, %c: memref<8x8xf32>) {
  // expected-remark @below {{'linalg.generic' is a contraction but not rewritten: contractions are normalized on tensors, before bufferization}}
  linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
                                   affine_map<(m, n, k) -> (m, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x4xf32>, memref<8x4xf32>) outs(%c : memref<8x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
