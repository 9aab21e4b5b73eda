// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-verify

//===----------------------------------------------------------------------===//
// Memory spaces
//===----------------------------------------------------------------------===//

func.func @matmul$rhs_in_dram(%a: memref<64x32xf16, 1>, %b: memref<32x64xf16>, %c: memref<64x64xf32, 1>) {
  // expected-error @below {{'npu.matmul' op rhs must be in SRAM (memory space 1), got 'memref<32x64xf16>'}}
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<64x32xf16, 1>, memref<32x64xf16>, memref<64x64xf32, 1>) -> ()
  return
}

// -----

func.func @alloc$in_dram() {
  // expected-error @below {{'npu.alloc' op result must be in SRAM (memory space 1), got 'memref<64xf16>'}}
  %a = "npu.alloc"() : () -> memref<64xf16>
  return
}

// -----

func.func @dma_load$source_in_sram(%src: memref<64xf16, 1>, %dst: memref<64xf16, 1>) {
  // expected-error @below {{'npu.dma_load' op source must be in DRAM, got SRAM 'memref<64xf16, 1>'}}
  %t = "npu.dma_load"(%src, %dst) {channel = 0 : i64} : (memref<64xf16, 1>, memref<64xf16, 1>) -> !npu.token
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}

// -----

func.func @dma_load$target_in_dram(%src: memref<64xf16>, %dst: memref<64xf16>) {
  // expected-error @below {{'npu.dma_load' op target must be in SRAM (memory space 1), got 'memref<64xf16>'}}
  %t = "npu.dma_load"(%src, %dst) {channel = 0 : i64} : (memref<64xf16>, memref<64xf16>) -> !npu.token
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}

// -----

func.func @dma_store$source_in_dram(%src: memref<64xf16>, %dst: memref<64xf16>) {
  // expected-error @below {{'npu.dma_store' op source must be in SRAM (memory space 1), got 'memref<64xf16>'}}
  %t = "npu.dma_store"(%src, %dst) {channel = 0 : i64} : (memref<64xf16>, memref<64xf16>) -> !npu.token
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}

// -----

func.func @dma_store$target_in_sram(%src: memref<64xf16, 1>, %dst: memref<64xf16, 1>) {
  // expected-error @below {{'npu.dma_store' op target must be in DRAM, got SRAM 'memref<64xf16, 1>'}}
  %t = "npu.dma_store"(%src, %dst) {channel = 0 : i64} : (memref<64xf16, 1>, memref<64xf16, 1>) -> !npu.token
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}

// -----

func.func @dealloc$in_dram(%a: memref<64xf16>) {
  // expected-error @below {{'npu.dealloc' op buffer must be in SRAM (memory space 1), got 'memref<64xf16>'}}
  "npu.dealloc"(%a) : (memref<64xf16>) -> ()
  return
}

//===----------------------------------------------------------------------===//
// Shapes, element types and attributes
//===----------------------------------------------------------------------===//

// -----

func.func @matmul$contraction_mismatch(%a: memref<64x32xf16, 1>, %b: memref<16x64xf16, 1>, %c: memref<64x64xf32, 1>) {
  // expected-error @below {{'npu.matmul' op lhs is 64x32 but rhs is 16x64: contraction sizes 32 and 16 differ}}
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<64x32xf16, 1>, memref<16x64xf16, 1>, memref<64x64xf32, 1>) -> ()
  return
}

// -----

func.func @matmul$output_shape(%a: memref<64x32xf16, 1>, %b: memref<32x64xf16, 1>, %c: memref<64x32xf32, 1>) {
  // expected-error @below {{'npu.matmul' op output is 64x32, expected 64x64 (lhs rows x rhs columns)}}
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<64x32xf16, 1>, memref<32x64xf16, 1>, memref<64x32xf32, 1>) -> ()
  return
}

// -----

func.func @matmul$lhs_rank(%a: memref<64xf16, 1>, %b: memref<32x64xf16, 1>, %c: memref<64x64xf32, 1>) {
  // expected-error @below {{'npu.matmul' op lhs must be rank 2, got 'memref<64xf16, 1>'}}
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<64xf16, 1>, memref<32x64xf16, 1>, memref<64x64xf32, 1>) -> ()
  return
}

// -----

func.func @matmul$bias_size(%a: memref<64x32xf16, 1>, %b: memref<32x64xf16, 1>, %c: memref<64x64xf32, 1>, %bias: memref<32xf32, 1>) {
  // expected-error @below {{'npu.matmul' op bias must be rank 1 of size N = 64, got 'memref<32xf32, 1>'}}
  "npu.matmul"(%a, %b, %c, %bias) {accumulate = false, activation = "none"} : (memref<64x32xf16, 1>, memref<32x64xf16, 1>, memref<64x64xf32, 1>, memref<32xf32, 1>) -> ()
  return
}

// -----

func.func @matmul$mixed_inputs(%a: memref<64x32xf16, 1>, %b: memref<32x64xf32, 1>, %c: memref<64x64xf32, 1>) {
  // expected-error @below {{'npu.matmul' op lhs element type f16 and rhs element type f32 differ}}
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<64x32xf16, 1>, memref<32x64xf32, 1>, memref<64x64xf32, 1>) -> ()
  return
}

// -----

func.func @matmul$f64(%a: memref<64x32xf64, 1>, %b: memref<32x64xf64, 1>, %c: memref<64x64xf64, 1>) {
  // expected-error @below {{'npu.matmul' op element type f64 is not supported (expected one of f16, f32, i8)}}
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<64x32xf64, 1>, memref<32x64xf64, 1>, memref<64x64xf64, 1>) -> ()
  return
}

