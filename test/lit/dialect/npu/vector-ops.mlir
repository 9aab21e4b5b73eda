// RUN: atvoss-opt %s | atvoss-opt | FileCheck %s
// RUN: atvoss-opt %s -npu-verify | FileCheck %s

// The vector unit's reductions, comparisons, selects, division and math
// functions round-trip and verify.

// CHECK-LABEL: func.func @vector_ops
func.func @vector_ops(%x: memref<16x128xf32, 1>, %row: memref<16xf32, 1>, %col: memref<16x1xf32, 1>,
                      %mask: memref<16x1xi1, 1>, %half: memref<16x128xf16, 1>, %one: memref<1xf32, 1>) {
  // CHECK: "npu.reduce"(%{{.*}}, %{{.*}}) {accumulate = false, dims = array<i64: 1>, kind = "max"}
  "npu.reduce"(%x, %row) {kind = "max", dims = array<i64: 1>, accumulate = false}
      : (memref<16x128xf32, 1>, memref<16xf32, 1>) -> ()
  // CHECK: "npu.reduce"(%{{.*}}, %{{.*}}) {accumulate = true, dims = array<i64: 1>, kind = "sum"}
  "npu.reduce"(%x, %row) {kind = "sum", dims = array<i64: 1>, accumulate = true}
      : (memref<16x128xf32, 1>, memref<16xf32, 1>) -> ()
  // CHECK: "npu.elementwise"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "div"}
  "npu.elementwise"(%x, %col, %x) {kind = "div"}
      : (memref<16x128xf32, 1>, memref<16x1xf32, 1>, memref<16x128xf32, 1>) -> ()
  // An activation epilogue of one pass, applied to the results on their way out.
  // CHECK: "npu.elementwise"(%{{.*}}, %{{.*}}, %{{.*}}) {activation = "relu", kind = "add"}
  "npu.elementwise"(%x, %col, %x) {kind = "add", activation = "relu"}
      : (memref<16x128xf32, 1>, memref<16x1xf32, 1>, memref<16x128xf32, 1>) -> ()
  // CHECK: "npu.elementwise"(%{{.*}}, %{{.*}}, %{{.*}}) {activation = "clip", clip_max = 6.000000e+00 : f64, clip_min = 0.000000e+00 : f64, kind = "mul"}
  "npu.elementwise"(%x, %col, %x) {kind = "mul", activation = "clip", clip_min = 0.0 : f64, clip_max = 6.0 : f64}
      : (memref<16x128xf32, 1>, memref<16x1xf32, 1>, memref<16x128xf32, 1>) -> ()
  // CHECK: "npu.compare"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "eq"}
  "npu.compare"(%col, %one, %mask) {kind = "eq"}
      : (memref<16x1xf32, 1>, memref<1xf32, 1>, memref<16x1xi1, 1>) -> ()
  // CHECK: "npu.select"(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
  "npu.select"(%mask, %one, %x, %x)
      : (memref<16x1xi1, 1>, memref<1xf32, 1>, memref<16x128xf32, 1>, memref<16x128xf32, 1>) -> ()
  // CHECK: "npu.activation"(%{{.*}}, %{{.*}}) {kind = "exp"}
  "npu.activation"(%x, %x) {kind = "exp"} : (memref<16x128xf32, 1>, memref<16x128xf32, 1>) -> ()
  // CHECK: "npu.activation"(%{{.*}}, %{{.*}}) {kind = "rsqrt"}
  "npu.activation"(%col, %col) {kind = "rsqrt"} : (memref<16x1xf32, 1>, memref<16x1xf32, 1>) -> ()
  // CHECK: "npu.activation"(%{{.*}}, %{{.*}}) {kind = "none"} : (memref<16x128xf16, 1>, memref<16x128xf32, 1>)
  "npu.activation"(%half, %x) {kind = "none"} : (memref<16x128xf16, 1>, memref<16x128xf32, 1>) -> ()
  return
}
