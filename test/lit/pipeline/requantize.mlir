// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline --target='npu -tile-max=32' | FileCheck %s --check-prefix=SPLIT
// RUN: atvoss-opt %s --npu-pipeline --target='npu -fusion=1' | FileCheck %s --check-prefix=UNFUSED

// An int8 matmul accumulating into int32 from a bias, then requantised into
// int8 (how the ONNX importer writes QLinearMatMul / a QDQ Gemm): the
// requantisation is the tile program's epilogue. The int32 accumulator stays
// in SRAM, npu.requantize (per-column scales here) writes the int8 tile, and
// only int8 reaches DRAM. With the reduction split, the accumulator carries
// the partial sums and is requantised once, after the last step.

// In the tile loop, each barrier waits for one unit. The first, for the
// matrix unit: the previous tile's matmul is done and the buffers only a
// matmul reads refill. The one after the tile's matmul, for the vector unit:
// the previous tile's requantisation (and hence its matmul) is done, its int8
// tile is stored and the epilogue's tiles (the residual's skip tile) refill
// while this matmul runs; this tile's requantisation follows. With the
// reduction split the iteration keeps the compute barrier (a matmul that is
// no last step has no requantisation to order it).

// CHECK-LABEL: func.func @matmul$requantize
// CHECK-NOT:     memref.alloc() {{.*}}xi32>
// CHECK:         scf.for
// CHECK-NOT:     "npu.barrier"() {engines = "compute"}
// CHECK:         "npu.matmul"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {{.*}} : (memref<{{.*}}xi8{{.*}}, 1>, memref<{{.*}}xi8{{.*}}, 1>, memref<{{.*}}xi32{{.*}}, 1>, memref<{{.*}}xi32{{.*}}, 1>) -> ()
// CHECK-NEXT:    "npu.barrier"() {engines = "vector"} : () -> ()
// CHECK:         "npu.dma_store"(%{{.*}}, %{{.*}}) {{.*}} : (memref<{{.*}}xi8{{.*}}, 1>, memref<{{.*}}xi8{{.*}}>) -> !npu.token
// CHECK:         "npu.requantize"(%{{.*}}, %{{.*}}, %{{.*}}) {scale = 1.000000e+00 : f64, zero_point = -3 : i64} : (memref<{{.*}}xi32{{.*}}, 1>, memref<{{.*}}xi8{{.*}}, 1>, memref<{{.*}}xf32{{.*}}, 1>) -> ()
// CHECK-NOT:     xi32>) -> !npu.token

// SPLIT-LABEL: func.func @matmul$requantize
// SPLIT-NOT:     engines = "vector"
// SPLIT-NOT:     xi32>) -> !npu.token
// SPLIT:         "npu.matmul"({{.*}}) {accumulate = true
// SPLIT:         "npu.requantize"
// SPLIT-NOT:     xi32>) -> !npu.token

