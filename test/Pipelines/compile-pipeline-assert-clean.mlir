// RUN: not rlx-opt %s --rlx-compile-pipeline="profile=%S/Inputs/fusable.rlx.toml" 2>&1 | FileCheck %s
// RUN: rlx-opt %s --rlx-compile-pipeline="preset=llama32_decode" 2>&1 | FileCheck %s --check-prefix=REMARK

/// With [fusion].assert_clean a missed fusion fails the compile: here the
/// gate and up weights are function arguments, not parameters, so they cannot
/// be concatenated at load time, and the GLU cannot fuse either. The epilogue
/// fusion then takes the gate matmul and its activation, but the report still
/// lists both misses: mir-fuse-all records what each fusion left behind.
/// Without assert_clean they are remarks.

// CHECK: error: missed fusion 'shared-input-matmul': weights not parameters
// CHECK: error: missed fusion 'swiglu': projections not concatenated: gate and up are two matmuls on one input
// CHECK: error: assert-clean: 2 missed fusion(s)
// REMARK: remark: missed fusion 'shared-input-matmul': weights not parameters
// REMARK: remark: missed fusion 'swiglu': projections not concatenated
// REMARK: remark: fusion report (cpu): 2 missed; fused ops before: {}; after: {mir.fused_matmul = 1}

func.func @swiglu_with_argument_weights(%x: tensor<1x8x64xf32>, %g: tensor<128x64xf32>, %u: tensor<128x64xf32>, %d: tensor<64x128xf32>) -> tensor<1x8x64xf32> {
  %0 = hir.swiglu %x, %g, %u, %d : (tensor<1x8x64xf32>, tensor<128x64xf32>, tensor<128x64xf32>, tensor<64x128xf32>) -> tensor<1x8x64xf32>
  return %0 : tensor<1x8x64xf32>
}
