// RUN: atvoss-opt %s -split-input-file -npu-convert-linalg-to-npu | FileCheck %s

// Reductions, math functions, division, comparisons, selects and float
// conversions on SRAM tiles become vector-unit ops.

// A sum from a zero fill (npu.init, its identity) starts without the fill.
// CHECK-LABEL: func.func @reduce$sum_from_identity
// CHECK-NOT:     "npu.fill"
// CHECK:         "npu.reduce"(%{{.*}}, %{{.*}}) {accumulate = false, dims = array<i64: 1>, kind = "sum"} : (memref<16x64xf32, 1>, memref<16xf32, 1>)
func.func @reduce$sum_from_identity(%x: memref<16x64xf32, 1>, %y: memref<16xf32, 1>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill {npu.init} ins(%zero : f32) outs(%y : memref<16xf32, 1>)
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<16x64xf32, 1>) outs(%y : memref<16xf32, 1>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %in, %acc : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A later step of a split reduction accumulates; a fill that is not the
// identity stays as npu.fill.
// CHECK-LABEL: func.func @reduce$accumulate
// CHECK:         "npu.fill"(%{{.*}}) {value = 1.000000e+00 : f64}
// CHECK-NEXT:    "npu.reduce"(%{{.*}}, %{{.*}}) {accumulate = true, dims = array<i64: 0, 2>, kind = "max"}
// CHECK-NEXT:    "npu.reduce"(%{{.*}}, %{{.*}}) {accumulate = true, dims = array<i64: 0, 2>, kind = "max"}
func.func @reduce$accumulate(%x: memref<2x8x32xf32, 1>, %y: memref<8xf32, 1>) {
  %one = arith.constant 1.0 : f32
  linalg.fill {npu.init} ins(%one : f32) outs(%y : memref<8xf32, 1>)
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (j)>],
                  iterator_types = ["reduction", "parallel", "reduction"]}
      ins(%x : memref<2x8x32xf32, 1>) outs(%y : memref<8xf32, 1>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %acc, %in : f32
    linalg.yield %m : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (j)>],
                  iterator_types = ["reduction", "parallel", "reduction"]}
      ins(%x : memref<2x8x32xf32, 1>) outs(%y : memref<8xf32, 1>) {
  ^bb0(%in: f32, %acc: f32):
    %m = arith.maximumf %acc, %in : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// Layer norm's inverse standard deviation: add epsilon, rsqrt.
// CHECK-LABEL: func.func @rsqrt$of_variance
// CHECK:         "npu.elementwise"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "add"}
// CHECK:         "npu.activation"(%{{.*}}, %{{.*}}) {kind = "rsqrt"}
func.func @rsqrt$of_variance(%v: memref<16x1xf32, 1>, %y: memref<16x1xf32, 1>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%v : memref<16x1xf32, 1>) outs(%y : memref<16x1xf32, 1>) {
  ^bb0(%in: f32, %out: f32):
    %eps = arith.constant 1.0e-5 : f32
    %s = arith.addf %in, %eps : f32
    %r = math.rsqrt %s : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A relu of a sum is the add's epilogue, in the same pass; an rsqrt (several
// passes, above) or an activation of a value another step reads stays an op.
// CHECK-LABEL: func.func @relu$of_sum
// CHECK:         "npu.elementwise"(%{{.*}}, %{{.*}}, %[[OUT:.*]]) {activation = "relu", kind = "add"}
// CHECK-NOT:     "npu.activation"
// CHECK-LABEL: func.func @relu$of_a_sum_read_again
// CHECK:         "npu.elementwise"(%{{.*}}, %{{.*}}, %[[S:[a-z0-9_]+]]) {kind = "add"}
// CHECK:         "npu.activation"(%[[S]], %[[R:[a-z0-9_]+]]) {kind = "relu"}
// CHECK-NEXT:    "npu.elementwise"(%[[R]], %[[S]], %{{.*}}) {kind = "mul"}
func.func @relu$of_sum(%a: memref<16x64xf32, 1>, %b: memref<16x64xf32, 1>, %y: memref<16x64xf32, 1>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<16x64xf32, 1>, memref<16x64xf32, 1>) outs(%y : memref<16x64xf32, 1>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    %s = arith.addf %p, %q : f32
    %r = arith.maximumf %s, %zero : f32
    linalg.yield %r : f32
  }
  return
}
func.func @relu$of_a_sum_read_again(%a: memref<16x64xf32, 1>, %b: memref<16x64xf32, 1>, %y: memref<16x64xf32, 1>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<16x64xf32, 1>, memref<16x64xf32, 1>) outs(%y : memref<16x64xf32, 1>) {
  ^bb0(%p: f32, %q: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    %s = arith.addf %p, %q : f32
    %r = arith.maximumf %s, %zero : f32
    %m = arith.mulf %r, %s : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// exp(x - max) with the row max broadcast as (i, 0), then x / sum.
// CHECK-LABEL: func.func @softmax$steps
// CHECK:         "npu.elementwise"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "sub"} : (memref<16x64xf32, 1>, memref<16x1xf32, 1>, memref<16x64xf32{{.*}}>)
// CHECK:         "npu.activation"(%{{.*}}, %{{.*}}) {kind = "exp"}
// CHECK:         "npu.elementwise"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "div"} : (memref<16x64xf32, 1>, memref<16x1xf32, 1>, memref<16x64xf32, 1>)
func.func @softmax$steps(%x: memref<16x64xf32, 1>, %m: memref<16x1xf32, 1>, %e: memref<16x64xf32, 1>,
                         %s: memref<16x1xf32, 1>, %y: memref<16x64xf32, 1>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, 0)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : memref<16x64xf32, 1>, memref<16x1xf32, 1>) outs(%e : memref<16x64xf32, 1>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, 0)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%e, %s : memref<16x64xf32, 1>, memref<16x1xf32, 1>) outs(%y : memref<16x64xf32, 1>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A mask by comparison, and a select by an i1 input with a constant branch
// (a one-element buffer around the tile loop).
// CHECK-LABEL: func.func @mask$compare_select
// CHECK:         "npu.compare"(%{{.*}}, %{{.*}}, %{{.*}}) {kind = "gt"} : (memref<16x64xf32, 1>, memref<16x1xf32, 1>, memref<16x64xi1, 1>)
// CHECK:         %[[ZERO:.*]] = "npu.alloc"() : () -> memref<1xf32, 1>
// CHECK:         "npu.fill"(%[[ZERO]]) {value = 0.000000e+00 : f64}
// CHECK:         "npu.select"(%{{.*}}, %[[ZERO]], %{{.*}}, %{{.*}}) : (memref<16x64xi1, 1>, memref<1xf32, 1>, memref<16x64xf32, 1>, memref<16x64xf32, 1>)
func.func @mask$compare_select(%x: memref<16x64xf32, 1>, %t: memref<16x1xf32, 1>, %c: memref<16x64xi1, 1>,
                               %y: memref<16x64xf32, 1>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, 0)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x, %t : memref<16x64xf32, 1>, memref<16x1xf32, 1>) outs(%c : memref<16x64xi1, 1>) {
  ^bb0(%a: f32, %b: f32, %out: i1):
    %r = arith.cmpf ogt, %a, %b : f32
    linalg.yield %r : i1
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%c, %x : memref<16x64xi1, 1>, memref<16x64xf32, 1>) outs(%y : memref<16x64xf32, 1>) {
  ^bb0(%m: i1, %a: f32, %out: f32):
    %zero = arith.constant 0.0 : f32
    %r = arith.select %m, %zero, %a : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A float compared with itself: IsNaN (uno) is "ne", which a NaN makes true;
// ord (not NaN) is the ordered "eq".
// CHECK-LABEL: func.func @mask$isnan
// CHECK:         "npu.compare"(%[[X:.*]], %[[X]], %{{.*}}) {kind = "ne"} : (memref<16x64xf32, 1>, memref<16x64xf32, 1>, memref<16x64xi1, 1>)
// CHECK:         "npu.compare"(%[[X]], %[[X]], %{{.*}}) {kind = "eq"}
func.func @mask$isnan(%x: memref<16x64xf32, 1>, %c: memref<16x64xi1, 1>, %d: memref<16x64xi1, 1>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<16x64xf32, 1>) outs(%c : memref<16x64xi1, 1>) {
  ^bb0(%a: f32, %out: i1):
    %r = arith.cmpf uno, %a, %a : f32
    linalg.yield %r : i1
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<16x64xf32, 1>) outs(%d : memref<16x64xi1, 1>) {
  ^bb0(%a: f32, %out: i1):
    %r = arith.cmpf ord, %a, %a : f32
    linalg.yield %r : i1
  }
  return
}

// -----

// Masks combined: and is select(a, b, 0), or select(a, 1, b), not (xor with
// true) select(a, 0, 1); a mask as a number (a Cast from bool) select(a, 1, 0).
// CHECK-LABEL: func.func @mask$logic
// CHECK:         "npu.select"(%[[A:.*]], %[[B:.*]], %{{.*}}, %{{.*}}) : (memref<16x64xi1, 1>, memref<16x64xi1, 1>, memref<1xi1, 1>, memref<16x64xi1, 1>)
// CHECK:         "npu.select"(%[[A]], %{{.*}}, %[[B]], %{{.*}}) : (memref<16x64xi1, 1>, memref<1xi1, 1>, memref<16x64xi1, 1>, memref<16x64xi1, 1>)
// CHECK:         "npu.select"(%[[A]], %{{.*}}, %{{.*}}, %{{.*}}) : (memref<16x64xi1, 1>, memref<1xi1, 1>, memref<1xi1, 1>, memref<16x64xi1, 1>)
// CHECK:         "npu.select"(%[[A]], %{{.*}}, %{{.*}}, %{{.*}}) : (memref<16x64xi1, 1>, memref<1xf32, 1>, memref<1xf32, 1>, memref<16x64xf32, 1>)
func.func @mask$logic(%a: memref<16x64xi1, 1>, %b: memref<16x64xi1, 1>, %and: memref<16x64xi1, 1>,
                      %or: memref<16x64xi1, 1>, %not: memref<16x64xi1, 1>, %f: memref<16x64xf32, 1>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<16x64xi1, 1>, memref<16x64xi1, 1>) outs(%and : memref<16x64xi1, 1>) {
  ^bb0(%x: i1, %y: i1, %out: i1):
    %r = arith.andi %x, %y : i1
    linalg.yield %r : i1
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                                   affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<16x64xi1, 1>, memref<16x64xi1, 1>) outs(%or : memref<16x64xi1, 1>) {
  ^bb0(%x: i1, %y: i1, %out: i1):
    %r = arith.ori %x, %y : i1
    linalg.yield %r : i1
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<16x64xi1, 1>) outs(%not : memref<16x64xi1, 1>) {
  ^bb0(%x: i1, %out: i1):
    %true = arith.constant true
    %r = arith.xori %x, %true : i1
    linalg.yield %r : i1
  }
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%a : memref<16x64xi1, 1>) outs(%f : memref<16x64xf32, 1>) {
  ^bb0(%x: i1, %out: f32):
    %r = arith.uitofp %x : i1 to f32
    linalg.yield %r : f32
  }
  return
}

