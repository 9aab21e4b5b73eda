// RUN: atvoss-opt %s -split-input-file -npu-keep-in-sram | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-keep-in-sram
// RUN: atvoss-opt %s -split-input-file -npu-keep-in-sram --target='npu -fusion=1' | FileCheck %s --check-prefix=FUSION1

#id = affine_map<(d0, d1) -> (d0, d1)>

// The matmul's result is only read by the relu: it stays in SRAM between them,
// placed at the top of SRAM, released after its reader.

// CHECK-LABEL: func.func @matmul$relu
// CHECK:         %[[T:.*]] = "npu.alloc"() {npu.resident, offset = 1032192 : i64} : () -> memref<64x64xf32, 1>
// CHECK:         linalg.fill {{.*}} outs(%[[T]] : memref<64x64xf32, 1>)
// CHECK:         linalg.matmul {{.*}} outs(%[[T]] : memref<64x64xf32, 1>)
// CHECK:         linalg.generic {{.*}} ins(%[[T]] : memref<64x64xf32, 1>)
// CHECK-NEXT:    ^bb0
// CHECK:         "npu.dealloc"(%[[T]])
// CHECK-NEXT:    return
// FUSION1-LABEL: func.func @matmul$relu
// FUSION1:         memref.alloc() : memref<64x64xf32>
// FUSION1-NOT:     npu.alloc
func.func @matmul$relu(%a: memref<64x128xf32>, %b: memref<128x64xf32>, %out: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<64x64xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<64x64xf32>)
  // expected-remark @below {{kept 'linalg.matmul' output in SRAM for 'linalg.generic' at line 27 (16384 B at offset 1032192; saves 484 estimated cycles)}}
  linalg.matmul ins(%a, %b : memref<64x128xf32>, memref<128x64xf32>) outs(%t : memref<64x64xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<64x64xf32>) outs(%out : memref<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %x, %zero : f32
    linalg.yield %y : f32
  }
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// A view of the kept tensor is rebuilt in SRAM.

// CHECK-LABEL: func.func @add$through_a_reshape
// CHECK:         %[[T:.*]] = "npu.alloc"() {npu.resident, offset = {{[0-9]+}} : i64} : () -> memref<32x64xf32, 1>
// CHECK:         memref.expand_shape %[[T]] {{.*}} : memref<32x64xf32, 1> into memref<32x2x32xf32, 1>
func.func @add$through_a_reshape(%a: memref<32x64xf32>, %out: memref<32x2x32xf32>) {
  %t = memref.alloc() : memref<32x64xf32>
  // expected-remark @below {{kept 'linalg.generic' output in SRAM}}
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %a : memref<32x64xf32>, memref<32x64xf32>) outs(%t : memref<32x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  %e = memref.expand_shape %t [[0], [1, 2]] output_shape [32, 2, 32] : memref<32x64xf32> into memref<32x2x32xf32>
  linalg.copy ins(%e : memref<32x2x32xf32>) outs(%out : memref<32x2x32xf32>)
  return
}

// -----

// A tensor only a 3x3 conv reads through its zero-padded copy is kept in SRAM
// padded: the producer writes the interior of the padded buffer, the halo is
// filled once where it is allocated, and the conv reads the padded buffer
// itself. The padded copy, its fill and the DRAM buffer are gone. The
// interior is marked: its producer writes it whole.

