// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM
// RUN: atvoss-opt %s --npu-pipeline --remarks -o /dev/null 2>&1 | FileCheck %s --check-prefix=REMARK

// An elementwise chain (add, broadcast mul, relu, sub, clamp) fused in SRAM:
// the relu and the clamp ride on the mul and the sub before them (their
// `activation` epilogue), three passes of the vector unit for five steps.

// CHECK-LABEL: func.func @main
// CHECK-NOT:     linalg.
// CHECK:         "npu.alloc"() {offset = 0 : i64}
// CHECK:         scf.for
// CHECK:           "npu.elementwise"({{.*}}) {kind = "add"}
// CHECK-NEXT:      "npu.elementwise"({{.*}}) {activation = "relu", kind = "mul"}
// CHECK-NEXT:      "npu.elementwise"({{.*}}) {activation = "clip", clip_max = 5.000000e-01 : f64, clip_min = -5.000000e-01 : f64, kind = "sub"}
// CHECK-NOT:       "npu.activation"
// CHECK:           "npu.barrier"()

// SIM: total cycles
// SIM: fallback 0 0.0%

// REMARK: remark: 'linalg.generic': tiles d032xd196, loops (d0,d1), working set 61632 B, estimated {{[0-9]+}} cycles
func.func @main(%a: tensor<64x96xf16>, %b: tensor<64x96xf16>, %bias: tensor<96xf16>) -> tensor<64x96xf16> {
  %e = tensor.empty() : tensor<64x96xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
      affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>,
      affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b, %bias : tensor<64x96xf16>, tensor<64x96xf16>, tensor<96xf16>) outs(%e : tensor<64x96xf16>) {
  ^bb0(%x: f16, %y: f16, %s: f16, %o: f16):
    %zero = arith.constant 0.0 : f16
    %lo = arith.constant -0.5 : f16
    %hi = arith.constant 0.5 : f16
    %0 = arith.addf %x, %y : f16
    %1 = arith.mulf %0, %s : f16
    %2 = arith.maximumf %1, %zero : f16
    %3 = arith.subf %2, %x : f16
    %4 = arith.maximumf %3, %lo : f16
    %5 = arith.minimumf %4, %hi : f16
    linalg.yield %5 : f16
  } -> tensor<64x96xf16>
  return %r : tensor<64x96xf16>
}