// -----

// QuantizeLinear by a scale of 1 (x / 1 folded away: the body starts at the
// rounding) is npu.requantize dividing by 1.
// CHECK-LABEL: func.func @quantize$scale_one
// CHECK:         "npu.requantize"(%{{.*}}, %{{.*}}) {divide = true, scale = 1.000000e+00 : f64, zero_point = -128 : i64} : (memref<16x64xf32, 1>, memref<16x64xi8, 1>)
func.func @quantize$scale_one(%x: memref<16x64xf32, 1>, %y: memref<16x64xi8, 1>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<16x64xf32, 1>) outs(%y : memref<16x64xi8, 1>) {
  ^bb0(%a: f32, %out: i8):
    %zp = arith.constant -128.0 : f32
    %low = arith.constant -128.0 : f32
    %high = arith.constant 127.0 : f32
    %r = math.roundeven %a : f32
    %z = arith.addf %r, %zp : f32
    %lo = arith.maximumf %z, %low : f32
    %hi = arith.minimumf %lo, %high : f32
    %i = arith.fptosi %hi : f32 to i8
    linalg.yield %i : i8
  }
  return
}

// -----

// A float conversion is npu.activation "none" between the two types.
// CHECK-LABEL: func.func @convert$f16_to_f32
// CHECK:         "npu.activation"(%{{.*}}, %{{.*}}) {kind = "none"} : (memref<16x64xf16, 1>, memref<16x64xf32, 1>)
func.func @convert$f16_to_f32(%x: memref<16x64xf16, 1>, %y: memref<16x64xf32, 1>) {
  linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                  iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<16x64xf16, 1>) outs(%y : memref<16x64xf32, 1>) {
  ^bb0(%in: f16, %out: f32):
    %r = arith.extf %in : f16 to f32
    linalg.yield %r : f32
  }
  return
}