// CHECK-LABEL: func.func @conv$padded_for_conv
// CHECK:         %[[P:.*]] = "npu.alloc"() {npu.resident, offset = {{[0-9]+}} : i64} : () -> memref<1x10x10x16xf32, 1>
// CHECK:         %[[TOP:.*]] = memref.subview %[[P]][0, 0, 0, 0] [1, 1, 10, 16]
// CHECK:         linalg.fill ins(%{{.*}} : f32) outs(%[[TOP]]
// CHECK:         memref.subview %[[P]][0, 9, 0, 0] [1, 1, 10, 16]
// CHECK:         memref.subview %[[P]][0, 0, 0, 0] [1, 10, 1, 16]
// CHECK:         memref.subview %[[P]][0, 0, 9, 0] [1, 10, 1, 16]
// CHECK:         %[[IN:.*]] = memref.subview %[[P]][0, 1, 1, 0] [1, 8, 8, 16] [1, 1, 1, 1] {npu.padded_interior} : memref<1x10x10x16xf32, 1> to memref<1x8x8x16xf32, strided<[1600, 160, 16, 1], offset: 176>, 1>
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} outs(%[[IN]] :
// CHECK-NOT:     memref.copy
// CHECK-NOT:     memref.alloc
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[P]], %{{.*}} : memref<1x10x10x16xf32, 1>, memref<3x3x16x16xf32>)
// CHECK:         "npu.dealloc"(%[[P]])
func.func @conv$padded_for_conv(%x: memref<1x8x8x16xf32>, %w1: memref<1x1x16x16xf32>, %w2: memref<3x3x16x16xf32>, %out: memref<1x8x8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<1x8x8x16xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<1x8x8x16xf32>)
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf' writes the interior of the 1x10x10x16 padded buffer 'linalg.conv_2d_nhwc_hwcf' at line}}
  // expected-remark @below {{kept 'linalg.conv_2d_nhwc_hwcf' output in SRAM for 'linalg.conv_2d_nhwc_hwcf' at line}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w1 : memref<1x8x8x16xf32>, memref<1x1x16x16xf32>) outs(%t : memref<1x8x8x16xf32>)
  %p = memref.alloc() : memref<1x10x10x16xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<1x10x10x16xf32>)
  %interior = memref.subview %p[0, 1, 1, 0] [1, 8, 8, 16] [1, 1, 1, 1] : memref<1x10x10x16xf32> to memref<1x8x8x16xf32, strided<[1600, 160, 16, 1], offset: 176>>
  memref.copy %t, %interior : memref<1x8x8x16xf32> to memref<1x8x8x16xf32, strided<[1600, 160, 16, 1], offset: 176>>
  linalg.fill ins(%zero : f32) outs(%out : memref<1x8x8x16xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w2 : memref<1x10x10x16xf32>, memref<3x3x16x16xf32>) outs(%out : memref<1x8x8x16xf32>)
  return
}

// -----

// Refused padding: the tensor is also read through a view (a reshape of a
// strided interior is not a view), so it is kept whole and the conv copies it
// into its padded SRAM tile.

// CHECK-LABEL: func.func @conv$padded_and_reshaped
// CHECK:         %[[T:.*]] = "npu.alloc"() {npu.resident, offset = {{[0-9]+}} : i64} : () -> memref<1x8x8x16xf32, 1>
// CHECK:         memref.copy %[[T]]
// CHECK:         memref.collapse_shape %[[T]]
func.func @conv$padded_and_reshaped(%x: memref<1x8x8x16xf32>, %w1: memref<1x1x16x16xf32>, %w2: memref<3x3x16x16xf32>, %out: memref<1x8x8x16xf32>, %flat: memref<64x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<1x8x8x16xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<1x8x8x16xf32>)
  // expected-remark @below {{kept 'linalg.conv_2d_nhwc_hwcf' output in SRAM}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w1 : memref<1x8x8x16xf32>, memref<1x1x16x16xf32>) outs(%t : memref<1x8x8x16xf32>)
  %p = memref.alloc() : memref<1x10x10x16xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<1x10x10x16xf32>)
  %interior = memref.subview %p[0, 1, 1, 0] [1, 8, 8, 16] [1, 1, 1, 1] : memref<1x10x10x16xf32> to memref<1x8x8x16xf32, strided<[1600, 160, 16, 1], offset: 176>>
  memref.copy %t, %interior : memref<1x8x8x16xf32> to memref<1x8x8x16xf32, strided<[1600, 160, 16, 1], offset: 176>>
  linalg.fill ins(%zero : f32) outs(%out : memref<1x8x8x16xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w2 : memref<1x10x10x16xf32>, memref<3x3x16x16xf32>) outs(%out : memref<1x8x8x16xf32>)
  %c = memref.collapse_shape %t [[0, 1, 2], [3]] : memref<1x8x8x16xf32> into memref<64x16xf32>
  linalg.copy ins(%c : memref<64x16xf32>) outs(%flat : memref<64x16xf32>)
  return
}

