// RUN: atvoss-opt %s -split-input-file | FileCheck %s
// RUN: atvoss-opt %s -split-input-file --pass-pipeline='builtin.module(canonicalize)' | FileCheck %s --check-prefix=CANON
// RUN: not atvoss-opt %s 2>&1 | FileCheck %s --check-prefix=WHOLE

// Each chunk is parsed and printed on its own, separated again by the marker.

// CHECK-LABEL: func.func @first
// CHECK:       // -----
// CHECK-LABEL: func.func @second
// CANON-LABEL: func.func @first
// CANON-NOT:   arith.addi
// CANON-LABEL: func.func @second
func.func @first(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %r = arith.addi %a, %c0 : i32
  return %r : i32
}

// -----

func.func @second() {
  return
}

// -----

// Without splitting, the redefinition of @first is an error at its line.
// WHOLE: split-input-file.mlir:[[# @LINE + 1]]:1: error: redefinition of symbol named 'first'
func.func @first() {
  return
}
