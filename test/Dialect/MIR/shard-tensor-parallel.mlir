// RUN: rlx-opt %s -split-input-file --mir-shard-tensor-parallel="ranks=2 rank=0" | FileCheck %s --check-prefixes=CHECK,R0
// RUN: rlx-opt %s -split-input-file --mir-shard-tensor-parallel="ranks=2 rank=1" | rlx-opt -split-input-file | FileCheck %s --check-prefixes=CHECK,R1
// RUN: rlx-opt %s -split-input-file --mir-shard-tensor-parallel="ranks=2 emulate=true" | FileCheck %s --check-prefix=EMU
// RUN: rlx-opt %s -split-input-file --mir-shard-tensor-parallel="ranks=2 emulate=true" | FileCheck %s --check-prefix=NORANK

/// Megatron-style partition of fused decoder layers over a grid of 2 ranks.
/// IN: the fused MIR of `convert-hir-to-mir{policy=direct}`. OUT (rank r):
/// the attention block on the rank's heads (its Q/K/V rows sliced from the
/// source parameters and concatenated, its columns of w_o), a
/// shard.all_reduce; the MLP on the rank's intermediate channels (gate and
/// up rows, down columns), a shard.all_reduce, then the residual added once.
/// With `emulate` both ranks' shares are computed and summed with mir.add.

/// LLaMA with GQA: 4 heads, 2 KV heads of 16, intermediate 128. Each rank
/// keeps 2 query heads and the 1 KV head they read.
/// The module records whose program it is (rlx.rank); emulating, it is no
/// rank's.
// R0: module attributes {rlx.rank = {rank = 0 : i64, ranks = 2 : i64}}
// R1: module attributes {rlx.rank = {rank = 1 : i64, ranks = 2 : i64}}
// NORANK-NOT: rlx.rank
// CHECK: shard.grid @tp(shape = 2)
// CHECK-LABEL: func.func @llama_gqa
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x64xf32>, %[[POS:.*]]: tensor<8xi64>)
// CHECK: %[[WO:.*]] = mir.param "l0.o" : tensor<64x64xf32>
// CHECK: %[[WD:.*]] = mir.param "l0.down" : tensor<64x128xf32>
// CHECK: %[[H:.*]] = mir.rms_norm %[[X]]
// CHECK: %[[WQ:.*]] = mir.param "l0.q" : tensor<64x64xf32>
// R0: %[[Q:.*]] = mir.slice %[[WQ]] {axis = 0 : i64, size = 32 : i64, start = 0 : i64} : (tensor<64x64xf32>) -> tensor<32x64xf32>
// R1: %[[Q:.*]] = mir.slice %[[WQ]] {axis = 0 : i64, size = 32 : i64, start = 32 : i64} : (tensor<64x64xf32>) -> tensor<32x64xf32>
// CHECK: %[[WK:.*]] = mir.param "l0.k" : tensor<32x64xf32>
// R0: %[[K:.*]] = mir.slice %[[WK]] {axis = 0 : i64, size = 16 : i64, start = 0 : i64}
// R1: %[[K:.*]] = mir.slice %[[WK]] {axis = 0 : i64, size = 16 : i64, start = 16 : i64}
// CHECK: %[[WV:.*]] = mir.param "l0.v" : tensor<32x64xf32>
// R0: %[[V:.*]] = mir.slice %[[WV]] {axis = 0 : i64, size = 16 : i64, start = 0 : i64}
// R1: %[[V:.*]] = mir.slice %[[WV]] {axis = 0 : i64, size = 16 : i64, start = 16 : i64}
// CHECK: %[[QKV:.*]] = mir.concat %[[Q]], %[[K]], %[[V]] {axis = 0 : i64} : (tensor<32x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<64x64xf32>
// R0: %[[O:.*]] = mir.slice %[[WO]] {axis = 1 : i64, size = 32 : i64, start = 0 : i64} : (tensor<64x64xf32>) -> tensor<64x32xf32>
// R1: %[[O:.*]] = mir.slice %[[WO]] {axis = 1 : i64, size = 32 : i64, start = 32 : i64} : (tensor<64x64xf32>) -> tensor<64x32xf32>
// CHECK: %[[A:.*]] = mir.attention_block %[[H]], %[[QKV]], %[[O]] positions(%[[POS]]) {{{.*}}num_heads = 2 : i64, num_kv_heads = 1 : i64{{.*}}} : (tensor<1x8x64xf32>, tensor<64x64xf32>, tensor<64x32xf32>, tensor<8xi64>) -> tensor<1x8x64xf32>
// CHECK: %[[AR:.*]] = shard.all_reduce %[[A]] on @tp grid_axes = [0] : tensor<1x8x64xf32> -> tensor<1x8x64xf32>
// CHECK: %[[SUM:.*]], %[[H2:.*]] = mir.fused_residual_rms_norm %[[AR]], %[[X]]
// CHECK: %[[WG:.*]] = mir.param "l0.gate" : tensor<128x64xf32>
// R0: %[[G:.*]] = mir.slice %[[WG]] {axis = 0 : i64, size = 64 : i64, start = 0 : i64}
// R1: %[[G:.*]] = mir.slice %[[WG]] {axis = 0 : i64, size = 64 : i64, start = 64 : i64}
// CHECK: %[[WU:.*]] = mir.param "l0.up" : tensor<128x64xf32>
// R0: %[[U:.*]] = mir.slice %[[WU]] {axis = 0 : i64, size = 64 : i64, start = 0 : i64}
// R1: %[[U:.*]] = mir.slice %[[WU]] {axis = 0 : i64, size = 64 : i64, start = 64 : i64}
// CHECK: %[[GU:.*]] = mir.concat %[[G]], %[[U]] {axis = 0 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<128x64xf32>
// CHECK: %[[MM:.*]] = mir.matmul %[[H2]], %[[GU]] {transpose_rhs} : (tensor<1x8x64xf32>, tensor<128x64xf32>) -> tensor<1x8x128xf32>
// CHECK: %[[GLU:.*]] = mir.fused_glu %[[MM]] : (tensor<1x8x128xf32>) -> tensor<1x8x64xf32>
// R0: %[[D:.*]] = mir.slice %[[WD]] {axis = 1 : i64, size = 64 : i64, start = 0 : i64} : (tensor<64x128xf32>) -> tensor<64x64xf32>
// R1: %[[D:.*]] = mir.slice %[[WD]] {axis = 1 : i64, size = 64 : i64, start = 64 : i64} : (tensor<64x128xf32>) -> tensor<64x64xf32>
// CHECK: %[[P:.*]] = mir.matmul %[[GLU]], %[[D]] {transpose_rhs} : (tensor<1x8x64xf32>, tensor<64x64xf32>) -> tensor<1x8x64xf32>
// CHECK: %[[AR2:.*]] = shard.all_reduce %[[P]] on @tp grid_axes = [0] : tensor<1x8x64xf32> -> tensor<1x8x64xf32>
// CHECK: %[[Y:.*]] = mir.add %[[AR2]], %[[SUM]]
// CHECK: return %[[Y]]

