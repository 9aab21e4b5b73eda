// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-keep-in-sram --target='npu -max-sram-bytes=24576'

#id = affine_map<(d0, d1) -> (d0, d1)>

// The function's result stays in DRAM.

func.func @matmul$result(%a: memref<64x128xf32>, %b: memref<128x64xf32>) -> memref<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<64x64xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<64x64xf32>)
  // expected-remark @below {{'linalg.matmul' output stays in DRAM: it is a result of the function}}
  linalg.matmul ins(%a, %b : memref<64x128xf32>, memref<128x64xf32>) outs(%t : memref<64x64xf32>)
  return %t : memref<64x64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// An op the fallback engine runs reads it: it stays in DRAM.

func.func @add$fallback_reader(%a: memref<32x64xf32>, %out: memref<32x64xf32>) {
  %t = memref.alloc() : memref<32x64xf32>
  // expected-remark @below {{'linalg.generic' output stays in DRAM: 'linalg.generic' at line 31 uses it off the NPU's tiled ops}}
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %a : memref<32x64xf32>, memref<32x64xf32>) outs(%t : memref<32x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<32x64xf32>) outs(%out : memref<32x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.remf %x, %x : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// 64 KiB kept in a 24 KiB SRAM: refused with the numbers.

func.func @add$too_large(%a: memref<128x128xf32>, %out: memref<128x128xf32>) {
  %t = memref.alloc() : memref<128x128xf32>
  // expected-remark @below {{'linalg.generic' output (65536 B) not kept in SRAM: 65536 B do not fit beside the tensors already kept in SRAM}}
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %a : memref<128x128xf32>, memref<128x128xf32>) outs(%t : memref<128x128xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<128x128xf32>) outs(%out : memref<128x128xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.negf %x : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// 16 KiB would fit, and its elementwise producer writes it in place a tile at
// a time in the 8 KiB left below it; but the matmul reading it would be slower.

func.func @add$slows_its_reader(%a: memref<64x64xf32>, %b: memref<64x64xf32>, %out: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<64x64xf32>
  // expected-remark @below {{'linalg.generic' output (16384 B) not kept in SRAM: the ops reading it would take 5316 estimated cycles instead of 4842}}
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %a : memref<64x64xf32>, memref<64x64xf32>) outs(%t : memref<64x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%out : memref<64x64xf32>)
  linalg.matmul ins(%t, %b : memref<64x64xf32>, memref<64x64xf32>) outs(%out : memref<64x64xf32>)
  return
}

// -----

#in = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#red = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// 16 KiB would fit, but its producer, a reduction, computes it whole: its
// input tiles then need more than the 8 KiB left below it.

func.func @sum$starves_its_producer(%a: memref<64x64x4xf32>, %out: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<64x64xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<64x64xf32>)
  // expected-remark @below {{'linalg.generic' output (16384 B) not kept in SRAM: 'linalg.generic' at line 100 would not fit in the 8192 B left below it}}
  linalg.generic {indexing_maps = [#in, #red], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a : memref<64x64x4xf32>) outs(%t : memref<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<64x64xf32>) outs(%out : memref<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.negf %x : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch = affine_map<(d0, d1, d2, d3) -> (d3)>

// A sum pool's result that an elementwise op scales for a conv, which applies
// the scaling to each tile it loads (a prologue): kept in SRAM, the conv would
// compute on it in place and the scaling would run alone, so it stays in DRAM.

func.func @pool$prologue(%x: memref<1x4x4x32xf32>, %s: memref<32xf32>,
                         %w: memref<1x1x32x16xf32>) -> memref<1x2x2x16xf32> {
  %zero = arith.constant 0.0 : f32
  %k = memref.alloc() : memref<2x2xf32>
  %p = memref.alloc() : memref<1x2x2x32xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<1x2x2x32xf32>)
  // expected-remark @below {{'linalg.pooling_nhwc_sum' output stays in DRAM: 'linalg.conv_2d_nhwc_hwcf' at line 143 applies the elementwise op reading it to each tile it loads}}
  linalg.pooling_nhwc_sum {dilations = dense<1> : tensor<2xi64>, strides = dense<2> : tensor<2xi64>}
    ins(%x, %k : memref<1x4x4x32xf32>, memref<2x2xf32>) outs(%p : memref<1x2x2x32xf32>)
  %t = memref.alloc() : memref<1x2x2x32xf32>
  linalg.generic {indexing_maps = [#id, #ch, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
    ins(%p, %s : memref<1x2x2x32xf32>, memref<32xf32>) outs(%t : memref<1x2x2x32xf32>) {
  ^bb0(%in: f32, %scale: f32, %out: f32):
    %m = arith.mulf %in, %scale : f32
    linalg.yield %m : f32
  }
  %y = memref.alloc() : memref<1x2x2x16xf32>
  linalg.fill ins(%zero : f32) outs(%y : memref<1x2x2x16xf32>)
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf' output stays in DRAM: it is a result of the function}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
    ins(%t, %w : memref<1x2x2x32xf32>, memref<1x1x32x16xf32>) outs(%y : memref<1x2x2x16xf32>)
  return %y : memref<1x2x2x16xf32>
}
