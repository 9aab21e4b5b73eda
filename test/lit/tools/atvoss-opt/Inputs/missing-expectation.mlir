// An error with no expected-error line: -verify-diagnostics must fail.
// Line numbers are checked by verify-diagnostics.mlir.

func.func @f(%a: i32) {
  // The next line is an error that nobody expects.
  "npu.fill"(%a) {value = 0.0 : f64} : (i32) -> ()
  return
}
