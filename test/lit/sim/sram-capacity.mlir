// A 2 MiB buffer does not fit the default 1 MiB SRAM.
// RUN: not atvoss-sim %s 2>&1 | FileCheck %s --implicit-check-not=Traceback
// With 4 MiB of SRAM it does.
// RUN: atvoss-sim %s --target='npu -max-sram-bytes=4194304' --report json | FileCheck %s --check-prefix=FITS

func.func @main() {
  // CHECK: sram-capacity.mlir:[[@LINE+1]]:8: error: npu.alloc: buffer of 2097152 B exceeds the SRAM capacity of 1048576 B
  %a = "npu.alloc"() : () -> memref<1024x1024xf16, 1>
  "npu.fill"(%a) {value = 0.0 : f64} : (memref<1024x1024xf16, 1>) -> ()
  return
}

// FITS: "sram_peak_bytes": 2097152,
// FITS: "sram_capacity_bytes": 4194304,
