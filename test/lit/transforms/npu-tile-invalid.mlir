// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-tile --target='npu -max-sram-bytes=4096 -tile-min=8'

// Even the smallest tiles within -tile-min (one output row of 112 pixels, 8
// filters, the 7x7 window's input rows) do not fit 4 KiB with double
// buffering (31168 B). The search goes on with one stage and tiles below
// -tile-min, finds a schedule that fits, and says what it gave up.

func.func @conv$no_fit(%x: memref<1x229x229x3xf16>, %w: memref<7x7x3x64xf16>, %y: memref<1x112x112x64xf32>) {
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf': tiles n1xoh1xow112xf1xc1, loops (n,ow,oh,f,c), working set 3808 B, estimated 30313472 cycles; fits only with tiles below -tile-min=8 and 1 pipeline stage (the smallest working set is 31168 B, above the SRAM budget 4096 B otherwise)}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : memref<1x229x229x3xf16>, memref<7x7x3x64xf16>) outs(%y : memref<1x112x112x64xf32>)
  return
}

// -----

// Pooling keeps the whole output width: three input rows of 4000 pixels do
// not fit, even one channel at a time with one stage. The error names the
// smallest working set found and the budget that would hold it.

func.func @pool$no_fit(%x: memref<1x4x4000x8xf16>) -> memref<1x2x3998x8xf16> {
  %lowest = arith.constant 0xFC00 : f16
  %y = memref.alloc() : memref<1x2x3998x8xf16>
  linalg.fill ins(%lowest : f16) outs(%y : memref<1x2x3998x8xf16>)
  %k = memref.alloc() : memref<3x3xf16>
  // expected-error @below {{'linalg.pooling_nhwc_max' does not fit in SRAM: working set 32000 B exceeds SRAM budget 4096 B even with 1 pipeline stage and tiles down to 1; -max-sram-bytes=32768 would fit}}
  linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %k : memref<1x4x4000x8xf16>, memref<3x3xf16>) outs(%y : memref<1x2x3998x8xf16>)
  return %y : memref<1x2x3998x8xf16>
}

// -----

// Pooling overwrites its output, so an output that does not start as the
// identity (here: an argument) keeps the op on the fallback engine.

func.func @pool$init_from_argument(%x: memref<1x8x8x8xf16>, %y: memref<1x6x6x8xf16>) {
  %k = memref.alloc() : memref<3x3xf16>
  // expected-remark @below {{'linalg.pooling_nhwc_max' stays on the fallback engine: the output must start as -inf (a fill folded into the op)}}
  linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %k : memref<1x8x8x8xf16>, memref<3x3xf16>) outs(%y : memref<1x6x6x8xf16>)
  return
}

// -----

// One row of 100 pixels, 8 channels, in and out: 6400 B with double
// buffering, 3200 B with one stage. The search drops to one stage for this
// op (npu.pipeline_stages = 1) and says why.

func.func @pool$fewer_stages(%x: memref<1x4x100x8xf16>) -> memref<1x4x100x8xf16> {
  %lowest = arith.constant 0xFC00 : f16
  %y = memref.alloc() : memref<1x4x100x8xf16>
  linalg.fill ins(%lowest : f16) outs(%y : memref<1x4x100x8xf16>)
  %k = memref.alloc() : memref<1x1xf16>
  // expected-remark @below {{'linalg.pooling_nhwc_max': tiles n1xoh1xow100xc8, loops (n,oh,ow,c), working set 3200 B, estimated 1084 cycles; fits only with 1 pipeline stage instead of 2 (with 2, the smallest working set is 6400 B, above the SRAM budget 4096 B)}}
  linalg.pooling_nhwc_max {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%x, %k : memref<1x4x100x8xf16>, memref<1x1xf16>) outs(%y : memref<1x4x100x8xf16>)
  return %y : memref<1x4x100x8xf16>
}

// -----

