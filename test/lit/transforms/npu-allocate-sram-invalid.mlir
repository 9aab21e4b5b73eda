// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-allocate-sram --target='npu -max-sram-bytes=1048576'

// The live buffers exceed the SRAM: an error at the alloc that does not fit.

func.func @alloc$over_budget() {
  %a = "npu.alloc"() : () -> memref<512x512xf16, 1>
  // expected-error @below {{'npu.alloc' op working set 1310720 B exceeds SRAM budget 1048576 B (1 live buffers of 524288 B and this one of 786432 B)}}
  %b = "npu.alloc"() : () -> memref<768x512xf16, 1>
  return
}

// -----

// The live buffers leave enough bytes but no free range large enough (a
// tensor kept in the middle of the SRAM): the error says so, not that the
// budget is exceeded.

func.func @alloc$no_free_range() {
  %kept = "npu.alloc"() {npu.resident, offset = 393216 : i64} : () -> memref<262144xi8, 1>
  // expected-error @below {{'npu.alloc' op of 460800 B fits nowhere in the 1048576 B SRAM: the 1 live buffers of 262144 B leave no free range that large (the largest is 393216 B)}}
  %b = "npu.alloc"() : () -> memref<460800xi8, 1>
  return
}

// -----

func.func @alloc$dynamic() {
  // expected-error @below {{'npu.alloc' op needs a static shape to be placed in SRAM}}
  %a = "npu.alloc"() : () -> memref<?xf16, 1>
  return
}
