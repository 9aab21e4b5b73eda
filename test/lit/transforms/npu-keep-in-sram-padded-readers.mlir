// RUN: atvoss-opt %s -verify-diagnostics -npu-keep-in-sram --target='npu -max-sram-bytes=147456'

// A tensor a 3x3 conv reads through its zero-padded copy, and a 1x1 conv reads
// as it is. Kept in SRAM, it would be kept padded: the 1x1 conv would read the
// interior of the padded buffer, a view it cannot take as a matrix, so it
// copies it to a 64 KiB tile first. The plan prices that copy (it priced a read
// of a whole buffer in place, and kept tensors that left such an op too little
// SRAM): here the 1x1 conv would not fit below the padded buffer, and the
// tensor goes through DRAM.

func.func @padded$read_by_1x1_too(%x: memref<1x16x16x64xf32>, %w1: memref<1x1x64x64xf32>, %w2: memref<3x3x64x64xf32>, %w3: memref<1x1x64x64xf32>, %out: memref<1x16x16x64xf32>, %out2: memref<1x16x16x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<1x16x16x64xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<1x16x16x64xf32>)
  // expected-remark-re @below {{'linalg.conv_2d_nhwc_hwcf' output (82944 B) not kept in SRAM: 'linalg.conv_2d_nhwc_hwcf' at line {{[0-9]+}} would not fit in the 64512 B left below it}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w1 : memref<1x16x16x64xf32>, memref<1x1x64x64xf32>) outs(%t : memref<1x16x16x64xf32>)
  %p = memref.alloc() : memref<1x18x18x64xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<1x18x18x64xf32>)
  %interior = memref.subview %p[0, 1, 1, 0] [1, 16, 16, 64] [1, 1, 1, 1] : memref<1x18x18x64xf32> to memref<1x16x16x64xf32, strided<[20736, 1152, 64, 1], offset: 1216>>
  memref.copy %t, %interior : memref<1x16x16x64xf32> to memref<1x16x16x64xf32, strided<[20736, 1152, 64, 1], offset: 1216>>
  linalg.fill ins(%zero : f32) outs(%out : memref<1x16x16x64xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w2 : memref<1x18x18x64xf32>, memref<3x3x64x64xf32>) outs(%out : memref<1x16x16x64xf32>)
  linalg.fill ins(%zero : f32) outs(%out2 : memref<1x16x16x64xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%t, %w3 : memref<1x16x16x64xf32>, memref<1x1x64x64xf32>) outs(%out2 : memref<1x16x16x64xf32>)
  return
}