// -----

// Refused padding: the producer writes the tensor transposed (NCHW in, NHWC
// out), which it can do in place on a whole buffer but not through the
// strided interior of a padded one; the tensor is kept whole and the conv
// copies it into its padded SRAM tile.

// CHECK-LABEL: func.func @conv$padded_after_a_transposing_producer
// CHECK:         %[[T:.*]] = "npu.alloc"() {npu.resident, offset = {{[0-9]+}} : i64} : () -> memref<1x8x8x16xf32, 1>
// CHECK:         linalg.generic {{.*}} outs(%[[T]] : memref<1x8x8x16xf32, 1>)
// CHECK:         memref.copy %[[T]]
#nchw = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#to_nhwc = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3, d1)>
func.func @conv$padded_after_a_transposing_producer(%x: memref<1x16x8x8xf32>, %w2: memref<3x3x16x16xf32>, %out: memref<1x8x8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<1x8x8x16xf32>
  // expected-remark @below {{kept 'linalg.generic' output in SRAM}}
  linalg.generic {indexing_maps = [#nchw, #to_nhwc], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : memref<1x16x8x8xf32>) outs(%t : memref<1x8x8x16xf32>) {
  ^bb0(%in: f32, %o: f32):
    %r = arith.maximumf %in, %zero : f32
    linalg.yield %r : f32
  }
  %p = memref.alloc() : memref<1x10x10x16xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<1x10x10x16xf32>)
  %interior = memref.subview %p[0, 1, 1, 0] [1, 8, 8, 16] [1, 1, 1, 1] : memref<1x10x10x16xf32> to memref<1x8x8x16xf32, strided<[1600, 160, 16, 1], offset: 176>>
  memref.copy %t, %interior : memref<1x8x8x16xf32> to memref<1x8x8x16xf32, strided<[1600, 160, 16, 1], offset: 176>>
  linalg.fill ins(%zero : f32) outs(%out : memref<1x8x8x16xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w2 : memref<1x10x10x16xf32>, memref<3x3x16x16xf32>) outs(%out : memref<1x8x8x16xf32>)
  return
}

// -----

// Kept padded after an int8 implicit GEMM: the tensor is a 1x1 conv's
// requantised result. The conv views its int32 accumulator as a matrix, but
// its requantisation (folded into the conv's tile program, on the vector unit)
// writes the int8 tensor, and writes the strided interior of the padded buffer
// as any strided view: the 3x3 conv reads the padded buffer with no copy.

