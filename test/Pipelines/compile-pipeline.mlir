// RUN: rlx-opt %s --rlx-compile-pipeline="profile=%S/Inputs/fusable.rlx.toml" 2>&1 | FileCheck %s --check-prefix=FUSABLE
// RUN: rlx-opt %s --rlx-profile=%S/Inputs/fusable.rlx.toml --rlx-compile-pipeline 2>&1 | FileCheck %s --check-prefix=FUSABLE
// RUN: rlx-opt %s --rlx-compile-pipeline=preset=llama32_decode 2>&1 | FileCheck %s --check-prefix=FUSABLE
// RUN: rlx-opt %s --rlx-compile-pipeline 2>&1 | FileCheck %s --check-prefix=DIRECT
// RUN: rlx-opt %s --rlx-compile-pipeline="profile=%S/Inputs/spirv.rlx.toml" 2>&1 | FileCheck %s --check-prefix=SPIRV
// RUN: rlx-opt %s --rlx-compile-pipeline="profile=%S/Inputs/disable.rlx.toml" 2>&1 | FileCheck %s --check-prefix=DISABLE
// RUN: rlx-opt %s --rlx-compile-pipeline="profile=%S/Inputs/skip.rlx.toml" 2>&1 | FileCheck %s --check-prefix=SKIP
// RUN: rlx-opt %s --rlx-compile-pipeline="profile=%S/Inputs/disable-all.rlx.toml" 2>&1 | FileCheck %s --check-prefix=NONE
// RUN: not rlx-opt %s --rlx-compile-pipeline="profile=%S/Inputs/bad.rlx.toml" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not rlx-opt %s --rlx-profile=%S/Inputs/bad.rlx.toml --rlx-compile-pipeline 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: not rlx-opt %s --rlx-compile-pipeline="profile=%S/Inputs/missing.rlx.toml" 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not rlx-opt %s --rlx-compile-pipeline=preset=nope 2>&1 | FileCheck %s --check-prefix=PRESET
// RUN: not rlx-opt %s --rlx-compile-pipeline="profile=%S/Inputs/fusable.rlx.toml preset=encoder" 2>&1 | FileCheck %s --check-prefix=BOTH

/// rlx-compile-pipeline: HIR → fused MIR as a compile profile says (a
/// *.rlx.toml file, a preset, or rlx-opt's --rlx-profile), on a LLaMA
/// decoder layer.

/// Fusable lowering + fusion: no fused op before, the block's fused ops after.
// FUSABLE: remark: fusion report (cpu): 0 missed; fused ops before: {}; after: {mir.attention_block = 1, mir.fused_glu = 1, mir.fused_matmul = 1, mir.fused_residual_rms_norm = 1}
// FUSABLE-LABEL: func.func @llama_decoder_layer
// FUSABLE-NOT: mir.softmax
// FUSABLE: mir.attention_block

/// The default profile (llama32_prefill) lowers directly: the fused ops are
/// there before fusion already.
// DIRECT: remark: fusion report (cpu): 0 missed; fused ops before: {mir.attention_block = 1, mir.fused_glu = 1, mir.fused_matmul = 1, mir.fused_residual_rms_norm = 1}; after: {mir.attention_block = 1, mir.fused_glu = 1, mir.fused_matmul = 1, mir.fused_residual_rms_norm = 1}

/// SPIR-V does not claim mir.attention_block.
// SPIRV: remark: fusion report (spirv): 0 missed; fused ops before: {}; after: {mir.attention = 1, mir.fused_glu = 1, mir.fused_matmul = 1, mir.fused_residual_rms_norm = 1}
// SPIRV-NOT: mir.attention_block

/// [fusion].disable = ["attention-block", "swiglu"].
// DISABLE: remark: fusion report (cpu): 0 missed; fused ops before: {}; after: {mir.attention = 1, mir.fused_matmul = 1, mir.fused_residual_rms_norm = 1}
// DISABLE: mir.silu

/// [fusion].skip: primitives, no report.
// SKIP-NOT: remark
// SKIP: mir.softmax
// SKIP-NOT: mir.attention

/// Every fusion disabled: the profile's names are mir-fuse-all's.
// NONE: remark: fusion report (cpu): 0 missed; fused ops before: {}; after: {}
// NONE: mir.softmax

/// A bad profile is an error at its file:line:column.
// BAD: error: {{.*}}bad.rlx.toml:3:10: 'fusion.policy' must be one of "direct", "fusable"; got "fusible"
// BAD-NEXT: {{.*}}bad.rlx.toml:6:7: 'passes.dce' must be a boolean, got integer
// MISSING: error: {{.*}}missing.rlx.toml: cannot read file
// PRESET: error: rlx-compile-pipeline: unknown preset 'nope' (expected one of llama32_prefill, {{.*}}encoder
// BOTH: error: rlx-compile-pipeline: give either 'profile' or 'preset', not both

func.func @llama_decoder_layer(%x: tensor<1x8x64xf32>, %pos: tensor<8xi64>) -> tensor<1x8x64xf32> {
  %n = hir.param "l0.input_norm" : tensor<64xf32>
  %wq = hir.param "l0.q" : tensor<64x64xf32>
  %wk = hir.param "l0.k" : tensor<32x64xf32>
  %wv = hir.param "l0.v" : tensor<32x64xf32>
  %wo = hir.param "l0.o" : tensor<64x64xf32>
  %pn = hir.param "l0.post_norm" : tensor<64xf32>
  %g = hir.param "l0.gate" : tensor<128x64xf32>
  %u = hir.param "l0.up" : tensor<128x64xf32>
  %d = hir.param "l0.down" : tensor<64x128xf32>
  %0 = hir.llama_decoder_layer %x, %pos attn(%n, %wq, %wk, %wv, %wo) post_norm(%pn) mlp(%g, %u, %d) {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, rope_theta = 500000.0 : f32} : (tensor<1x8x64xf32>, tensor<8xi64>, tensor<64xf32>, tensor<64x64xf32>, tensor<32x64xf32>, tensor<32x64xf32>, tensor<64x64xf32>, tensor<64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x8x64xf32>
  return %0 : tensor<1x8x64xf32>
}
