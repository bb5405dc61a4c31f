// RUN: rlx-opt %s -split-input-file -verify-diagnostics --mir-shard-tensor-parallel="ranks=2 rank=0 local-logits=true" | FileCheck %s --check-prefixes=CHECK,R0
// RUN: rlx-opt %s -split-input-file -verify-diagnostics --mir-shard-tensor-parallel="ranks=2 rank=1 local-logits=true" | rlx-opt -split-input-file | FileCheck %s --check-prefixes=CHECK,R1
// RUN: not rlx-opt %s -split-input-file --mir-shard-tensor-parallel="ranks=2 emulate=true local-logits=true" 2>&1 | FileCheck %s --check-prefix=EMU

/// local-logits: the LM head's logits stay the rank's slice of the vocabulary
/// (no shard.all_gather); the function returns tensor<...x50xf32>, rows
/// [50r, 50r + 50). The embedding lookup is split and all-reduced as always.
// CHECK-LABEL: func.func @tied_head_local_logits
// CHECK-SAME: -> tensor<1x1x50xf32>
// CHECK: shard.all_reduce
// R0: %[[W:.*]] = mir.slice %{{.*}} {axis = 0 : i64, size = 50 : i64, start = 0 : i64}
// R1: %[[W:.*]] = mir.slice %{{.*}} {axis = 0 : i64, size = 50 : i64, start = 50 : i64}
// CHECK: %[[L:.*]] = mir.matmul %{{.*}}, %[[W]] {transpose_rhs} : (tensor<1x1x64xf32>, tensor<50x64xf32>) -> tensor<1x1x50xf32>
// CHECK-NOT: shard.all_gather
// CHECK: return %[[L]] : tensor<1x1x50xf32>

// EMU: error: local-logits keeps each rank's slice of the logits, which one emulated function cannot return

func.func @tied_head_local_logits(%ids: tensor<1x1xi64>) -> tensor<1x1x100xf32> {
  %t = mir.param "embed" : tensor<100x64xf32>
  %n = mir.param "norm" : tensor<64xf32>
  %h = mir.gather %t, %ids : (tensor<100x64xf32>, tensor<1x1xi64>) -> tensor<1x1x64xf32>
  %f = mir.rms_norm %h, %n : (tensor<1x1x64xf32>, tensor<64xf32>) -> tensor<1x1x64xf32>
  %y = mir.matmul %f, %t {transpose_rhs} : (tensor<1x1x64xf32>, tensor<100x64xf32>) -> tensor<1x1x100xf32>
  return %y : tensor<1x1x100xf32>
}

// -----

/// Gemma's final softcap after the head, fused (mir.elementwise) and as
/// separate ops with scalar operands: both take the rank's slice.
// CHECK-LABEL: func.func @softcapped_local_logits
// CHECK-SAME: -> (tensor<2x1x50xf32>, tensor<2x1x50xf32>)
// CHECK: %[[L:.*]] = mir.matmul %{{.*}} : (tensor<2x1x64xf32>, tensor<50x64xf32>) -> tensor<2x1x50xf32>
// CHECK: %[[S:.*]] = mir.elementwise %[[L]] {
// CHECK: } : (tensor<2x1x50xf32>) -> tensor<2x1x50xf32>
// CHECK: %[[D:.*]] = mir.div %[[L]], %{{.*}} : (tensor<2x1x50xf32>, tensor<1x1x1xf32>) -> tensor<2x1x50xf32>
// CHECK: %[[T:.*]] = mir.tanh %[[D]] : (tensor<2x1x50xf32>) -> tensor<2x1x50xf32>
// CHECK-NOT: shard.all_gather
// CHECK: return %[[S]], %[[T]] : tensor<2x1x50xf32>, tensor<2x1x50xf32>

func.func @softcapped_local_logits(%x: tensor<2x1x64xf32>) -> (tensor<2x1x100xf32>, tensor<2x1x100xf32>) {
  %w = mir.param "lm_head" : tensor<100x64xf32>
  %c = mir.constant dense<3.0e+01> : tensor<1x1x1xf32>
  %y = mir.matmul %x, %w {transpose_rhs} : (tensor<2x1x64xf32>, tensor<100x64xf32>) -> tensor<2x1x100xf32>
  %s = mir.elementwise %y {
  ^bb0(%a: f32):
    %k = arith.constant 3.000000e+01 : f32
    %d = arith.divf %a, %k : f32
    %t = math.tanh %d : f32
    %m = arith.mulf %t, %k : f32
    mir.yield %m : f32
  } : (tensor<2x1x100xf32>) -> tensor<2x1x100xf32>
  %d = mir.div %y, %c : (tensor<2x1x100xf32>, tensor<1x1x1xf32>) -> tensor<2x1x100xf32>
  %t = mir.tanh %d : (tensor<2x1x100xf32>) -> tensor<2x1x100xf32>
  return %s, %t : tensor<2x1x100xf32>, tensor<2x1x100xf32>
}

// -----

/// An op that needs the whole vocabulary after the head (a log-softmax, an
/// elementwise op with a per-token operand) is refused by name, and the
/// function is left unchanged.
func.func @softmax_after_head(%x: tensor<1x1x64xf32>) -> tensor<1x1x100xf32> {
  %w = mir.param "lm_head" : tensor<100x64xf32>
  %y = mir.matmul %x, %w {transpose_rhs} : (tensor<1x1x64xf32>, tensor<100x64xf32>) -> tensor<1x1x100xf32>
  // expected-error @below {{local-logits: the LM head's logits feed 'mir.log_softmax', which needs the whole vocabulary}}
  %p = mir.log_softmax %y {axis = -1 : i64} : (tensor<1x1x100xf32>) -> tensor<1x1x100xf32>
  return %p : tensor<1x1x100xf32>
}

// -----

func.func @bias_vector_after_head(%x: tensor<1x1x64xf32>) -> tensor<1x1x100xf32> {
  %w = mir.param "lm_head" : tensor<100x64xf32>
  %b = mir.param "logit_bias" : tensor<100xf32>
  %y = mir.matmul %x, %w {transpose_rhs} : (tensor<1x1x64xf32>, tensor<100x64xf32>) -> tensor<1x1x100xf32>
  // expected-error @below {{local-logits: the LM head's logits feed 'mir.add', which needs the whole vocabulary}}
  %z = mir.add %y, %b : (tensor<1x1x100xf32>, tensor<100xf32>) -> tensor<1x1x100xf32>
  return %z : tensor<1x1x100xf32>
}
