// RUN: rlx-opt %s -split-input-file -verify-diagnostics

// One case per verifier diagnostic of mir.gated_delta_rule; names follow
// docs/Dialects/MIR.md's constraints (mir_gated_delta_rule_cN).

func.func @gated_delta_rule_c1_query_rank(%a0: tensor<3x2x8xf32>, %a1: tensor<1x3x2x8xf32>, %a2: tensor<1x3x4x6xf32>, %a3: tensor<1x3x4xf32>, %a4: tensor<1x3x4xf32>) {
  // expected-error @+1 {{'mir.gated_delta_rule' op query must have rank 4, got 'tensor<3x2x8xf32>'}}
  %o, %s = mir.gated_delta_rule %a0, %a1, %a2, %a3, %a4 : (tensor<3x2x8xf32>, tensor<1x3x2x8xf32>, tensor<1x3x4x6xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> (tensor<1x3x4x6xf32>, tensor<1x4x8x6xf32>)
  return
}

// -----

func.func @gated_delta_rule_c1_g_rank(%a0: tensor<1x3x2x8xf32>, %a1: tensor<1x3x2x8xf32>, %a2: tensor<1x3x4x6xf32>, %a3: tensor<1x3x4x1xf32>, %a4: tensor<1x3x4xf32>) {
  // expected-error @+1 {{'mir.gated_delta_rule' op g must have rank 3, got 'tensor<1x3x4x1xf32>'}}
  %o, %s = mir.gated_delta_rule %a0, %a1, %a2, %a3, %a4 : (tensor<1x3x2x8xf32>, tensor<1x3x2x8xf32>, tensor<1x3x4x6xf32>, tensor<1x3x4x1xf32>, tensor<1x3x4xf32>) -> (tensor<1x3x4x6xf32>, tensor<1x4x8x6xf32>)
  return
}

// -----

func.func @gated_delta_rule_c1_initial_state_rank(%a0: tensor<1x3x2x8xf32>, %a1: tensor<1x3x2x8xf32>, %a2: tensor<1x3x4x6xf32>, %a3: tensor<1x3x4xf32>, %a4: tensor<1x3x4xf32>, %a5: tensor<4x8x6xf32>) {
  // expected-error @+1 {{'mir.gated_delta_rule' op initial_state must be [B, Hv, Dk, Dv], got 'tensor<4x8x6xf32>'}}
  %o, %s = mir.gated_delta_rule %a0, %a1, %a2, %a3, %a4 initial_state(%a5) : (tensor<1x3x2x8xf32>, tensor<1x3x2x8xf32>, tensor<1x3x4x6xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, tensor<4x8x6xf32>) -> (tensor<1x3x4x6xf32>, tensor<1x4x8x6xf32>)
  return
}

// -----

func.func @gated_delta_rule_c2_key_shape(%a0: tensor<1x3x2x8xf32>, %a1: tensor<1x3x2x9xf32>, %a2: tensor<1x3x4x6xf32>, %a3: tensor<1x3x4xf32>, %a4: tensor<1x3x4xf32>) {
  // expected-error @+1 {{'mir.gated_delta_rule' op key 'tensor<1x3x2x9xf32>' must have the query's shape 'tensor<1x3x2x8xf32>'}}
  %o, %s = mir.gated_delta_rule %a0, %a1, %a2, %a3, %a4 : (tensor<1x3x2x8xf32>, tensor<1x3x2x9xf32>, tensor<1x3x4x6xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> (tensor<1x3x4x6xf32>, tensor<1x4x8x6xf32>)
  return
}

// -----

func.func @gated_delta_rule_c3_value_length(%a0: tensor<1x3x2x8xf32>, %a1: tensor<1x3x2x8xf32>, %a2: tensor<1x4x4x6xf32>, %a3: tensor<1x4x4xf32>, %a4: tensor<1x4x4xf32>) {
  // expected-error @+1 {{'mir.gated_delta_rule' op value 'tensor<1x4x4x6xf32>' must have the query's batch and length ('tensor<1x3x2x8xf32>')}}
  %o, %s = mir.gated_delta_rule %a0, %a1, %a2, %a3, %a4 : (tensor<1x3x2x8xf32>, tensor<1x3x2x8xf32>, tensor<1x4x4x6xf32>, tensor<1x4x4xf32>, tensor<1x4x4xf32>) -> (tensor<1x4x4x6xf32>, tensor<1x4x8x6xf32>)
  return
}

// -----

func.func @gated_delta_rule_c4_no_heads(%a0: tensor<1x3x0x8xf32>, %a1: tensor<1x3x0x8xf32>, %a2: tensor<1x3x4x6xf32>, %a3: tensor<1x3x4xf32>, %a4: tensor<1x3x4xf32>) {
  // expected-error @+1 {{'mir.gated_delta_rule' op has no query/key head (Hk = 0)}}
  %o, %s = mir.gated_delta_rule %a0, %a1, %a2, %a3, %a4 : (tensor<1x3x0x8xf32>, tensor<1x3x0x8xf32>, tensor<1x3x4x6xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> (tensor<1x3x4x6xf32>, tensor<1x4x8x6xf32>)
  return
}

// -----

func.func @gated_delta_rule_c4_heads(%a0: tensor<1x3x3x8xf32>, %a1: tensor<1x3x3x8xf32>, %a2: tensor<1x3x4x6xf32>, %a3: tensor<1x3x4xf32>, %a4: tensor<1x3x4xf32>) {
  // expected-error @+1 {{'mir.gated_delta_rule' op Hk = 3 query/key heads do not divide Hv = 4 value heads}}
  %o, %s = mir.gated_delta_rule %a0, %a1, %a2, %a3, %a4 : (tensor<1x3x3x8xf32>, tensor<1x3x3x8xf32>, tensor<1x3x4x6xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> (tensor<1x3x4x6xf32>, tensor<1x4x8x6xf32>)
  return
}

// -----

func.func @gated_delta_rule_c5_beta_shape(%a0: tensor<1x3x2x8xf32>, %a1: tensor<1x3x2x8xf32>, %a2: tensor<1x3x4x6xf32>, %a3: tensor<1x3x4xf32>, %a4: tensor<1x3x2xf32>) {
  // expected-error @+1 {{'mir.gated_delta_rule' op beta 'tensor<1x3x2xf32>' must be [B, T, Hv] of the value 'tensor<1x3x4x6xf32>'}}
  %o, %s = mir.gated_delta_rule %a0, %a1, %a2, %a3, %a4 : (tensor<1x3x2x8xf32>, tensor<1x3x2x8xf32>, tensor<1x3x4x6xf32>, tensor<1x3x4xf32>, tensor<1x3x2xf32>) -> (tensor<1x3x4x6xf32>, tensor<1x4x8x6xf32>)
  return
}

// -----

func.func @gated_delta_rule_c6_initial_state_shape(%a0: tensor<1x3x2x8xf32>, %a1: tensor<1x3x2x8xf32>, %a2: tensor<1x3x4x6xf32>, %a3: tensor<1x3x4xf32>, %a4: tensor<1x3x4xf32>, %a5: tensor<1x4x6x8xf32>) {
  // expected-error @+1 {{'mir.gated_delta_rule' op initial_state 'tensor<1x4x6x8xf32>' must be [B, Hv, Dk, Dv] = 'tensor<1x4x8x6xf32>'}}
  %o, %s = mir.gated_delta_rule %a0, %a1, %a2, %a3, %a4 initial_state(%a5) : (tensor<1x3x2x8xf32>, tensor<1x3x2x8xf32>, tensor<1x3x4x6xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>, tensor<1x4x6x8xf32>) -> (tensor<1x3x4x6xf32>, tensor<1x4x8x6xf32>)
  return
}

// -----

func.func @gated_delta_rule_c7_scale(%a0: tensor<1x3x2x8xf32>, %a1: tensor<1x3x2x8xf32>, %a2: tensor<1x3x4x6xf32>, %a3: tensor<1x3x4xf32>, %a4: tensor<1x3x4xf32>) {
  // expected-error @+1 {{'mir.gated_delta_rule' op scale must be positive and finite, got 0}}
  %o, %s = mir.gated_delta_rule %a0, %a1, %a2, %a3, %a4 {scale = 0.0 : f32} : (tensor<1x3x2x8xf32>, tensor<1x3x2x8xf32>, tensor<1x3x4x6xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> (tensor<1x3x4x6xf32>, tensor<1x4x8x6xf32>)
  return
}

// -----

func.func @gated_delta_rule_result_type(%a0: tensor<1x3x2x8xf32>, %a1: tensor<1x3x2x8xf32>, %a2: tensor<1x3x4x6xf32>, %a3: tensor<1x3x4xf32>, %a4: tensor<1x3x4xf32>) {
  // expected-error @+1 {{'mir.gated_delta_rule' op result type}}
  %o, %s = mir.gated_delta_rule %a0, %a1, %a2, %a3, %a4 : (tensor<1x3x2x8xf32>, tensor<1x3x2x8xf32>, tensor<1x3x4x6xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> (tensor<1x3x4x6xf32>, tensor<1x4x6x8xf32>)
  return
}

// -----

func.func @gated_delta_rule_f16(%q: tensor<1x3x2x8xf16>, %v: tensor<1x3x4x6xf32>, %g: tensor<1x3x4xf32>) {
  // expected-error @+1 {{'mir.gated_delta_rule' op operand #0 must be ranked tensor of 32-bit float values}}
  %o, %s = mir.gated_delta_rule %q, %q, %v, %g, %g : (tensor<1x3x2x8xf16>, tensor<1x3x2x8xf16>, tensor<1x3x4x6xf32>, tensor<1x3x4xf32>, tensor<1x3x4xf32>) -> (tensor<1x3x4x6xf32>, tensor<1x4x8x6xf32>)
  return
}