// -----

// A softmax tile (a partial one: its rows are dynamic) in one pass: the row
// max and sum in 1-wide scratch tiles placed around the tile loop.
// CHECK-LABEL: func.func @softmax$tile
// CHECK:         %[[PEAK:.*]] = "npu.alloc"() : () -> memref<8x1xf16, 1>
// CHECK:         %[[TOTAL:.*]] = "npu.alloc"() : () -> memref<8x1xf16, 1>
// CHECK:         "npu.reduce"(%{{.*}}, %{{.*}}) {accumulate = false, dims = array<i64: 1>, kind = "max"} : (memref<?x64xf16, strided<[64, 1]>, 1>, memref<?xf16, strided<[1]>, 1>)
// CHECK:         "npu.elementwise"(%{{.*}}, %{{.*}}, %[[Y:.*]]) {kind = "sub"} : (memref<?x64xf16, strided<[64, 1]>, 1>, memref<?x1xf16, strided<[1, 1]>, 1>, memref<?x64xf16, strided<[64, 1]>, 1>)
// CHECK:         "npu.activation"(%[[Y]], %[[Y]]) {kind = "exp"}
// CHECK:         "npu.reduce"(%[[Y]], %{{.*}}) {accumulate = false, dims = array<i64: 1>, kind = "sum"}
// CHECK:         "npu.elementwise"(%[[Y]], %{{.*}}, %[[Y]]) {kind = "div"}
// CHECK-NOT:     linalg.softmax
func.func @softmax$tile(%x: memref<8x64xf16, 1>, %y: memref<8x64xf16, 1>, %rows: index) {
  %xs = memref.subview %x[0, 0] [%rows, 64] [1, 1] : memref<8x64xf16, 1> to memref<?x64xf16, strided<[64, 1]>, 1>
  %ys = memref.subview %y[0, 0] [%rows, 64] [1, 1] : memref<8x64xf16, 1> to memref<?x64xf16, strided<[64, 1]>, 1>
  linalg.softmax dimension(1) ins(%xs : memref<?x64xf16, strided<[64, 1]>, 1>) outs(%ys : memref<?x64xf16, strided<[64, 1]>, 1>)
  return
}
