// RUN: atvoss-opt %s -split-input-file -verify-diagnostics
// Without one of the expectations the run must fail, naming the unexpected error:
// RUN: grep -v "expected-error @below {{op expects exactly 0 operands" %s > %t
// RUN: not atvoss-opt %t -split-input-file -verify-diagnostics 2>&1 | FileCheck %s --check-prefix=DROPPED
// DROPPED: error: unexpected error: op expects exactly 0 operands, but got 1

// One case per constraint that the parser enforces for npu ops (from the
// IRDL registration generated from dialects/npu.td).

// alloc must return a memref
func.func @alloc_must_return_a_memref() {
  // expected-error @below {{expected base type 'builtin.memref' but got 'builtin.f32'}}
  %0 = "npu.alloc"() {offset = 0 : i64} : () -> f32
  return
}

// -----

// alloc takes no operands
func.func @alloc_takes_no_operands(%a: memref<4xf32, 1>) {
  // expected-error @below {{op expects exactly 0 operands, but got 1}}
  %0 = "npu.alloc"(%a) : (memref<4xf32, 1>) -> memref<4xf32, 1>
  return
}

// -----

// dealloc needs its buffer
func.func @dealloc_needs_its_buffer() {
  // expected-error @below {{op expects exactly 1 operands, but got 0}}
  "npu.dealloc"() : () -> ()
  return
}

// -----

// dealloc of a non-memref
func.func @dealloc_of_a_non_memref(%a: f32) {
  // expected-error @below {{expected base type 'builtin.memref' but got 'builtin.f32'}}
  "npu.dealloc"(%a) : (f32) -> ()
  return
}

// -----

// dma_load returns a token
func.func @dma_load_returns_a_token(%a: memref<4xf32>, %b: memref<4xf32, 1>) {
  // expected-error @below {{expected base type 'npu.token' but got 'builtin.integer'}}
  %t = "npu.dma_load"(%a, %b) {channel = 0 : i64} : (memref<4xf32>, memref<4xf32, 1>) -> i32
  return
}

// -----

// dma_load needs a channel
func.func @dma_load_needs_a_channel(%a: memref<4xf32>, %b: memref<4xf32, 1>) {
  // expected-error @below {{'npu.dma_load' op attribute "channel" is expected but not provided}}
  %t = "npu.dma_load"(%a, %b) : (memref<4xf32>, memref<4xf32, 1>) -> !npu.token
  return
}

// -----

// dma_load needs two operands
func.func @dma_load_needs_two_operands(%a: memref<4xf32>) {
  // expected-error @below {{op expects exactly 2 operands, but got 1}}
  %t = "npu.dma_load"(%a) {channel = 0 : i64} : (memref<4xf32>) -> !npu.token
  return
}

// -----

// dma_load source must be a memref
func.func @dma_load_source_must_be_a_memref(%a: tensor<4xf32>, %b: memref<4xf32, 1>) {
  // expected-error @below {{expected base type 'builtin.memref' but got 'builtin.tensor'}}
  %t = "npu.dma_load"(%a, %b) {channel = 0 : i64} : (tensor<4xf32>, memref<4xf32, 1>) -> !npu.token
  return
}

// -----

// dma_store channel is an integer
func.func @dma_store_channel_is_an_integer(%a: memref<4xf32, 1>, %b: memref<4xf32>) {
  // expected-error @below {{expected base attribute 'builtin.integer' but got 'builtin.float'}}
  %t = "npu.dma_store"(%a, %b) {channel = 1.0 : f32} : (memref<4xf32, 1>, memref<4xf32>) -> !npu.token
  return
}

// -----

// wait takes tokens only
func.func @wait_takes_tokens_only(%a: memref<4xf32, 1>) {
  // expected-error @below {{expected base type 'npu.token' but got 'builtin.memref'}}
  "npu.wait"(%a) : (memref<4xf32, 1>) -> ()
  return
}

// -----

// barrier takes no operands
func.func @barrier_takes_no_operands(%t: !npu.token) {
  // expected-error @below {{op expects exactly 0 operands, but got 1}}
  "npu.barrier"(%t) : (!npu.token) -> ()
  return
}

// -----

// matmul needs lhs, rhs and output
func.func @matmul_needs_lhs_rhs_and_output(%a: memref<4x4xf32, 1>) {
  // expected-error @below {{op expects at least 3 operands, but got 2}}
  "npu.matmul"(%a, %a) {accumulate = false, activation = "none"} : (memref<4x4xf32, 1>, memref<4x4xf32, 1>) -> ()
  return
}

// -----