// -----

func.func @matmul$i8_to_f32(%a: memref<64x32xi8, 1>, %b: memref<32x64xi8, 1>, %c: memref<64x64xf32, 1>) {
  // expected-error @below {{'npu.matmul' op output element type f32 must be i8 (the input type) or i32 (the accumulator type)}}
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<64x32xi8, 1>, memref<32x64xi8, 1>, memref<64x64xf32, 1>) -> ()
  return
}

// -----

func.func @matmul$clip_min_above_max(%a: memref<64x32xf16, 1>, %b: memref<32x64xf16, 1>, %c: memref<64x64xf16, 1>) {
  // expected-error @below {{'npu.matmul' op clip_min 6.0 exceeds clip_max 0.0}}
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "clip", clip_min = 6.0 : f64, clip_max = 0.0 : f64} : (memref<64x32xf16, 1>, memref<32x64xf16, 1>, memref<64x64xf16, 1>) -> ()
  return
}

// -----

func.func @conv2d$input_channels(%in: memref<1x10x10x16xf16, 1>, %w: memref<3x3x8x32xf16, 1>, %out: memref<1x8x8x32xf32, 1>) {
  // expected-error @below {{'npu.conv2d' op input channels differ: input (NHWC) has 16, filter (HWCF) has 8}}
  "npu.conv2d"(%in, %w, %out) {accumulate = false, activation = "none", strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (memref<1x10x10x16xf16, 1>, memref<3x3x8x32xf16, 1>, memref<1x8x8x32xf32, 1>) -> ()
  return
}

// -----

func.func @conv2d$output_channels(%in: memref<1x10x10x16xf16, 1>, %w: memref<3x3x16x32xf16, 1>, %out: memref<1x8x8x16xf32, 1>) {
  // expected-error @below {{'npu.conv2d' op output channels differ: filter (HWCF) has 32, output (NHWC) has 16}}
  "npu.conv2d"(%in, %w, %out) {accumulate = false, activation = "none", strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (memref<1x10x10x16xf16, 1>, memref<3x3x16x32xf16, 1>, memref<1x8x8x16xf32, 1>) -> ()
  return
}

// -----

func.func @conv2d$batch(%in: memref<2x10x10x16xf16, 1>, %w: memref<3x3x16x32xf16, 1>, %out: memref<1x8x8x32xf32, 1>) {
  // expected-error @below {{'npu.conv2d' op batch sizes differ: input has 2, output has 1}}
  "npu.conv2d"(%in, %w, %out) {accumulate = false, activation = "none", strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (memref<2x10x10x16xf16, 1>, memref<3x3x16x32xf16, 1>, memref<1x8x8x32xf32, 1>) -> ()
  return
}

// -----

func.func @conv2d$output_size(%in: memref<1x10x10x16xf16, 1>, %w: memref<3x3x16x32xf16, 1>, %out: memref<1x5x8x32xf32, 1>) {
  // expected-error @below {{'npu.conv2d' op output height is 5, expected (10 - 2*(3-1) - 1) / 1 + 1 = 6}}
  "npu.conv2d"(%in, %w, %out) {accumulate = false, activation = "none", strides = array<i64: 1, 1>, dilations = array<i64: 2, 1>} : (memref<1x10x10x16xf16, 1>, memref<3x3x16x32xf16, 1>, memref<1x5x8x32xf32, 1>) -> ()
  return
}

// -----

func.func @conv2d$window_too_big(%in: memref<1x4x10x16xf16, 1>, %w: memref<3x3x16x32xf16, 1>, %out: memref<1x1x8x32xf32, 1>) {
  // expected-error @below {{'npu.conv2d' op window does not fit: input height 4 is smaller than the dilated kernel height 5}}
  "npu.conv2d"(%in, %w, %out) {accumulate = false, activation = "none", strides = array<i64: 1, 1>, dilations = array<i64: 2, 1>} : (memref<1x4x10x16xf16, 1>, memref<3x3x16x32xf16, 1>, memref<1x1x8x32xf32, 1>) -> ()
  return
}

// -----

func.func @conv2d$zero_stride(%in: memref<1x10x10x16xf16, 1>, %w: memref<3x3x16x32xf16, 1>, %out: memref<1x8x8x32xf32, 1>) {
  // expected-error @below {{'npu.conv2d' op strides must have 2 positive entries, got array<i64: 1, 0>}}
  "npu.conv2d"(%in, %w, %out) {accumulate = false, activation = "none", strides = array<i64: 1, 0>, dilations = array<i64: 1, 1>} : (memref<1x10x10x16xf16, 1>, memref<3x3x16x32xf16, 1>, memref<1x8x8x32xf32, 1>) -> ()
  return
}

// -----

func.func @conv2d$filter_rank(%in: memref<1x10x10x16xf16, 1>, %w: memref<3x3x16xf16, 1>, %out: memref<1x8x8x32xf32, 1>) {
  // expected-error @below {{'npu.conv2d' op filter must be rank 4, got 'memref<3x3x16xf16, 1>'}}
  "npu.conv2d"(%in, %w, %out) {accumulate = false, activation = "none", strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (memref<1x10x10x16xf16, 1>, memref<3x3x16xf16, 1>, memref<1x8x8x32xf32, 1>) -> ()
  return
}

// -----

func.func @conv2d$bias_size(%in: memref<1x10x10x16xf16, 1>, %w: memref<3x3x16x32xf16, 1>, %out: memref<1x8x8x32xf32, 1>, %bias: memref<16xf32, 1>) {
  // expected-error @below {{'npu.conv2d' op bias must be rank 1 of size F = 32, got 'memref<16xf32, 1>'}}
  "npu.conv2d"(%in, %w, %out, %bias) {accumulate = false, activation = "none", strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (memref<1x10x10x16xf16, 1>, memref<3x3x16x32xf16, 1>, memref<1x8x8x32xf32, 1>, memref<16xf32, 1>) -> ()
  return
}

// -----

func.func @conv2d$clip_without_bounds(%in: memref<1x10x10x16xf16, 1>, %w: memref<3x3x16x32xf16, 1>, %out: memref<1x8x8x32xf32, 1>) {
  // expected-error @below {{'npu.conv2d' op activation 'clip' needs both clip_min and clip_max}}
  "npu.conv2d"(%in, %w, %out) {accumulate = false, activation = "clip", clip_min = 0.0 : f64, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (memref<1x10x10x16xf16, 1>, memref<3x3x16x32xf16, 1>, memref<1x8x8x32xf32, 1>) -> ()
  return
}

// -----

func.func @depthwise_conv2d$output_channels(%in: memref<1x17x17x32xf16, 1>, %w: memref<3x3x32xf16, 1>, %out: memref<1x8x8x16xf16, 1>) {
  // expected-error @below {{'npu.depthwise_conv2d' op channels differ: input has 32, output has 16}}
  "npu.depthwise_conv2d"(%in, %w, %out) {activation = "relu6", strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>} : (memref<1x17x17x32xf16, 1>, memref<3x3x32xf16, 1>, memref<1x8x8x16xf16, 1>) -> ()
  return
}

// -----

func.func @depthwise_conv2d$output_size(%in: memref<1x17x17x32xf16, 1>, %w: memref<3x3x32xf16, 1>, %out: memref<1x8x9x32xf16, 1>) {
  // expected-error @below {{'npu.depthwise_conv2d' op output width is 9, expected (17 - 1*(3-1) - 1) / 2 + 1 = 8}}
  "npu.depthwise_conv2d"(%in, %w, %out) {activation = "none", strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>} : (memref<1x17x17x32xf16, 1>, memref<3x3x32xf16, 1>, memref<1x8x9x32xf16, 1>) -> ()
  return
}

// -----

func.func @elementwise$lhs_shape(%a: memref<8x32xf16, 1>, %b: memref<8x64xf16, 1>, %c: memref<8x64xf16, 1>) {
  // expected-error @below {{'npu.elementwise' op lhs shape 8x32 differs from output shape 8x64}}
  "npu.elementwise"(%a, %b, %c) {kind = "add"} : (memref<8x32xf16, 1>, memref<8x64xf16, 1>, memref<8x64xf16, 1>) -> ()
  return
}

// -----

func.func @elementwise$rhs_broadcast(%a: memref<8x64xf16, 1>, %b: memref<2x64xf16, 1>, %c: memref<8x64xf16, 1>) {
  // expected-error @below {{'npu.elementwise' op rhs shape 2x64 does not broadcast to output shape 8x64}}
  "npu.elementwise"(%a, %b, %c) {kind = "mul"} : (memref<8x64xf16, 1>, memref<2x64xf16, 1>, memref<8x64xf16, 1>) -> ()
  return
}

// -----

func.func @elementwise$element_types(%a: memref<8x64xf16, 1>, %b: memref<64xf32, 1>, %c: memref<8x64xf16, 1>) {
  // expected-error @below {{'npu.elementwise' op element types differ: lhs f16, rhs f32, output f16}}
  "npu.elementwise"(%a, %b, %c) {kind = "add"} : (memref<8x64xf16, 1>, memref<64xf32, 1>, memref<8x64xf16, 1>) -> ()
  return
}

// -----

func.func @activation$shape(%a: memref<8x64xf16, 1>, %b: memref<8x32xf16, 1>) {
  // expected-error @below {{'npu.activation' op input shape 8x64 differs from output shape 8x32}}
  "npu.activation"(%a, %b) {kind = "gelu"} : (memref<8x64xf16, 1>, memref<8x32xf16, 1>) -> ()
  return
}

// -----

func.func @elementwise$epilogue_of_several_passes(%a: memref<8x64xf32, 1>, %b: memref<8x64xf32, 1>, %c: memref<8x64xf32, 1>) {
  // expected-error @below {{'npu.elementwise' op activation epilogue 'sigmoid' is not one the lanes apply in one pass (none, relu, relu6, clip, neg, abs)}}
  "npu.elementwise"(%a, %b, %c) {kind = "add", activation = "sigmoid"} : (memref<8x64xf32, 1>, memref<8x64xf32, 1>, memref<8x64xf32, 1>) -> ()
  return
}

// -----

func.func @elementwise$epilogue_not_a_string(%a: memref<8x64xf32, 1>, %b: memref<8x64xf32, 1>, %c: memref<8x64xf32, 1>) {
  // expected-error @below {{'npu.elementwise' op activation epilogue 1 : i64 is not one the lanes apply in one pass (none, relu, relu6, clip, neg, abs)}}
  "npu.elementwise"(%a, %b, %c) {kind = "add", activation = 1 : i64} : (memref<8x64xf32, 1>, memref<8x64xf32, 1>, memref<8x64xf32, 1>) -> ()
  return
}

// -----

func.func @elementwise$clip_without_bounds(%a: memref<8x64xf32, 1>, %b: memref<8x64xf32, 1>, %c: memref<8x64xf32, 1>) {
  // expected-error @below {{'npu.elementwise' op activation 'clip' needs both clip_min and clip_max}}
  "npu.elementwise"(%a, %b, %c) {kind = "sub", activation = "clip", clip_max = 0.5 : f64} : (memref<8x64xf32, 1>, memref<8x64xf32, 1>, memref<8x64xf32, 1>) -> ()
  return
}

// -----

func.func @activation$clip_without_bounds(%a: memref<8x64xf16, 1>, %b: memref<8x64xf16, 1>) {
  // expected-error @below {{'npu.activation' op kind 'clip' needs both clip_min and clip_max}}
  "npu.activation"(%a, %b) {kind = "clip"} : (memref<8x64xf16, 1>, memref<8x64xf16, 1>) -> ()
  return
}

// -----

func.func @activation$integer_clip_bound(%a: memref<8x64xf16, 1>, %b: memref<8x64xf16, 1>) {
  // expected-error @below {{'npu.activation' op clip_max must be a float attribute, got 6 : i32}}
  "npu.activation"(%a, %b) {kind = "clip", clip_min = 0.0 : f64, clip_max = 6 : i32} : (memref<8x64xf16, 1>, memref<8x64xf16, 1>) -> ()
  return
}

// -----

func.func @pool2d$output_size(%in: memref<1x17x17x64xf16, 1>, %out: memref<1x7x8x64xf16, 1>) {
  // expected-error @below {{'npu.pool2d' op output height is 7, expected (17 - 1*(3-1) - 1) / 2 + 1 = 8}}
  "npu.pool2d"(%in, %out) {kind = "max", window = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (memref<1x17x17x64xf16, 1>, memref<1x7x8x64xf16, 1>) -> ()
  return
}

// -----

func.func @pool2d$channels(%in: memref<1x17x17x64xf16, 1>, %out: memref<1x8x8x32xf16, 1>) {
  // expected-error @below {{'npu.pool2d' op channels differ: input has 64, output has 32}}
  "npu.pool2d"(%in, %out) {kind = "avg", window = array<i64: 3, 3>, strides = array<i64: 2, 2>} : (memref<1x17x17x64xf16, 1>, memref<1x8x8x32xf16, 1>) -> ()
  return
}

// -----

func.func @pool2d$window_entries(%in: memref<1x17x17x64xf16, 1>, %out: memref<1x8x8x64xf16, 1>) {
  // expected-error @below {{'npu.pool2d' op window must have 2 positive entries, got array<i64: 3, 3, 3>}}
  "npu.pool2d"(%in, %out) {kind = "max", window = array<i64: 3, 3, 3>, strides = array<i64: 2, 2>} : (memref<1x17x17x64xf16, 1>, memref<1x8x8x64xf16, 1>) -> ()
  return
}

// -----

func.func @transpose$not_a_permutation(%in: memref<32x64xf16, 1>, %out: memref<64x32xf16, 1>) {
  // expected-error @below {{'npu.transpose' op permutation array<i64: 0, 0> is not a permutation of 0..1 (the input rank is 2)}}
  "npu.transpose"(%in, %out) {permutation = array<i64: 0, 0>} : (memref<32x64xf16, 1>, memref<64x32xf16, 1>) -> ()
  return
}

// -----

func.func @transpose$output_shape(%in: memref<1x8x8x16xf16, 1>, %out: memref<1x8x16x8xf16, 1>) {
  // expected-error @below {{'npu.transpose' op output shape 1x8x16x8, expected 1x16x8x8 (input 1x8x8x16 permuted by [0, 3, 1, 2])}}
  "npu.transpose"(%in, %out) {permutation = array<i64: 0, 3, 1, 2>} : (memref<1x8x8x16xf16, 1>, memref<1x8x16x8xf16, 1>) -> ()
  return
}

// -----

func.func @im2col$output_shape(%in: memref<1x6x6x8xf16, 1>, %cols: memref<16x64xf16, 1>) {
  // expected-error @below {{'npu.im2col' op output shape 16x64, expected 16x72 = [N*OH*OW, KH*KW*C] with N = 1, OH = 4, OW = 4, KH*KW = 3*3, C = 8}}
  "npu.im2col"(%in, %cols) {window = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (memref<1x6x6x8xf16, 1>, memref<16x64xf16, 1>) -> ()
  return
}

// -----

func.func @im2col$input_rank(%in: memref<6x6x8xf16, 1>, %cols: memref<16x72xf16, 1>) {
  // expected-error @below {{'npu.im2col' op input must be rank 4, got 'memref<6x6x8xf16, 1>'}}
  "npu.im2col"(%in, %cols) {window = array<i64: 3, 3>, strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (memref<6x6x8xf16, 1>, memref<16x72xf16, 1>) -> ()
  return
}

// -----

// Every error of an op is reported, not just the first.
func.func @requantize$types_and_shape(%acc: memref<64x64xf16, 1>, %out: memref<64x32xi32, 1>) {
  // expected-error @below {{'npu.requantize' op input element type must be i32 or f32, got f16}}
  // expected-error @below {{'npu.requantize' op output element type must be i8, got i32}}
  // expected-error @below {{'npu.requantize' op input shape 64x64 differs from output shape 64x32}}
  "npu.requantize"(%acc, %out) {scale = 0.0125 : f64, zero_point = 3 : i64} : (memref<64x64xf16, 1>, memref<64x32xi32, 1>) -> ()
  return
}

// -----

func.func @requantize$scales(%acc: memref<64x64xi32, 1>, %out: memref<64x64xi8, 1>, %scales: memref<1x64xf16, 1>) {
  // expected-error @below {{'npu.requantize' op scales element type must be f32, got f16}}
  "npu.requantize"(%acc, %out, %scales) {scale = 1.0 : f64, zero_point = 0 : i64} : (memref<64x64xi32, 1>, memref<64x64xi8, 1>, memref<1x64xf16, 1>) -> ()
  return
}

// -----

func.func @quantized_add$types_and_shape(%a: memref<64x64xi8, 1>, %b: memref<64x64xf32, 1>, %out: memref<64x32xi8, 1>) {
  // expected-error @below {{'npu.quantized_add' op rhs element type must be i8, got f32}}
  // expected-error @below {{'npu.quantized_add' op lhs shape 64x64 differs from output shape 64x32}}
  "npu.quantized_add"(%a, %b, %out) {lhs_scale = 0.5 : f64, rhs_scale = 0.25 : f64, offset = 3.0 : f64, input_shift = 0 : i64, zero_point = 0 : i64} : (memref<64x64xi8, 1>, memref<64x64xf32, 1>, memref<64x32xi8, 1>) -> ()
  return
}

// -----

func.func @dequantize$types(%q: memref<64x64xi32, 1>, %out: memref<64x64xi8, 1>) {
  // expected-error @below {{'npu.dequantize' op input element type must be i8, got i32}}
  // expected-error @below {{'npu.dequantize' op output element type must be f32 or f16, got i8}}
  "npu.dequantize"(%q, %out) {scale = 0.5 : f64, zero_point = 0 : i64} : (memref<64x64xi32, 1>, memref<64x64xi8, 1>) -> ()
  return
}

// -----

func.func @dma_load$shape(%src: memref<64x32xf16>, %dst: memref<64x64xf16, 1>) {
  // expected-error @below {{'npu.dma_load' op source shape 64x32 differs from target shape 64x64}}
  %t = "npu.dma_load"(%src, %dst) {channel = 0 : i64} : (memref<64x32xf16>, memref<64x64xf16, 1>) -> !npu.token
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}

// -----

func.func @dma_store$element_type(%src: memref<64xf32, 1>, %dst: memref<64xf16>) {
  // expected-error @below {{'npu.dma_store' op source element type f32 differs from target element type f16}}
  %t = "npu.dma_store"(%src, %dst) {channel = 0 : i64} : (memref<64xf32, 1>, memref<64xf16>) -> !npu.token
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}

// -----

func.func @dma_load$channel_out_of_range(%src: memref<64xf16>, %dst: memref<64xf16, 1>, %other: memref<64xf16, 1>) {
  // expected-error @below {{'npu.dma_load' op channel 2 is out of range: the target has 2 DMA channels (0..1)}}
  %t = "npu.dma_load"(%src, %dst) {channel = 2 : i64} : (memref<64xf16>, memref<64xf16, 1>) -> !npu.token
  // expected-error @below {{'npu.dma_load' op channel -1 is out of range: the target has 2 DMA channels (0..1)}}
  %u = "npu.dma_load"(%src, %other) {channel = -1 : i64} : (memref<64xf16>, memref<64xf16, 1>) -> !npu.token
  "npu.wait"(%t, %u) : (!npu.token, !npu.token) -> ()
  return
}

// -----

func.func @alloc$dynamic_shape() {
  // expected-error @below {{'npu.alloc' op result must have a static shape, got 'memref<?x64xf16, 1>'}}
  %a = "npu.alloc"() : () -> memref<?x64xf16, 1>
  return
}

// -----

func.func @alloc$strided_layout() {
  // expected-error @below {{'npu.alloc' op result must have the identity layout, got 'memref<4x64xf16, strided<[128, 1]>, 1>'}}
  %a = "npu.alloc"() : () -> memref<4x64xf16, strided<[128, 1]>, 1>
  return
}

// -----

func.func @alloc$string_offset() {
  // expected-error @below {{'npu.alloc' op offset must be an integer attribute, got "0"}}
  %a = "npu.alloc"() {offset = "0"} : () -> memref<64xf16, 1>
  return
}

// -----

func.func @alloc$negative_offset() {
  // expected-error @below {{'npu.alloc' op offset -64 is negative}}
  %a = "npu.alloc"() {offset = -64 : i64} : () -> memref<64xf16, 1>
  return
}

// -----

func.func @alloc$misaligned_offset() {
  // expected-error @below {{'npu.alloc' op offset 48 is not a multiple of the SRAM alignment 32}}
  %a = "npu.alloc"() {offset = 48 : i64} : () -> memref<64xf16, 1>
  return
}

//===----------------------------------------------------------------------===//
// DMA tokens
//===----------------------------------------------------------------------===//

// -----

func.func @dma_load$never_waited(%src: memref<64xf16>) {
  %a = "npu.alloc"() : () -> memref<64xf16, 1>
  // expected-error @below {{'npu.dma_load' op DMA token is never waited on}}
  %t = "npu.dma_load"(%src, %a) {channel = 0 : i64} : (memref<64xf16>, memref<64xf16, 1>) -> !npu.token
  return
}

// -----

// A token carried around a loop that nothing waits on, in the loop or after it.
// Each load also overwrites the buffer the previous, unwaited load fills.
func.func @dma_load$never_waited_in_loop(%src: memref<64xf16>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = "npu.alloc"() : () -> memref<64xf16, 1>
  // expected-error @below {{'npu.dma_load' op DMA token is never waited on}}
  // expected-note @below {{the DMA filling it, not yet waited on}}
  %t0 = "npu.dma_load"(%src, %a) {channel = 0 : i64} : (memref<64xf16>, memref<64xf16, 1>) -> !npu.token
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%t = %t0) -> (!npu.token) {
    // expected-error @below {{'npu.dma_load' op DMA token is never waited on}}
    // expected-error @below {{'npu.dma_load' op writes SRAM buffer %0 (target) before waiting on the DMA that fills it}}
    // expected-note @below {{the DMA filling it, not yet waited on}}
    %t1 = "npu.dma_load"(%src, %a) {channel = 0 : i64} : (memref<64xf16>, memref<64xf16, 1>) -> !npu.token
    scf.yield %t1 : !npu.token
  }
  return
}

// -----

func.func @matmul$reads_before_wait(%src: memref<64x32xf16>, %b: memref<32x64xf16, 1>, %c: memref<64x64xf32, 1>) {
  %a = "npu.alloc"() : () -> memref<64x32xf16, 1>
  // expected-note @below {{the DMA filling it, not yet waited on}}
  %t = "npu.dma_load"(%src, %a) {channel = 0 : i64} : (memref<64x32xf16>, memref<64x32xf16, 1>) -> !npu.token
  // expected-error @below {{'npu.matmul' op reads SRAM buffer %0 (lhs) before waiting on the DMA that fills it}}
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<64x32xf16, 1>, memref<32x64xf16, 1>, memref<64x64xf32, 1>) -> ()
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}

// -----

// The DMA fills a view of the buffer; the loop body reads another view of it.
func.func @matmul$reads_view_in_loop_before_wait(%src: memref<64x32xf16>, %b: memref<32x64xf16, 1>, %c: memref<64x64xf32, 1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %buffer = "npu.alloc"() : () -> memref<128x32xf16, 1>
  %fill = memref.subview %buffer[0, 0] [64, 32] [1, 1] : memref<128x32xf16, 1> to memref<64x32xf16, strided<[32, 1]>, 1>
  %read = memref.subview %buffer[64, 0] [64, 32] [1, 1] : memref<128x32xf16, 1> to memref<64x32xf16, strided<[32, 1], offset: 2048>, 1>
  // expected-note @below {{the DMA filling it, not yet waited on}}
  %t = "npu.dma_load"(%src, %fill) {channel = 0 : i64} : (memref<64x32xf16>, memref<64x32xf16, strided<[32, 1]>, 1>) -> !npu.token
  scf.for %i = %c0 to %c4 step %c1 {
    // expected-error @below {{'npu.matmul' op reads SRAM buffer %0 (lhs) before waiting on the DMA that fills it}}
    "npu.matmul"(%read, %b, %c) {accumulate = true, activation = "none"} : (memref<64x32xf16, strided<[32, 1], offset: 2048>, 1>, memref<32x64xf16, 1>, memref<64x64xf32, 1>) -> ()
  }
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}

// -----

// The body reads the tile before waiting on the iter_arg token that carries its
// load: the one issued before the loop or the one yielded by the last iteration.
func.func @matmul$double_buffer_reads_before_wait(%src: memref<64x32xf16>, %b: memref<32x64xf16, 1>, %c: memref<64x64xf32, 1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %a = "npu.alloc"() : () -> memref<64x32xf16, 1>
  // expected-note @below {{the DMA filling it, not yet waited on}}
  %t0 = "npu.dma_load"(%src, %a) {channel = 0 : i64} : (memref<64x32xf16>, memref<64x32xf16, 1>) -> !npu.token
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%t = %t0) -> (!npu.token) {
    // expected-error @below {{'npu.matmul' op reads SRAM buffer %0 (lhs) before waiting on the DMA that fills it}}
    "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<64x32xf16, 1>, memref<32x64xf16, 1>, memref<64x64xf32, 1>) -> ()
    "npu.wait"(%t) : (!npu.token) -> ()
    "npu.barrier"() : () -> ()
    // expected-note @below {{the DMA filling it, not yet waited on}}
    %t1 = "npu.dma_load"(%src, %a) {channel = 0 : i64} : (memref<64x32xf16>, memref<64x32xf16, 1>) -> !npu.token
    scf.yield %t1 : !npu.token
  }
  "npu.wait"(%r) : (!npu.token) -> ()
  return
}

// -----

func.func @fill$writes_while_store_pending(%dst: memref<64x64xf32>) {
  %acc = "npu.alloc"() : () -> memref<64x64xf32, 1>
  // expected-note @below {{the DMA reading it, not yet waited on}}
  %t = "npu.dma_store"(%acc, %dst) {channel = 0 : i64} : (memref<64x64xf32, 1>, memref<64x64xf32>) -> !npu.token
  // expected-error @below {{'npu.fill' op writes SRAM buffer %0 (output) while a DMA storing it is pending}}
  "npu.fill"(%acc) {value = 0.0 : f64} : (memref<64x64xf32, 1>) -> ()
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}

// -----

func.func @dealloc$dma_pending(%src: memref<64xf16>) {
  %a = "npu.alloc"() : () -> memref<64xf16, 1>
  // expected-note @below {{the pending DMA, not yet waited on}}
  %t = "npu.dma_load"(%src, %a) {channel = 0 : i64} : (memref<64xf16>, memref<64xf16, 1>) -> !npu.token
  // expected-error @below {{'npu.dealloc' op releases SRAM buffer %0 while a DMA using it is pending}}
  "npu.dealloc"(%a) : (memref<64xf16, 1>) -> ()
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}

//===----------------------------------------------------------------------===//
// Static SRAM offsets
//===----------------------------------------------------------------------===//

// -----

func.func @alloc$beyond_sram() {
  // expected-error @below {{'npu.alloc' op buffer at bytes [1040384, 1056768) ends at byte 1056768, beyond the SRAM capacity of 1048576 bytes}}
  %a = "npu.alloc"() {offset = 1040384 : i64} : () -> memref<64x64xf32, 1>
  "npu.dealloc"(%a) : (memref<64x64xf32, 1>) -> ()
  return
}

// -----

func.func @alloc$overlapping_offsets() {
  // expected-note @below {{the live buffer at bytes [0, 8192) is allocated here}}
  %a = "npu.alloc"() {offset = 0 : i64} : () -> memref<64x64xf16, 1>
  // expected-error @below {{'npu.alloc' op SRAM bytes [4096, 12288) overlap bytes [0, 8192) of a buffer that is still live}}
  %b = "npu.alloc"() {offset = 4096 : i64} : () -> memref<64x64xf16, 1>
  "npu.dealloc"(%b) : (memref<64x64xf16, 1>) -> ()
  "npu.dealloc"(%a) : (memref<64x64xf16, 1>) -> ()
  return
}

// -----

// A buffer allocated in a loop body overlaps one live across the whole loop.
func.func @alloc$overlap_in_loop_body() {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // expected-note @below {{the live buffer at bytes [0, 64) is allocated here}}
  %a = "npu.alloc"() {offset = 0 : i64} : () -> memref<64xi1, 1>
  scf.for %i = %c0 to %c4 step %c1 {
    // expected-error @below {{'npu.alloc' op SRAM bytes [32, 160) overlap bytes [0, 64) of a buffer that is still live}}
    %b = "npu.alloc"() {offset = 32 : i64} : () -> memref<64xf16, 1>
    "npu.dealloc"(%b) : (memref<64xf16, 1>) -> ()
  }
  return
}

// -----

// DMA engines do not wait for compute: storing a result, or reloading a tile,
// right after the compute op that writes or reads it races with that op.
func.func @store$before_its_producer_completes(%x: memref<8x64xf16, 1>, %dram: memref<8x64xf16>) {
  %y = "npu.alloc"() : () -> memref<8x64xf16, 1>
  // expected-note @below {{the compute op, with no npu.barrier after it}}
  "npu.activation"(%x, %y) {kind = "relu"} : (memref<8x64xf16, 1>, memref<8x64xf16, 1>) -> ()
  // expected-error @below {{'npu.dma_store' op reads SRAM buffer %0 that a compute op issued before it may still be using}}
  %t = "npu.dma_store"(%y, %dram) {channel = 0 : i64} : (memref<8x64xf16, 1>, memref<8x64xf16>) -> !npu.token
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}

// -----

func.func @load$into_a_tile_being_read(%dram: memref<8x64xf16>, %y: memref<8x64xf16, 1>) {
  %x = "npu.alloc"() : () -> memref<8x64xf16, 1>
  %t0 = "npu.dma_load"(%dram, %x) {channel = 0 : i64} : (memref<8x64xf16>, memref<8x64xf16, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  // expected-note @below {{the compute op, with no npu.barrier after it}}
  "npu.activation"(%x, %y) {kind = "tanh"} : (memref<8x64xf16, 1>, memref<8x64xf16, 1>) -> ()
  // expected-error @below {{'npu.dma_load' op overwrites SRAM buffer %0 that a compute op issued before it may still be using}}
  %t1 = "npu.dma_load"(%dram, %x) {channel = 1 : i64} : (memref<8x64xf16>, memref<8x64xf16, 1>) -> !npu.token
  "npu.wait"(%t1) : (!npu.token) -> ()
  return
}

// -----

func.func @matmul$bf16(%a: memref<64x32xbf16, 1>, %b: memref<32x64xbf16, 1>, %c: memref<64x64xf32, 1>) {
  // expected-error @below {{'npu.matmul' op bf16 is not supported (the simulator has no bf16 arithmetic: numpy has no bfloat16); use f16 or f32}}
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<64x32xbf16, 1>, memref<32x64xbf16, 1>, memref<64x64xf32, 1>) -> ()
  return
}

// -----

func.func @activation$bf16(%a: memref<64xbf16, 1>, %c: memref<64xbf16, 1>) {
  // expected-error @below {{'npu.activation' op bf16 is not supported}}
  "npu.activation"(%a, %c) {kind = "relu"} : (memref<64xbf16, 1>, memref<64xbf16, 1>) -> ()
  return
}

// -----

// A compute barrier orders later DMAs after earlier compute, but completes no
// DMA: the tile a load fills is still pending after it.
func.func @matmul$compute_barrier_is_no_wait(%src: memref<64x32xf16>, %b: memref<32x64xf16, 1>, %c: memref<64x64xf32, 1>) {
  %a = "npu.alloc"() : () -> memref<64x32xf16, 1>
  // expected-note @below {{the DMA filling it, not yet waited on}}
  %t = "npu.dma_load"(%src, %a) {channel = 0 : i64} : (memref<64x32xf16>, memref<64x32xf16, 1>) -> !npu.token
  "npu.barrier"() {engines = "compute"} : () -> ()
  // expected-error @below {{'npu.matmul' op reads SRAM buffer %0 (lhs) before waiting on the DMA that fills it}}
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<64x32xf16, 1>, memref<32x64xf16, 1>, memref<64x64xf32, 1>) -> ()
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}

// -----

// A vector barrier does not wait for the matrix unit: reloading the tile a
// matmul reads, whose result no vector op read before the barrier, races with it.
func.func @load$after_vector_barrier_while_matmul_runs(%src: memref<64x32xi8>, %b: memref<32x64xi8, 1>, %c: memref<64x64xi32, 1>, %d: memref<64x64xi32, 1>, %o: memref<64x64xi8, 1>) {
  %a = "npu.alloc"() : () -> memref<64x32xi8, 1>
  %t0 = "npu.dma_load"(%src, %a) {channel = 0 : i64} : (memref<64x32xi8>, memref<64x32xi8, 1>) -> !npu.token
  "npu.wait"(%t0) : (!npu.token) -> ()
  // expected-note @below {{the compute op, with no npu.barrier after it}}
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<64x32xi8, 1>, memref<32x64xi8, 1>, memref<64x64xi32, 1>) -> ()
  "npu.requantize"(%d, %o) {scale = 1.0 : f64, zero_point = 0 : i64} : (memref<64x64xi32, 1>, memref<64x64xi8, 1>) -> ()
  "npu.barrier"() {engines = "vector"} : () -> ()
  // expected-error @below {{'npu.dma_load' op overwrites SRAM buffer %0 that a compute op issued before it may still be using}}
  %t1 = "npu.dma_load"(%src, %a) {channel = 1 : i64} : (memref<64x32xi8>, memref<64x32xi8, 1>) -> !npu.token
  "npu.wait"(%t1) : (!npu.token) -> ()
  return
}

// -----

// A matrix barrier does not wait for the vector unit: storing what a vector
// op writes races with it, though the matmul it reads is done.
func.func @store$after_matrix_barrier_while_requantize_runs(%a: memref<64x32xi8, 1>, %b: memref<32x64xi8, 1>, %c: memref<64x64xi32, 1>, %dst: memref<64x64xi8>) {
  %o = "npu.alloc"() : () -> memref<64x64xi8, 1>
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none"} : (memref<64x32xi8, 1>, memref<32x64xi8, 1>, memref<64x64xi32, 1>) -> ()
  // expected-note @below {{the compute op, with no npu.barrier after it}}
  "npu.requantize"(%c, %o) {scale = 1.0 : f64, zero_point = 0 : i64} : (memref<64x64xi32, 1>, memref<64x64xi8, 1>) -> ()
  "npu.barrier"() {engines = "matrix"} : () -> ()
  // expected-error @below {{'npu.dma_store' op reads SRAM buffer %0 that a compute op issued before it may still be using}}
  %t = "npu.dma_store"(%o, %dst) {channel = 0 : i64} : (memref<64x64xi8, 1>, memref<64x64xi8>) -> !npu.token
  "npu.wait"(%t) : (!npu.token) -> ()
  return
}

// -----

func.func @barrier$unknown_engines() {
  // expected-error @below {{'npu.barrier' op engines must be "all", "compute", "matrix" or "vector", got "dma"}}
  "npu.barrier"() {engines = "dma"} : () -> ()
  return
}

// -----

//===----------------------------------------------------------------------===//
// Reductions, comparisons and selects
//===----------------------------------------------------------------------===//

func.func @reduce$output_keeps_the_reduced_dim(%x: memref<16x128xf32, 1>, %y: memref<128xf32, 1>) {
  // expected-error @below {{'npu.reduce' op output shape 128 is not the input shape 16x128 without dims [1]}}
  "npu.reduce"(%x, %y) {kind = "sum", dims = array<i64: 1>, accumulate = false} : (memref<16x128xf32, 1>, memref<128xf32, 1>) -> ()
  return
}

// -----

func.func @reduce$dims_out_of_range(%x: memref<16x128xf32, 1>, %y: memref<16xf32, 1>) {
  // expected-error @below {{'npu.reduce' op dims [2] are not ascending dimensions of the rank-2 input}}
  "npu.reduce"(%x, %y) {kind = "max", dims = array<i64: 2>, accumulate = false} : (memref<16x128xf32, 1>, memref<16xf32, 1>) -> ()
  return
}

// -----

func.func @compare$output_not_i1(%x: memref<16xf32, 1>, %y: memref<16xf32, 1>) {
  // expected-error @below {{'npu.compare' op compares f32 with f32 into f32 (one type into i1)}}
  "npu.compare"(%x, %x, %y) {kind = "lt"} : (memref<16xf32, 1>, memref<16xf32, 1>, memref<16xf32, 1>) -> ()
  return
}

// -----

func.func @select$condition_not_i1(%c: memref<16xf32, 1>, %x: memref<16xf32, 1>) {
  // expected-error @below {{'npu.select' op condition f32 (i1), on_true f32, on_false f32 and output f32 (one type)}}
  "npu.select"(%c, %x, %x, %x) : (memref<16xf32, 1>, memref<16xf32, 1>, memref<16xf32, 1>, memref<16xf32, 1>) -> ()
  return
}

// -----

func.func @select$branch_does_not_broadcast(%c: memref<16xi1, 1>, %x: memref<8xf32, 1>, %y: memref<16xf32, 1>) {
  // expected-error @below {{'npu.select' op on_true shape 8 does not broadcast to output shape 16}}
  "npu.select"(%c, %x, %y, %y) : (memref<16xi1, 1>, memref<8xf32, 1>, memref<16xf32, 1>, memref<16xf32, 1>) -> ()
  return
}

// -----

func.func @activation$converts_only_with_none(%x: memref<16xf16, 1>, %y: memref<16xf32, 1>) {
  // expected-error @below {{'npu.activation' op element types differ: input f16, output f32 (only kind 'none' converts, between f16 and f32)}}
  "npu.activation"(%x, %y) {kind = "exp"} : (memref<16xf16, 1>, memref<16xf32, 1>) -> ()
  return
}

// -----

func.func @matmul$unknown_dataflow(%a: memref<4x8xf16, 1>, %b: memref<8x4xf16, 1>, %c: memref<4x4xf32, 1>) {
  // expected-error @below {{'npu.matmul' op dataflow must be "ws" or "os", got "rs"}}
  "npu.matmul"(%a, %b, %c) {accumulate = false, activation = "none", dataflow = "rs"} : (memref<4x8xf16, 1>, memref<8x4xf16, 1>, memref<4x4xf32, 1>) -> ()
  return
}
