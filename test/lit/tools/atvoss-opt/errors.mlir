// Every kind of error is one located line with exit status 1, never a traceback.

// RUN: echo 'garbage' | not atvoss-opt - 2>&1 | FileCheck %s --check-prefix=GARBAGE
// GARBAGE: <stdin>:1:1: error: custom op 'garbage' is unknown
// GARBAGE-NOT: Traceback

// RUN: not atvoss-opt %s.does-not-exist 2>&1 | FileCheck %s --check-prefix=NOFILE
// NOFILE: errors.mlir.does-not-exist:1:1: error: cannot read input file: No such file or directory

// RUN: not atvoss-opt %s --target='npu -max-sram-bytes=abc' 2>&1 | FileCheck %s --check-prefix=TARGET
// TARGET: error: invalid --target 'npu -max-sram-bytes=abc': option '-max-sram-bytes' expects an integer, got 'abc'
// TARGET-NOT: Traceback

// RUN: not atvoss-opt %s --target='npu -sram-size=1' 2>&1 | FileCheck %s --check-prefix=TARGET-OPTION
// TARGET-OPTION: error: invalid --target 'npu -sram-size=1': unknown target option '-sram-size'; known options: accuracy-budget, array-cols,

// RUN: not atvoss-opt %s --target='gpu' 2>&1 | FileCheck %s --check-prefix=TARGET-NAME
// TARGET-NAME: error: invalid --target 'gpu': unknown target 'gpu': expected 'npu'

// RUN: not atvoss-opt %s --pass-pipeline='builtin.module(canonicalize,npu-bogus)' 2>&1 | FileCheck %s --check-prefix=PASS
// PASS: <pass-pipeline>:1:29: error: 'npu-bogus' does not refer to a registered pass or pass pipeline

// RUN: not atvoss-opt %s --pass-pipeline='builtin.module(npu-verify{nope=1})' 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: <pass-pipeline>:1:16: error: pass 'npu-verify' has no option 'nope'

// RUN: not atvoss-opt %s --pass-pipeline='builtin.module(canonicalize{bogus=1})' 2>&1 | FileCheck %s --check-prefix=UPSTREAM-OPTION
// UPSTREAM-OPTION: <pass-pipeline>:1:16: error: {{.*}}bogus

// RUN: not atvoss-opt %s --pass-pipeline='builtin.module(func.func(npu-verify))' 2>&1 | FileCheck %s --check-prefix=NESTED
// NESTED: <pass-pipeline>:1:26: error: 'npu-verify' runs on builtin.module and cannot be nested under 'func.func'

// RUN: not atvoss-opt %s --pass-pipeline='builtin.module(cse' 2>&1 | FileCheck %s --check-prefix=SYNTAX
// SYNTAX: <pass-pipeline>:1:{{[0-9]+}}: error: expected ')' to close 'builtin.module('

// RUN: not atvoss-opt %s --no-such-flag 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG: <command-line>:1:1: error: unrecognized arguments: --no-such-flag

// RUN: not atvoss-opt %s --npu-verify --pass-pipeline='builtin.module(cse)' 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: error: use only one of --pass-pipeline, --npu-pipeline and individual pass flags

// RUN: not atvoss-opt %s -o /nonexistent-dir/out.mlir 2>&1 | FileCheck %s --check-prefix=OUTPUT
// OUTPUT: error: cannot write output file '/nonexistent-dir/out.mlir'

func.func @f() {
  return
}
