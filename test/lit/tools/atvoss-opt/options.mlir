// RUN: atvoss-opt --list-passes | FileCheck %s --check-prefix=LIST
// LIST: npu-verify

// RUN: atvoss-opt --version | FileCheck %s --check-prefix=VERSION
// VERSION: atvoss-opt {{[0-9]+\.[0-9]+}}

// RUN: atvoss-opt --help | FileCheck %s --check-prefix=HELP
// HELP: --npu-verify
// HELP: -max-sram-bytes=<int>

// Upstream and atvoss passes mix in one pipeline; -o writes a file.
// RUN: atvoss-opt %s --pass-pipeline='builtin.module(npu-verify,canonicalize,func.func(cse),npu-verify)' -o %t
// RUN: FileCheck %s --check-prefix=MIXED --input-file=%t
// MIXED-LABEL: func.func @f
// MIXED-NEXT:    %[[C:.*]] = arith.constant 3 : i32
// MIXED-NEXT:    return %[[C]], %[[C]]

// The pass flag and the named pipeline run too.
// RUN: atvoss-opt %s -npu-verify | FileCheck %s --check-prefix=FLAG
// FLAG-LABEL: func.func @f
// RUN: atvoss-opt %s --npu-pipeline --target='npu -max-sram-bytes=65536 -pipeline-stages=1' | FileCheck %s --check-prefix=FLAG

func.func @f() -> (i32, i32) {
  %a = arith.constant 1 : i32
  %b = arith.constant 2 : i32
  %c = arith.addi %a, %b : i32
  %d = arith.addi %a, %b : i32
  return %c, %d : i32, i32
}