// CHECK-LABEL: func.func @conv$padded_after_an_int8_implicit_gemm
// CHECK:         %[[P:.*]] = "npu.alloc"() {npu.resident, offset = {{[0-9]+}} : i64} : () -> memref<1x10x10x16xi8, 1>
// CHECK:         %[[I:.*]] = memref.subview %[[P]][0, 1, 1, 0] [1, 8, 8, 16] [1, 1, 1, 1]
// CHECK:         linalg.generic {{.*}} outs(%[[I]] : memref<1x8x8x16xi8, strided<[1600, 160, 16, 1], offset: 176>, 1>)
// CHECK-NOT:     memref.copy
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[P]], {{.*}} : memref<1x10x10x16xi8, 1>, memref<3x3x16x16xi8>)
#identity4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#channel4 = affine_map<(d0, d1, d2, d3) -> (d3)>
func.func @conv$padded_after_an_int8_implicit_gemm(%x: memref<1x8x8x32xi8>, %w1: memref<1x1x32x16xi8>, %bias: memref<16xi32>, %scales: memref<16xf32>, %w2: memref<3x3x16x16xi8>, %out: memref<1x8x8x16xi32>) {
  %zero = arith.constant 0 : i8
  %zero32 = arith.constant 0 : i32
  %acc = memref.alloc() : memref<1x8x8x16xi32>
  linalg.broadcast ins(%bias : memref<16xi32>) outs(%acc : memref<1x8x8x16xi32>) dimensions = [0, 1, 2]
  // expected-remark @below {{kept 'linalg.conv_2d_nhwc_hwcf' output in SRAM for 'linalg.conv_2d_nhwc_hwcf' at line}}
  // expected-remark @below {{'linalg.conv_2d_nhwc_hwcf' writes the interior of the 1x10x10x16 padded buffer 'linalg.conv_2d_nhwc_hwcf' at line}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, npu.conv_strategy = "implicit-gemm"}
      ins(%x, %w1 : memref<1x8x8x32xi8>, memref<1x1x32x16xi8>) outs(%acc : memref<1x8x8x16xi32>)
  %t = memref.alloc() : memref<1x8x8x16xi8>
  linalg.generic {indexing_maps = [#identity4, #channel4, #identity4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%acc, %scales : memref<1x8x8x16xi32>, memref<16xf32>) outs(%t : memref<1x8x8x16xi8>) {
  ^bb0(%a: i32, %s: f32, %o: i8):
    %zp = arith.constant -3.0 : f32
    %lo = arith.constant -128.0 : f32
    %hi = arith.constant 127.0 : f32
    %f = arith.sitofp %a : i32 to f32
    %m = arith.mulf %f, %s : f32
    %r = math.roundeven %m : f32
    %z = arith.addf %r, %zp : f32
    %c1 = arith.maximumf %z, %lo : f32
    %c2 = arith.minimumf %c1, %hi : f32
    %y = arith.fptosi %c2 : f32 to i8
    linalg.yield %y : i8
  }
  %p = memref.alloc() : memref<1x10x10x16xi8>
  linalg.fill ins(%zero : i8) outs(%p : memref<1x10x10x16xi8>)
  %interior = memref.subview %p[0, 1, 1, 0] [1, 8, 8, 16] [1, 1, 1, 1] : memref<1x10x10x16xi8> to memref<1x8x8x16xi8, strided<[1600, 160, 16, 1], offset: 176>>
  memref.copy %t, %interior : memref<1x8x8x16xi8> to memref<1x8x8x16xi8, strided<[1600, 160, 16, 1], offset: 176>>
  linalg.fill ins(%zero32 : i32) outs(%out : memref<1x8x8x16xi32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w2 : memref<1x10x10x16xi8>, memref<3x3x16x16xi8>) outs(%out : memref<1x8x8x16xi32>)
  return
}

// -----

// A batch of two images: the convs take one image at a time, and each writes
// (the first) or reads (the second) its image of the kept tensor in place, a
// slice of the SRAM buffer.

// CHECK-LABEL: func.func @conv$batch_of_two
// CHECK:         %[[T:.*]] = "npu.alloc"() {npu.resident, offset = {{[0-9]+}} : i64} : () -> memref<2x8x8x32xf32, 1>
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} outs(%[[T]] : memref<2x8x8x32xf32, 1>)
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[T]], %{{.*}} : memref<2x8x8x32xf32, 1>, memref<1x1x32x16xf32>)
// CHECK:         "npu.dealloc"(%[[T]])
func.func @conv$batch_of_two(%x: memref<2x8x8x16xf32>, %w1: memref<1x1x16x32xf32>, %w2: memref<1x1x32x16xf32>, %out: memref<2x8x8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<2x8x8x32xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<2x8x8x32xf32>)
  // expected-remark @below {{kept 'linalg.conv_2d_nhwc_hwcf' output in SRAM for 'linalg.conv_2d_nhwc_hwcf' at line}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, npu.conv_strategy = "implicit-gemm"}
      ins(%x, %w1 : memref<2x8x8x16xf32>, memref<1x1x16x32xf32>) outs(%t : memref<2x8x8x32xf32>)
  linalg.fill ins(%zero : f32) outs(%out : memref<2x8x8x16xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, npu.conv_strategy = "implicit-gemm"}
      ins(%t, %w2 : memref<2x8x8x32xf32>, memref<1x1x32x16xf32>) outs(%out : memref<2x8x8x16xf32>)
  return
}

// -----

