// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline --target='npu -tile-max=32' | FileCheck %s --check-prefix=SPLIT

// An int8 matmul accumulating into int32 from a bias, then requantised into
// int8 (how the ONNX importer writes QLinearMatMul / a QDQ Gemm): the
// requantisation is the tile program's epilogue. The int32 accumulator stays
// in SRAM, npu.requantize (per-column scales here) writes the int8 tile, and
// only int8 reaches DRAM. With the reduction split, the accumulator carries
// the partial sums and is requantised once, after the last step.

// CHECK-LABEL: func.func @matmul$requantize
// CHECK-NOT:     memref.alloc() {{.*}}xi32>
// CHECK:         "npu.dma_store"(%{{.*}}, %{{.*}}) {{.*}} : (memref<{{.*}}xi8{{.*}}, 1>, memref<{{.*}}xi8{{.*}}>) -> !npu.token
// CHECK:         "npu.matmul"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {{.*}} : (memref<{{.*}}xi8{{.*}}, 1>, memref<{{.*}}xi8{{.*}}, 1>, memref<{{.*}}xi32{{.*}}, 1>, memref<{{.*}}xi32{{.*}}, 1>) -> ()
// CHECK:         "npu.requantize"(%{{.*}}, %{{.*}}, %{{.*}}) {scale = 1.000000e+00 : f64, zero_point = -3 : i64} : (memref<{{.*}}xi32{{.*}}, 1>, memref<{{.*}}xi8{{.*}}, 1>, memref<{{.*}}xf32{{.*}}, 1>) -> ()
// CHECK-NOT:     xi32>) -> !npu.token

// SPLIT-LABEL: func.func @matmul$requantize
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

// An add of two int8 tensors through f32, quantised again (how the importer
// writes a QDQ residual Add): each input dequantised into an f32 SRAM tile,
// added, and quantised into the int8 tile, which alone is stored.

// CHECK-LABEL: func.func @add$quantized
// CHECK:         "npu.dequantize"(%{{.*}}, %{{.*}}) {scale = 5.000000e-01 : f64, zero_point = 3 : i64} : (memref<{{.*}}xi8, {{.*}}1>, memref<{{.*}}xf32, {{.*}}1>) -> ()
// CHECK:         "npu.dequantize"(%{{.*}}, %{{.*}}) {scale = 2.500000e-01 : f64, zero_point = -1 : i64}
// CHECK:         "npu.elementwise"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "add"} : (memref<{{.*}}xf32, {{.*}}1>, memref<{{.*}}xf32, {{.*}}1>, memref<{{.*}}xf32, {{.*}}1>) -> ()
// CHECK:         "npu.requantize"(%{{.*}}, %{{.*}}) {divide = true, scale = 7.500000e-01 : f64, zero_point = 2 : i64} : (memref<{{.*}}xf32, {{.*}}1>, memref<{{.*}}xi8, {{.*}}1>) -> ()
// CHECK-NOT:     xf32>) -> !npu.token
func.func @add$quantized(%a: tensor<16x16x64xi8>, %b: tensor<16x16x64xi8>) -> tensor<16x16x64xi8> {
  %out = tensor.empty() : tensor<16x16x64xi8>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a, %b : tensor<16x16x64xi8>, tensor<16x16x64xi8>) outs(%out : tensor<16x16x64xi8>) {
  ^bb0(%x: i8, %y: i8, %o: i8):
    %za = arith.constant 3.0 : f32
    %sa = arith.constant 0.5 : f32
    %zb = arith.constant -1.0 : f32
    %sb = arith.constant 0.25 : f32
    %sy = arith.constant 0.75 : f32
    %zy = arith.constant 2.0 : f32
    %lo = arith.constant -128.0 : f32
    %hi = arith.constant 127.0 : f32
    %xf = arith.sitofp %x : i8 to f32
    %xc = arith.subf %xf, %za : f32
    %xr = arith.mulf %xc, %sa : f32
    %yf = arith.sitofp %y : i8 to f32
    %yc = arith.subf %yf, %zb : f32
    %yr = arith.mulf %yc, %sb : f32
    %s = arith.addf %xr, %yr : f32
    %d = arith.divf %s, %sy : f32
    %n = math.roundeven %d : f32
    %z = arith.addf %n, %zy : f32
    %c1 = arith.maximumf %z, %lo : f32
    %c2 = arith.minimumf %c1, %hi : f32
    %q = arith.fptosi %c2 : f32 to i8
    linalg.yield %q : i8
  } -> tensor<16x16x64xi8>
  return %r : tensor<16x16x64xi8>
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

// QLinearAdd as onnxruntime rounds it: the (uint8) zero point added before
// rounding is npu.requantize's `offset`, the shift back to int8 its zero point.
// CHECK-LABEL: func.func @add$zero_point_first
// CHECK:         "npu.elementwise"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "add"}
// CHECK:         "npu.requantize"(%{{.*}}, %{{.*}}) {divide = true, offset = 1.300000e+02 : f64, scale = 7.500000e-01 : f64, zero_point = -128 : i64}
func.func @add$zero_point_first(%a: tensor<16x64xi8>, %b: tensor<16x64xi8>) -> tensor<16x64xi8> {
  %out = tensor.empty() : tensor<16x64xi8>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : tensor<16x64xi8>, tensor<16x64xi8>) outs(%out : tensor<16x64xi8>) {
  ^bb0(%x: i8, %y: i8, %o: i8):
    %za = arith.constant 3.0 : f32
    %sa = arith.constant 0.5 : f32
    %sb = arith.constant 0.25 : f32
    %sy = arith.constant 0.75 : f32
    %zu = arith.constant 130.0 : f32
    %shift = arith.constant -128.0 : f32
    %lo = arith.constant -128.0 : f32
    %hi = arith.constant 127.0 : f32
    %xf = arith.sitofp %x : i8 to f32
    %xc = arith.subf %xf, %za : f32
    %xr = arith.mulf %xc, %sa : f32
    %yf = arith.sitofp %y : i8 to f32
    %yr = arith.mulf %yf, %sb : f32
    %s = arith.addf %xr, %yr : f32
    %d = arith.divf %s, %sy : f32
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
