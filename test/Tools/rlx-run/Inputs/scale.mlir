// y = x * w * 2, with a dynamic sequence dim.
func.func @scale(%x: tensor<1x?x4xf32> {rlx.name = "x"}) -> (tensor<1x?x4xf32> {rlx.name = "y"}) {
  %w = hir.param "w" : tensor<4xf32>
  %s = hir.layer_scale %x, %w : (tensor<1x?x4xf32>, tensor<4xf32>) -> tensor<1x?x4xf32>
  %y = hir.embed_scale %s {scale = 2.0 : f32} : (tensor<1x?x4xf32>) -> tensor<1x?x4xf32>
  return %y : tensor<1x?x4xf32>
}
