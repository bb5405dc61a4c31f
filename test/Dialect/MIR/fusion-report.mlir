// RUN: rlx-opt %s --mir-fusion-report --split-input-file -verify-diagnostics > /dev/null

/// The fusion report: one remark per recognisable but unfused pattern, on its
/// root op, `missed fusion '<fusion>': <reason>[: <detail>]; hint: <fix>`,
/// and a summary remark on the module with the fused-op histogram.

// expected-remark @below {{fusion report (cpu): 1 missed; fused ops after: {}}}
module {
func.func @weights_not_parameters(%x: tensor<4x16xf32>, %wk: tensor<16x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %wq = mir.param "wq" : tensor<16x16xf32>
  // expected-remark @below {{missed fusion 'shared-input-matmul': weights not parameters: the weight of projection 1 of 2 is block argument 1; hint: bind every projection weight with mir.param}}
  %q = mir.matmul %x, %wq {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %k = mir.matmul %x, %wk {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  return %q, %k : tensor<4x16xf32>, tensor<4x16xf32>
}
}

// -----

// expected-remark @below {{fusion report (cpu): 1 missed}}
module {
func.func @matmuls_not_on_a_shared_input(%x: tensor<4x16xf32>, %n: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %wq = mir.param "wq" : tensor<16x16xf32>
  %wk = mir.param "wk" : tensor<16x16xf32>
  %n1 = mir.rms_norm %x, %n : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %n2 = mir.rms_norm %x, %n : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  // expected-remark @below {{missed fusion 'shared-input-matmul': matmuls not on a shared input: this projection and another read two identical 'mir.rms_norm' ops; hint: run -cse before fusion}}
  %q = mir.matmul %n1, %wq {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %k = mir.matmul %n2, %wk {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  return %q, %k : tensor<4x16xf32>, tensor<4x16xf32>
}
}

// -----

// expected-remark @below {{fusion report (cpu): 1 missed}}
module {
func.func @gate_up_in_the_wrong_order(%gu: tensor<4x64xf32>) -> tensor<4x32xf32> {
  %g = mir.slice %gu {axis = 1 : i64, start = 32 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %a = mir.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = mir.slice %gu {axis = 1 : i64, start = 0 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  // expected-remark @below {{missed fusion 'swiglu': gate/up in the wrong order: the activation is applied to the second half; hint: concatenate the gate projection first}}
  %h = mir.mul %a, %u : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %h : tensor<4x32xf32>
}
}

// -----

// expected-remark @below {{fusion report (cpu): 1 missed; fused ops after: {mir.fused_matmul = 1}}}
module {
func.func @unsupported_epilogue_activation(%x: tensor<4x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  // expected-remark @below {{missed fusion 'matmul-epilogue': unsupported epilogue activation: 'mir.exp'; hint: mir.fused_matmul takes gelu}}
  %0 = mir.fused_matmul %x, %w bias(%b) {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %1 = mir.exp %0 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}
}

// -----

// expected-remark @below {{fusion report (cpu): 1 missed}}
module {
func.func @multi_consumer_intermediate(%x: tensor<4x16xf32>, %w: tensor<16x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  // expected-remark @below {{missed fusion 'matmul-epilogue': multi-consumer intermediate: the result of 'mir.matmul' has other uses; hint:}}
  %0 = mir.matmul %x, %w {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %1 = mir.gelu %0 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %0, %1 : tensor<4x16xf32>, tensor<4x16xf32>
}
}

// -----

// expected-remark @below {{fusion report (cpu): 1 missed}}
module {
func.func @dynamic_shapes(%x: tensor<?x16xf32>, %y: tensor<4x16xf32>, %w: tensor<16xf32>) -> tensor<4x16xf32> {
  %h = mir.add %x, %y : (tensor<?x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  // expected-remark @below {{missed fusion 'residual-norm': dynamic shapes: the residual add mixes static and dynamic dims; hint:}}
  %n = mir.rms_norm %h, %w : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %n : tensor<4x16xf32>
}
}

// -----

// expected-remark @below {{fusion report (cpu): 1 missed}}
module {
func.func @attention_block_multi_consumer(%x: tensor<1x4x32xf32>, %w: tensor<96x32xf32>, %wo: tensor<32x32xf32>) -> (tensor<1x4x32xf32>, tensor<1x4x32xf32>) {
  %qkv = mir.matmul %x, %w {transpose_rhs} : (tensor<1x4x32xf32>, tensor<96x32xf32>) -> tensor<1x4x96xf32>
  %q = mir.slice %qkv {axis = 2 : i64, start = 0 : i64, size = 32 : i64} : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %k = mir.slice %qkv {axis = 2 : i64, start = 32 : i64, size = 32 : i64} : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  %v = mir.slice %qkv {axis = 2 : i64, start = 64 : i64, size = 32 : i64} : (tensor<1x4x96xf32>) -> tensor<1x4x32xf32>
  // expected-remark @below {{missed fusion 'attention-block': multi-consumer intermediate: the result of 'mir.attention' has other uses}}
  %a = mir.attention %q, %k, %v {num_heads = 2 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32} : (tensor<1x4x32xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x32xf32>
  %y = mir.matmul %a, %wo {transpose_rhs} : (tensor<1x4x32xf32>, tensor<32x32xf32>) -> tensor<1x4x32xf32>
  return %y, %a : tensor<1x4x32xf32>, tensor<1x4x32xf32>
}
}

// -----

/// A pattern that matches in full but was not fused (the fusion did not run,
/// was disabled or was vetoed by a control function).

// expected-remark @below {{fusion report (cpu): 1 missed}}
module {
func.func @not_fused(%x: tensor<1x8x64xf32>, %attn: tensor<1x8x64xf32>, %w: tensor<64xf32>) -> (tensor<1x8x64xf32>, tensor<1x8x64xf32>) {
  %h = mir.add %x, %attn : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
  // expected-remark @below {{missed fusion 'residual-norm': not fused; hint: run mir-fuse-residual-norm (or mir-fuse-all)}}
  %n = mir.rms_norm %h, %w : (tensor<1x8x64xf32>, tensor<64xf32>) -> tensor<1x8x64xf32>
  return %h, %n : tensor<1x8x64xf32>, tensor<1x8x64xf32>
}
}

// -----

/// A causal mask aligned top-left cannot be mir.attention's.

// expected-remark @below {{fusion report (cpu): 1 missed}}
module {
func.func @top_left_causal_mask(%arg0: tensor<1x1x64xf32>, %arg1: tensor<1x8x32xf32>, %arg2: tensor<1x8x32xf32>) -> tensor<1x1x64xf32> {
  %0 = mir.reshape %arg0 : (tensor<1x1x64xf32>) -> tensor<1x1x4x16xf32>
  %1 = mir.transpose %0 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x1x4x16xf32>) -> tensor<1x4x1x16xf32>
  %2 = mir.reshape %arg1 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %3 = mir.transpose %2 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %4 = mir.reshape %3 : (tensor<1x2x8x16xf32>) -> tensor<1x2x1x8x16xf32>
  %5 = mir.broadcast %4 : (tensor<1x2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
  %6 = mir.reshape %5 : (tensor<1x2x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  %7 = mir.reshape %arg2 : (tensor<1x8x32xf32>) -> tensor<1x8x2x16xf32>
  %8 = mir.transpose %7 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x8x2x16xf32>) -> tensor<1x2x8x16xf32>
  %9 = mir.reshape %8 : (tensor<1x2x8x16xf32>) -> tensor<1x2x1x8x16xf32>
  %10 = mir.broadcast %9 : (tensor<1x2x1x8x16xf32>) -> tensor<1x2x2x8x16xf32>
  %11 = mir.reshape %10 : (tensor<1x2x2x8x16xf32>) -> tensor<1x4x8x16xf32>
  %12 = mir.batch_matmul %1, %6 {transpose_rhs} : (tensor<1x4x1x16xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x1x8xf32>
  %13 = mir.constant dense<2.500000e-01> : tensor<f32>
  %14 = mir.mul %12, %13 : (tensor<1x4x1x8xf32>, tensor<f32>) -> tensor<1x4x1x8xf32>
  %15 = mir.constant dense<-3.40282347E+38> : tensor<f32>
  %16 = mir.constant dense<0> : tensor<i64>
  %17 = mir.iota {axis = 0 : i64} : tensor<1x8xi64>
  %18 = mir.add %17, %16 : (tensor<1x8xi64>, tensor<i64>) -> tensor<1x8xi64>
  %19 = mir.iota {axis = 1 : i64} : tensor<1x8xi64>
  %20 = mir.compare %19, %18 {predicate = #mir<cmp le>} : (tensor<1x8xi64>, tensor<1x8xi64>) -> tensor<1x8xi1>
  %21 = mir.select %20, %14, %15 : (tensor<1x8xi1>, tensor<1x4x1x8xf32>, tensor<f32>) -> tensor<1x4x1x8xf32>
  // expected-remark @below {{missed fusion 'attention': unsupported mask: the query positions are offset by 0, not Tk - Tq = 7; hint: mir.attention aligns queries to the end of the keys}}
  %22 = mir.softmax %21 : (tensor<1x4x1x8xf32>) -> tensor<1x4x1x8xf32>
  %23 = mir.batch_matmul %22, %11 : (tensor<1x4x1x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x1x16xf32>
  %24 = mir.transpose %23 {permutation = array<i64: 0, 2, 1, 3>} : (tensor<1x4x1x16xf32>) -> tensor<1x1x4x16xf32>
  %25 = mir.reshape %24 : (tensor<1x1x4x16xf32>) -> tensor<1x1x64xf32>
  return %25 : tensor<1x1x64xf32>
}
}
