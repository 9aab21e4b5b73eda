// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-tile --target='npu -max-sram-bytes=4096 -tile-min=8'

// Even the smallest tiles (one output row of 112 pixels, 8 filters, the 7x7
// window's input rows) do not fit 4 KiB with double buffering: a located error.

func.func @conv$no_fit(%x: memref<1x229x229x3xf16>, %w: memref<7x7x3x64xf16>, %y: memref<1x112x112x64xf32>) {
  // expected-error @below {{'linalg.conv_2d_nhwc_hwcf' does not fit in SRAM: working set 31168 B exceeds SRAM budget 4096 B}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %w : memref<1x229x229x3xf16>, memref<7x7x3x64xf16>) outs(%y : memref<1x112x112x64xf32>)
  return
}

// -----

// Pooling keeps the whole output width: three input rows of 4000 pixels do not fit.

func.func @pool$no_fit(%x: memref<1x4x4000x8xf16>) -> memref<1x2x3998x8xf16> {
  %lowest = arith.constant 0xFC00 : f16
  %y = memref.alloc() : memref<1x2x3998x8xf16>
  linalg.fill ins(%lowest : f16) outs(%y : memref<1x2x3998x8xf16>)
  %k = memref.alloc() : memref<3x3xf16>
  // expected-error @below {{'linalg.pooling_nhwc_max' does not fit in SRAM: working set 383936 B exceeds SRAM budget 4096 B}}
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