// Over a batch of two, the 3x3 conv copies its padded window of one image at a
// time out of the kept tensor (on the vector unit, into its tile whose halo
// is filled once): the tensor is kept unpadded, and the padded copy stays for
// the conv to fold into its window.

// CHECK-LABEL: func.func @conv$batch_padded
// CHECK:         %[[T:.*]] = "npu.alloc"() {npu.resident, offset = {{[0-9]+}} : i64} : () -> memref<2x8x8x16xf32, 1>
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} outs(%[[T]] : memref<2x8x8x16xf32, 1>)
// CHECK:         memref.copy %[[T]], %{{.*}} : memref<2x8x8x16xf32, 1> to memref<2x8x8x16xf32, strided<[1600, 160, 16, 1], offset: 176>>
func.func @conv$batch_padded(%x: memref<2x8x8x16xf32>, %w1: memref<1x1x16x16xf32>, %w2: memref<3x3x16x16xf32>, %out: memref<2x8x8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<2x8x8x16xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<2x8x8x16xf32>)
  // expected-remark @below {{kept 'linalg.conv_2d_nhwc_hwcf' output in SRAM for 'linalg.conv_2d_nhwc_hwcf' at line}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, npu.conv_strategy = "implicit-gemm"}
      ins(%x, %w1 : memref<2x8x8x16xf32>, memref<1x1x16x16xf32>) outs(%t : memref<2x8x8x16xf32>)
  %p = memref.alloc() : memref<2x10x10x16xf32>
  linalg.fill ins(%zero : f32) outs(%p : memref<2x10x10x16xf32>)
  %interior = memref.subview %p[0, 1, 1, 0] [2, 8, 8, 16] [1, 1, 1, 1] : memref<2x10x10x16xf32> to memref<2x8x8x16xf32, strided<[1600, 160, 16, 1], offset: 176>>
  memref.copy %t, %interior : memref<2x8x8x16xf32> to memref<2x8x8x16xf32, strided<[1600, 160, 16, 1], offset: 176>>
  linalg.fill ins(%zero : f32) outs(%out : memref<2x8x8x16xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w2 : memref<2x10x10x16xf32>, memref<3x3x16x16xf32>) outs(%out : memref<2x8x8x16xf32>)
  return
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>

// The second matmul's init (a fill, folded into it) comes before the relu of
// the first matmul's result: its SRAM is allocated there, while the first
// result is still live, so the two take different places.

// CHECK-LABEL: func.func @fill$before_an_earlier_reader
// CHECK:         %[[T:.*]] = "npu.alloc"() {npu.resident, offset = 1032192 : i64}
// CHECK:         %[[U:.*]] = "npu.alloc"() {npu.resident, offset = 1015808 : i64}
// CHECK-NEXT:    linalg.fill {{.*}} outs(%[[U]] : memref<64x64xf32, 1>)
// CHECK-NEXT:    linalg.generic {{.*}} ins(%[[T]] : memref<64x64xf32, 1>)
func.func @fill$before_an_earlier_reader(%a: memref<64x128xf32>, %b: memref<128x64xf32>,
                                         %out: memref<64x64xf32>, %out2: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %t = memref.alloc() : memref<64x64xf32>
  %u = memref.alloc() : memref<64x64xf32>
  linalg.fill ins(%zero : f32) outs(%t : memref<64x64xf32>)
  // expected-remark @below {{kept 'linalg.matmul' output in SRAM for 'linalg.generic' at line 285 (16384 B at offset 1032192; saves 484 estimated cycles)}}
  linalg.matmul ins(%a, %b : memref<64x128xf32>, memref<128x64xf32>) outs(%t : memref<64x64xf32>)
  linalg.fill ins(%zero : f32) outs(%u : memref<64x64xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : memref<64x64xf32>) outs(%out : memref<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %x, %zero : f32
    linalg.yield %y : f32
  }
  // expected-remark @below {{kept 'linalg.matmul' output in SRAM for 'linalg.generic' at line 293 (16384 B at offset 1015808; saves 484 estimated cycles)}}
  linalg.matmul ins(%a, %b : memref<64x128xf32>, memref<128x64xf32>) outs(%u : memref<64x64xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u : memref<64x64xf32>) outs(%out2 : memref<64x64xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %x, %zero : f32
    linalg.yield %y : f32
  }
  return
}

