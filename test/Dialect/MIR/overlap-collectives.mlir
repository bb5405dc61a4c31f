// RUN: rlx-opt %s -split-input-file --mir-overlap-collectives | FileCheck %s
// RUN: rlx-opt %s -split-input-file --mir-overlap-collectives=chunks=3 | FileCheck %s --check-prefix=THREE
// RUN: rlx-opt %s -split-input-file --mir-overlap-collectives=chunks=1 | FileCheck %s --check-prefix=ONE
// RUN: not rlx-opt %s -split-input-file --mir-overlap-collectives=chunks=0 2>&1 | FileCheck %s --check-prefix=ZERO

/// mir-overlap-collectives: a row-parallel projection and its all-reduce as
/// token ranges (sizes differing by at most one), each range's sum its own
/// shard.all_reduce, then a concat of the sums.

// ZERO: error: mir-overlap-collectives: chunks must be at least 1, got 0

/// The down projection of an MLP over 7 tokens: ranges of 4 and 3 tokens
/// (3, 2 and 2 with chunks = 3).
shard.grid @tp(shape = 2)
// CHECK-LABEL: func.func @down
// CHECK-SAME: (%[[H:.*]]: tensor<1x7x64xf32>, %[[W:.*]]: tensor<32x64xf32>)
// CHECK: %[[H0:.*]] = mir.slice %[[H]] {axis = 1 : i64, size = 4 : i64, start = 0 : i64} : (tensor<1x7x64xf32>) -> tensor<1x4x64xf32>
// CHECK: %[[P0:.*]] = mir.matmul %[[H0]], %[[W]] {transpose_rhs} : (tensor<1x4x64xf32>, tensor<32x64xf32>) -> tensor<1x4x32xf32>
// CHECK: %[[R0:.*]] = shard.all_reduce %[[P0]] on @tp grid_axes = [0] : tensor<1x4x32xf32> -> tensor<1x4x32xf32>
// CHECK: %[[H1:.*]] = mir.slice %[[H]] {axis = 1 : i64, size = 3 : i64, start = 4 : i64} : (tensor<1x7x64xf32>) -> tensor<1x3x64xf32>
// CHECK: %[[P1:.*]] = mir.matmul %[[H1]], %[[W]] {transpose_rhs} : (tensor<1x3x64xf32>, tensor<32x64xf32>) -> tensor<1x3x32xf32>
// CHECK: %[[R1:.*]] = shard.all_reduce %[[P1]] on @tp grid_axes = [0] : tensor<1x3x32xf32> -> tensor<1x3x32xf32>
// CHECK: %[[R:.*]] = mir.concat %[[R0]], %[[R1]] {axis = 1 : i64} : (tensor<1x4x32xf32>, tensor<1x3x32xf32>) -> tensor<1x7x32xf32>
// CHECK: return %[[R]]
// THREE-LABEL: func.func @down
// THREE: mir.slice {{.*}}size = 3 : i64, start = 0 : i64
// THREE: shard.all_reduce
// THREE: mir.slice {{.*}}size = 2 : i64, start = 3 : i64
// THREE: shard.all_reduce
// THREE: mir.slice {{.*}}size = 2 : i64, start = 5 : i64
// THREE: shard.all_reduce
// THREE: mir.concat {{.*}} : (tensor<1x3x32xf32>, tensor<1x2x32xf32>, tensor<1x2x32xf32>) -> tensor<1x7x32xf32>
// ONE-LABEL: func.func @down
// ONE-NEXT: mir.matmul
// ONE-NEXT: shard.all_reduce
// ONE-NEXT: return
func.func @down(%h: tensor<1x7x64xf32>, %w: tensor<32x64xf32>) -> tensor<1x7x32xf32> {
  %p = mir.matmul %h, %w {transpose_rhs} : (tensor<1x7x64xf32>, tensor<32x64xf32>) -> tensor<1x7x32xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<1x7x32xf32> -> tensor<1x7x32xf32>
  return %r : tensor<1x7x32xf32>
}

// -----

