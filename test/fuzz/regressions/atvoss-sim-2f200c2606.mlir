#map = affine_map<(d0) -> (d0 * -7 + 32, 7)>
#map1 = affine_map<(d0) -> (d0 * 7)>
#map2 = affine_map<(d0) -> (d0 * 16)>
module attributes {npu.input_names = ["arg0", "arg1"], npu.output_names = ["result0"], npu.target = "npu -array-rows=32 -array-cols=32 -dataflow=auto -clock-ghz=1.0 -int8-speedup=2 -max-sram-bytes=1048576 -sram-alignment=32 -dram-bytes-per-cycle=64 -dma-channels=2 -dma-setup-cycles=100 -dma-burst-bytes=32 -vector-lanes=64 -fallback-cycles-per-element=8 -pipeline-stages=2 -layout-pref=NHWC -fusion=2 -tile-min=8 -tile-max=256 -precision=fp32 -accuracy-budget=0.999"} {
  func.func @main(%arg0: memref<1x32x32x48xf16>, %arg1: memref<3x3x48xf16>) -> memref<1x32x32x48xf16> {
    %c2 = arith.constant 2 : index
    %c15 = arith.constant 15 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %c0 = arith.constant 0 : index
    %alloc = memref.alloc() {alignment = 64 : i64} : memref<1x32x32x48xf16>
    %0 = "npu.alloc"() {offset = 0 : i64} : () -> memref<1x9x34x16xf16, 1>
    %1 = "npu.alloc"() {offset = 9792 : i64} : () -> memref<1x9x34x16xf16, 1>
    %2 = "npu.alloc"() {offset = 19584 : i64} : () -> memref<3x3x16xf16, 1>
    %3 = "npu.alloc"() {offset = 19872 : i64} : () -> memref<3x3x16xf16, 1>
    %4 = "npu.alloc"() {offset = 20160 : i64} : () -> memref<1x7x32x16xf16, 1>
    %5 = "npu.alloc"() {offset = 27328 : i64} : () -> memref<1x7x32x16xf16, 1>
    "npu.fill"(%0) {value = 0.000000e+00 : f64} : (memref<1x9x34x16xf16, 1>) -> ()
    "npu.fill"(%1) {value = 0.000000e+00 : f64} : (memref<1x9x34x16xf16, 1>) -> ()
    "npu.barrier"() {engines = "compute"} : () -> ()
    %subview = memref.subview %arg0[0, 0, 0, 0] [1, 8, 32, 16] [1, 1, 1, 1] : memref<1x32x32x48xf16> to memref<1x8x32x16xf16, strided<[49152, 1536, 48, 1]>>
    %subview_0 = memref.subview %0[0, 1, 1, 0] [1, 8, 32, 16] [1, 1, 1, 1] : memref<1x9x34x16xf16, 1> to memref<1x8x32x16xf16, strided<[4896, 544, 16, 1], offset: 560>, 1>
    %6 = "npu.dma_load"(%subview, %subview_0) {channel = 0 : i64} : (memref<1x8x32x16xf16, strided<[49152, 1536, 48, 1]>>, memref<1x8x32x16xf16, strided<[4896, 544, 16, 1], offset: 560>, 1>) -> !npu.token
    %subview_1 = memref.subview %arg1[0, 0, 0] [3, 3, 16] [1, 1, 1] : memref<3x3x48xf16> to memref<3x3x16xf16, strided<[144, 48, 1]>>
    %7 = "npu.dma_load"(%subview_1, %2) {channel = 1 : i64} : (memref<3x3x16xf16, strided<[144, 48, 1]>>, memref<3x3x16xf16, 1>) -> !npu.token
    "npu.wait"(%6, %7) : (!npu.token, !npu.token) -> ()
    %8:3 = scf.for %arg2 = %c0 to %c15 step %c1 iter_args(%arg3 = %6, %arg4 = %7, %arg5 = %6) -> (!npu.token, !npu.token, !npu.token) {
      %10:2 = affine.delinearize_index %arg2 into (5, 3) : index, index
      %11 = affine.min #map(%10#0)
      "npu.barrier"() {engines = "compute"} : () -> ()
      %12 = arith.cmpi ne, %arg2, %c0 : index
      %13 = scf.if %12 -> (!npu.token) {
        %25 = arith.subi %arg2, %c1 : index
        %26:2 = affine.delinearize_index %25 into (5, 3) : index, index
        %27 = affine.apply #map1(%26#0)
        %28 = affine.min #map(%26#0)
        %29 = affine.apply #map2(%26#1)
        %30 = arith.remui %25, %c2 : index
        %31 = arith.cmpi eq, %30, %c0 : index
        %32 = arith.select %31, %4, %5 : memref<1x7x32x16xf16, 1>
        %subview_6 = memref.subview %alloc[0, %27, 0, %29] [1, %28, 32, 16] [1, 1, 1, 1] : memref<1x32x32x48xf16> to memref<1x?x32x16xf16, strided<[49152, 1536, 48, 1], offset: ?>>
        %subview_7 = memref.subview %32[0, 0, 0, 0] [1, %28, 32, 16] [1, 1, 1, 1] : memref<1x7x32x16xf16, 1> to memref<1x?x32x16xf16, strided<[3584, 512, 16, 1]>, 1>
        %33 = "npu.dma_store"(%subview_7, %subview_6) {channel = 0 : i64} : (memref<1x?x32x16xf16, strided<[3584, 512, 16, 1]>, 1>, memref<1x?x32x16xf16, strided<[49152, 1536, 48, 1], offset: ?>>) -> !npu.token
        scf.yield %33 : !npu.token
      } else {
        scf.yield %arg5 : !npu.token
      }
      %14 = arith.addi %arg2, %c1 : index
      %15 = arith.cmpi ult, %14, %c15 : index
      %16:2 = scf.if %15 -> (!npu.token, !npu.token) {
        %25:2 = affine.delinearize_index %14 into (5, 3) : index, index
        %26 = affine.apply #map1(%25#0)
        %27 = affine.min #map(%25#0)
        %28 = affine.apply #map2(%25#1)
        %29 = arith.remui %14, %c2 : index
        %30 = arith.cmpi eq, %29, %c0 : index
        %31 = arith.select %30, %0, %1 : memref<1x9x34x16xf16, 1>
        %32 = arith.subi %26, %c1 : index
        %33 = arith.addi %27, %c2 : index
        %34 = arith.maxsi %32, %c0 : index
        %35 = arith.addi %32, %33 : index
        %36 = arith.minsi %35, %c32 : index
        %37 = arith.subi %36, %34 : index
        %38 = arith.subi %34, %32 : index
        %subview_6 = memref.subview %arg0[0, %34, 0, %28] [1, %37, 32, 16] [1, 1, 1, 1] : memref<1x32x32x48xf16> to memref<1x?x32x16xf16, strided<[49152, 1536, 48, 1], offset: ?>>
        %subview_7 = memref.subview %31[0, %38, 1, 0] [1, %37, 32, 16] [1, 1, 1, 1] : memref<1x9x34x16xf16, 1> to memref<1x?x32x16xf16, strided<[4896, 544, 16, 1], offset: ?>, 1>
        %39 = "npu.dma_load"(%subview_6, %subview_7) {channel = 1 : i64} : (memref<1x?x32x16xf16, strided<[49152, 1536, 48, 1], offset: ?>>, memref<1x?x32x16xf16, strided<[4896, 544, 16, 1], offset: ?>, 1>) -> !npu.token
        %40 = arith.select %30, %2, %3 : memref<3x3x16xf16, 1>
        %subview_8 = memref.subview %arg1[0, 0, %28] [3, 3, 16] [1, 1, 1] : memref<3x3x48xf16> to memref<3x3x16xf16, strided<[144, 48, 1], offset: ?>>
        %41 = "npu.dma_load"(%subview_8, %40) {channel = 0 : i64} : (memref<3x3x16xf16, strided<[144, 48, 1], offset: ?>>, memref<3x3x16xf16, 1>) -> !npu.token
        scf.yield %39, %41 : !npu.token, !npu.token
      } else {
        scf.yield %arg3, %arg4 : !npu.token, !npu.token
      }
      "npu.wait"(%arg3, %arg4, %arg5) : (!npu.token, !npu.token, !npu.token) -> ()
      %17 = arith.remui %arg2, %c2 : index
      %18 = arith.cmpi eq, %17, %c0 : index
      %19 = arith.select %18, %4, %5 : memref<1x7x32x16xf16, 1>
      %subview_4 = memref.subview %19[0, 0, 0, 0] [1, %11, 32, 16] [1, 1, 1, 1] : memref<1x7x32x16xf16, 1> to memref<1x?x32x16xf16, strided<[3584, 512, 16, 1]>, 1>
      %20 = arith.addi %11, %c2 : index
      %21 = arith.select %18, %0, %1 : memref<1x9x34x16xf16, 1>
      %subview_5 = memref.subview %21[0, 0, 0, 0] [1, %20, 34, 16] [1, 1, 1, 1] : memref<1x9x34x16xf16, 1> to memref<1x?x34x16xf16, strided<[4896, 544, 16, 1]>, 1>
      %22 = arith.select %18, %2, %3 : memref<3x3x16xf16, 1>
      "npu.depthwise_conv2d"(%subview_5, %22, %subview_4) {activation = "none", dilations = array<i8: 1, 1>, strides = array<i64: 1, 1>} : (memref<1x?x34x16xf16, strided<[4896, 544, 16, 1]>, 1>, memref<3x3x16xf16, 1>, memref<1x?x32x16xf16, strided<[3584, 512, 16, 1]>, 1>) -> ()
      %23 = arith.addi %arg2, %c2 : index
      %24 = arith.cmpi ult, %23, %c15 : index
      scf.if %24 {
        %25:2 = affine.delinearize_index %23 into (5, 3) : index, index
        %26 = affine.apply #map1(%25#0)
        %27 = affine.min #map(%25#0)
        %28 = arith.remui %23, %c2 : index
        %29 = arith.cmpi eq, %28, %c0 : index
        %30 = arith.select %29, %0, %1 : memref<1x9x34x16xf16, 1>
        %31 = arith.subi %26, %c1 : index
        %32 = arith.addi %27, %c2 : index
        %33 = arith.maxsi %31, %c0 : index
        %34 = arith.addi %31, %32 : index
        %35 = arith.minsi %34, %c32 : index
        %36 = arith.subi %35, %33 : index
        %37 = arith.subi %33, %31 : index
        %38 = arith.addi %37, %36 : index
        %39 = arith.maxsi %37, %c0 : index
        %subview_6 = memref.subview %30[0, 0, 0, 0] [1, %39, 34, 16] [1, 1, 1, 1] : memref<1x9x34x16xf16, 1> to memref<1x?x34x16xf16, strided<[4896, 544, 16, 1]>, 1>
        "npu.fill"(%subview_6) {value = 0.000000e+00 : f64} : (memref<1x?x34x16xf16, strided<[4896, 544, 16, 1]>, 1>) -> ()
        %40 = arith.subi %32, %38 : index
        %41 = arith.maxsi %40, %c0 : index
        %subview_7 = memref.subview %30[0, %38, 0, 0] [1, %41, 34, 16] [1, 1, 1, 1] : memref<1x9x34x16xf16, 1> to memref<1x?x34x16xf16, strided<[4896, 544, 16, 1], offset: ?>, 1>
        "npu.fill"(%subview_7) {value = 0.000000e+00 : f64} : (memref<1x?x34x16xf16, strided<[4896, 544, 16, 1], offset: ?>, 1>) -> ()
      }
      scf.yield %16#0, %16#1, %13 : !npu.token, !npu.token, !npu.token
    } {npu.tile_loop}
    "npu.barrier"() {engines = "compute"} : () -> ()
    "npu.wait"(%8#0, %8#1, %8#2) : (!npu.token, !npu.token, !npu.token) -> ()
    %subview_2 = memref.subview %alloc[0, 28, 0, 32] [1, 4, 32, 16] [1, 1, 1, 1] : memref<1x32x32x48xf16> to memref<1x4x32x16xf16, strided<[49152, 1536, 48, 1], offset: 43040>>
    %subview_3 = memref.subview %4[0, 0, 0, 0] [1, 4, 32, 16] [1, 1, 1, 1] : memref<1x7x32x16xf16, 1> to memref<1x4x32x16xf16, strided<[3584, 512, 16, 1]>, 1>
    %9 = "npu.dma_store"(%subview_3, %subview_2) {channel = 1 : i64} : (memref<1x4x32x16xf16, strided<[3584, 512, 16, 1]>, 1>, memref<1x4x32x16xf16, strided<[49152, 1536, 48, 1], offset: 43040>>) -> !npu.token
    "npu.wait"(%9) : (!npu.token) -> ()
    "npu.dealloc"(%5) : (memref<1x7x32x16xf16, 1>) -> ()
    "npu.dealloc"(%4) : (memref<1x7x32x16xf16, 1>) -> ()
    "npu.dealloc"(%3) : (memref<3x3x16xf16, 1>) -> ()
    "npu.dealloc"(%2) : (memref<3x3x16xf16, 1>) -> ()
    "npu.dealloc"(%1) : (memref<1x9x34x16xf16, 1>) -> ()
    "npu.dealloc"(%0) : (memref<1x9x34x16xf16, 1>) -> ()
    return %alloc : memref<1x32x32x48xf16>
  }
}
