// An expected-error that is never produced: -verify-diagnostics must fail.

func.func @f() {
  // expected-error @below {{this is never reported}}
  return
}