/// A fused matmul: the residual is sliced with the input, the bias is
/// whole in every range.
shard.grid @tp(shape = 2)
// CHECK-LABEL: func.func @fused
// CHECK-SAME: (%[[X:.*]]: tensor<2x6x16xf32>, %[[W:.*]]: tensor<16x8xf32>, %[[B:.*]]: tensor<8xf32>, %[[RES:.*]]: tensor<2x6x8xf32>)
// CHECK: %[[X0:.*]] = mir.slice %[[X]] {axis = 1 : i64, size = 3 : i64, start = 0 : i64}
// CHECK: %[[S0:.*]] = mir.slice %[[RES]] {axis = 1 : i64, size = 3 : i64, start = 0 : i64}
// CHECK: %[[P0:.*]] = mir.fused_matmul %[[X0]], %[[W]] bias(%[[B]]) residual(%[[S0]]) : (tensor<2x3x16xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
// CHECK: shard.all_reduce %[[P0]]
// CHECK: %[[X1:.*]] = mir.slice %[[X]] {axis = 1 : i64, size = 3 : i64, start = 3 : i64}
// CHECK: %[[S1:.*]] = mir.slice %[[RES]] {axis = 1 : i64, size = 3 : i64, start = 3 : i64}
// CHECK: mir.fused_matmul %[[X1]], %[[W]] bias(%[[B]]) residual(%[[S1]])
// CHECK: mir.concat {{.*}} {axis = 1 : i64} : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x6x8xf32>
func.func @fused(%x: tensor<2x6x16xf32>, %w: tensor<16x8xf32>, %b: tensor<8xf32>, %res: tensor<2x6x8xf32>) -> tensor<2x6x8xf32> {
  %p = mir.fused_matmul %x, %w bias(%b) residual(%res) : (tensor<2x6x16xf32>, tensor<16x8xf32>, tensor<8xf32>, tensor<2x6x8xf32>) -> tensor<2x6x8xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<2x6x8xf32> -> tensor<2x6x8xf32>
  return %r : tensor<2x6x8xf32>
}

// -----

/// Under [precision] compute = bf16 (mir-compute-precision, which runs
/// first) the partial sums travel as bf16: the cast between the projection
/// and the all-reduce is split with it, as are elementwise round trips.
shard.grid @tp(shape = 2)
// CHECK-LABEL: func.func @narrowed
// CHECK: %[[P0:.*]] = mir.matmul {{.*}} -> tensor<1x2x32xf32>
// CHECK: %[[E0:.*]] = mir.elementwise %[[P0]] {
// CHECK: } : (tensor<1x2x32xf32>) -> tensor<1x2x32xf32>
// CHECK: %[[C0:.*]] = mir.cast %[[E0]] : (tensor<1x2x32xf32>) -> tensor<1x2x32xbf16>
// CHECK: %[[R0:.*]] = shard.all_reduce %[[C0]] on @tp grid_axes = [0] : tensor<1x2x32xbf16> -> tensor<1x2x32xbf16>
// CHECK: %[[P1:.*]] = mir.matmul {{.*}} -> tensor<1x2x32xf32>
// CHECK: mir.elementwise %[[P1]]
// CHECK: mir.cast {{.*}} -> tensor<1x2x32xbf16>
// CHECK: %[[R1:.*]] = shard.all_reduce
// CHECK: %[[R:.*]] = mir.concat %[[R0]], %[[R1]] {axis = 1 : i64} : (tensor<1x2x32xbf16>, tensor<1x2x32xbf16>) -> tensor<1x4x32xbf16>
// CHECK: mir.cast %[[R]] : (tensor<1x4x32xbf16>) -> tensor<1x4x32xf32>
func.func @narrowed(%h: tensor<1x4x64xf32>, %w: tensor<32x64xf32>) -> tensor<1x4x32xf32> {
  %p = mir.matmul %h, %w {transpose_rhs} : (tensor<1x4x64xf32>, tensor<32x64xf32>) -> tensor<1x4x32xf32>
  %e = mir.elementwise %p {
  ^bb0(%a: f32):
    %n = arith.truncf %a : f32 to bf16
    %x = arith.extf %n : bf16 to f32
    mir.yield %x : f32
  } : (tensor<1x4x32xf32>) -> tensor<1x4x32xf32>
  %c = mir.cast %e : (tensor<1x4x32xf32>) -> tensor<1x4x32xbf16>
  %r = shard.all_reduce %c on @tp grid_axes = [0] : tensor<1x4x32xbf16> -> tensor<1x4x32xbf16>
  %b = mir.cast %r : (tensor<1x4x32xbf16>) -> tensor<1x4x32xf32>
  return %b : tensor<1x4x32xf32>
}

// -----