#identity = affine_map<(d0, d1) -> (d0, d1)>
#column = affine_map<(d0, d1) -> (d1)>
func.func @matmul$requantize(%a: tensor<64x96xi8>, %w: tensor<96x80xi8>, %bias: tensor<80xi32>,
                             %scales: tensor<80xf32>) -> tensor<64x80xi8> {
  %empty = tensor.empty() : tensor<64x80xi32>
  %init = linalg.broadcast ins(%bias : tensor<80xi32>) outs(%empty : tensor<64x80xi32>) dimensions = [0]
  %acc = linalg.matmul ins(%a, %w : tensor<64x96xi8>, tensor<96x80xi8>) outs(%init : tensor<64x80xi32>) -> tensor<64x80xi32>
  %out = tensor.empty() : tensor<64x80xi8>
  %q = linalg.generic {indexing_maps = [#identity, #column, #identity], iterator_types = ["parallel", "parallel"]}
      ins(%acc, %scales : tensor<64x80xi32>, tensor<80xf32>) outs(%out : tensor<64x80xi8>) {
  ^bb0(%x: i32, %s: f32, %o: i8):
    %zp = arith.constant -3.0 : f32
    %lo = arith.constant -128.0 : f32
    %hi = arith.constant 127.0 : f32
    %f = arith.sitofp %x : i32 to f32
    %m = arith.mulf %f, %s : f32
    %r = math.roundeven %m : f32
    %z = arith.addf %r, %zp : f32
    %c1 = arith.maximumf %z, %lo : f32
    %c2 = arith.minimumf %c1, %hi : f32
    %y = arith.fptosi %c2 : f32 to i8
    linalg.yield %y : i8
  } -> tensor<64x80xi8>
  return %q : tensor<64x80xi8>
}

// QLinearAveragePool's quantisation (frontend/ops_quantized.quantize_zero_point_first):
// the zero point added before rounding, then the uint8 shift, is one
// npu.requantize with `offset`.
// CHECK-LABEL: func.func @quantize$zero_point_first
// CHECK:         "npu.requantize"(%{{.*}}, %{{.*}}) {divide = true, offset = 1.200000e+02 : f64, scale = 2.500000e-01 : f64, zero_point = -128 : i64} : (memref<{{.*}}xf32, {{.*}}1>, memref<{{.*}}xi8, {{.*}}1>) -> ()
func.func @quantize$zero_point_first(%a: tensor<16x64xf32>) -> tensor<16x64xi8> {
  %out = tensor.empty() : tensor<16x64xi8>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<16x64xf32>) outs(%out : tensor<16x64xi8>) {
  ^bb0(%x: f32, %o: i8):
    %s = arith.constant 0.25 : f32
    %zu = arith.constant 120.0 : f32
    %shift = arith.constant -128.0 : f32
    %lo = arith.constant -128.0 : f32
    %hi = arith.constant 127.0 : f32
    %d = arith.divf %x, %s : f32
    %u = arith.addf %d, %zu : f32
    %n = math.roundeven %u : f32
    %z = arith.addf %n, %shift : f32
    %c1 = arith.maximumf %z, %lo : f32
    %c2 = arith.minimumf %c1, %hi : f32
    %q = arith.fptosi %c2 : f32 to i8
    linalg.yield %q : i8
  } -> tensor<16x64xi8>
  return %r : tensor<16x64xi8>
}

// An add of two int8 tensors (how the importer writes QLinearAdd and a QDQ
// residual Add, as onnxruntime's x86 kernel computes it): each input moved to
// its uint8 range, two fused multiply-adds with the scale ratios, rounded and
// moved back. One npu.quantized_add on the int8 tiles; nothing in f32 reaches
// DRAM or SRAM.
// CHECK-LABEL: func.func @add$quantized
// CHECK-NOT:     xf32
// CHECK:         "npu.quantized_add"(%{{.*}}, %{{.*}}, %{{.*}}) {input_shift = 128 : i64, lhs_scale = 5.000000e-01 : f64, offset = 3.000000e+00 : f64, rhs_scale = 2.500000e-01 : f64, zero_point = -128 : i64} : (memref<{{.*}}xi8, {{.*}}1>, memref<{{.*}}xi8, {{.*}}1>, memref<{{.*}}xi8, {{.*}}1>) -> ()
// CHECK-NOT:     xf32
func.func @add$quantized(%a: tensor<16x16x64xi8>, %b: tensor<16x16x64xi8>) -> tensor<16x16x64xi8> {
  %out = tensor.empty() : tensor<16x16x64xi8>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a, %b : tensor<16x16x64xi8>, tensor<16x16x64xi8>) outs(%out : tensor<16x16x64xi8>) {
  ^bb0(%x: i8, %y: i8, %o: i8):
    %shift = arith.constant 128.0 : f32
    %back = arith.constant -128.0 : f32
    %ra = arith.constant 0.5 : f32
    %rb = arith.constant 0.25 : f32
    %fixed = arith.constant 3.0 : f32
    %lo = arith.constant -128.0 : f32
    %hi = arith.constant 127.0 : f32
    %xf = arith.sitofp %x : i8 to f32
    %xu = arith.addf %xf, %shift : f32
    %yf = arith.sitofp %y : i8 to f32
    %yu = arith.addf %yf, %shift : f32
    %t = math.fma %yu, %rb, %fixed : f32
    %s = math.fma %xu, %ra, %t : f32
    %n = math.roundeven %s : f32
    %z = arith.addf %n, %back : f32
    %c1 = arith.maximumf %z, %lo : f32
    %c2 = arith.minimumf %c1, %hi : f32
    %q = arith.fptosi %c2 : f32 to i8
    linalg.yield %q : i8
  } -> tensor<16x16x64xi8>
  return %r : tensor<16x16x64xi8>
}

