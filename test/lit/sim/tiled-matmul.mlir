// A correct tiled matmul, C[64,48] (f32) = A[64,80] (f16) @ B[80,48] (f16), in
// 32x32x32 tiles with partial tiles at the edges (48 = 32 + 16, 80 = 2*32 + 16);
// one SRAM buffer per operand, barriers before each reload and each store.
// It runs, and the JSON report holds the contract keys.
// RUN: atvoss-sim %s --target='npu -dataflow=ws' --report json | FileCheck %s --implicit-check-not=Traceback
// RUN: atvoss-sim %s --target='npu -dataflow=ws' --report json --timing-only | FileCheck %s --check-prefix=FAST
// (Tile choices and cycles here are the weight-stationary dataflow's.)

// CHECK: {
// CHECK-NEXT:   "version": 1,
// CHECK-NEXT:   "entry": "main",
// CHECK-NEXT:   "target": "npu -array-rows=32 -array-cols=32 -dataflow=ws
// CHECK-NEXT:   "timing_only": false,
// CHECK-NEXT:   "total_cycles": [[CYCLES:[1-9][0-9]*]],
// CHECK-NEXT:   "macs": 245760,
// CHECK-NEXT:   "roofline_cycles": 472,
// CHECK-NEXT:   "roofline_ratio": {{[0-9.]+}},
// CHECK-NEXT:   "dram_read_bytes": {{[0-9]+}},
// CHECK-NEXT:   "dram_write_bytes": 12288,
// CHECK-NEXT:   "compulsory_dram_bytes": 30208,
// CHECK-NEXT:   "sram_peak_bytes": 8192,
// CHECK-NEXT:   "sram_capacity_bytes": 1048576,
// CHECK-NEXT:   "sram_occupancy": [
// CHECK:        "engines": {
// CHECK-NEXT:     "matrix": {
// CHECK-NEXT:       "busy_cycles": {{[1-9][0-9]*}},
// CHECK-NEXT:       "utilization": {{[0-9.]+}}
// CHECK:          "vector": {
// CHECK:          "dma0": {
// CHECK:          "dma1": {
// CHECK:          "fallback": {
// CHECK:        "ops": [
// CHECK:            "op": "npu.matmul",
// CHECK-NEXT:       "loc": "{{.*}}tiled-matmul.mlir:[[@LINE+46]]:9",
// CHECK-NEXT:       "node": "{{.*}}tiled-matmul.mlir:[[@LINE+45]]:9",
// CHECK-NEXT:       "engine": "matrix",
// CHECK-NEXT:       "count": 12,
// CHECK-NEXT:       "cycles": {{[1-9][0-9]*}},
// CHECK-NEXT:       "macs": 245760,
// CHECK-NEXT:       "dram_read_bytes": 0,
// CHECK-NEXT:       "dram_write_bytes": 0,
// CHECK-NEXT:       "transposed_bytes": 0
// CHECK:            "op": "npu.dma_store",
// CHECK:            "count": 4,
// CHECK:            "dram_write_bytes": 12288

// Timing-only mode (no numerics) gives the same report, flagged.
// FAST: "timing_only": true,
// FAST-NEXT: "total_cycles": {{[1-9][0-9]*}},
// FAST-NEXT: "macs": 245760,
func.func @main(%A: memref<64x80xf16>, %B: memref<80x48xf16>) -> memref<64x48xf32> {
  %c0 = arith.constant 0 : index
  %cm = arith.constant 64 : index
  %cn = arith.constant 48 : index
  %ck = arith.constant 80 : index
  %ctm = arith.constant 32 : index
  %ctn = arith.constant 32 : index
  %ctk = arith.constant 32 : index
  %C = memref.alloc() : memref<64x48xf32>
  %a = "npu.alloc"() : () -> memref<32x32xf16, 1>
  %b = "npu.alloc"() : () -> memref<32x32xf16, 1>
  %c = "npu.alloc"() : () -> memref<32x32xf32, 1>
  scf.for %i = %c0 to %cm step %ctm {
    %mi = affine.min affine_map<(d0) -> (-d0 + 64, 32)>(%i)
    scf.for %j = %c0 to %cn step %ctn {
      %nj = affine.min affine_map<(d0) -> (-d0 + 48, 32)>(%j)
      %tc = memref.subview %c[0, 0] [%mi, %nj] [1, 1] : memref<32x32xf32, 1> to memref<?x?xf32, strided<[32, 1]>, 1>
      "npu.fill"(%tc) {value = 0.0 : f64} : (memref<?x?xf32, strided<[32, 1]>, 1>) -> ()
      scf.for %l = %c0 to %ck step %ctk {
        %kl = affine.min affine_map<(d0) -> (-d0 + 80, 32)>(%l)
        %ga = memref.subview %A[%i, %l] [%mi, %kl] [1, 1] : memref<64x80xf16> to memref<?x?xf16, strided<[80, 1], offset: ?>>
        %gb = memref.subview %B[%l, %j] [%kl, %nj] [1, 1] : memref<80x48xf16> to memref<?x?xf16, strided<[48, 1], offset: ?>>
        %ta = memref.subview %a[0, 0] [%mi, %kl] [1, 1] : memref<32x32xf16, 1> to memref<?x?xf16, strided<[32, 1]>, 1>
        %tb = memref.subview %b[0, 0] [%kl, %nj] [1, 1] : memref<32x32xf16, 1> to memref<?x?xf16, strided<[32, 1]>, 1>
        // The previous step's matmul still reads the tiles about to be reloaded.
        "npu.barrier"() : () -> ()
        %t0 = "npu.dma_load"(%ga, %ta) {channel = 0 : i64} : (memref<?x?xf16, strided<[80, 1], offset: ?>>, memref<?x?xf16, strided<[32, 1]>, 1>) -> !npu.token
        %t1 = "npu.dma_load"(%gb, %tb) {channel = 1 : i64} : (memref<?x?xf16, strided<[48, 1], offset: ?>>, memref<?x?xf16, strided<[32, 1]>, 1>) -> !npu.token
        "npu.wait"(%t0, %t1) : (!npu.token, !npu.token) -> ()
        "npu.matmul"(%ta, %tb, %tc) {accumulate = true, activation = "none"}
            : (memref<?x?xf16, strided<[32, 1]>, 1>, memref<?x?xf16, strided<[32, 1]>, 1>, memref<?x?xf32, strided<[32, 1]>, 1>) -> ()
      }
      "npu.barrier"() : () -> ()
      %gc = memref.subview %C[%i, %j] [%mi, %nj] [1, 1] : memref<64x48xf32> to memref<?x?xf32, strided<[48, 1], offset: ?>>
      %ts = "npu.dma_store"(%tc, %gc) {channel = 0 : i64} : (memref<?x?xf32, strided<[32, 1]>, 1>, memref<?x?xf32, strided<[48, 1], offset: ?>>) -> !npu.token
      "npu.wait"(%ts) : (!npu.token) -> ()
    }
  }
  return %C : memref<64x48xf32>
}
