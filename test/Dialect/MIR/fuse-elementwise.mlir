// RUN: rlx-opt %s --mir-fuse-elementwise --split-input-file | FileCheck %s
// RUN: rlx-opt %s --pass-pipeline='builtin.module(func.func(mir-fuse-elementwise))' --split-input-file | FileCheck %s

/// Elementwise regions. IN: a tree of float elementwise MIR ops (unary,
/// broadcasting binary) of two or more ops whose intermediates are used only
/// inside the tree. OUT: one `mir.elementwise` whose body computes the same
/// math with scalar arith/math ops; rank-0 constants are inlined.

// CHECK-LABEL: func.func @fuse_logit_softcap
// CHECK-SAME: (%[[X:.*]]: tensor<2x1x100xf32>)
// CHECK: %[[Y:.*]] = mir.elementwise %[[X]] {
// CHECK-NEXT: ^bb0(%[[A:.*]]: f32):
// CHECK-NEXT:   %[[C:.*]] = arith.constant 3.000000e+01 : f32
// CHECK-NEXT:   %[[D:.*]] = arith.divf %[[A]], %[[C]] : f32
// CHECK-NEXT:   %[[T:.*]] = math.tanh %[[D]] : f32
// CHECK-NEXT:   %[[M:.*]] = arith.mulf %[[T]], %[[C]] : f32
// CHECK-NEXT:   mir.yield %[[M]] : f32
// CHECK-NEXT: } : (tensor<2x1x100xf32>) -> tensor<2x1x100xf32>
// CHECK-NEXT: return %[[Y]]
func.func @fuse_logit_softcap(%x: tensor<2x1x100xf32>) -> tensor<2x1x100xf32> {
  %c = mir.constant dense<3.0e+01> : tensor<f32>
  %0 = mir.div %x, %c : (tensor<2x1x100xf32>, tensor<f32>) -> tensor<2x1x100xf32>
  %1 = mir.tanh %0 : (tensor<2x1x100xf32>) -> tensor<2x1x100xf32>
  %2 = mir.mul %1, %c : (tensor<2x1x100xf32>, tensor<f32>) -> tensor<2x1x100xf32>
  return %2 : tensor<2x1x100xf32>
}

// -----

/// Inputs of different shapes broadcast to the region's result shape.

// CHECK-LABEL: func.func @fuse_broadcast_inputs
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>, %[[B:.*]]: tensor<16xf32>, %[[Y:.*]]: tensor<4x16xf32>)
// CHECK: mir.elementwise %[[X]], %[[B]], %[[Y]] {
// CHECK-NEXT: ^bb0(%[[A0:.*]]: f32, %[[A1:.*]]: f32, %[[A2:.*]]: f32):
// CHECK-NEXT:   %[[S:.*]] = arith.addf %[[A0]], %[[A1]] : f32
// CHECK-NEXT:   %[[E:.*]] = math.exp %[[S]] : f32
// CHECK-NEXT:   %[[M:.*]] = arith.mulf %[[E]], %[[A2]] : f32
// CHECK-NEXT:   mir.yield %[[M]] : f32
// CHECK-NEXT: } : (tensor<4x16xf32>, tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
func.func @fuse_broadcast_inputs(%x: tensor<4x16xf32>, %b: tensor<16xf32>, %y: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = mir.add %x, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %1 = mir.exp %0 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %2 = mir.mul %1, %y : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %2 : tensor<4x16xf32>
}

// -----

/// An intermediate used twice, both times inside the region.

// CHECK-LABEL: func.func @fuse_shared_intermediate
// CHECK: mir.elementwise %{{.*}} {
// CHECK: %[[D:.*]] = arith.negf
// CHECK-DAG: math.exp %[[D]]
// CHECK-DAG: math.tanh %[[D]]
// CHECK: arith.addf
// CHECK-NOT: mir.neg
func.func @fuse_shared_intermediate(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = mir.neg %x : (tensor<8xf32>) -> tensor<8xf32>
  %1 = mir.exp %0 : (tensor<8xf32>) -> tensor<8xf32>
  %2 = mir.tanh %0 : (tensor<8xf32>) -> tensor<8xf32>
  %3 = mir.add %1, %2 : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %3 : tensor<8xf32>
}

// -----

/// Activations are expanded by their definitions.

