// Reductions, math functions, division, comparisons, selects and float
// conversions on SRAM tiles become vector-unit ops.

// A sum from a zero fill (npu.init, its identity) starts without the fill.
    %s = arith.addf %in, %acc : f32
func.func @reduce$sum_from_identity(%x: memref<16x64xf32, 1>, %y: memref<16xf32, 1>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill {npu.init} ins(%zero : f32) outs(%y : memref<16xf32, 1>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x64xf32, 1>) outs(%y : memref<16xf32, 1>) {
  ^bb0(%in: f32, %acc: f32):
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}
