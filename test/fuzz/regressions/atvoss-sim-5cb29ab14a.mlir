#map = affine_map<(d0) -> (d0 * 8)>
#map1 = affine_map<(d0) -> (d0 * 16)>
module attributes {npu.input_names = ["arg0"], npu.output_names = ["result0"], npu.target = "npu -array-rows=32 -array-cols=32 -dataflow=auto -clock-ghz=1.0 -int8-speedup=2 -max-sram-bytes=1048576 -sram-alignment=32 -dram-bytes-per-cycle=64 -dma-channels=2 -dma-setup-cycles=100 -dma-burst-bytes=65535 -vector-lanes=64 -fallback-cycles-per-element=8 -pipeline-stages=2 -layout-pref=NHWC -fusion=2 -tile-min=8 -tile-max=2048 -precision=fp32 -accuracy-budget=0.999"} {
  func.func @main(%arg0: memref<1x32x32x64xf16>) -> memref<1x16x16x64xf16> {
    %c16 = arith.constant 16 : index
    %c32 = arith.constant 32 : index
    %c17 = arith.constant 17 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    %c0 = arith.constant 0 : index
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x16x16x64xf16>
    %0 = "npu.alloc"() {offset = 0 : i64} : () -> memref<1x17x33x16xf16, 1>
    %1 = "npu.alloc"() {offset = 17952 : i64} : () -> memref<1x17x33x16xf16, 1>
    %2 = "npu.alloc"() {offset = 35904 : i64} : () -> memref<1x8x16x16xf16, 1>
    %3 = "npu.alloc"() {offset = 40000 : i64} : () -> memref<1x8x16x16xf16, 1>
    "npu.fill"(%0) {value = 0xFFF0000000000000 : f64} : (memref<1x17x33x16xf16, 1>) -> ()
    "npu.fill"(%1) {value = 0xFFF0000000000000 : f64} : (memref<1x17x33x16xf16, 1>) -> ()
    "npu.barrier"() {engines = "compute"} : () -> ()
    %subview = memref.subview %arg0[0, 0, 0, 0] [1, 16, 32, 16] [1, 1, 1, 1] : memref<1x32x32x64xf16> to memref<1x16x32x16xf16, strided<[65536, 2048, 64, 1]>>
    %subview_0 = memref.subview %0[0, 1, 1, 0] [1, 16, 32, 16] [1, 1, 1, 1] : memref<1x17x33x16xf16, 1> to memref<1x16x32x16xf16, strided<[8976, 528, 16, 1], offset: 544>, 1>
    %4 = "npu.dma_load"(%subview, %subview_0) {channel = 0 : i64} : (memref<1x16x32x16xf16, strided<[65536, 2048, 64, 1]>>, memref<1x16x32x16xf16, strided<[8976, 528, 16, 1], offset: 544>, 1>) -> !npu.token
    "npu.wait"(%4) : (!npu.token) -> ()
    %5:2 = scf.for %arg1 = %c0 to %c8 step %c1 iter_args(%arg2 = %4, %arg3 = %4) -> (!npu.token, !npu.token) {
      "npu.barrier"() {engines = "compute"} : () -> ()
      %7 = arith.cmpi ne, %arg1, %c0 : index
      %8 = scf.if %7 -> (!npu.token) {
        %18 = arith.subi %arg1, %c1 : index
        %19:2 = affine.delinearize_index %18 into (2, 4) : index, index
        %20 = affine.apply #map(%19#0)
        %21 = affine.apply #map1(%19#1)
        %22 = arith.remui %18, %c2 : index
        %23 = arith.cmpi eq, %22, %c0 : index
        %24 = arith.select %23, %2, %3 : memref<1x8x16x16xf16, 1>
        %subview_2 = memref.subview %alloc[0, %20, 0, %21] [1, 8, 16, 16] [1, 1, 1, 1] : memref<1x16x16x64xf16> to memref<1x8x16x16xf16, strided<[16384, 1024, 64, 1], offset: ?>>
        %25 = "npu.dma_store"(%24, %subview_2) {channel = 1 : i64} : (memref<1x8x16x16xf16, 1>, memref<1x8x16x16xf16, strided<[16384, 1024, 64, 1], offset: ?>>) -> !npu.token
        scf.yield %25 : !npu.token
      } else {
        scf.yield %arg3 : !npu.token
      }
      %9 = arith.addi %arg1, %c1 : index
      %10 = arith.cmpi ult, %9, %c8 : index
      %11 = scf.if %10 -> (!npu.token) {
        %18:2 = affine.delinearize_index %9 into (2, 4) : index, index
        %19 = affine.apply #map(%18#0)
        %20 = affine.apply #map1(%18#1)
        %21 = arith.remui %9, %c2 : index
        %22 = arith.cmpi eq, %21, %c0 : index
        %23 = arith.select %22, %0, %1 : memref<1x17x33x16xf16, 1>
        %24 = arith.muli %19, %c2 : index
        %25 = arith.subi %24, %c1 : index
        %26 = arith.maxsi %25, %c0 : index
        %27 = arith.addi %24, %c16 : index
        %28 = arith.minsi %27, %c32 : index
        %29 = arith.subi %28, %26 : index
        %30 = arith.subi %26, %25 : index
        %subview_2 = memref.subview %arg0[0, %26, 0, %20] [1, %29, 32, 16] [1, 1, 1, 1] : memref<1x32x32x64xf16> to memref<1x?x32x16xf16, strided<[65536, 2048, 64, 1], offset: ?>>
        %subview_3 = memref.subview %23[0, %30, 1, 0] [1, %29, 32, 16] [1, 1, 1, 1] : memref<1x17x33x16xf16, 1> to memref<1x?x32x16xf16, strided<[8976, 528, 16, 1], offset: ?>, 1>
        %31 = "npu.dma_load"(%subview_2, %subview_3) {channel = 0 : i64} : (memref<1x?x32x16xf16, strided<[65536, 2048, 64, 1], offset: ?>>, memref<1x?x32x16xf16, strided<[8976, 528, 16, 1], offset: ?>, 1>) -> !npu.token
        scf.yield %31 : !npu.token
      } else {
        scf.yield %arg2 : !npu.token
      }
      "npu.wait"(%arg2, %arg3) : (!npu.token, !npu.token) -> ()
      %12 = arith.remui %arg1, %c2 : index
      %13 = arith.cmpi eq, %12, %c0 : index
      %14 = arith.select %13, %2, %3 : memref<1x8x16x16xf16, 1>
      %15 = arith.select %13, %0, %1 : memref<1x17x33x16xf16, 1>
      "npu.pool2d"(%15, %14) {kind = "max", strides = array<i64: 2, 2>, window = array<i64: 3, 3>} : (memref<1x17x33x16xf16, 1>, memref<1x8x16x16xf16, 1>) -> ()
      %16 = arith.addi %arg1, %c2 : index
      %17 = arith.cmpi ult, %16, %c8 : index
      scf.if %17 {
        %18:2 = affine.delinearize_index %16 into (2, 4) : index, index
        %19 = affine.apply #map(%18#0)
        %20 = arith.remui %16, %c2 : index
        %21 = arith.cmpi eq, %20, %c0 : index
        %22 = arith.select %21, %0, %1 : memref<1x17x33x16xf16, 1>
        %23 = arith.muli %19, %c2 : index
        %24 = arith.subi %23, %c1 : index
        %25 = arith.maxsi %24, %c0 : index
        %26 = arith.addi %23, %c16 : index
        %27 = arith.minsi %26, %c32 : index
        %28 = arith.subi %27, %25 : index
        %29 = arith.subi %25, %24 : index
        %30 = arith.addi %29, %28 : index
        %31 = arith.maxsi %29, %c0 : index
        %subview_2 = memref.subview %22[0, 0, 0, 0] [1, %31, 33, 16] [1, 1, 1, 1] : memref<1x17x33x16xf16, 1> to memref<1x?x33x16xf16, strided<[8976, 528, 16, 1]>, 1>
        "npu.fill"(%subview_2) {value = 0xFFF0000000000000 : f64} : (memref<1x?x33x16xf16, strided<[8976, 528, 16, 1]>, 1>) -> ()
        %32 = arith.subi %c17, %30 : index
        %33 = arith.maxsi %32, %c0 : index
        %subview_3 = memref.subview %22[0, %30, 0, 0] [1, %33, 33, 16] [1, 1, 1, 1] : memref<1x17x33x16xf16, 1> to memref<1x?x33x16xf16, strided<[8976, 528, 16, 1], offset: ?>, 1>
        "npu.fill"(%subview_3) {value = 0xFFF0000000000000 : f64} : (memref<1x?x33x16xf16, strided<[8976, 528, 16, 1], offset: ?>, 1>) -> ()
      }
      scf.yield %11, %8 : !npu.token, !npu.token
    } {npu.tile_loop}
    "npu.barrier"() {engines = "compute"} : () -> ()
    "npu.wait"(%5#0, %5#1) : (!npu.token, !npu.token) -> ()
    %subview_1 = memref.subview %alloc[0, 8, 0, 48] [1, 8, 16, 16] [1, 1, 1, 1] : memref<1x16x16x64xf16> to memref<1x8x16x16xf16, strided<[16384, 1024, 64, 1], offset: 8240>>
    %6 = "npu.dma_store"(%3, %subview_1) {channel = 1 : i64} : (memref<1x8x16x16xf16, 1>, memref<1x8x16x16xf16, strided<[16384, 1024, 64, 1], offset: 8240>>) -> !npu.token
    "npu.wait"(%6) : (!npu.token) -> ()
    "npu.dealloc"(%3) : (memref<1x8x16x16xf16, 1>) -> ()
    "npu.dealloc"(%2) : (memref<1x8x16x16xf16, 1>) -> ()
    "npu.dealloc"(%1) : (memref<1x17x33x16xf16, 1>) -> ()
    "npu.dealloc"(%0) : (memref<1x17x33x16xf16, 1>) -> ()
    return %alloc : memref<1x16x16x64xf16>
  }
}
