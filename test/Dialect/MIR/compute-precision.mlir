// RUN: rlx-opt %s --mir-compute-precision=type=bf16 --split-input-file | FileCheck %s
// RUN: rlx-opt %s --mir-compute-precision=type=f16 --split-input-file | FileCheck %s --check-prefix=F16
// RUN: rlx-opt %s --mir-compute-precision=type=f32 --split-input-file | FileCheck %s --check-prefix=F32
// RUN: not rlx-opt %s --mir-compute-precision=type=f64 --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

/// [precision] compute: every activation passed from one op to another is
/// rounded to the compute type and back (the kernels compute in f32).
/// IN: an embedding lookup, a norm and a projection. OUT: the gathered rows
/// pass through one round-trip mir.elementwise, the norm rounds its result
/// itself (round_to: its kernel rounds as it stores); the params, and the
/// returned logits, are left as they are.

// CHECK-LABEL: func.func @between_ops
// CHECK: %[[T:.*]] = mir.param "embed"
// CHECK: %[[W:.*]] = mir.param "norm"
// CHECK: %[[E:.*]] = mir.gather %[[T]]
// CHECK: %[[RE:.*]] = mir.elementwise %[[E]] {
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32):
// CHECK-NEXT: %[[N:.*]] = arith.truncf %[[A]] : f32 to bf16
// CHECK-NEXT: %[[X:.*]] = arith.extf %[[N]] : bf16 to f32
// CHECK-NEXT: mir.yield %[[X]] : f32
// CHECK: %[[H:.*]] = mir.rms_norm %[[RE]], %[[W]] {epsilon = 9.99999997E-7 : f32, round_to = bf16}
// CHECK-NEXT: %[[L:.*]] = mir.matmul %[[H]], %[[T]] {transpose_rhs}
// CHECK-NOT: mir.elementwise
// CHECK: return %[[L]]
// F16-LABEL: func.func @between_ops
// F16: arith.truncf %{{.*}} : f32 to f16
// F16: arith.extf %{{.*}} : f16 to f32
// F16: mir.rms_norm {{.*}}round_to = f16
// F32-LABEL: func.func @between_ops
// F32-NOT: arith.truncf
// F32-NOT: round_to
// BAD: error: mir-compute-precision: type must be f32, bf16 or f16, got 'f64'
func.func @between_ops(%ids: tensor<1x4xi64>) -> tensor<1x4x100xf32> {
  %t = mir.param "embed" : tensor<100x64xf32>
  %w = mir.param "norm" : tensor<64xf32>
  %e = mir.gather %t, %ids : (tensor<100x64xf32>, tensor<1x4xi64>) -> tensor<1x4x64xf32>
  %h = mir.rms_norm %e, %w {epsilon = 1.0e-6 : f32} : (tensor<1x4x64xf32>, tensor<64xf32>) -> tensor<1x4x64xf32>
  %l = mir.matmul %h, %t {transpose_rhs} : (tensor<1x4x64xf32>, tensor<100x64xf32>) -> tensor<1x4x100xf32>
  return %l : tensor<1x4x100xf32>
}

// -----

/// What is computed from params alone (Gemma's 1 + w) is a weight, not an
/// activation: not rounded. Data movement of a rounded value (reshape,
/// transpose) is not rounded again.

// CHECK-LABEL: func.func @weights_and_views
// CHECK: %[[W:.*]] = mir.param "w"
// CHECK: %[[ONE:.*]] = mir.add %{{.*}}, %[[W]]
// CHECK-NOT: mir.elementwise
// CHECK: %[[M:.*]] = mir.mul %{{.*}}, %[[ONE]]
// CHECK: %[[RM:.*]] = mir.elementwise %[[M]]
// CHECK: %[[R:.*]] = mir.reshape %[[RM]]
// CHECK-NEXT: %[[P:.*]] = mir.transpose %[[R]]
// CHECK-NEXT: %[[S:.*]] = mir.silu %[[P]]
// CHECK-NEXT: return %[[S]]
func.func @weights_and_views(%x: tensor<2x8xf32>) -> tensor<4x2x2xf32> {
  %w = mir.param "w" : tensor<8xf32>
  %c = mir.constant dense<1.0> : tensor<8xf32>
  %one = mir.add %c, %w : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %m = mir.mul %x, %one : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %r = mir.reshape %m : (tensor<2x8xf32>) -> tensor<2x2x4xf32>
  %p = mir.transpose %r {permutation = array<i64: 2, 0, 1>} : (tensor<2x2x4xf32>) -> tensor<4x2x2xf32>
  %s = mir.silu %p : (tensor<4x2x2xf32>) -> tensor<4x2x2xf32>
  return %s : tensor<4x2x2xf32>
}

