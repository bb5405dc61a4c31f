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
