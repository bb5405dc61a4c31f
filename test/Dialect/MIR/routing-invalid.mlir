// RUN: rlx-opt %s -split-input-file -verify-diagnostics

// One case per verifier diagnostic of the routing ops (mir.top_k,
// mir.grouped_matmul); names follow docs/Dialects/MIR.md's constraints.

func.func @top_k_c1_axis_out_of_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.top_k' op axis 2 is out of range [-2, 2)}}
  %v, %i = mir.top_k %x {k = 2 : i64, axis = 2 : i64} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi64>)
  return
}

// -----

func.func @top_k_c1_scalar(%x: tensor<f32>) {
  // expected-error @+1 {{'mir.top_k' op axis -1 is out of range [0, 0)}}
  %v, %i = mir.top_k %x {k = 1 : i64} : (tensor<f32>) -> (tensor<f32>, tensor<i64>)
  return
}

// -----

func.func @top_k_c2_k_zero(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.top_k' op k must be positive, got 0}}
  %v, %i = mir.top_k %x {k = 0 : i64} : (tensor<4x8xf32>) -> (tensor<4x0xf32>, tensor<4x0xi64>)
  return
}

// -----

func.func @top_k_c2_k_too_large(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.top_k' op k = 9 exceeds the size 8 of axis -1}}
  %v, %i = mir.top_k %x {k = 9 : i64} : (tensor<4x8xf32>) -> (tensor<4x9xf32>, tensor<4x9xi64>)
  return
}

// -----

func.func @top_k_result_type(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.top_k' op result type}}
  %v, %i = mir.top_k %x {k = 2 : i64} : (tensor<4x8xf32>) -> (tensor<4x3xf32>, tensor<4x2xi64>)
  return
}

// -----

func.func @top_k_indices_i32(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'mir.top_k' op result #1 must be ranked tensor of 64-bit signless integer values}}
  %v, %i = mir.top_k %x {k = 2 : i64} : (tensor<4x8xf32>) -> (tensor<4x2xf32>, tensor<4x2xi32>)
  return
}

// -----

func.func @grouped_matmul_c1_input_rank(%x: tensor<16xf32>, %w: tensor<3x5x16xf32>, %g: tensor<i64>) {
  // expected-error @+1 {{'mir.grouped_matmul' op input must be [..., R, K], got 'tensor<16xf32>'}}
  %y = mir.grouped_matmul %x, %w, %g : (tensor<16xf32>, tensor<3x5x16xf32>, tensor<i64>) -> tensor<5xf32>
  return
}

// -----

func.func @grouped_matmul_c1_weights_rank(%x: tensor<2x16xf32>, %w: tensor<5x16xf32>, %g: tensor<2xi64>) {
  // expected-error @+1 {{'mir.grouped_matmul' op weights must be [G, N, K], got 'tensor<5x16xf32>'}}
  %y = mir.grouped_matmul %x, %w, %g : (tensor<2x16xf32>, tensor<5x16xf32>, tensor<2xi64>) -> tensor<2x5xf32>
  return
}

// -----

func.func @grouped_matmul_c1_k(%x: tensor<2x16xf32>, %w: tensor<3x5x15xf32>, %g: tensor<2xi64>) {
  // expected-error @+1 {{'mir.grouped_matmul' op input has K = 16 but the weights' K is 15}}
  %y = mir.grouped_matmul %x, %w, %g : (tensor<2x16xf32>, tensor<3x5x15xf32>, tensor<2xi64>) -> tensor<2x5xf32>
  return
}

// -----

func.func @grouped_matmul_c1_groups(%x: tensor<2x16xf32>, %w: tensor<3x5x16xf32>, %g: tensor<3xi64>) {
  // expected-error @+1 {{'mir.grouped_matmul' op groups 'tensor<3xi64>' must have the input's shape without its last dim}}
  %y = mir.grouped_matmul %x, %w, %g : (tensor<2x16xf32>, tensor<3x5x16xf32>, tensor<3xi64>) -> tensor<2x5xf32>
  return
}

