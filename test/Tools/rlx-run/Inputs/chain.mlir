// Kernels with dependent and independent neighbours (softmax and rms_norm
// both read x; concat reads both; ...), for the Vulkan barrier tests.
func.func @chain(%x: tensor<1x3x4xf32> {rlx.name = "x"}) -> (tensor<1x8xf32> {rlx.name = "r"}, tensor<1x3x4xf32> {rlx.name = "n"}) {
  %w = mir.param "w" : tensor<4xf32>
  %s = mir.softmax %x {axis = -1 : i64} : (tensor<1x3x4xf32>) -> tensor<1x3x4xf32>
  %n = mir.rms_norm %x, %w {epsilon = 1.0e-6 : f32} : (tensor<1x3x4xf32>, tensor<4xf32>) -> tensor<1x3x4xf32>
  %c = mir.concat %s, %n {axis = 2 : i64} : (tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> tensor<1x3x8xf32>
  %t = mir.transpose %c {permutation = array<i64: 0, 2, 1>} : (tensor<1x3x8xf32>) -> tensor<1x8x3xf32>
  %r = mir.reduce_sum %t {axes = array<i64: 2>} : (tensor<1x8x3xf32>) -> tensor<1x8xf32>
  return %r, %n : tensor<1x8xf32>, tensor<1x3x4xf32>
}