// bf16 runs on no engine (the simulator has no bf16 arithmetic): refused at the op.

func.func @matmul$bf16(%a: memref<64x64xbf16>, %b: memref<64x64xbf16>, %c: memref<64x64xf32>) {
  // expected-error @below {{'linalg.matmul': bf16 is not supported (the simulator has no bf16 arithmetic: numpy has no bfloat16); use f16 or f32}}
  linalg.matmul ins(%a, %b : memref<64x64xbf16>, memref<64x64xbf16>) outs(%c : memref<64x64xf32>)
  return
}

// -----

func.func @elementwise$bf16(%a: memref<64xbf16>, %b: memref<64xbf16>, %c: memref<64xbf16>) {
  // expected-error @below {{'linalg.add': bf16 is not supported}}
  linalg.add ins(%a, %b : memref<64xbf16>, memref<64xbf16>) outs(%c : memref<64xbf16>)
  return
}

// -----

// A given schedule whose stages do not fit the SRAM is refused, not searched.

func.func @matmul$given_too_big(%a: memref<256x256xf16>, %b: memref<256x256xf16>, %c: memref<256x256xf32>) {
  // expected-error @below {{'linalg.matmul' does not fit in SRAM: working set 524288 B exceeds SRAM budget 4096 B}}
  linalg.matmul {npu.tile_sizes = array<i64: 256, 256, 256>, npu.loop_order = array<i64: 0, 1, 2>,
                 npu.pipeline_stages = 3 : i64, npu.dataflow = "os"}
      ins(%a, %b : memref<256x256xf16>, memref<256x256xf16>) outs(%c : memref<256x256xf32>)
  return
}

// -----

// The npu attributes a schedule is written with (by npu-tile, the tuner or a
// user) must be of the form the passes read: anything else is an error at the
// op, not an internal error and not a silent default.

func.func @matmul$malformed_stages(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %c: memref<64x64xf32>) {
  // expected-error @below {{'linalg.matmul': malformed npu.pipeline_stages "two": expected a positive integer}}
  linalg.matmul {npu.tile_sizes = array<i64: 32, 32, 64>, npu.loop_order = array<i64: 0, 1, 2>, npu.pipeline_stages = "two"}
    ins(%a, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%c : memref<64x64xf32>)
  return
}

// -----

func.func @matmul$zero_stages(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %c: memref<64x64xf32>) {
  // expected-error @below {{'linalg.matmul': malformed npu.pipeline_stages 0 : i64: expected a positive integer}}
  linalg.matmul {npu.tile_sizes = array<i64: 32, 32, 64>, npu.loop_order = array<i64: 0, 1, 2>, npu.pipeline_stages = 0 : i64}
    ins(%a, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%c : memref<64x64xf32>)
  return
}

// -----

func.func @matmul$malformed_dataflow(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %c: memref<64x64xf32>) {
  // expected-error @below {{'linalg.matmul': malformed npu.dataflow "xs": expected "ws" or "os"}}
  linalg.matmul {npu.tile_sizes = array<i64: 32, 32, 64>, npu.loop_order = array<i64: 0, 1, 2>, npu.dataflow = "xs"}
    ins(%a, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%c : memref<64x64xf32>)
  return
}

// -----

// A conv strategy that is not a string naming one (a symbol here).

func.func @conv$malformed_strategy(%x: memref<1x4x4x8xf16>, %w: memref<1x1x8x16xf16>, %y: memref<1x4x4x16xf32>) {
  // expected-error @below {{'linalg.conv_2d_nhwc_hwcf': malformed npu.conv_strategy @"implicit-gemm": expected one of "implicit-gemm", "direct", "im2col"}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, npu.conv_strategy = @"implicit-gemm"}
    ins(%x, %w : memref<1x4x4x8xf16>, memref<1x1x8x16xf16>) outs(%y : memref<1x4x4x16xf32>)
  return
}
