// RUN: atvoss-opt %s -split-input-file -npu-fuse-elementwise --target='npu -max-sram-bytes=65536' | FileCheck %s
// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-fuse-elementwise --target='npu -max-sram-bytes=65536'
// RUN: atvoss-opt %s -split-input-file --npu-pipeline --target='npu -max-sram-bytes=65536' | FileCheck %s --check-prefix=PROGRAM
// RUN: atvoss-opt %s -split-input-file --npu-pipeline --target='npu -max-sram-bytes=65536' | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM

// A sigmoid between DequantizeLinear and QuantizeLinear, as onnxruntime's
// quantiser writes it and the importer brings it in: one generic computes
// all three, so the f32 tensors between them (64 KiB each) are neither
// written to DRAM nor read back; int8 comes in and goes out. Its tile program
// dequantises each tile, takes its sigmoid and quantises it in SRAM.

// CHECK-LABEL: func.func @dequantize_sigmoid_quantize
// CHECK:         %[[R:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<1x16x16x64xi8>) outs(%{{.*}} : tensor<1x16x16x64xi8>)
// CHECK:           arith.sitofp
// CHECK:           math.exp
// CHECK:           math.roundeven
// CHECK:           arith.fptosi
// CHECK-NOT:     linalg.generic
// CHECK:         return %[[R]]
// PROGRAM-LABEL: func.func @dequantize_sigmoid_quantize
// PROGRAM:         scf.for
// PROGRAM:           "npu.dequantize"({{.*}}) {scale = {{.*}}, zero_point = 3 : i64} : (memref<1x4x16x64xi8, 1>, memref<1x4x16x64xf32
// PROGRAM-NEXT:      "npu.activation"({{.*}}) {kind = "sigmoid"} : (memref<1x4x16x64xf32
// PROGRAM-NEXT:      "npu.requantize"({{.*}}) {divide = true, scale = 3.906250e-03 : f64, zero_point = -128 : i64} : (memref<1x4x16x64xf32, {{.*}}>, memref<1x4x16x64xi8, 1>)
// SIM:           DRAM read / write {{ *}}16,384 / 16,384 B
#id = affine_map<(n, h, w, c) -> (n, h, w, c)>
func.func @dequantize_sigmoid_quantize(%x: tensor<1x16x16x64xi8>) -> tensor<1x16x16x64xi8> {
  %zp = arith.constant 3.0 : f32
  %scale = arith.constant 0.05 : f32
  %one = arith.constant 1.0 : f32
  %out_scale = arith.constant 0.00390625 : f32
  %out_zp = arith.constant -128.0 : f32
  %low = arith.constant -128.0 : f32
  %high = arith.constant 127.0 : f32
  %e0 = tensor.empty() : tensor<1x16x16x64xf32>
  %dq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x : tensor<1x16x16x64xi8>) outs(%e0 : tensor<1x16x16x64xf32>) {
  ^bb0(%v: i8, %o: f32):
    %f = arith.sitofp %v : i8 to f32
    %c = arith.subf %f, %zp : f32
    %r = arith.mulf %c, %scale : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x64xf32>
  %e1 = tensor.empty() : tensor<1x16x16x64xf32>
  // expected-remark @below {{elementwise producer merged into this op (saves 131072 B of DRAM traffic)}}
  %sig = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%dq : tensor<1x16x16x64xf32>) outs(%e1 : tensor<1x16x16x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %n = arith.negf %v : f32
    %e = math.exp %n : f32
    %d = arith.addf %e, %one : f32
    %r = arith.divf %one, %d : f32
    linalg.yield %r : f32
  } -> tensor<1x16x16x64xf32>
  %e2 = tensor.empty() : tensor<1x16x16x64xi8>
  // expected-remark @below {{elementwise producer merged into this op (saves 131072 B of DRAM traffic)}}
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%sig : tensor<1x16x16x64xf32>) outs(%e2 : tensor<1x16x16x64xi8>) {
  ^bb0(%v: f32, %o: i8):
    %s = arith.divf %v, %out_scale : f32
    %r = math.roundeven %s : f32
    %z = arith.addf %r, %out_zp : f32
    %lo = arith.maximumf %z, %low : f32
    %hi = arith.minimumf %lo, %high : f32
    %i = arith.fptosi %hi : f32 to i8
    linalg.yield %i : i8
  } -> tensor<1x16x16x64xi8>
  return %q : tensor<1x16x16x64xi8>
}
