// RUN: rlx-opt %s --split-input-file --convert-hir-to-mir=policy=direct | FileCheck %s --check-prefixes=CHECK,DIRECT
// RUN: rlx-opt %s --split-input-file --convert-hir-to-mir=policy=fusable | FileCheck %s --check-prefixes=CHECK,FUSABLE

// ViT-style embeddings of a 36x48 image in 8x8 patches: the partial patch
// row is dropped, the patches are unfolded to [B, 24, 3*8*8] rows for one
// matmul with the convolution weight viewed as [16, 192], the [CLS] token
// goes in front, and the position embeddings of a 2x2 grid are resized to
// the 4x6 grid by two matmuls with PyTorch's bicubic matrices (their first
// rows are torch.nn.functional.interpolate's weights, checked in
// test_vision.py against the models). Lowering an image or batch left
// dynamic is an error (errors.mlir).

// CHECK-LABEL: func.func @vit_embeddings
// CHECK: %[[W:.*]] = mir.param "proj.weight" : tensor<16x3x8x8xf32>
// CHECK: %[[CLS:.*]] = mir.param "cls_token"
// CHECK: %[[POS:.*]] = mir.param "position_embeddings"
// CHECK: %[[CROP:.*]] = mir.slice %arg0 {axis = 2 : i64, size = 32 : i64, start = 0 : i64} : (tensor<2x3x36x48xf32>) -> tensor<2x3x32x48xf32>
// CHECK: %[[G:.*]] = mir.reshape %[[CROP]] : (tensor<2x3x32x48xf32>) -> tensor<2x3x4x8x6x8xf32>
// CHECK: %[[T:.*]] = mir.transpose %[[G]] {permutation = array<i64: 0, 2, 4, 1, 3, 5>} : (tensor<2x3x4x8x6x8xf32>) -> tensor<2x4x6x3x8x8xf32>
// CHECK: %[[ROWS:.*]] = mir.reshape %[[T]] : (tensor<2x4x6x3x8x8xf32>) -> tensor<2x24x192xf32>
// CHECK: %[[W2:.*]] = mir.reshape %[[W]] : (tensor<16x3x8x8xf32>) -> tensor<16x192xf32>
// DIRECT: %[[P:.*]] = mir.fused_matmul %[[ROWS]], %[[W2]] bias(%{{.*}}) {transpose_rhs}
// FUSABLE: %[[MM:.*]] = mir.matmul %[[ROWS]], %[[W2]] {transpose_rhs}
// FUSABLE: %[[P:.*]] = mir.add %[[MM]], %{{.*}}
// CHECK: %[[TOK:.*]] = mir.broadcast %[[CLS]] : (tensor<1x1x16xf32>) -> tensor<2x1x16xf32>
// CHECK: %[[X:.*]] = mir.concat %[[TOK]], %[[P]] {axis = 1 : i64} : (tensor<2x1x16xf32>, tensor<2x24x16xf32>) -> tensor<2x25x16xf32>
// CHECK: %[[PATCH:.*]] = mir.slice %[[POS]] {axis = 1 : i64, size = 4 : i64, start = 1 : i64}
// CHECK: %[[P2:.*]] = mir.reshape %[[PATCH]] : (tensor<1x4x16xf32>) -> tensor<2x32xf32>
// CHECK: %[[AH:.*]] = mir.constant dense<{{\[\[}}1.10546875, -0.10546875], [0.7734375, 0.2265625], [0.2265625, 0.7734375], [-0.10546875, 1.10546875]]> : tensor<4x2xf32>
// CHECK: %[[R:.*]] = mir.matmul %[[AH]], %[[P2]] : (tensor<4x2xf32>, tensor<2x32xf32>) -> tensor<4x32xf32>
// CHECK: %[[R3:.*]] = mir.reshape %[[R]] : (tensor<4x32xf32>) -> tensor<4x2x16xf32>
// CHECK: %[[AW:.*]] = mir.constant dense<{{.*}}> : tensor<6x2xf32>
// CHECK: %[[RT:.*]] = mir.transpose %[[R3]] {permutation = array<i64: 0, 2, 1>}
// CHECK: %[[C:.*]] = mir.matmul %[[RT]], %[[AW]] {transpose_rhs} : (tensor<4x16x2xf32>, tensor<6x2xf32>) -> tensor<4x16x6xf32>
// CHECK: %[[CT:.*]] = mir.transpose %[[C]] {permutation = array<i64: 0, 2, 1>} : (tensor<4x16x6xf32>) -> tensor<4x6x16xf32>
// CHECK: %[[GRID:.*]] = mir.reshape %[[CT]] : (tensor<4x6x16xf32>) -> tensor<1x24x16xf32>
// CHECK: %[[LEAD:.*]] = mir.slice %[[POS]] {axis = 1 : i64, size = 1 : i64, start = 0 : i64}
// CHECK: %[[FULL:.*]] = mir.concat %[[LEAD]], %[[GRID]] {axis = 1 : i64} : (tensor<1x1x16xf32>, tensor<1x24x16xf32>) -> tensor<1x25x16xf32>
// CHECK: %[[Y:.*]] = mir.add %[[X]], %[[FULL]] : (tensor<2x25x16xf32>, tensor<1x25x16xf32>) -> tensor<2x25x16xf32>
// CHECK: return %[[Y]]
func.func @vit_embeddings(%px: tensor<2x3x36x48xf32>) -> tensor<2x25x16xf32> {
  %w = hir.param "proj.weight" : tensor<16x3x8x8xf32>
  %b = hir.param "proj.bias" : tensor<16xf32>
  %cls = hir.param "cls_token" : tensor<1x1x16xf32>
  %pos = hir.param "position_embeddings" : tensor<1x5x16xf32>
  %p = hir.patch_embed %px, %w, %b {patch_size = 8 : i64}
      : (tensor<2x3x36x48xf32>, tensor<16x3x8x8xf32>, tensor<16xf32>) -> tensor<2x24x16xf32>
  %x = hir.insert_tokens %p, %cls : (tensor<2x24x16xf32>, tensor<1x1x16xf32>) -> tensor<2x25x16xf32>
  %y = hir.position_embed %x, %pos {grid = array<i64: 4, 6>}
      : (tensor<2x25x16xf32>, tensor<1x5x16xf32>) -> tensor<2x25x16xf32>
  return %y : tensor<2x25x16xf32>
}