// matmul accumulate is a bool
func.func @matmul_accumulate_is_a_bool(%a: memref<4x4xf32, 1>) {
  // expected-error @below {{'1 : i64' does not satisfy the constraint}}
  "npu.matmul"(%a, %a, %a) {accumulate = 1 : i64, activation = "none"} : (memref<4x4xf32, 1>, memref<4x4xf32, 1>, memref<4x4xf32, 1>) -> ()
  return
}

// -----

// matmul activation is one of the known ones
func.func @matmul_activation_is_one_of_the_known_ones(%a: memref<4x4xf32, 1>) {
  // expected-error @below {{'"swish"' does not satisfy the constraint}}
  "npu.matmul"(%a, %a, %a) {accumulate = false, activation = "swish"} : (memref<4x4xf32, 1>, memref<4x4xf32, 1>, memref<4x4xf32, 1>) -> ()
  return
}

// -----

// matmul needs an activation
func.func @matmul_needs_an_activation(%a: memref<4x4xf32, 1>) {
  // expected-error @below {{'npu.matmul' op attribute "activation" is expected but not provided}}
  "npu.matmul"(%a, %a, %a) {accumulate = false} : (memref<4x4xf32, 1>, memref<4x4xf32, 1>, memref<4x4xf32, 1>) -> ()
  return
}

// -----

// matmul bias must be a memref
func.func @matmul_bias_must_be_a_memref(%a: memref<4x4xf32, 1>, %v: f32) {
  // expected-error @below {{expected base type 'builtin.memref' but got 'builtin.f32'}}
  "npu.matmul"(%a, %a, %a, %v) {accumulate = false, activation = "none"} : (memref<4x4xf32, 1>, memref<4x4xf32, 1>, memref<4x4xf32, 1>, f32) -> ()
  return
}

// -----

// matmul takes at most one bias
func.func @matmul_takes_at_most_one_bias(%a: memref<4x4xf32, 1>, %v: memref<4xf32, 1>) {
  // expected-error @below {{op expects at most 4 operands, but got 5}}
  "npu.matmul"(%a, %a, %a, %v, %v) {accumulate = false, activation = "none"} : (memref<4x4xf32, 1>, memref<4x4xf32, 1>, memref<4x4xf32, 1>, memref<4xf32, 1>, memref<4xf32, 1>) -> ()
  return
}

// -----

// conv2d strides are a dense i64 array
func.func @conv2d_strides_are_a_dense_i64_array(%a: memref<1x4x4x4xf32, 1>) {
  // expected-error @below {{expected base attribute 'builtin.dense_array' but got 'builtin.array'}}
  "npu.conv2d"(%a, %a, %a) {accumulate = false, activation = "none", strides = [1, 1], dilations = array<i64: 1, 1>} : (memref<1x4x4x4xf32, 1>, memref<1x4x4x4xf32, 1>, memref<1x4x4x4xf32, 1>) -> ()
  return
}

// -----

// conv2d needs dilations
func.func @conv2d_needs_dilations(%a: memref<1x4x4x4xf32, 1>) {
  // expected-error @below {{'npu.conv2d' op attribute "dilations" is expected but not provided}}
  "npu.conv2d"(%a, %a, %a) {accumulate = false, activation = "none", strides = array<i64: 1, 1>} : (memref<1x4x4x4xf32, 1>, memref<1x4x4x4xf32, 1>, memref<1x4x4x4xf32, 1>) -> ()
  return
}

// -----

// depthwise activation is one of the known ones
func.func @depthwise_activation_is_one_of_the_known_ones(%a: memref<1x4x4x4xf32, 1>) {
  // expected-error @below {{'"relu7"' does not satisfy the constraint}}
  "npu.depthwise_conv2d"(%a, %a, %a) {activation = "relu7", strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>} : (memref<1x4x4x4xf32, 1>, memref<1x4x4x4xf32, 1>, memref<1x4x4x4xf32, 1>) -> ()
  return
}

// -----

// elementwise kind is add/sub/mul/div/max/min
func.func @elementwise_kind_is_add_sub_mul_div_max_min(%a: memref<4xf32, 1>) {
  // expected-error @below {{'"pow"' does not satisfy the constraint}}
  "npu.elementwise"(%a, %a, %a) {kind = "pow"} : (memref<4xf32, 1>, memref<4xf32, 1>, memref<4xf32, 1>) -> ()
  return
}

// -----

// elementwise kind is a string
func.func @elementwise_kind_is_a_string(%a: memref<4xf32, 1>) {
  // expected-error @below {{'1 : i64' does not satisfy the constraint}}
  "npu.elementwise"(%a, %a, %a) {kind = 1 : i64} : (memref<4xf32, 1>, memref<4xf32, 1>, memref<4xf32, 1>) -> ()
  return
}

// -----