// -----

// A padded buffer its producer writes the interior of (npu-pad-in-place), its
// border filled first: the conv writing the interior is the tensor's producer,
// where the remark goes and which it names, not the border's fills.

// CHECK-LABEL: func.func @padded$interior_written_in_place
// CHECK:         %[[P:.*]] = "npu.alloc"() {npu.resident, offset = {{[0-9]+}} : i64} : () -> memref<1x10x10x16xf32, 1>
// CHECK:         linalg.conv_2d_nhwc_hwcf {{.*}} ins(%[[P]], {{.*}} : memref<1x10x10x16xf32, 1>, memref<3x3x16x16xf32>)
func.func @padded$interior_written_in_place(%x: memref<1x8x8x32xf32>, %w1: memref<1x1x32x16xf32>,
                                            %bias: memref<16xf32>, %w2: memref<3x3x16x16xf32>,
                                            %out: memref<1x8x8x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %p = memref.alloc() : memref<1x10x10x16xf32>
  %top = memref.subview %p[0, 0, 0, 0] [1, 1, 10, 16] [1, 1, 1, 1] : memref<1x10x10x16xf32> to memref<1x1x10x16xf32, strided<[1600, 160, 16, 1]>>
  linalg.fill ins(%zero : f32) outs(%top : memref<1x1x10x16xf32, strided<[1600, 160, 16, 1]>>)
  %bottom = memref.subview %p[0, 9, 0, 0] [1, 1, 10, 16] [1, 1, 1, 1] : memref<1x10x10x16xf32> to memref<1x1x10x16xf32, strided<[1600, 160, 16, 1], offset: 1440>>
  linalg.fill ins(%zero : f32) outs(%bottom : memref<1x1x10x16xf32, strided<[1600, 160, 16, 1], offset: 1440>>)
  %left = memref.subview %p[0, 0, 0, 0] [1, 10, 1, 16] [1, 1, 1, 1] : memref<1x10x10x16xf32> to memref<1x10x1x16xf32, strided<[1600, 160, 16, 1]>>
  linalg.fill ins(%zero : f32) outs(%left : memref<1x10x1x16xf32, strided<[1600, 160, 16, 1]>>)
  %right = memref.subview %p[0, 0, 9, 0] [1, 10, 1, 16] [1, 1, 1, 1] : memref<1x10x10x16xf32> to memref<1x10x1x16xf32, strided<[1600, 160, 16, 1], offset: 144>>
  linalg.fill ins(%zero : f32) outs(%right : memref<1x10x1x16xf32, strided<[1600, 160, 16, 1], offset: 144>>)
  %interior = memref.subview %p[0, 1, 1, 0] [1, 8, 8, 16] [1, 1, 1, 1] : memref<1x10x10x16xf32> to memref<1x8x8x16xf32, strided<[1600, 160, 16, 1], offset: 176>>
  linalg.broadcast ins(%bias : memref<16xf32>) outs(%interior : memref<1x8x8x16xf32, strided<[1600, 160, 16, 1], offset: 176>>) dimensions = [0, 1, 2]
  // expected-remark @below {{kept 'linalg.conv_2d_nhwc_hwcf' output in SRAM for 'linalg.conv_2d_nhwc_hwcf' at line 330 (6400 B at offset 1042176; saves 704 estimated cycles)}}
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>, npu.conv_strategy = "direct"}
      ins(%x, %w1 : memref<1x8x8x32xf32>, memref<1x1x32x16xf32>) outs(%interior : memref<1x8x8x16xf32, strided<[1600, 160, 16, 1], offset: 176>>)
  linalg.fill ins(%zero : f32) outs(%out : memref<1x8x8x16xf32>)
  linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%p, %w2 : memref<1x10x10x16xf32>, memref<3x3x16x16xf32>) outs(%out : memref<1x8x8x16xf32>)
  return
}