// CHECK-LABEL: func.func @fuse_activations
// CHECK: mir.elementwise
// silu(x) = x * (1 / (1 + exp(-x)))
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[NEG:.*]] = arith.negf %[[X:.*]] : f32
// CHECK: %[[EXP:.*]] = math.exp %[[NEG]] : f32
// CHECK: %[[DEN:.*]] = arith.addf %[[ONE]], %[[EXP]] : f32
// CHECK: %[[SIG:.*]] = arith.divf %[[ONE]], %[[DEN]] : f32
// CHECK: %[[SILU:.*]] = arith.mulf %[[X]], %[[SIG]] : f32
// gelu(x) = 0.5 x (1 + erf(x / sqrt(2)))
// CHECK: %[[R2:.*]] = arith.constant 1.41421354 : f32
// CHECK: %[[Q:.*]] = arith.divf %[[SILU]], %[[R2]] : f32
// CHECK: %[[ERF:.*]] = math.erf %[[Q]] : f32
// CHECK: %[[HALF:.*]] = arith.constant 5.000000e-01 : f32
// CHECK: %[[HX:.*]] = arith.mulf %[[HALF]], %[[SILU]] : f32
// CHECK: %[[ONE2:.*]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[P:.*]] = arith.addf %[[ONE2]], %[[ERF]] : f32
// CHECK: %[[GELU:.*]] = arith.mulf %[[HX]], %[[P]] : f32
// relu(x) = max(x, 0)
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[RELU:.*]] = arith.maximumf %[[GELU]], %[[ZERO]] : f32
// CHECK: mir.yield %[[RELU]] : f32
func.func @fuse_activations(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = mir.silu %x : (tensor<8xf32>) -> tensor<8xf32>
  %1 = mir.gelu %0 : (tensor<8xf32>) -> tensor<8xf32>
  %2 = mir.relu %1 : (tensor<8xf32>) -> tensor<8xf32>
  return %2 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @fuse_gelu_tanh_f16
// CHECK: mir.elementwise
// CHECK: arith.constant 4.470830e-02 : f16
// CHECK: arith.constant 7.978520e-01 : f16
// CHECK: math.tanh
// CHECK: } : (tensor<8xf16>) -> tensor<8xf16>
func.func @fuse_gelu_tanh_f16(%x: tensor<8xf16>) -> tensor<8xf16> {
  %0 = mir.gelu %x {tanh_approx} : (tensor<8xf16>) -> tensor<8xf16>
  %1 = mir.neg %0 : (tensor<8xf16>) -> tensor<8xf16>
  return %1 : tensor<8xf16>
}

// -----

// CHECK-LABEL: func.func @negative_single_op
// CHECK-NOT: mir.elementwise
func.func @negative_single_op(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = mir.exp %x : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

/// The intermediate is returned: it must be materialized, and what is left is
/// one op on each side.

// CHECK-LABEL: func.func @negative_multi_use_intermediate
// CHECK-NOT: mir.elementwise
func.func @negative_multi_use_intermediate(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = mir.exp %x : (tensor<8xf32>) -> tensor<8xf32>
  %1 = mir.tanh %0 : (tensor<8xf32>) -> tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}

// -----

/// Integer arithmetic (mask positions) is left alone.

// CHECK-LABEL: func.func @negative_integer_ops
// CHECK-NOT: mir.elementwise
func.func @negative_integer_ops(%x: tensor<8xi64>, %y: tensor<8xi64>) -> tensor<8xi64> {
  %0 = mir.add %x, %y : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi64>
  %1 = mir.sub %0, %y : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi64>
  return %1 : tensor<8xi64>
}

// -----

/// A gated linear unit (here with gate and up swapped, so mir-fuse-swiglu
/// leaves it) stays out of regions, so the fusion report can still explain
/// why it did not fuse.

// CHECK-LABEL: func.func @negative_glu_stays_out
// CHECK-NOT: mir.elementwise
// CHECK: mir.silu
// CHECK: mir.mul
func.func @negative_glu_stays_out(%gu: tensor<4x64xf32>) -> tensor<4x32xf32> {
  %g = mir.slice %gu {axis = 1 : i64, start = 32 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %a = mir.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = mir.slice %gu {axis = 1 : i64, start = 0 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %h = mir.mul %a, %u : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %h : tensor<4x32xf32>
}

// -----

/// mir.activation joins a region as its arith/math formula (here relu6 as a
/// clamp to [0, 6]).

// CHECK-LABEL: func.func @fuse_activation_relu6
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>, %[[Y:.*]]: tensor<4x16xf32>)
// CHECK: mir.elementwise %[[X]], %[[Y]] {
// CHECK-NEXT: ^bb0(%[[A0:.*]]: f32, %[[A1:.*]]: f32):
// CHECK-NEXT:   %[[LO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   %[[HI:.*]] = arith.constant 6.000000e+00 : f32
// CHECK-NEXT:   %[[L:.*]] = arith.maximumf %[[A0]], %[[LO]] : f32
// CHECK-NEXT:   %[[H:.*]] = arith.minimumf %[[L]], %[[HI]] : f32
// CHECK-NEXT:   %[[M:.*]] = arith.mulf %[[H]], %[[A1]] : f32
// CHECK-NEXT:   mir.yield %[[M]] : f32
// CHECK-NOT: mir.activation
func.func @fuse_activation_relu6(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %0 = mir.activation %x {activation = #mir<activation relu6>} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %1 = mir.mul %0, %y : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// -----

/// The rounding ops, sign and clip join a region as their math: abs, floor,
/// ceil, round (halves to even), np.sign (x itself for zeros and NaN) and
/// clip (max, then min).

// CHECK-LABEL: func.func @fuse_rounding_sign_clip
// CHECK-SAME: (%[[X:.*]]: tensor<4x16xf32>, %[[Y:.*]]: tensor<16xf32>)
// CHECK: mir.elementwise %[[X]], %[[Y]] {
// CHECK-NEXT: ^bb0(%[[A0:.*]]: f32, %[[A1:.*]]: f32):
// CHECK-NEXT:   %[[ABS:.*]] = math.absf %[[A0]] : f32
// CHECK-NEXT:   %[[FL:.*]] = math.floor %[[A1]] : f32
// CHECK-NEXT:   %[[ADD:.*]] = arith.addf %[[ABS]], %[[FL]] : f32
// CHECK-NEXT:   %[[CE:.*]] = math.ceil %[[ADD]] : f32
// CHECK-NEXT:   %[[RO:.*]] = math.roundeven %[[A0]] : f32
// CHECK-NEXT:   %[[SUB:.*]] = arith.subf %[[CE]], %[[RO]] : f32
// CHECK-NEXT:   %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   %[[POS:.*]] = arith.cmpf ogt, %[[SUB]], %[[ZERO]] : f32
// CHECK-NEXT:   %[[NEG:.*]] = arith.cmpf olt, %[[SUB]], %[[ZERO]] : f32
// CHECK-NEXT:   %[[M1:.*]] = arith.constant -1.000000e+00 : f32
// CHECK-NEXT:   %[[S1:.*]] = arith.select %[[NEG]], %[[M1]], %[[SUB]] : f32
// CHECK-NEXT:   %[[P1:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:   %[[SIGN:.*]] = arith.select %[[POS]], %[[P1]], %[[S1]] : f32
// CHECK-NEXT:   %[[LO:.*]] = arith.constant -5.000000e-01 : f32
// CHECK-NEXT:   %[[HI:.*]] = arith.constant 2.500000e-01 : f32
// CHECK-NEXT:   %[[L:.*]] = arith.maximumf %[[SIGN]], %[[LO]] : f32
// CHECK-NEXT:   %[[H:.*]] = arith.minimumf %[[L]], %[[HI]] : f32
// CHECK-NEXT:   mir.yield %[[H]] : f32
// CHECK-NEXT: } : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NOT: mir.abs
// CHECK-NOT: mir.floor
// CHECK-NOT: mir.ceil
// CHECK-NOT: mir.round
// CHECK-NOT: mir.sign
// CHECK-NOT: mir.clip
func.func @fuse_rounding_sign_clip(%x: tensor<4x16xf32>, %y: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = mir.abs %x : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %1 = mir.floor %y : (tensor<16xf32>) -> tensor<16xf32>
  %2 = mir.add %0, %1 : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %3 = mir.ceil %2 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %4 = mir.round %x : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %5 = mir.sub %3, %4 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %6 = mir.sign %5 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %7 = mir.clip %6 {min = -5.000000e-01 : f32, max = 2.500000e-01 : f32} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %7 : tensor<4x16xf32>
}

// -----

/// A sinusoidal embedding's angles: sin and cos fuse like the other unary ops.

// CHECK-LABEL: func.func @fuse_sin_cos
// CHECK: mir.elementwise
// CHECK: %[[M:.*]] = arith.mulf
// CHECK: %[[S:.*]] = math.sin %[[M]] : f32
// CHECK: %[[C:.*]] = math.cos %[[M]] : f32
// CHECK: arith.addf %[[S]], %[[C]] : f32
// CHECK-NOT: mir.sin
func.func @fuse_sin_cos(%x: tensor<4x8xf32>, %f: tensor<8xf32>) -> tensor<4x8xf32> {
  %a = mir.mul %x, %f : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %s = mir.sin %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %c = mir.cos %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %y = mir.add %s, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
