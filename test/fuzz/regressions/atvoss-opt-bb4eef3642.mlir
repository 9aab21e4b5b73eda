// The vector unit's reductions, comparisons, selects, division and math
// functions round-trip and verify.

func.func @vector_ops(%x: memref<16x128xf32, 1>, %row: memref<16xf32, 1>, %col: memref<16x1xf32, 1>,
                      %mask: memref<16x1xi1, 1>, %half: memref<16x128xf16, 1>, %one: memref<1xf32, 1>) {
  "npu.reduce"(%x, %row) {kind = "max", dims = array<i8: 1>, accumulate = false}
      : (memref<16x128xf32, 1>, memref<16xf32, 1>) -> ()
  "npu.reduce"(%x, %row) {kind = "sum", dims = array<i64: 1>, accumulate = true}
      : (memref<16x128xf32, 1>, memref<16xf32, 1>) -> ()
  "npu.elementwise"(%x, %col, %x) {kind = "div"}
      : (memref<16x128xf32, 1>, memref<16x1xf32, 1>, memref<16x128xf32, 1>) -> ()
  "npu.compare"(%col, %one, %mask) {kind = "eq"}
      : (memref<16x1xf32, 1>, memref<1xf32, 1>, memref<16x1xi1, 1>) -> ()
  "npu.select"(%mask, %one, %x, %x)
      : (memref<16x1xi1, 1>, memref<1xf32, 1>, memref<16x128xf32, 1>, memref<16x128xf32, 1>) -> ()
  "npu.activation"(%x, %x) {kind = "exp"} : (memref<16x128xf32, 1>, memref<16x128xf32, 1>) -> ()
  "npu.activation"(%col, %col) {kind = "rsqrt"} : (memref<16x1xf32, 1>, memref<16x1xf32, 1>) -> ()
  "npu.activation"(%half, %x) {kind = "none"} : (memref<16x128xf16, 1>, memref<16x128xf32, 1>) -> ()
  return
}