// -----

// On the table's own grid the embeddings are added as they are; register
// tokens go after [CLS].

// CHECK-LABEL: func.func @native_grid_and_registers
// CHECK-NOT: mir.constant
// CHECK: %[[Y:.*]] = mir.add %arg0, %{{.*}} : (tensor<2x5x16xf32>, tensor<1x5x16xf32>) -> tensor<2x5x16xf32>
// CHECK: %[[REG:.*]] = mir.broadcast %{{.*}} : (tensor<1x4x16xf32>) -> tensor<2x4x16xf32>
// CHECK: %[[HEAD:.*]] = mir.slice %[[Y]] {axis = 1 : i64, size = 1 : i64, start = 0 : i64}
// CHECK: %[[TAIL:.*]] = mir.slice %[[Y]] {axis = 1 : i64, size = 4 : i64, start = 1 : i64}
// CHECK: mir.concat %[[HEAD]], %[[REG]], %[[TAIL]] {axis = 1 : i64} : (tensor<2x1x16xf32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x9x16xf32>
func.func @native_grid_and_registers(%x: tensor<2x5x16xf32>) -> tensor<2x9x16xf32> {
  %pos = hir.param "position_embeddings" : tensor<1x5x16xf32>
  %reg = hir.param "register_tokens" : tensor<1x4x16xf32>
  %y = hir.position_embed %x, %pos {grid = array<i64: 2, 2>}
      : (tensor<2x5x16xf32>, tensor<1x5x16xf32>) -> tensor<2x5x16xf32>
  %z = hir.insert_tokens %y, %reg {position = 1 : i64} : (tensor<2x5x16xf32>, tensor<1x4x16xf32>) -> tensor<2x9x16xf32>
  return %z : tensor<2x9x16xf32>
}

// -----

// DINOv2's SwiGLU-FFN: one matmul for the packed gate and up rows, then the
// gated product (fused, or as two slices) and the output projection.

// CHECK-LABEL: func.func @packed_swiglu
// DIRECT: %[[GU:.*]] = mir.fused_matmul %arg0, %{{.*}} bias(%{{.*}}) {transpose_rhs} : ({{.*}}) -> tensor<2x7x48xf32>
// DIRECT: %[[H:.*]] = mir.fused_glu %[[GU]] : (tensor<2x7x48xf32>) -> tensor<2x7x24xf32>
// DIRECT: mir.fused_matmul %[[H]], %{{.*}} bias(%{{.*}}) {transpose_rhs} : ({{.*}}) -> tensor<2x7x16xf32>
// FUSABLE: %[[MM:.*]] = mir.matmul %arg0, %{{.*}} {transpose_rhs}
// FUSABLE: %[[GU:.*]] = mir.add %[[MM]], %{{.*}}
// FUSABLE: %[[G:.*]] = mir.slice %[[GU]] {axis = 2 : i64, size = 24 : i64, start = 0 : i64}
// FUSABLE: %[[A:.*]] = mir.silu %[[G]]
// FUSABLE: %[[U:.*]] = mir.slice %[[GU]] {axis = 2 : i64, size = 24 : i64, start = 24 : i64}
// FUSABLE: mir.mul %[[A]], %[[U]]
func.func @packed_swiglu(%x: tensor<2x7x16xf32>) -> tensor<2x7x16xf32> {
  %wi = hir.param "wi" : tensor<48x16xf32>
  %bi = hir.param "bi" : tensor<48xf32>
  %wo = hir.param "wo" : tensor<16x24xf32>
  %bo = hir.param "bo" : tensor<16xf32>
  %y = hir.packed_swiglu %x, %wi bias(%bi), %wo bias(%bo)
      : (tensor<2x7x16xf32>, tensor<48x16xf32>, tensor<48xf32>, tensor<16x24xf32>, tensor<16xf32>) -> tensor<2x7x16xf32>
  return %y : tensor<2x7x16xf32>
}

// -----

// DINOv2 with registers resizes with PyTorch's antialiased bicubic (PIL's
// kernel, cut at the edges and renormalized): other weights than above.

// CHECK-LABEL: func.func @antialiased
// CHECK: mir.constant dense<{{\[\[}}1.08823526, -0.0882352963], [0.79285717, 0.20714286], [0.20714286, 0.79285717], [-0.0882352963, 1.08823526]]> : tensor<4x2xf32>
func.func @antialiased(%x: tensor<2x17x16xf32>) -> tensor<2x17x16xf32> {
  %pos = hir.param "position_embeddings" : tensor<1x5x16xf32>
  %y = hir.position_embed %x, %pos {grid = array<i64: 4, 4>, antialias}
      : (tensor<2x17x16xf32>, tensor<1x5x16xf32>) -> tensor<2x17x16xf32>
  return %y : tensor<2x17x16xf32>
}