// A quantised residual add reading only the requantised int8 result (a ResNet
// block's int8 conv, then its Add) is folded into the matmul's tile program at
// -fusion=2: after npu.requantize writes the int8 tile, npu.quantized_add adds
// the skip tile loaded beside it, and only the sum is stored. At -fusion=1 the
// add is its own tile program, which loads the stored int8 result back.
// CHECK-LABEL: func.func @matmul$requantize_add
// CHECK:         scf.for %{{.*}} iter_args(%[[LHS:[^ ]*]] = %{{.*}}, %[[SKIP:[^ ]*]] = %{{.*}}, %[[STORED:[^ ]*]] = %{{.*}})
// CHECK-NEXT:      "npu.barrier"() {engines = "matrix"}
// CHECK:           "npu.dma_load"({{.*}} : (memref<32x96xi8
// CHECK:           "npu.wait"(%[[LHS]])
// CHECK:           "npu.matmul"
// CHECK-NEXT:      "npu.barrier"() {engines = "vector"}
// CHECK:           "npu.dma_store"
// CHECK:           "npu.dma_load"({{.*}} : (memref<32x80xi8
// CHECK:           "npu.wait"(%[[SKIP]], %[[STORED]])
// CHECK-NEXT:      "npu.requantize"(%{{.*}}, %[[TILE:[^,]*]], %{{.*}})
// CHECK:         "npu.quantized_add"(%[[TILE]], %{{.*}}, %[[TILE]]) {input_shift = 128 : i64
// CHECK-NOT:     "npu.quantized_add"
// CHECK:         return
// UNFUSED-LABEL: func.func @matmul$requantize_add
// UNFUSED:         "npu.requantize"
// UNFUSED-NOT:     "npu.quantized_add"
// UNFUSED:         "npu.dma_store"
// UNFUSED:         "npu.quantized_add"
func.func @matmul$requantize_add(%a: tensor<64x96xi8>, %w: tensor<96x80xi8>, %bias: tensor<80xi32>,
                                 %scales: tensor<80xf32>, %skip: tensor<64x80xi8>) -> tensor<64x80xi8> {
  %empty = tensor.empty() : tensor<64x80xi32>
  %init = linalg.broadcast ins(%bias : tensor<80xi32>) outs(%empty : tensor<64x80xi32>) dimensions = [0]
  %acc = linalg.matmul ins(%a, %w : tensor<64x96xi8>, tensor<96x80xi8>) outs(%init : tensor<64x80xi32>) -> tensor<64x80xi32>
  %out = tensor.empty() : tensor<64x80xi8>
  %q = linalg.generic {indexing_maps = [#identity, #column, #identity], iterator_types = ["parallel", "parallel"]}
      ins(%acc, %scales : tensor<64x80xi32>, tensor<80xf32>) outs(%out : tensor<64x80xi8>) {
  ^bb0(%x: i32, %s: f32, %o: i8):
    %zp = arith.constant -3.0 : f32
    %lo = arith.constant -128.0 : f32
    %hi = arith.constant 127.0 : f32
    %f = arith.sitofp %x : i32 to f32
    %m = arith.mulf %f, %s : f32
    %r = math.roundeven %m : f32
    %z = arith.addf %r, %zp : f32
    %c1 = arith.maximumf %z, %lo : f32
    %c2 = arith.minimumf %c1, %hi : f32
    %y = arith.fptosi %c2 : f32 to i8
    linalg.yield %y : i8
  } -> tensor<64x80xi8>
  %sum_init = tensor.empty() : tensor<64x80xi8>
  %sum = linalg.generic {indexing_maps = [#identity, #identity, #identity], iterator_types = ["parallel", "parallel"]}
      ins(%q, %skip : tensor<64x80xi8>, tensor<64x80xi8>) outs(%sum_init : tensor<64x80xi8>) {
  ^bb0(%x: i8, %y: i8, %o: i8):
    %shift = arith.constant 128.0 : f32
    %back = arith.constant -128.0 : f32
    %ra = arith.constant 0.5 : f32
    %rb = arith.constant 0.25 : f32
    %fixed = arith.constant 3.0 : f32
    %lo = arith.constant -128.0 : f32
    %hi = arith.constant 127.0 : f32
    %xf = arith.sitofp %x : i8 to f32
    %xu = arith.addf %xf, %shift : f32
    %yf = arith.sitofp %y : i8 to f32
    %yu = arith.addf %yf, %shift : f32
    %t = math.fma %yu, %rb, %fixed : f32
    %u = math.fma %xu, %ra, %t : f32
    %n = math.roundeven %u : f32
    %z = arith.addf %n, %back : f32
    %c1 = arith.maximumf %z, %lo : f32
    %c2 = arith.minimumf %c1, %hi : f32
    %v = arith.fptosi %c2 : f32 to i8
    linalg.yield %v : i8
  } -> tensor<64x80xi8>
  return %sum : tensor<64x80xi8>
}
