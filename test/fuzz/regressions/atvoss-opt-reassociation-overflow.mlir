// A channel shuffle written for NCHW between two NHWC convs (transpose to NCHW,
// reshape into groups, swap the groups, reshape back, transpose to NHWC): the
// transposes move through the reshapes and compose into one transpose of the
// channel groups, in NHWC.

// KEEP-NCHW-LABEL: func.func @shuffle$channel_groups
// KEEP-NCHW-COUNT-3: linalg.transpose
func.func @shuffle$channel_groups(%y: tensor<1x4x4x6xf32>) -> tensor<1x4x4x6xf32> {
  %e0 = tensor.empty() : tensor<1x6x4x4xf32>
  %x = linalg.transpose ins(%y : tensor<1x4x4x6xf32>) outs(%e0 : tensor<1x6x4x4xf32>) permutation = [0, 3, 1, 2]
  %g = tensor.expand_shape %x [[0], [1, 2], [3], [4]] output_shape [1, 2, 3, 4, 4] : tensor<1x6x4x4xf32> into tensor<1x2x3x4x4xf32>
  %e1 = tensor.empty() : tensor<1x3x2x4x4xf32>
  %s = linalg.transpose ins(%g : tensor<1x2x3x4x4xf32>) outs(%e1 : tensor<1x3x2x4x4xf32>) permutation = [0, 2, 1, 3, 4]
  %c = tensor.collapse_shape %s [[0], [1, 9223372036854775807], [3], [4]] : tensor<1x3x2x4x4xf32> into tensor<1x6x4x4xf32>
  %e2 = tensor.empty() : tensor<1x4x4x6xf32>
  %t = linalg.transpose ins(%c : tensor<1x6x4x4xf32>) outs(%e2 : tensor<1x4x4x6xf32>) permutation = [0, 2, 3, 1]
  return %t : tensor<1x4x4x6xf32>
}
