// 96 KiB of buffers fit the default SRAM, not a 64 KiB one (--target).
// RUN: atvoss-sim %s --report json | FileCheck %s --check-prefix=DEFAULT
// RUN: not atvoss-sim %s --target='npu -max-sram-bytes=65536' 2>&1 | FileCheck %s --implicit-check-not=Traceback
// A single buffer larger than the SRAM:
// RUN: not atvoss-sim %s --target='npu -max-sram-bytes=32768' 2>&1 | FileCheck %s --check-prefix=SMALL --implicit-check-not=Traceback

func.func @main() {
  // SMALL: sram-capacity-target.mlir:[[@LINE+1]]:8: error: npu.alloc: buffer of 49152 B exceeds the SRAM capacity of 32768 B
  %a = "npu.alloc"() {offset = 0 : i64} : () -> memref<96x256xf16, 1>
  // CHECK: sram-capacity-target.mlir:[[@LINE+1]]:8: error: npu.alloc: no room for a buffer of 49152 B: 49152 B of the 65536 B SRAM are live
  %b = "npu.alloc"() : () -> memref<96x256xf16, 1>
  return
}

// DEFAULT: "sram_peak_bytes": 98304,
