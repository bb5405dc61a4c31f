// Two layers of rms_norm + matmul and a final norm, with parameters named as
// in a checkpoint, for rlx-run --describe's weight blocks.
func.func @describe(%x: tensor<1x4x8xf32> {rlx.name = "hidden"}) -> (tensor<1x4x8xf32> {rlx.name = "out"}) {
  %n0 = mir.param "model.layers.0.norm.weight" : tensor<8xf32>
  %w0 = mir.param "model.layers.0.proj.weight" : tensor<8x8xf32>
  %n1 = mir.param "model.layers.1.norm.weight" : tensor<8xf32>
  %w1 = mir.param "model.layers.1.proj.weight" : tensor<8x8xf32>
  %nf = mir.param "model.norm.weight" : tensor<8xf32>
  %a0 = mir.rms_norm %x, %n0 {epsilon = 1.0e-6 : f32} : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %y0 = mir.matmul %a0, %w0 {transpose_rhs} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %a1 = mir.rms_norm %y0, %n1 {epsilon = 1.0e-6 : f32} : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  %y1 = mir.matmul %a1, %w1 {transpose_rhs} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %o = mir.rms_norm %y1, %nf {epsilon = 1.0e-6 : f32} : (tensor<1x4x8xf32>, tensor<8xf32>) -> tensor<1x4x8xf32>
  return %o : tensor<1x4x8xf32>
}