// activation kind is one of the known ones
func.func @activation_kind_is_one_of_the_known_ones(%a: memref<4xf32, 1>) {
  // expected-error @below {{'"softmax"' does not satisfy the constraint}}
  "npu.activation"(%a, %a) {kind = "softmax"} : (memref<4xf32, 1>, memref<4xf32, 1>) -> ()
  return
}

// -----

// pool kind is max or avg
func.func @pool_kind_is_max_or_avg(%a: memref<1x4x4x4xf32, 1>) {
  // expected-error @below {{'"min"' does not satisfy the constraint}}
  "npu.pool2d"(%a, %a) {kind = "min", window = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (memref<1x4x4x4xf32, 1>, memref<1x4x4x4xf32, 1>) -> ()
  return
}

// -----

// pool needs a window
func.func @pool_needs_a_window(%a: memref<1x4x4x4xf32, 1>) {
  // expected-error @below {{'npu.pool2d' op attribute "window" is expected but not provided}}
  "npu.pool2d"(%a, %a) {kind = "max", strides = array<i64: 2, 2>} : (memref<1x4x4x4xf32, 1>, memref<1x4x4x4xf32, 1>) -> ()
  return
}

// -----

// transpose permutation is a dense i64 array
func.func @transpose_permutation_is_a_dense_i64_array(%a: memref<4x4xf32, 1>) {
  // expected-error @below {{expected base attribute 'builtin.dense_array' but got 'builtin.string'}}
  "npu.transpose"(%a, %a) {permutation = "10"} : (memref<4x4xf32, 1>, memref<4x4xf32, 1>) -> ()
  return
}

// -----

// im2col needs dilations
func.func @im2col_needs_dilations(%a: memref<1x4x4x4xf32, 1>) {
  // expected-error @below {{'npu.im2col' op attribute "dilations" is expected but not provided}}
  "npu.im2col"(%a, %a) {window = array<i64: 2, 2>, strides = array<i64: 1, 1>} : (memref<1x4x4x4xf32, 1>, memref<1x4x4x4xf32, 1>) -> ()
  return
}

// -----

// fill value is a float
func.func @fill_value_is_a_float(%a: memref<4xf32, 1>) {
  // expected-error @below {{expected base attribute 'builtin.float' but got 'builtin.integer'}}
  "npu.fill"(%a) {value = 0 : i64} : (memref<4xf32, 1>) -> ()
  return
}

// -----

// fill has one operand
func.func @fill_has_one_operand(%a: memref<4xf32, 1>) {
  // expected-error @below {{op expects exactly 1 operands, but got 2}}
  "npu.fill"(%a, %a) {value = 0.0 : f64} : (memref<4xf32, 1>, memref<4xf32, 1>) -> ()
  return
}

// -----

// requantize zero point is an integer
func.func @requantize_zero_point_is_an_integer(%a: memref<4xi32, 1>) {
  // expected-error @below {{expected base attribute 'builtin.integer' but got 'builtin.float'}}
  "npu.requantize"(%a, %a) {scale = 0.5 : f64, zero_point = 0.0 : f64} : (memref<4xi32, 1>, memref<4xi32, 1>) -> ()
  return
}

// -----

// requantize needs a scale
func.func @requantize_needs_a_scale(%a: memref<4xi32, 1>) {
  // expected-error @below {{'npu.requantize' op attribute "scale" is expected but not provided}}
  "npu.requantize"(%a, %a) {zero_point = 0 : i64} : (memref<4xi32, 1>, memref<4xi32, 1>) -> ()
  return
}

// -----

// no such npu op
func.func @no_such_npu_op() {
  // expected-error @below {{unregistered operation 'npu.frobnicate' found in dialect ('npu') that does not allow unknown operations}}
  "npu.frobnicate"() : () -> ()
  return
}

// -----

// no such npu type
func.func @no_such_npu_type() {
  // expected-error @below {{expected dynamic type}}
  %x = "npu.alloc"() : () -> !npu.tokn
  return
}

// -----

// reduce kind is sum/max/min
func.func @reduce_kind_is_sum_max_min(%x: memref<4x8xf32, 1>, %y: memref<4xf32, 1>) {
  // expected-error @below {{'"prod"' does not satisfy the constraint}}
  "npu.reduce"(%x, %y) {kind = "prod", dims = array<i64: 1>, accumulate = false} : (memref<4x8xf32, 1>, memref<4xf32, 1>) -> ()
  return
}

// -----

// compare kind is eq/ne/lt/le/gt/ge
func.func @compare_kind(%x: memref<4xf32, 1>, %m: memref<4xi1, 1>) {
  // expected-error @below {{'"lg"' does not satisfy the constraint}}
  "npu.compare"(%x, %x, %m) {kind = "lg"} : (memref<4xf32, 1>, memref<4xf32, 1>, memref<4xi1, 1>) -> ()
  return
}
