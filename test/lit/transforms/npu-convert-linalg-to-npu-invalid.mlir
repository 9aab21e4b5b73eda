// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-convert-linalg-to-npu

// A linalg op on SRAM tiles that no pattern matches is an error at the op:
// nothing would run it (the fallback engine works on DRAM).

func.func @sin$on_sram(%x: memref<16xf32, 1>, %y: memref<16xf32, 1>) {
  // expected-error @below {{'linalg.generic' on SRAM tiles has no npu instruction: 'math.sin' in the body has no vector-unit instruction}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%x : memref<16xf32, 1>) outs(%y : memref<16xf32, 1>) {
  ^bb0(%a: f32, %o: f32):
    %e = math.sin %a : f32
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

// -----

// A product has no vector-unit reduction.
func.func @reduce$product_on_sram(%x: memref<16x64xf32, 1>, %y: memref<16xf32, 1>) {
  // expected-error @below {{'linalg.generic' on SRAM tiles has no npu instruction: the reduction body does more than combine an element with the accumulator by add, max or min}}
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x64xf32, 1>) outs(%y : memref<16xf32, 1>) {
  ^bb0(%in: f32, %acc: f32):
    %p = arith.mulf %in, %acc : f32
    linalg.yield %p : f32
  }
  return
}

// -----

// npu.select reads its condition from a tile: one computed in the body is refused.
func.func @select$computed_condition(%x: memref<16xf32, 1>, %y: memref<16xf32, 1>) {
  // expected-error @below {{'linalg.generic' on SRAM tiles has no npu instruction: a comparison whose mask is not the op's result}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%x : memref<16xf32, 1>) outs(%y : memref<16xf32, 1>) {
  ^bb0(%a: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    %c = arith.cmpf olt, %a, %zero : f32
    %r = arith.select %c, %zero, %a : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// On SRAM tiles too, a conv strategy other than a string naming one is the
// op's error.

func.func @conv$malformed_strategy_on_sram(%x: memref<1x4x4x8xf16, 1>, %w: memref<1x1x8x16xf16, 1>, %y: memref<1x4x4x16xf32, 1>) {
  // expected-error @below {{'linalg.conv_2d_nhwc_hwcf' on SRAM tiles has no npu instruction: malformed npu.conv_strategy "winograd": expected one of "implicit-gemm", "direct", "im2col"}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, npu.conv_strategy = "winograd"}
    ins(%x, %w : memref<1x4x4x8xf16, 1>, memref<1x1x8x16xf16, 1>) outs(%y : memref<1x4x4x16xf32, 1>)
  return
}

// -----

// An epilogue other than a string naming an activation, or a clip bound other
// than a float, is the op's error (a fuzzed npu.activation of 7 : i64 was an
// internal error).

func.func @conv$malformed_activation(%x: memref<1x4x4x8xf16, 1>, %w: memref<1x1x8x16xf16, 1>, %y: memref<1x4x4x16xf32, 1>) {
  // expected-error @below {{'linalg.conv_2d_nhwc_hwcf' on SRAM tiles has no npu instruction: malformed npu.activation 7 : i64: expected one of none, relu, relu6, clip, gelu, sigmoid, tanh, exp, log, erf, reciprocal, rsqrt, sqrt, neg, abs}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, npu.activation = 7 : i64}
    ins(%x, %w : memref<1x4x4x8xf16, 1>, memref<1x1x8x16xf16, 1>) outs(%y : memref<1x4x4x16xf32, 1>)
  return
}

// -----

func.func @conv$malformed_clip_bound(%x: memref<1x4x4x8xf16, 1>, %w: memref<1x1x8x16xf16, 1>, %y: memref<1x4x4x16xf32, 1>) {
  // expected-error @below {{'linalg.conv_2d_nhwc_hwcf' on SRAM tiles has no npu instruction: malformed npu.clip_max "six": expected a float}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, npu.activation = "clip", npu.clip_min = 0.0 : f64, npu.clip_max = "six"}
    ins(%x, %w : memref<1x4x4x8xf16, 1>, memref<1x1x8x16xf16, 1>) outs(%y : memref<1x4x4x16xf32, 1>)
  return
}

// -----

// Unordered of two values (either is NaN) has no vector-unit compare; of one
// value with itself it is IsNaN, npu.compare "ne".
func.func @compare$unordered_pair(%x: memref<16xf32, 1>, %y: memref<16xf32, 1>, %c: memref<16xi1, 1>) {
  // expected-error @below {{'linalg.generic' on SRAM tiles has no npu instruction: a 'arith.cmpf' predicate or operands the vector unit has no compare for}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                                   affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%x, %y : memref<16xf32, 1>, memref<16xf32, 1>) outs(%c : memref<16xi1, 1>) {
  ^bb0(%a: f32, %b: f32, %o: i1):
    %r = arith.cmpf uno, %a, %b : f32
    linalg.yield %r : i1
  }
  return
}

// -----

// Xor of two masks would need the negation of one as a select's operand.
func.func @mask$xor_pair(%a: memref<16xi1, 1>, %b: memref<16xi1, 1>, %c: memref<16xi1, 1>) {
  // expected-error @below {{'linalg.generic' on SRAM tiles has no npu instruction: 'arith.xori' in the body has no vector-unit instruction}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>,
                                   affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%a, %b : memref<16xi1, 1>, memref<16xi1, 1>) outs(%c : memref<16xi1, 1>) {
  ^bb0(%x: i1, %y: i1, %o: i1):
    %r = arith.xori %x, %y : i1
    linalg.yield %r : i1
  }
  return
}

// -----

// Rounding alone, not saturated to int8, is no quantisation.
func.func @round$not_quantized(%x: memref<16xf32, 1>, %y: memref<16xf32, 1>) {
  // expected-error @below {{'linalg.generic' on SRAM tiles has no npu instruction: 'math.roundeven' in the body has no vector-unit instruction}}
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%x : memref<16xf32, 1>) outs(%y : memref<16xf32, 1>) {
  ^bb0(%a: f32, %o: f32):
    %r = math.roundeven %a : f32
    linalg.yield %r : f32
  }
  return
}
