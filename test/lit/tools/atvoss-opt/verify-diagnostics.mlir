// RUN: atvoss-opt %s -split-input-file -verify-diagnostics
// RUN: not atvoss-opt %S/Inputs/missing-expectation.mlir -verify-diagnostics 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not atvoss-opt %S/Inputs/unmet-expectation.mlir -verify-diagnostics 2>&1 | FileCheck %s --check-prefix=UNMET

// Designators: same line, @below, @above, @+N, @-N, -re.

func.func @same_line(%a: i32) {
  "npu.fill"(%a) {value = 0.0 : f64} : (i32) -> () // expected-error {{expected base type 'builtin.memref'}}
  return
}

// -----

func.func @below(%a: i32) {
  // expected-error @below {{expected base type 'builtin.memref' but got 'builtin.integer'}}
  "npu.fill"(%a) {value = 0.0 : f64} : (i32) -> ()
  return
}

// -----

func.func @above(%a: i32) {
  "npu.fill"(%a) {value = 0.0 : f64} : (i32) -> ()
  // expected-error @above {{expected base type}}
  return
}

// -----

func.func @relative(%a: i32) {
  // expected-error @+2 {{expected base type}}

  "npu.fill"(%a) {value = 0.0 : f64} : (i32) -> ()
  return
}

// -----

func.func @negative(%a: i32) {
  "npu.fill"(%a) {value = 0.0 : f64} : (i32) -> ()

  // expected-error @-2 {{expected base type}}
  return
}

// -----

func.func @regex(%a: i32) {
  // expected-error-re @below {{expected base type 'builtin.{{[a-z]+}}' but got 'builtin.{{int[a-z]+}}'}}
  "npu.fill"(%a) {value = 0.0 : f64} : (i32) -> ()
  return
}

// MISSING: missing-expectation.mlir:6:3: error: unexpected error: expected base type 'builtin.memref' but got 'builtin.integer'
// UNMET: unmet-expectation.mlir:4:6: error: expected error "this is never reported" was not produced
