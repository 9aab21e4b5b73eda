// A given schedule whose stages do not fit the SRAM is refused, not searched.

func.func @matmul$given_too_big(%a: memref<256x256xf16>, %b: memref<256x256xf16>, %c: memref<256x256xf32>) {
  linalg.matmul {npu.tile_sizes = array<i32: 256, 256, 256>, npu.loop_order = array<i64: 0, 1, 2>,
                 npu.pipeline_stages = 3 : i64, npu.dataflow = "os"}
      ins(%a, %b : memref<256x256xf16>, memref<256x256xf16>) outs(%c : memref<256x256xf32>)
  return
}