// -----

func.func @grouped_matmul_c1_groups_rank(%x: tensor<2x16xf32>, %w: tensor<3x5x16xf32>, %g: tensor<2x1xi64>) {
  // expected-error @+1 {{'mir.grouped_matmul' op groups 'tensor<2x1xi64>' must have the input's shape without its last dim}}
  %y = mir.grouped_matmul %x, %w, %g : (tensor<2x16xf32>, tensor<3x5x16xf32>, tensor<2x1xi64>) -> tensor<2x5xf32>
  return
}

// -----

func.func @grouped_matmul_c2_no_weights(%x: tensor<2x16xf32>, %w: tensor<0x5x16xf32>, %g: tensor<2xi64>) {
  // expected-error @+1 {{'mir.grouped_matmul' op has no weight matrix to choose from (G = 0)}}
  %y = mir.grouped_matmul %x, %w, %g : (tensor<2x16xf32>, tensor<0x5x16xf32>, tensor<2xi64>) -> tensor<2x5xf32>
  return
}

// -----

func.func @grouped_matmul_result_type(%x: tensor<2x16xf32>, %w: tensor<3x5x16xf32>, %g: tensor<2xi64>) {
  // expected-error @+1 {{'mir.grouped_matmul' op result type}}
  %y = mir.grouped_matmul %x, %w, %g : (tensor<2x16xf32>, tensor<3x5x16xf32>, tensor<2xi64>) -> tensor<2x6xf32>
  return
}

// -----

func.func @top_k_bool(%x: tensor<4x8xi1>) {
  // expected-error @+1 {{'mir.top_k' op operand #0 must be ranked tensor of 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer or 32-bit float or 16-bit float or bfloat16 type values}}
  %v, %i = mir.top_k %x {k = 2 : i64} : (tensor<4x8xi1>) -> (tensor<4x2xi1>, tensor<4x2xi64>)
  return
}

// -----

func.func @sort_groups_result_type(%g: tensor<2x3xi64>) {
  // expected-error @+1 {{'mir.sort_groups' op result type}}
  %o, %f = mir.sort_groups %g {num_groups = 4 : i64} : (tensor<2x3xi64>) -> (tensor<6xi64>, tensor<4xi64>)
  return
}

// -----

func.func @sort_groups_num_groups(%g: tensor<6xi64>) {
  // expected-error @+1 {{'mir.sort_groups' op attribute 'num_groups' failed to satisfy constraint}}
  %o, %f = mir.sort_groups %g {num_groups = 0 : i64} : (tensor<6xi64>) -> (tensor<6xi64>, tensor<1xi64>)
  return
}

// -----

func.func @grouped_matmul_c3_offsets(%x: tensor<6x16xf32>, %w: tensor<3x5x16xf32>, %g: tensor<6xi64>, %o: tensor<6xi64>, %f: tensor<3xi64>) {
  // expected-error @+1 {{'mir.grouped_matmul' op sorted offsets 'tensor<3xi64>' must have G + 1 = 4 entries}}
  %y = mir.grouped_matmul %x, %w, %g sorted(%o, %f) : (tensor<6x16xf32>, tensor<3x5x16xf32>, tensor<6xi64>, tensor<6xi64>, tensor<3xi64>) -> tensor<6x5xf32>
  return
}

// -----

func.func @grouped_matmul_c3_order(%x: tensor<6x16xf32>, %w: tensor<3x5x16xf32>, %g: tensor<6xi64>, %o: tensor<5xi64>, %f: tensor<4xi64>) {
  // expected-error @+1 {{'mir.grouped_matmul' op sorted order 'tensor<5xi64>' must list the 6 rows}}
  %y = mir.grouped_matmul %x, %w, %g sorted(%o, %f) : (tensor<6x16xf32>, tensor<3x5x16xf32>, tensor<6xi64>, tensor<5xi64>, tensor<4xi64>) -> tensor<6x5xf32>
  return
}
