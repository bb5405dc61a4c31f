// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --mlir-print-op-generic | rlx-opt | FileCheck %s

// The vision-encoder blocks, round-tripped in their pretty and generic forms:
// a 3x32x48 image in 8x8 patches (a 4x6 grid) of hidden 16, a [CLS] token,
// position embeddings made for a 2x2 grid, DINOv2's packed SwiGLU.

// CHECK-LABEL: func.func @vit_embeddings
func.func @vit_embeddings(%px: tensor<?x3x32x48xf32>) -> tensor<?x25x16xf32> {
  %w = hir.param "proj.weight" : tensor<16x3x8x8xf32>
  %b = hir.param "proj.bias" : tensor<16xf32>
  %cls = hir.param "cls_token" : tensor<1x1x16xf32>
  %pos = hir.param "position_embeddings" : tensor<1x5x16xf32>
  // CHECK: hir.patch_embed %{{.*}}, %{{.*}}, %{{.*}} {patch_size = 8 : i64} : (tensor<?x3x32x48xf32>, tensor<16x3x8x8xf32>, tensor<16xf32>) -> tensor<?x24x16xf32>
  %p = hir.patch_embed %px, %w, %b {patch_size = 8 : i64}
      : (tensor<?x3x32x48xf32>, tensor<16x3x8x8xf32>, tensor<16xf32>) -> tensor<?x24x16xf32>
  // CHECK: hir.insert_tokens %{{.*}}, %{{.*}} : (tensor<?x24x16xf32>, tensor<1x1x16xf32>) -> tensor<?x25x16xf32>
  %x = hir.insert_tokens %p, %cls : (tensor<?x24x16xf32>, tensor<1x1x16xf32>) -> tensor<?x25x16xf32>
  // CHECK: hir.position_embed %{{.*}}, %{{.*}} {grid = array<i64: 4, 6>} : (tensor<?x25x16xf32>, tensor<1x5x16xf32>) -> tensor<?x25x16xf32>
  %y = hir.position_embed %x, %pos {grid = array<i64: 4, 6>, leading = 1 : i64}
      : (tensor<?x25x16xf32>, tensor<1x5x16xf32>) -> tensor<?x25x16xf32>
  return %y : tensor<?x25x16xf32>
}

// CHECK-LABEL: func.func @registers
func.func @registers(%x: tensor<2x5x16xf32>, %r: tensor<1x4x16xf32>) -> tensor<2x9x16xf32> {
  // CHECK: hir.insert_tokens %{{.*}}, %{{.*}} {position = 1 : i64}
  %y = hir.insert_tokens %x, %r {position = 1 : i64} : (tensor<2x5x16xf32>, tensor<1x4x16xf32>) -> tensor<2x9x16xf32>
  return %y : tensor<2x9x16xf32>
}

// CHECK-LABEL: func.func @packed_swiglu
func.func @packed_swiglu(%x: tensor<2x?x16xf32>, %wi: tensor<48x16xf32>, %bi: tensor<48xf32>,
                         %wo: tensor<16x24xf32>, %bo: tensor<16xf32>) -> (tensor<2x?x16xf32>, tensor<2x?x16xf32>) {
  // CHECK: hir.packed_swiglu %{{.*}}, %{{.*}} bias(%{{.*}}), %{{.*}} bias(%{{.*}}) :
  %y = hir.packed_swiglu %x, %wi bias(%bi), %wo bias(%bo)
      : (tensor<2x?x16xf32>, tensor<48x16xf32>, tensor<48xf32>, tensor<16x24xf32>, tensor<16xf32>) -> tensor<2x?x16xf32>
  // CHECK: hir.packed_swiglu %{{.*}}, %{{.*}}, %{{.*}} :
  %z = hir.packed_swiglu %x, %wi, %wo
      : (tensor<2x?x16xf32>, tensor<48x16xf32>, tensor<16x24xf32>) -> tensor<2x?x16xf32>
  return %y, %z : tensor<2x?x16xf32>, tensor<2x?x16xf32>
}