// -----

/// A producing mir.elementwise rounds what it yields; a consuming one rounds
/// its argument where its body reads it (unless its producer rounds it
/// already, as the norm does): no kernel of their own. Integer values (the
/// mask) are left alone.

// CHECK-LABEL: func.func @into_elementwise
// CHECK: %[[A:.*]] = mir.elementwise %{{.*}} {
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32):
// CHECK-NEXT: %[[E:.*]] = math.exp %[[X]] : f32
// CHECK-NEXT: %[[N:.*]] = arith.truncf %[[E]] : f32 to bf16
// CHECK-NEXT: %[[W:.*]] = arith.extf %[[N]] : bf16 to f32
// CHECK-NEXT: mir.yield %[[W]] : f32
// CHECK: %[[H:.*]] = mir.rms_norm %[[A]], %{{.*}} {{{.*}}round_to = bf16}
// CHECK-NEXT: %[[B:.*]] = mir.elementwise %[[H]], %{{.*}} {
// CHECK-NEXT: ^bb0(%[[Y:.*]]: f32, %[[K:.*]]: i1):
// CHECK-NEXT: arith.constant
// CHECK-NEXT: arith.select %[[K]], %[[Y]]
// CHECK: return %[[B]]
func.func @into_elementwise(%x: tensor<4x8xf32>, %mask: tensor<4x8xi1>) -> tensor<4x8xf32> {
  %w = mir.param "w" : tensor<8xf32>
  %a = mir.elementwise %x {
  ^bb0(%v: f32):
    %e = math.exp %v : f32
    mir.yield %e : f32
  } : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = mir.rms_norm %a, %w {epsilon = 1.0e-6 : f32} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %b = mir.elementwise %h, %mask {
  ^bb0(%v: f32, %k: i1):
    %z = arith.constant 0.0 : f32
    %s = arith.select %k, %v, %z : f32
    mir.yield %s : f32
  } : (tensor<4x8xf32>, tensor<4x8xi1>) -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

/// A cast from the compute type already holds its values; a cast from
/// another (f16 keys under bf16 compute) is rounded.

// CHECK-LABEL: func.func @casts
// CHECK: %[[C:.*]] = mir.cast %{{.*}} : (tensor<4x8xbf16>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[S:.*]] = mir.silu %[[C]]
// CHECK: %[[D:.*]] = mir.cast %{{.*}} : (tensor<4x8xf16>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[RD:.*]] = mir.elementwise %[[D]]
// CHECK: mir.silu %[[RD]]
func.func @casts(%x: tensor<4x8xbf16>, %y: tensor<4x8xf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = mir.cast %x : (tensor<4x8xbf16>) -> tensor<4x8xf32>
  %s = mir.silu %c : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %d = mir.cast %y : (tensor<4x8xf16>) -> tensor<4x8xf32>
  %t = mir.silu %d : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %s, %t : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

/// A decode step: the past keys (an argument) concatenated with the new
/// ones (rounded) need no rounding again; the returned cache is as computed.

// CHECK-LABEL: func.func @cache
// CHECK: %[[K:.*]] = mir.silu %{{.*}}
// CHECK-NEXT: %[[RK:.*]] = mir.elementwise %[[K]]
// CHECK: %[[C:.*]] = mir.concat %{{.*}}, %[[RK]]
// CHECK-NEXT: %[[S:.*]] = mir.reduce_sum %[[C]]
// CHECK-NEXT: return %[[S]], %[[C]]
func.func @cache(%past: tensor<1x3x8xf32>, %x: tensor<1x1x8xf32>) -> (tensor<1x8xf32>, tensor<1x4x8xf32>) {
  %k = mir.silu %x : (tensor<1x1x8xf32>) -> tensor<1x1x8xf32>
  %c = mir.concat %past, %k {axis = 1 : i64} : (tensor<1x3x8xf32>, tensor<1x1x8xf32>) -> tensor<1x4x8xf32>
  %s = mir.reduce_sum %c {axes = array<i64: 1>} : (tensor<1x4x8xf32>) -> tensor<1x8xf32>
  return %s, %c : tensor<1x8xf32>, tensor<1x4x8xf32>
}

// -----

/// Tensor-parallel collectives move the activations in the compute type:
/// the partial sum cast to bf16 (its rounding: no round trip before it),
/// the all-reduce and the all-gather on bf16, cast back to f32 (exact: not
/// rounded again before the norm; the norm's result, read only by the
/// gather's cast, has no round trip either). An all-reduce of a
/// parameter-only value stays f32.

// CHECK-LABEL: func.func @collectives
// CHECK: %[[P:.*]] = mir.matmul
// CHECK-NEXT: %[[N:.*]] = mir.cast %[[P]] : (tensor<2x8xf32>) -> tensor<2x8xbf16>
// CHECK-NEXT: %[[S:.*]] = shard.all_reduce %[[N]] on @tp grid_axes = [0] : tensor<2x8xbf16> -> tensor<2x8xbf16>
// CHECK-NEXT: %[[W:.*]] = mir.cast %[[S]] : (tensor<2x8xbf16>) -> tensor<2x8xf32>
// CHECK-NEXT: %[[R:.*]] = mir.rms_norm %[[W]]
// CHECK-NEXT: %[[G:.*]] = mir.cast %[[R]] : (tensor<2x8xf32>) -> tensor<2x8xbf16>
// CHECK-NEXT: %[[A:.*]] = shard.all_gather %[[G]] on @tp grid_axes = [0] gather_axis = 1 : tensor<2x8xbf16> -> tensor<2x16xbf16>
// CHECK-NEXT: %[[AW:.*]] = mir.cast %[[A]] : (tensor<2x16xbf16>) -> tensor<2x16xf32>
// CHECK: shard.all_reduce %{{.*}} : tensor<8xf32> -> tensor<8xf32>
// CHECK: return %[[AW]], %{{.*}} : tensor<2x16xf32>, tensor<8xf32>

// F16-LABEL: func.func @collectives
// F16: mir.cast %{{.*}} : (tensor<2x8xf32>) -> tensor<2x8xf16>
// F16-NEXT: shard.all_reduce %{{.*}} : tensor<2x8xf16> -> tensor<2x8xf16>

// F32-LABEL: func.func @collectives
// F32-NOT: mir.cast
// F32: shard.all_reduce %{{.*}} : tensor<2x8xf32> -> tensor<2x8xf32>

shard.grid @tp(shape = 2)
func.func @collectives(%x: tensor<2x4xf32>) -> (tensor<2x16xf32>, tensor<8xf32>) {
  %w = mir.param "w" : tensor<4x8xf32>
  %g = mir.param "g" : tensor<8xf32>
  %p = mir.matmul %x, %w : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  %s = shard.all_reduce %p on @tp grid_axes = [0] : tensor<2x8xf32> -> tensor<2x8xf32>
  %r = mir.rms_norm %s, %g {epsilon = 1.0e-5 : f32} : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %a = shard.all_gather %r on @tp grid_axes = [0] gather_axis = 1 : tensor<2x8xf32> -> tensor<2x16xf32>
  %q = shard.all_reduce %g on @tp grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  return %a, %q : tensor<2x16xf32>, tensor<8xf32>
}

// -----

/// Norms, the GLU and the GEMMs round their results as their kernels store
/// them (round_to): a fused residual norm both its sum and its normed rows
/// (the normalization reads the unrounded sum), a layer norm, the GLU, and
/// a plain mir.matmul as the mir.fused_matmul (no bias, residual or
/// activation) that rounds. A norm whose result the function returns keeps
/// it as computed: only its other reader sees a round trip.

// CHECK-LABEL: func.func @producers_round
// CHECK: %[[S:.*]], %[[N:.*]] = mir.fused_residual_rms_norm {{.*}}round_to = bf16
// CHECK-NEXT: %[[GU:.*]] = mir.fused_matmul %[[N]], %{{.*}} {round_to = bf16, transpose_rhs} : (tensor<2x8xf32>, tensor<32x8xf32>) -> tensor<2x32xf32>
// CHECK-NEXT: %[[G:.*]] = mir.fused_glu %[[GU]] {round_to = bf16}
// CHECK-NEXT: %[[D:.*]] = mir.fused_matmul %[[G]], %{{.*}} {round_to = bf16, transpose_rhs}
// CHECK-NEXT: %[[A:.*]] = mir.add %[[D]], %[[S]]
// CHECK-NEXT: %[[RA:.*]] = mir.elementwise %[[A]]
// CHECK: %[[L:.*]] = mir.layer_norm %[[RA]], {{.*}}round_to = bf16
// CHECK-NEXT: %[[F:.*]] = mir.rms_norm %[[L]], %{{.*}} : (
// CHECK-NEXT: %[[RF:.*]] = mir.elementwise %[[F]]
// CHECK: %[[E:.*]] = mir.exp %[[RF]]
// CHECK-NEXT: return %[[E]], %[[F]]
func.func @producers_round(%x: tensor<2x8xf32>, %r: tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %w = mir.param "w" : tensor<8xf32>
  %wgu = mir.param "gu" : tensor<32x8xf32>
  %wd = mir.param "d" : tensor<8x16xf32>
  %s, %n = mir.fused_residual_rms_norm %x, %r, %w : (tensor<2x8xf32>, tensor<2x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>)
  %gu = mir.matmul %n, %wgu {transpose_rhs} : (tensor<2x8xf32>, tensor<32x8xf32>) -> tensor<2x32xf32>
  %g = mir.fused_glu %gu : (tensor<2x32xf32>) -> tensor<2x16xf32>
  %d = mir.matmul %g, %wd {transpose_rhs} : (tensor<2x16xf32>, tensor<8x16xf32>) -> tensor<2x8xf32>
  %a = mir.add %d, %s : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %l = mir.layer_norm %a, %w, %w : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %f = mir.rms_norm %l, %w : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %e = mir.exp %f : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %e, %f : tensor<2x8xf32>, tensor<2x8xf32>
}

// -----

/// A fused matmul rounds after its whole epilogue; an attention block
/// rounds its output projection's result. A GEMM whose result the function
/// returns, a batched one and one with a transposed left-hand side (which a
/// fused matmul does not compute) keep a round trip for their readers.

// CHECK-LABEL: func.func @gemms_round
// CHECK: %[[F:.*]] = mir.fused_matmul %{{.*}} bias(%{{.*}}) residual(%{{.*}}) {activation = #mir<activation gelu>, round_to = bf16, transpose_rhs}
// CHECK-NEXT: %[[B:.*]] = mir.attention_block %[[F]], {{.*}}round_to = bf16
// CHECK-NEXT: %[[A2:.*]] = mir.reshape %[[B]]
// CHECK-NEXT: %[[T:.*]] = mir.matmul %[[A2]], %{{.*}} {transpose_lhs}
// CHECK-NEXT: %[[RT:.*]] = mir.elementwise %[[T]]
// CHECK: %[[BM:.*]] = mir.batch_matmul %[[B]], %[[B]] {transpose_rhs}
// CHECK-NEXT: %[[RBM:.*]] = mir.elementwise %[[BM]]
// CHECK: %[[R:.*]] = mir.matmul %[[F]], %{{.*}} {transpose_rhs}
// CHECK-NEXT: %[[RR:.*]] = mir.elementwise %[[R]]
// CHECK: mir.exp %[[RR]]
// CHECK: mir.exp %[[RT]]
// CHECK: mir.exp %[[RBM]]
// CHECK: return %[[R]],
// F16-LABEL: func.func @gemms_round
// F16: mir.fused_matmul {{.*}}round_to = f16
// F16: mir.attention_block {{.*}}round_to = f16
func.func @gemms_round(%x: tensor<1x4x8xf32>, %pos: tensor<4xi64>) -> (tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<8x8xf32>, tensor<1x4x4xf32>) {
  %w = mir.param "w" : tensor<8x8xf32>
  %b = mir.param "b" : tensor<8xf32>
  %wqkv = mir.param "qkv" : tensor<16x8xf32>
  %v = mir.param "v" : tensor<4x8xf32>
  %f = mir.fused_matmul %x, %w bias(%b) residual(%x) {transpose_rhs, activation = #mir<activation gelu>} : (tensor<1x4x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %a = mir.attention_block %f, %wqkv, %w positions(%pos) {num_heads = 2 : i64, num_kv_heads = 1 : i64, head_dim = 4 : i64, rotary_dim = 4 : i64, scale = 0.5 : f32, mask_kind = #mir<mask causal>} : (tensor<1x4x8xf32>, tensor<16x8xf32>, tensor<8x8xf32>, tensor<4xi64>) -> tensor<1x4x8xf32>
  %a2 = mir.reshape %a : (tensor<1x4x8xf32>) -> tensor<4x8xf32>
  %t = mir.matmul %a2, %v {transpose_lhs} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %bm = mir.batch_matmul %a, %a {transpose_rhs} : (tensor<1x4x8xf32>, tensor<1x4x8xf32>) -> tensor<1x4x4xf32>
  %r = mir.matmul %f, %w {transpose_rhs} : (tensor<1x4x8xf32>, tensor<8x8xf32>) -> tensor<1x4x8xf32>
  %e = mir.exp %r : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %et = mir.exp %t : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %eb = mir.exp %bm : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %r, %e, %et, %eb : tensor<1x4x8xf32>, tensor<1x4x8xf32>, tensor<8x8xf32>, tensor<1x4x4xf32>
}
