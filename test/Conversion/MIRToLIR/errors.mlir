// RUN: rlx-opt %s -split-input-file --convert-mir-to-lir -verify-diagnostics

// expected-error @+1 {{convert-mir-to-lir needs static tensor types (specialize the shapes first), got 'tensor<?x4xf32>'}}
func.func @negative_dynamic(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = mir.exp %x : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}

// -----

func.func @negative_hir_left(%x: tensor<2x4xf32>, %w: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{is not a MIR op: lower it to MIR before convert-mir-to-lir}}
  %y = hir.rms_norm %x, %w : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

func.func @negative_param_redeclared(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = mir.param "w" : tensor<4xf32>
  // expected-error @+1 {{redeclares param 'w' with another type}}
  %b = mir.param "w" : tensor<8xf32>
  %s = mir.slice %b {axis = 0 : i64, start = 0 : i64, size = 4 : i64} : (tensor<8xf32>) -> tensor<4xf32>
  %y = mir.add %a, %s : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

/// A result whose byte size wraps 64 bits (2^62 x 4 f32 = 2^66 bytes) must not
/// become a small buffer.
func.func @negative_result_bytes_overflow() -> tensor<4611686018427387904x4xf32> {
  // expected-error @+1 {{result of type 'tensor<4611686018427387904x4xf32>' has a byte size past 2^63 - 1}}
  %y = mir.iota {axis = 0 : i64} : tensor<4611686018427387904x4xf32>
  return %y : tensor<4611686018427387904x4xf32>
}

// -----

/// 2^61 f32 is 2^63 bytes: one past the largest size.
// expected-error @+1 {{input 'x' of type 'tensor<2305843009213693952xf32>' has a byte size past 2^63 - 1}}
func.func @negative_input_bytes_past_int64(%x: tensor<2305843009213693952xf32> {rlx.name = "x"}) -> tensor<2305843009213693952xf32> {
  return %x : tensor<2305843009213693952xf32>
}

// -----

/// The largest sizes that fit convert (2^61 - 1 f32, 2^63 - 4 bytes).
func.func @fits_int64(%x: tensor<2305843009213693951xf32> {rlx.name = "x"}) -> tensor<2305843009213693951xf32> {
  %y = mir.exp %x : (tensor<2305843009213693951xf32>) -> tensor<2305843009213693951xf32>
  return %y : tensor<2305843009213693951xf32>
}

// -----

shard.grid @tp(shape = 2)
func.func @negative_all_reduce_max(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{reduces with max; convert-mir-to-lir runs sums only}}
  %s = shard.all_reduce %x on @tp grid_axes = [0] reduction = max : tensor<4xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

shard.grid @grid(shape = 2x2)
func.func @negative_partial_grid(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{spans 2 of the 4 devices of its grid: convert-mir-to-lir runs collectives over the whole grid (one MPI world) only}}
  %s = shard.all_reduce %x on @grid grid_axes = [1] : tensor<4xf32> -> tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

shard.grid @tp(shape = 2)
func.func @negative_all_reduce_i32(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{moves f32, f16 or bf16 tensors only, got 'tensor<4xi32>'}}
  %s = shard.all_reduce %x on @tp grid_axes = [0] : tensor<4xi32> -> tensor<4xi32>
  return %s : tensor<4xi32>
}
