// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --mlir-print-op-generic | rlx-opt | FileCheck %s

// The gated delta rule round-trips: a prefill without a state and with a
// dynamic length, and a grouped decode step carrying the state.

// CHECK-LABEL: func.func @gated_delta_rule_prefill
// CHECK: %[[O:.*]], %[[S:.*]] = mir.gated_delta_rule %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {qk_l2norm} : (tensor<2x?x4x64xf32>, tensor<2x?x4x64xf32>, tensor<2x?x4x128xf32>, tensor<2x?x4xf32>, tensor<2x?x4xf32>) -> (tensor<2x?x4x128xf32>, tensor<2x4x64x128xf32>)
func.func @gated_delta_rule_prefill(%q: tensor<2x?x4x64xf32>, %k: tensor<2x?x4x64xf32>,
                                    %v: tensor<2x?x4x128xf32>, %g: tensor<2x?x4xf32>,
                                    %b: tensor<2x?x4xf32>)
    -> (tensor<2x?x4x128xf32>, tensor<2x4x64x128xf32>) {
  %o, %s = mir.gated_delta_rule %q, %k, %v, %g, %b {qk_l2norm}
      : (tensor<2x?x4x64xf32>, tensor<2x?x4x64xf32>, tensor<2x?x4x128xf32>,
         tensor<2x?x4xf32>, tensor<2x?x4xf32>)
      -> (tensor<2x?x4x128xf32>, tensor<2x4x64x128xf32>)
  return %o, %s : tensor<2x?x4x128xf32>, tensor<2x4x64x128xf32>
}

// CHECK-LABEL: func.func @gated_delta_rule_decode
// CHECK: mir.gated_delta_rule %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} initial_state(%{{.*}}) {scale = 2.500000e-01 : f32} : (tensor<1x1x2x12xf32>, tensor<1x1x2x12xf32>, tensor<1x1x4x20xf32>, tensor<1x1x4xf32>, tensor<1x1x4xf32>, tensor<1x4x12x20xf32>) -> (tensor<1x1x4x20xf32>, tensor<1x4x12x20xf32>)
func.func @gated_delta_rule_decode(%q: tensor<1x1x2x12xf32>, %k: tensor<1x1x2x12xf32>,
                                   %v: tensor<1x1x4x20xf32>, %g: tensor<1x1x4xf32>,
                                   %b: tensor<1x1x4xf32>, %s0: tensor<1x4x12x20xf32>)
    -> (tensor<1x1x4x20xf32>, tensor<1x4x12x20xf32>) {
  %o, %s = mir.gated_delta_rule %q, %k, %v, %g, %b initial_state(%s0) {scale = 0.25 : f32}
      : (tensor<1x1x2x12xf32>, tensor<1x1x2x12xf32>, tensor<1x1x4x20xf32>,
         tensor<1x1x4xf32>, tensor<1x1x4xf32>, tensor<1x4x12x20xf32>)
      -> (tensor<1x1x4x20xf32>, tensor<1x4x12x20xf32>)
  return %o, %s : tensor<1x1x4x20xf32>, tensor<1x4x12x20xf32>
}
