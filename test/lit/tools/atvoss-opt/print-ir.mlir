// RUN: atvoss-opt %s --pass-pipeline='builtin.module(canonicalize,npu-verify)' --mlir-print-ir-after-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=AFTER
// RUN: atvoss-opt %s --pass-pipeline='builtin.module(npu-verify)' --mlir-print-ir-before-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=BEFORE
// RUN: atvoss-opt %s --mlir-print-op-generic | FileCheck %s --check-prefix=GENERIC
// RUN: atvoss-opt %s --pass-pipeline='builtin.module(canonicalize,npu-verify)' --mlir-timing -o /dev/null 2>&1 | FileCheck %s --check-prefix=TIMING

// IR printing and timing cover upstream and atvoss passes alike.

// AFTER: IR Dump After Canonicalizer (canonicalize)
// AFTER: IR Dump After NpuVerify (npu-verify)
// AFTER: func.func @f
// BEFORE: IR Dump Before NpuVerify (npu-verify)
// GENERIC: "func.func"() <{function_type = () -> (), sym_name = "f"}>
// TIMING: Execution time report
// TIMING: Canonicalizer
// TIMING: NpuVerify
func.func @f() {
  return
}
