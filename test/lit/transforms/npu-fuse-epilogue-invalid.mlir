// RUN: atvoss-opt %s -split-input-file -verify-diagnostics -npu-fuse-epilogue

#id = affine_map<(d0, d1) -> (d0, d1)>

// The matmul result is also returned: the relu cannot become its epilogue.

func.func @matmul$relu_result_used_twice(%a: tensor<64x32xf16>, %b: tensor<32x16xf16>, %c: tensor<64x16xf32>) -> (tensor<64x16xf32>, tensor<64x16xf32>) {
  %zero = arith.constant 0.0 : f32
  %r = linalg.matmul ins(%a, %b : tensor<64x32xf16>, tensor<32x16xf16>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  %e = tensor.empty() : tensor<64x16xf32>
  // expected-remark @below {{relu not folded into 'linalg.matmul': its result has other uses or another type}}
  %act = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r : tensor<64x16xf32>) outs(%e : tensor<64x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.maximumf %x, %zero : f32
    linalg.yield %y : f32
  } -> tensor<64x16xf32>
  return %act, %r : tensor<64x16xf32>, tensor<64x16xf32>
}

// -----

// A residual add whose result fits a quarter of the SRAM: left to the buffer
// plan, which keeps the conv's result in SRAM for it at no vector-unit cost.
#nhwc = affine_map<(n, h, w, c) -> (n, h, w, c)>
func.func @residual$small(%x: tensor<1x8x8x32xf32>, %skip: tensor<1x8x8x64xf32>) -> tensor<1x8x8x64xf32> {
  %w = arith.constant dense<0.125> : tensor<1x1x32x64xf32>
  %b = arith.constant dense<0.5> : tensor<64xf32>
  %e = tensor.empty() : tensor<1x8x8x64xf32>
  %bias = linalg.broadcast ins(%b : tensor<64xf32>) outs(%e : tensor<1x8x8x64xf32>) dimensions = [0, 1, 2]
  %conv = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}
      ins(%x, %w : tensor<1x8x8x32xf32>, tensor<1x1x32x64xf32>) outs(%bias : tensor<1x8x8x64xf32>) -> tensor<1x8x8x64xf32>
  %e1 = tensor.empty() : tensor<1x8x8x64xf32>
  // expected-remark @below {{residual add not folded into 'linalg.conv_2d_nhwc_hwcf': its 16384 B result is left to the buffer plan (at most a quarter of the SRAM)}}
  %sum = linalg.generic {indexing_maps = [#nhwc, #nhwc, #nhwc], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%conv, %skip : tensor<1x8x8x64xf32>, tensor<1x8x8x64xf32>) outs(%e1 : tensor<1x8x8x64xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %r = arith.addf %v, %s : f32
    linalg.yield %r : f32
  } -> tensor<1x8x8x64xf32>
  return %sum : tensor<1x8x8x64xf32>
}