// EMU-NOT: shard.
// EMU-LABEL: func.func @llama_gqa
// EMU: %[[A0:.*]] = mir.attention_block {{.*}}num_heads = 2 : i64, num_kv_heads = 1 : i64
// EMU: %[[A1:.*]] = mir.attention_block {{.*}}num_heads = 2 : i64, num_kv_heads = 1 : i64
// EMU: %[[A:.*]] = mir.add %[[A0]], %[[A1]]
// EMU: mir.fused_residual_rms_norm %[[A]]
// EMU: %[[P0:.*]] = mir.matmul %{{.*}} {transpose_rhs} : (tensor<1x8x64xf32>, tensor<64x64xf32>) -> tensor<1x8x64xf32>
// EMU: %[[P1:.*]] = mir.matmul %{{.*}} {transpose_rhs} : (tensor<1x8x64xf32>, tensor<64x64xf32>) -> tensor<1x8x64xf32>
// EMU: %[[P:.*]] = mir.add %[[P0]], %[[P1]]
// EMU: mir.add %[[P]], %{{.*}}
// EMU-NOT: shard.

func.func @llama_gqa(%x: tensor<1x8x64xf32>, %pos: tensor<8xi64>) -> tensor<1x8x64xf32> {
  %n1 = mir.param "l0.input_norm" : tensor<64xf32>
  %wo = mir.param "l0.o" : tensor<64x64xf32>
  %n2 = mir.param "l0.post_norm" : tensor<64xf32>
  %wd = mir.param "l0.down" : tensor<64x128xf32>
  %h = mir.rms_norm %x, %n1 : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
  %wqkv = mir.param "l0.q+l0.k+l0.v" {concat_axis = 0 : i64, source_sizes = array<i64: 64, 32, 32>, sources = ["l0.q", "l0.k", "l0.v"]} : tensor<128x64xf32>
  %a = mir.attention_block %h, %wqkv, %wo positions(%pos) {head_dim = 16 : i64, mask_kind = #mir<mask causal>, num_heads = 4 : i64, num_kv_heads = 2 : i64, rope_theta = 5.000000e+05 : f32, rotary_dim = 16 : i64, scale = 2.500000e-01 : f32} : (tensor<1x8x64xf32>, tensor<128x64xf32>, tensor<64x64xf32>, tensor<8xi64>) -> tensor<1x8x64xf32>
  %sum, %h2 = mir.fused_residual_rms_norm %a, %x, %n2 : (tensor<1x8x64xf32>, tensor<1x8x64xf32>, tensor<64xf32>) -> (tensor<1x8x64xf32>, tensor<1x8x64xf32>)
  %wgu = mir.param "l0.gate+l0.up" {concat_axis = 0 : i64, source_sizes = array<i64: 128, 128>, sources = ["l0.gate", "l0.up"]} : tensor<256x64xf32>
  %gu = mir.matmul %h2, %wgu {transpose_rhs} : (tensor<1x8x64xf32>, tensor<256x64xf32>) -> tensor<1x8x256xf32>
  %g = mir.fused_glu %gu : (tensor<1x8x256xf32>) -> tensor<1x8x128xf32>
  %y = mir.fused_matmul %g, %wd residual(%sum) {transpose_rhs} : (tensor<1x8x128xf32>, tensor<64x128xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}

// -----

/// Fewer KV heads than ranks (4 heads, 1 KV head, 2 ranks): the KV head is
/// replicated, both ranks read all of l0.k and l0.v (no slice).
// CHECK-LABEL: func.func @llama_replicated_kv
// CHECK: %[[WO:.*]] = mir.param "l0.o" : tensor<64x64xf32>
// CHECK: %[[WQ:.*]] = mir.param "l0.q" : tensor<64x64xf32>
// R0: %[[Q:.*]] = mir.slice %[[WQ]] {axis = 0 : i64, size = 32 : i64, start = 0 : i64}
// R1: %[[Q:.*]] = mir.slice %[[WQ]] {axis = 0 : i64, size = 32 : i64, start = 32 : i64}
// CHECK-NEXT: %[[K:.*]] = mir.param "l0.k" : tensor<16x64xf32>
// CHECK-NEXT: %[[V:.*]] = mir.param "l0.v" : tensor<16x64xf32>
// CHECK-NEXT: %[[QKV:.*]] = mir.concat %[[Q]], %[[K]], %[[V]] {axis = 0 : i64} : (tensor<32x64xf32>, tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<64x64xf32>
// R0: %[[O:.*]] = mir.slice %[[WO]] {axis = 1 : i64, size = 32 : i64, start = 0 : i64}
// R1: %[[O:.*]] = mir.slice %[[WO]] {axis = 1 : i64, size = 32 : i64, start = 32 : i64}
// CHECK: %[[A:.*]] = mir.attention_block %{{.*}}, %[[QKV]], %[[O]] {{.*}}num_heads = 2 : i64, num_kv_heads = 1 : i64
// CHECK: %[[AR:.*]] = shard.all_reduce %[[A]] on @tp grid_axes = [0]
// CHECK: return %[[AR]]

// EMU-LABEL: func.func @llama_replicated_kv
// EMU-COUNT-2: mir.attention_block {{.*}}num_heads = 2 : i64, num_kv_heads = 1 : i64
// EMU: mir.add

func.func @llama_replicated_kv(%x: tensor<1x8x64xf32>, %pos: tensor<8xi64>) -> tensor<1x8x64xf32> {
  %wo = mir.param "l0.o" : tensor<64x64xf32>
  %wqkv = mir.param "l0.q+l0.k+l0.v" {concat_axis = 0 : i64, source_sizes = array<i64: 64, 16, 16>, sources = ["l0.q", "l0.k", "l0.v"]} : tensor<96x64xf32>
  %a = mir.attention_block %x, %wqkv, %wo positions(%pos) {head_dim = 16 : i64, mask_kind = #mir<mask causal>, num_heads = 4 : i64, num_kv_heads = 1 : i64, rotary_dim = 16 : i64, scale = 2.500000e-01 : f32} : (tensor<1x8x64xf32>, tensor<96x64xf32>, tensor<64x64xf32>, tensor<8xi64>) -> tensor<1x8x64xf32>
  return %a : tensor<1x8x64xf32>
}

// -----

/// Biases are added once, after the all-reduce: the output bias of the
/// attention block, and the bias and residual of the down projection. A
/// GELU MLP (no gate) splits fc1 rows and fc2 columns. The QKV weight is
/// not a derived parameter, so it is sliced itself.
// CHECK-LABEL: func.func @biased_attention_and_gelu_mlp
// CHECK-DAG: %[[WQKV:.*]] = mir.param "qkv" : tensor<128x64xf32>
// CHECK-DAG: %[[BQKV:.*]] = mir.param "qkv.bias" : tensor<128xf32>
// CHECK-DAG: %[[BO:.*]] = mir.param "o.bias" : tensor<64xf32>
// CHECK-DAG: %[[W1:.*]] = mir.param "fc1" : tensor<256x64xf32>
// CHECK-DAG: %[[B2:.*]] = mir.param "fc2.bias" : tensor<64xf32>
// R1: mir.slice %[[WQKV]] {axis = 0 : i64, size = 32 : i64, start = 32 : i64}
// R1: mir.slice %[[WQKV]] {axis = 0 : i64, size = 16 : i64, start = 80 : i64}
// R1: mir.slice %[[WQKV]] {axis = 0 : i64, size = 16 : i64, start = 112 : i64}
// R1: mir.slice %[[BQKV]] {axis = 0 : i64, size = 32 : i64, start = 32 : i64}
// CHECK: %[[A:.*]] = mir.attention_block {{.*}} qkv_bias(%{{.*}}) {head_dim = 16 : i64, num_heads = 2 : i64, num_kv_heads = 1 : i64
// CHECK-NOT: out_bias
// CHECK: %[[AR:.*]] = shard.all_reduce %[[A]]
// CHECK: %[[ATT:.*]] = mir.add %[[AR]], %[[BO]]
// R0: %[[F1:.*]] = mir.slice %[[W1]] {axis = 0 : i64, size = 128 : i64, start = 0 : i64}
// R1: %[[F1:.*]] = mir.slice %[[W1]] {axis = 0 : i64, size = 128 : i64, start = 128 : i64}
// CHECK: %[[H:.*]] = mir.fused_matmul %[[ATT]], %[[F1]] bias(%{{.*}}) {activation = #mir<activation gelu>, transpose_rhs} : (tensor<1x?x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<1x?x128xf32>
// CHECK: %[[P:.*]] = mir.matmul %[[H]], %{{.*}} {transpose_rhs} : (tensor<1x?x128xf32>, tensor<64x128xf32>) -> tensor<1x?x64xf32>
// CHECK: %[[AR2:.*]] = shard.all_reduce %[[P]]
// CHECK: %[[Y0:.*]] = mir.add %[[AR2]], %[[B2]]
// CHECK: %[[Y:.*]] = mir.add %[[Y0]], %[[ATT]]
// CHECK: return %[[Y]]

func.func @biased_attention_and_gelu_mlp(%x: tensor<1x?x64xf32>) -> tensor<1x?x64xf32> {
  %wqkv = mir.param "qkv" : tensor<128x64xf32>
  %bqkv = mir.param "qkv.bias" : tensor<128xf32>
  %wo = mir.param "o" : tensor<64x64xf32>
  %bo = mir.param "o.bias" : tensor<64xf32>
  %w1 = mir.param "fc1" : tensor<256x64xf32>
  %b1 = mir.param "fc1.bias" : tensor<256xf32>
  %w2 = mir.param "fc2" : tensor<64x256xf32>
  %b2 = mir.param "fc2.bias" : tensor<64xf32>
  %a = mir.attention_block %x, %wqkv, %wo qkv_bias(%bqkv) out_bias(%bo) {head_dim = 16 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 2.500000e-01 : f32} : (tensor<1x?x64xf32>, tensor<128x64xf32>, tensor<64x64xf32>, tensor<128xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %h = mir.fused_matmul %a, %w1 bias(%b1) {activation = #mir<activation gelu>, transpose_rhs} : (tensor<1x?x64xf32>, tensor<256x64xf32>, tensor<256xf32>) -> tensor<1x?x256xf32>
  %y = mir.fused_matmul %h, %w2 bias(%b2) residual(%a) {transpose_rhs} : (tensor<1x?x256xf32>, tensor<64x256xf32>, tensor<64xf32>, tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
  return %y : tensor<1x?x64xf32>
}

// -----

/// Vocabulary-parallel embedding and LM head, tied (one "embed" param read by
/// both). Rank r holds table rows [50r, 50r + 50): the lookup gathers the ids
/// shifted by 50r and clamped to [0, 50), zeroes the rows of ids outside
/// [0, 50) after the shift, and one shard.all_reduce sums the two ranks'
/// rows. The head multiplies by the same rows (the rank's 50 logits) and one
/// shard.all_gather joins them along the vocabulary axis. Emulated: the
/// masked rows are added, the logit slices concatenated. The ids keep the
/// whole vocabulary as their bound (rlx.index_bound), which the runtime
/// checks at the input.
// CHECK-LABEL: func.func @tied_embedding_and_lm_head
// CHECK-SAME: (%[[IDS:[^:]*]]: tensor<1x?xi64> {rlx.index_bound = 100 : i64})
// CHECK: %[[T:.*]] = mir.param "embed" : tensor<100x64xf32>
// CHECK-DAG: %[[ZERO:.*]] = mir.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: %[[FIRST:.*]] = mir.constant dense<0> : tensor<i64>
// CHECK-DAG: %[[LAST:.*]] = mir.constant dense<49> : tensor<i64>
// CHECK-DAG: %[[BOUND:.*]] = mir.constant dense<50> : tensor<i64>
// R0-DAG: %[[OFF:.*]] = mir.constant dense<0> : tensor<i64>
// R1-DAG: %[[OFF:.*]] = mir.constant dense<50> : tensor<i64>
// CHECK: %[[LOCAL:.*]] = mir.sub %[[IDS]], %[[OFF]]
// CHECK: %[[LO:.*]] = mir.max %[[LOCAL]], %[[FIRST]]
// CHECK: %[[IDX:.*]] = mir.min %[[LO]], %[[LAST]]
// R0: %[[ROWS:.*]] = mir.slice %[[T]] {axis = 0 : i64, size = 50 : i64, start = 0 : i64} : (tensor<100x64xf32>) -> tensor<50x64xf32>
// R1: %[[ROWS:.*]] = mir.slice %[[T]] {axis = 0 : i64, size = 50 : i64, start = 50 : i64} : (tensor<100x64xf32>) -> tensor<50x64xf32>
// CHECK: %[[E:.*]] = mir.gather %[[ROWS]], %[[IDX]] : (tensor<50x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
// CHECK: %[[COL:.*]] = mir.reshape %[[LOCAL]] : (tensor<1x?xi64>) -> tensor<1x?x1xi64>
// CHECK: %[[GE:.*]] = mir.compare %[[COL]], %[[FIRST]] {predicate = #mir<cmp ge>}
// CHECK: %[[LT:.*]] = mir.compare %[[COL]], %[[BOUND]] {predicate = #mir<cmp lt>}
// CHECK: %[[IN:.*]] = mir.select %[[GE]], %[[LT]], %[[GE]]
// CHECK: %[[P:.*]] = mir.select %[[IN]], %[[E]], %[[ZERO]] : (tensor<1x?x1xi1>, tensor<1x?x64xf32>, tensor<f32>) -> tensor<1x?x64xf32>
// CHECK: %[[H:.*]] = shard.all_reduce %[[P]] on @tp grid_axes = [0] : tensor<1x?x64xf32> -> tensor<1x?x64xf32>
// CHECK: %[[F:.*]] = mir.rms_norm %[[H]]
// R0: %[[W:.*]] = mir.slice %[[T]] {axis = 0 : i64, size = 50 : i64, start = 0 : i64}
// R1: %[[W:.*]] = mir.slice %[[T]] {axis = 0 : i64, size = 50 : i64, start = 50 : i64}
// CHECK: %[[L:.*]] = mir.matmul %[[F]], %[[W]] {transpose_rhs} : (tensor<1x?x64xf32>, tensor<50x64xf32>) -> tensor<1x?x50xf32>
// CHECK: %[[Y:.*]] = shard.all_gather %[[L]] on @tp grid_axes = [0] gather_axis = 2 : tensor<1x?x50xf32> -> tensor<1x?x100xf32>
// CHECK: return %[[Y]]

// EMU-LABEL: func.func @tied_embedding_and_lm_head
// EMU: %[[P0:.*]] = mir.select %{{.*}} : (tensor<1x?x1xi1>, tensor<1x?x64xf32>, tensor<f32>) -> tensor<1x?x64xf32>
// EMU: %[[P1:.*]] = mir.select %{{.*}} : (tensor<1x?x1xi1>, tensor<1x?x64xf32>, tensor<f32>) -> tensor<1x?x64xf32>
// EMU: %[[H:.*]] = mir.add %[[P0]], %[[P1]]
// EMU: %[[F:.*]] = mir.rms_norm %[[H]]
// EMU: %[[L0:.*]] = mir.matmul %[[F]], %{{.*}} {transpose_rhs} : (tensor<1x?x64xf32>, tensor<50x64xf32>) -> tensor<1x?x50xf32>
// EMU: %[[L1:.*]] = mir.matmul %[[F]], %{{.*}} {transpose_rhs} : (tensor<1x?x64xf32>, tensor<50x64xf32>) -> tensor<1x?x50xf32>
// EMU: mir.concat %[[L0]], %[[L1]] {axis = 2 : i64} : (tensor<1x?x50xf32>, tensor<1x?x50xf32>) -> tensor<1x?x100xf32>

func.func @tied_embedding_and_lm_head(%ids: tensor<1x?xi64>) -> tensor<1x?x100xf32> {
  %t = mir.param "embed" : tensor<100x64xf32>
  %n = mir.param "norm" : tensor<64xf32>
  %h = mir.gather %t, %ids : (tensor<100x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
  %f = mir.rms_norm %h, %n : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %y = mir.matmul %f, %t {transpose_rhs} : (tensor<1x?x64xf32>, tensor<100x64xf32>) -> tensor<1x?x100xf32>
  return %y : tensor<1x?x100xf32>
}

// -----

/// A vocabulary that does not split over the ranks (101 rows over 2):
/// the lookup and the head read the whole table on every rank (replicated,
/// no collective); the pooler beside them still splits.
// CHECK-LABEL: func.func @odd_vocabulary_replicated
// CHECK: %[[T:.*]] = mir.param "embed" : tensor<101x64xf32>
// CHECK-NOT: mir.slice %[[T]]
// CHECK: %[[E:.*]] = mir.gather %[[T]], %{{.*}} : (tensor<101x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
// CHECK-NEXT: %[[F:.*]] = mir.rms_norm %[[E]]
// CHECK-NEXT: %[[L:.*]] = mir.matmul %[[F]], %[[T]] {transpose_rhs} : (tensor<1x?x64xf32>, tensor<101x64xf32>) -> tensor<1x?x101xf32>
// CHECK: mir.fused_matmul %{{.*}} : (tensor<1x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<1x32xf32>
// CHECK: shard.all_gather
// CHECK-SAME: tensor<1x32xf32> -> tensor<1x64xf32>
// CHECK-NOT: shard.
// CHECK: return %[[L]],

// EMU-LABEL: func.func @odd_vocabulary_replicated
// EMU: mir.gather %{{.*}} : (tensor<101x64xf32>, tensor<1x?xi64>)
// EMU-NOT: mir.add
// EMU: mir.matmul %{{.*}} : (tensor<1x?x64xf32>, tensor<101x64xf32>) -> tensor<1x?x101xf32>

func.func @odd_vocabulary_replicated(%ids: tensor<1x?xi64>, %x: tensor<1x64xf32>) -> (tensor<1x?x101xf32>, tensor<1x64xf32>) {
  %t = mir.param "embed" : tensor<101x64xf32>
  %n = mir.param "norm" : tensor<64xf32>
  %h = mir.gather %t, %ids : (tensor<101x64xf32>, tensor<1x?xi64>) -> tensor<1x?x64xf32>
  %f = mir.rms_norm %h, %n : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %y = mir.matmul %f, %t {transpose_rhs} : (tensor<1x?x64xf32>, tensor<101x64xf32>) -> tensor<1x?x101xf32>
  %w = mir.param "pooler.dense" : tensor<64x64xf32>
  %b = mir.param "pooler.bias" : tensor<64xf32>
  %p = mir.fused_matmul %x, %w bias(%b) {activation = #mir<activation tanh>, transpose_rhs} : (tensor<1x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<1x64xf32>
  return %y, %p : tensor<1x?x101xf32>, tensor<1x64xf32>
}

// -----

/// An untied head with a bias: the rank's weight rows and bias entries.
// CHECK-LABEL: func.func @biased_lm_head
// CHECK-DAG: %[[W:.*]] = mir.param "lm_head" : tensor<100x64xf32>
// CHECK-DAG: %[[B:.*]] = mir.param "lm_head.bias" : tensor<100xf32>
// R0: %[[WR:.*]] = mir.slice %[[W]] {axis = 0 : i64, size = 50 : i64, start = 0 : i64}
// R1: %[[WR:.*]] = mir.slice %[[W]] {axis = 0 : i64, size = 50 : i64, start = 50 : i64}
// R0: %[[BR:.*]] = mir.slice %[[B]] {axis = 0 : i64, size = 50 : i64, start = 0 : i64}
// R1: %[[BR:.*]] = mir.slice %[[B]] {axis = 0 : i64, size = 50 : i64, start = 50 : i64}
// CHECK: %[[L:.*]] = mir.fused_matmul %{{.*}}, %[[WR]] bias(%[[BR]]) {transpose_rhs} : (tensor<2x1x64xf32>, tensor<50x64xf32>, tensor<50xf32>) -> tensor<2x1x50xf32>
// CHECK: %[[Y:.*]] = shard.all_gather %[[L]] on @tp grid_axes = [0] gather_axis = 2 : tensor<2x1x50xf32> -> tensor<2x1x100xf32>
// CHECK: return %[[Y]]

// EMU-LABEL: func.func @biased_lm_head
// EMU-COUNT-2: mir.fused_matmul
// EMU: mir.concat %{{.*}}, %{{.*}} {axis = 2 : i64}

func.func @biased_lm_head(%x: tensor<2x1x64xf32>) -> tensor<2x1x100xf32> {
  %w = mir.param "lm_head" : tensor<100x64xf32>
  %b = mir.param "lm_head.bias" : tensor<100xf32>
  %y = mir.fused_matmul %x, %w bias(%b) {transpose_rhs} : (tensor<2x1x64xf32>, tensor<100x64xf32>, tensor<100xf32>) -> tensor<2x1x100xf32>
  return %y : tensor<2x1x100xf32>
}

// -----

/// A pooler (dense + tanh on the [CLS] row) is an activated projection that
/// feeds no down projection: not an MLP, so it is split like a head (the
/// rank's output rows, activation per slice, one shard.all_gather).
// CHECK-LABEL: func.func @pooler
// CHECK-DAG: %[[W:.*]] = mir.param "pooler.dense" : tensor<64x64xf32>
// R0: %[[WR:.*]] = mir.slice %[[W]] {axis = 0 : i64, size = 32 : i64, start = 0 : i64}
// R1: %[[WR:.*]] = mir.slice %[[W]] {axis = 0 : i64, size = 32 : i64, start = 32 : i64}
// CHECK: %[[P:.*]] = mir.fused_matmul %{{.*}}, %[[WR]] bias(%{{.*}}) {activation = #mir<activation tanh>, transpose_rhs} : (tensor<1x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<1x32xf32>
// CHECK: %[[Y:.*]] = shard.all_gather %[[P]] on @tp grid_axes = [0] gather_axis = 1 : tensor<1x32xf32> -> tensor<1x64xf32>
// CHECK: return %[[Y]]

// EMU-LABEL: func.func @pooler
// EMU-COUNT-2: mir.fused_matmul
// EMU: mir.concat %{{.*}}, %{{.*}} {axis = 1 : i64}

func.func @pooler(%x: tensor<1x64xf32>) -> tensor<1x64xf32> {
  %w = mir.param "pooler.dense" : tensor<64x64xf32>
  %b = mir.param "pooler.bias" : tensor<64xf32>
  %y = mir.fused_matmul %x, %w bias(%b) {activation = #mir<activation tanh>, transpose_rhs} : (tensor<1x64xf32>, tensor<64x64xf32>, tensor<64xf32>) -> tensor<1x64xf32>
  return %y : tensor<1x64xf32>
}
