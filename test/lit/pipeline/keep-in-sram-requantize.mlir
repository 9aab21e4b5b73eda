// RUN: atvoss-opt %s --npu-pipeline | FileCheck %s
// RUN: atvoss-opt %s --npu-pipeline | atvoss-sim - --report=table | FileCheck %s --check-prefix=SIM

// Two int8 matmuls: the first's int8 result stays in SRAM (npu-keep-in-sram)
// and its requantisation writes that buffer in place, a column tile at a
// time. The int32 accumulator still has one buffer per pipeline stage, as
// the tile search counted it, so tile i+1's matmul runs while tile i is
// requantised (with one accumulator it waited for each requantisation:
// 8,126 cycles).

// CHECK-LABEL: func.func @chain$requantize
// CHECK:         %[[R:.*]] = "npu.alloc"() {npu.resident, offset = {{.*}}} : () -> memref<512x128xi8, 1>
// CHECK:         %[[A0:.*]] = "npu.alloc"() {offset = {{.*}}} : () -> memref<512x32xi32, 1>
// CHECK-NEXT:    %[[A1:.*]] = "npu.alloc"() {offset = {{.*}}} : () -> memref<512x32xi32, 1>
// CHECK:         scf.for
// CHECK:           %[[T:.*]] = memref.subview %[[R]][0, %{{.*}}] [512, 32] [1, 1]
// CHECK:           %[[A:.*]] = arith.select %{{.*}}, %[[A0]], %[[A1]] : memref<512x32xi32, 1>
// CHECK:           "npu.matmul"(%{{.*}}, %{{.*}}, %[[A]], %{{.*}})
// CHECK-NEXT:      "npu.barrier"() {engines = "vector"} : () -> ()
// CHECK:           "npu.requantize"(%[[A]], %[[T]], %{{.*}})
// CHECK:         } {npu.tile_loop}
// CHECK:         "npu.matmul"(%[[R]],

// SIM: total cycles               7,334
#identity = affine_map<(d0, d1) -> (d0, d1)>
#column = affine_map<(d0, d1) -> (d1)>
func.func @chain$requantize(%a: tensor<512x64xi8>, %w1: tensor<64x128xi8>, %w2: tensor<128x64xi8>,
                            %bias: tensor<128xi32>, %scales: tensor<128xf32>, %bias2: tensor<64xi32>, %scales2: tensor<64xf32>) -> tensor<512x64xi8> {
  %e1 = tensor.empty() : tensor<512x128xi32>
  %i1 = linalg.broadcast ins(%bias : tensor<128xi32>) outs(%e1 : tensor<512x128xi32>) dimensions = [0]
  %acc1 = linalg.matmul ins(%a, %w1 : tensor<512x64xi8>, tensor<64x128xi8>) outs(%i1 : tensor<512x128xi32>) -> tensor<512x128xi32>
  %o1 = tensor.empty() : tensor<512x128xi8>
  %q1 = linalg.generic {indexing_maps = [#identity, #column, #identity], iterator_types = ["parallel", "parallel"]}
      ins(%acc1, %scales : tensor<512x128xi32>, tensor<128xf32>) outs(%o1 : tensor<512x128xi8>) {
  ^bb0(%x: i32, %s: f32, %o: i8):
    %lo = arith.constant -128.0 : f32
    %hi = arith.constant 127.0 : f32
    %f = arith.sitofp %x : i32 to f32
    %m = arith.mulf %f, %s : f32
    %r = math.roundeven %m : f32
    %zp = arith.constant -3.0 : f32
    %z = arith.addf %r, %zp : f32
    %c1 = arith.maximumf %z, %lo : f32
    %c2 = arith.minimumf %c1, %hi : f32
    %y = arith.fptosi %c2 : f32 to i8
    linalg.yield %y : i8
  } -> tensor<512x128xi8>
  %e2 = tensor.empty() : tensor<512x64xi32>
  %i2 = linalg.broadcast ins(%bias2 : tensor<64xi32>) outs(%e2 : tensor<512x64xi32>) dimensions = [0]
  %acc2 = linalg.matmul ins(%q1, %w2 : tensor<512x128xi8>, tensor<128x64xi8>) outs(%i2 : tensor<512x64xi32>) -> tensor<512x64xi32>
  %o2 = tensor.empty() : tensor<512x64xi8>
  %q2 = linalg.generic {indexing_maps = [#identity, #column, #identity], iterator_types = ["parallel", "parallel"]}
      ins(%acc2, %scales2 : tensor<512x64xi32>, tensor<64xf32>) outs(%o2 : tensor<512x64xi8>) {
  ^bb0(%x: i32, %s: f32, %o: i8):
    %lo = arith.constant -128.0 : f32
    %hi = arith.constant 127.0 : f32
    %f = arith.sitofp %x : i32 to f32
    %m = arith.mulf %f, %s : f32
    %r = math.roundeven %m : f32
    %zp = arith.constant -3.0 : f32
    %z = arith.addf %r, %zp : f32
    %c1 = arith.maximumf %z, %lo : f32
    %c2 = arith.minimumf %c1, %hi : f32
    %y = arith.fptosi %c2 : f32 to i8
    linalg.yield %y : i8
  } -> tensor<512x64xi8>
  return %q2 : tensor<512x64xi8>
}