/// An attention block: expanded (as convert-mir-to-lir does on the CPU),
/// then its output projection split; the attention itself sees every token.
shard.grid @tp(shape = 2)
// CHECK-LABEL: func.func @attention
// CHECK-NOT: mir.attention_block
// CHECK: %[[A:.*]] = mir.attention {{.*}} -> tensor<1x8x32xf32>
// CHECK: %[[A0:.*]] = mir.slice %[[A]] {axis = 1 : i64, size = 4 : i64, start = 0 : i64}
// CHECK: %[[P0:.*]] = mir.matmul %[[A0]], %{{.*}} {transpose_rhs} : (tensor<1x4x32xf32>, tensor<64x32xf32>) -> tensor<1x4x64xf32>
// CHECK: shard.all_reduce %[[P0]]
// CHECK: mir.slice %[[A]] {axis = 1 : i64, size = 4 : i64, start = 4 : i64}
// CHECK: mir.concat
func.func @attention(%h: tensor<1x8x64xf32>, %pos: tensor<8xi64>, %wqkv: tensor<64x64xf32>, %wo: tensor<64x32xf32>) -> tensor<1x8x64xf32> {
  %a = mir.attention_block %h, %wqkv, %wo positions(%pos) {head_dim = 16 : i64, mask_kind = #mir<mask causal>, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 5.000000e+05 : f32, rotary_dim = 16 : i64, scale = 2.500000e-01 : f32} : (tensor<1x8x64xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<8xi64>) -> tensor<1x8x64xf32>
  %r = shard.all_reduce %a on @tp grid_axes = [0] : tensor<1x8x64xf32> -> tensor<1x8x64xf32>
  return %r : tensor<1x8x64xf32>
}

// -----

/// Left as they are: a decode step (one token: fewer than the chunks), a
/// projection something else reads too, an unknown number of tokens, an
/// all-reduce of something that is not a projection, and a decode step's
/// attention block (not expanded).
shard.grid @tp(shape = 2)
// CHECK-LABEL: func.func @unsplit
// CHECK-NOT: mir.slice
// CHECK-NOT: mir.concat
// CHECK: mir.attention_block
// CHECK-NOT: mir.slice
// CHECK-NOT: mir.concat
// CHECK: return
func.func @unsplit(%t: tensor<1x1x64xf32>, %h: tensor<1x8x64xf32>, %d: tensor<1x?x64xf32>, %w: tensor<32x64xf32>, %pos: tensor<1xi64>, %wqkv: tensor<64x64xf32>, %wo: tensor<64x32xf32>) -> (tensor<1x1x32xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1x?x32xf32>, tensor<1x8x64xf32>, tensor<1x1x64xf32>) {
  %p = mir.matmul %t, %w {transpose_rhs} : (tensor<1x1x64xf32>, tensor<32x64xf32>) -> tensor<1x1x32xf32>
  %r = shard.all_reduce %p on @tp grid_axes = [0] : tensor<1x1x32xf32> -> tensor<1x1x32xf32>
  %q = mir.matmul %h, %w {transpose_rhs} : (tensor<1x8x64xf32>, tensor<32x64xf32>) -> tensor<1x8x32xf32>
  %s = shard.all_reduce %q on @tp grid_axes = [0] : tensor<1x8x32xf32> -> tensor<1x8x32xf32>
  %e = mir.matmul %d, %w {transpose_rhs} : (tensor<1x?x64xf32>, tensor<32x64xf32>) -> tensor<1x?x32xf32>
  %f = shard.all_reduce %e on @tp grid_axes = [0] : tensor<1x?x32xf32> -> tensor<1x?x32xf32>
  %n = mir.exp %h : (tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
  %g = shard.all_reduce %n on @tp grid_axes = [0] : tensor<1x8x64xf32> -> tensor<1x8x64xf32>
  %a = mir.attention_block %t, %wqkv, %wo positions(%pos) {head_dim = 16 : i64, mask_kind = #mir<mask causal>, num_heads = 2 : i64, num_kv_heads = 1 : i64, rope_theta = 5.000000e+05 : f32, rotary_dim = 16 : i64, scale = 2.500000e-01 : f32} : (tensor<1x1x64xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<1xi64>) -> tensor<1x1x64xf32>
  %b = shard.all_reduce %a on @tp grid_axes = [0] : tensor<1x1x64xf32> -> tensor<1x1x64xf32>
  return %r, %s, %q, %f, %g, %b : tensor<1x1x32xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>, tensor<1x?x32xf32>, tensor<1x8x64xf32>, tensor<1x1x64xf32>
}
