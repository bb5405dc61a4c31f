// RUN: rlx-opt %s --mir-fuse-all --split-input-file | FileCheck %s --check-prefixes=CHECK,CPU
// RUN: rlx-opt %s --pass-pipeline='builtin.module(func.func(mir-fuse-all))' --split-input-file | FileCheck %s --check-prefixes=CHECK,CPU
// RUN: rlx-opt %s --mir-fuse-all=target=spirv --split-input-file | FileCheck %s --check-prefixes=CHECK,SPIRV
// RUN: rlx-opt %s --mir-fuse-all="disable=swiglu,matmul-epilogue" --split-input-file | FileCheck %s --check-prefix=DISABLE
// RUN: not rlx-opt %s --mir-fuse-all=disable=nope --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not rlx-opt %s --mir-fuse-all=target=gpu --split-input-file 2>&1 | FileCheck %s --check-prefix=BADTARGET

/// mir-fuse-all runs the fusions in order (shared-input-matmul, swiglu,
/// attention, attention-block, residual-norm, matmul-epilogue,
/// elementwise-region), those the target claims and not disabled.

// BAD: error: mir-fuse-all: unknown fusion 'nope' (expected one of dequantize, shared-input-matmul, swiglu, attention, attention-block, residual-norm, matmul-epilogue, elementwise-region)
// BADTARGET: for the --target option: Cannot find option named 'gpu'!

/// A SwiGLU MLP: the gate/up matmuls merge first, then the GLU fuses on the
/// slices, then the down projection takes the residual. The epilogue must not
/// run first: it would take the gate activation.

// CHECK-LABEL: func.func @mlp_order
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x64xf32>, %[[H:.*]]: tensor<1x8x64xf32>)
// CHECK: %[[GU:.*]] = mir.matmul %[[X]], %{{.*}} {transpose_rhs} : (tensor<1x8x64xf32>, tensor<256x64xf32>) -> tensor<1x8x256xf32>
// CHECK: %[[G:.*]] = mir.fused_glu %[[GU]]
// CHECK: %[[Y:.*]] = mir.fused_matmul %[[G]], %{{.*}} residual(%[[H]]) {transpose_rhs}
// CHECK: return %[[Y]]
// DISABLE-LABEL: func.func @mlp_order
// DISABLE: mir.matmul {{.*}} -> tensor<1x8x256xf32>
// DISABLE-NOT: mir.fused_glu
// DISABLE-NOT: mir.fused_matmul
// DISABLE: mir.silu
// DISABLE: mir.mul
// DISABLE: mir.add
func.func @mlp_order(%x: tensor<1x8x64xf32>, %h: tensor<1x8x64xf32>) -> tensor<1x8x64xf32> {
  %wg = mir.param "gate" : tensor<128x64xf32>
  %wu = mir.param "up" : tensor<128x64xf32>
  %wd = mir.param "down" : tensor<64x128xf32>
  %0 = mir.matmul %x, %wg {transpose_rhs} : (tensor<1x8x64xf32>, tensor<128x64xf32>) -> tensor<1x8x128xf32>
  %1 = mir.silu %0 : (tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
  %2 = mir.matmul %x, %wu {transpose_rhs} : (tensor<1x8x64xf32>, tensor<128x64xf32>) -> tensor<1x8x128xf32>
  %3 = mir.mul %1, %2 : (tensor<1x8x128xf32>, tensor<1x8x128xf32>) -> tensor<1x8x128xf32>
  %4 = mir.matmul %3, %wd {transpose_rhs} : (tensor<1x8x128xf32>, tensor<64x128xf32>) -> tensor<1x8x64xf32>
  %5 = mir.add %h, %4 : (tensor<1x8x64xf32>, tensor<1x8x64xf32>) -> tensor<1x8x64xf32>
  return %5 : tensor<1x8x64xf32>
}

// -----

/// The CPU claims mir.attention_block; SPIR-V keeps the projections and
/// mir.attention apart.

// CHECK-LABEL: func.func @attention_block_per_target
// CPU: %[[Y:.*]] = mir.attention_block
// CPU-NOT: mir.attention {{.*}}
// CPU: return %[[Y]]
// SPIRV-NOT: mir.attention_block
// SPIRV: mir.matmul
// SPIRV: mir.rope
// SPIRV: mir.attention
// SPIRV: mir.matmul
func.func @attention_block_per_target(%x: tensor<1x8x64xf32>, %pos: tensor<8xi64>) -> tensor<1x8x64xf32> {
  %wqkv = mir.param "qkv" : tensor<128x64xf32>
  %wo = mir.param "o" : tensor<64x64xf32>
  %qkv = mir.matmul %x, %wqkv {transpose_rhs} : (tensor<1x8x64xf32>, tensor<128x64xf32>) -> tensor<1x8x128xf32>
  %q = mir.slice %qkv {axis = 2 : i64, start = 0 : i64, size = 64 : i64} : (tensor<1x8x128xf32>) -> tensor<1x8x64xf32>
  %k = mir.slice %qkv {axis = 2 : i64, start = 64 : i64, size = 32 : i64} : (tensor<1x8x128xf32>) -> tensor<1x8x32xf32>
  %v = mir.slice %qkv {axis = 2 : i64, start = 96 : i64, size = 32 : i64} : (tensor<1x8x128xf32>) -> tensor<1x8x32xf32>
  %q2 = mir.rope %q, %pos {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x8x64xf32>, tensor<8xi64>) -> tensor<1x8x64xf32>
  %k2 = mir.rope %k, %pos {head_dim = 16 : i64, rotary_dim = 16 : i64} : (tensor<1x8x32xf32>, tensor<8xi64>) -> tensor<1x8x32xf32>
  %a = mir.attention %q2, %k2, %v {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x8x64xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<1x8x64xf32>
  %y = mir.matmul %a, %wo {transpose_rhs} : (tensor<1x8x64xf32>, tensor<64x64xf32>) -> tensor<1x8x64xf32>
  return %y : tensor<1x8x64xf32>
}

// -----

/// A residual add that feeds a norm goes to the norm, not to the matmul
/// epilogue, whatever the order the fusions would find them in.

// CHECK-LABEL: func.func @residual_goes_to_the_norm
// CHECK: %[[M:.*]] = mir.matmul
// CHECK: %[[SUM:.*]], %[[N:.*]] = mir.fused_residual_rms_norm %[[M]], %{{.*}}, %{{.*}}
// CHECK-NOT: mir.fused_matmul
func.func @residual_goes_to_the_norm(%x: tensor<4x16xf32>, %r: tensor<4x16xf32>, %w: tensor<16x16xf32>, %g: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %0 = mir.matmul %x, %w {transpose_rhs} : (tensor<4x16xf32>, tensor<16x16xf32>) -> tensor<4x16xf32>
  %1 = mir.add %r, %0 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %2 = mir.rms_norm %1, %g : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %1, %2 : tensor<4x16xf32>, tensor<4x16xf32>
}
