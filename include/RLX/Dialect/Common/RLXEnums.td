//===- RLXEnums.td - Enums shared by the RLX dialects ------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// C++ enums shared by HIR and MIR. Each dialect wraps them in its own
// EnumAttr so they print as `#hir<activation silu>` / `#mir<activation silu>`.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_COMMON_RLXENUMS_TD
#define RLX_DIALECT_COMMON_RLXENUMS_TD

include "mlir/IR/EnumAttr.td"

//===----------------------------------------------------------------------===//
// Activation
//===----------------------------------------------------------------------===//

def RLX_Activation : I32Enum<"Activation", "pointwise activation function", [
    I32EnumCase<"None", 0, "none">,
    I32EnumCase<"Relu", 1, "relu">,
    I32EnumCase<"Gelu", 2, "gelu">,          // 0.5 x (1 + erf(x / sqrt 2))
    I32EnumCase<"GeluTanh", 3, "gelu_tanh">, // tanh approximation
    I32EnumCase<"Silu", 4, "silu">,          // x * sigmoid(x)
    I32EnumCase<"Sigmoid", 5, "sigmoid">,
    I32EnumCase<"Tanh", 6, "tanh">,
    // The parameter-free rest of transformers' ACT2FN, under its names.
    I32EnumCase<"QuickGelu", 7, "quick_gelu">,     // x * sigmoid(1.702 x)
    I32EnumCase<"Relu2", 8, "relu2">,              // relu(x)^2
    I32EnumCase<"Relu6", 9, "relu6">,              // min(max(x, 0), 6)
    I32EnumCase<"LeakyRelu", 10, "leaky_relu">,    // x >= 0 ? x : 0.01 x
    I32EnumCase<"Mish", 11, "mish">,               // x * tanh(softplus(x))
    I32EnumCase<"Gelu10", 12, "gelu_10">,          // gelu clipped to [-10, 10]
    // 0.5 (1 + erf((x - 0.707107) / (0.282095 sqrt 2)))
    I32EnumCase<"Laplace", 13, "laplace">,
    I32EnumCase<"Hardswish", 14, "hardswish">,     // x * relu6(x + 3) / 6
    I32EnumCase<"SqrtSoftplus", 15, "sqrtsoftplus"> // sqrt(softplus(x))
  ]> {
  let cppNamespace = "::mlir::rlx";
}

//===----------------------------------------------------------------------===//
// Attention mask
//===----------------------------------------------------------------------===//

def RLX_MaskKind : I32Enum<"MaskKind", "attention mask kind", [
    I32EnumCase<"None", 0, "none">,
    // Query i (at absolute position kv_len - q_len + i) sees keys j <= that
    // position (bottom-right aligned, as in a KV-cache decode step).
    I32EnumCase<"Causal", 1, "causal">,
    // A [batch, kv_len] mask operand: nonzero keeps the key.
    I32EnumCase<"Padding", 2, "padding">,
    // Causal, and additionally key j must satisfy pos(i) - j < window.
    I32EnumCase<"SlidingWindow", 3, "sliding_window">
  ]> {
  let cppNamespace = "::mlir::rlx";
}

//===----------------------------------------------------------------------===//
// Rotary embedding layout
//===----------------------------------------------------------------------===//

def RLX_RopeStyle : I32Enum<"RopeStyle", "rotary embedding pairing", [
    // Pairs (x[i], x[i + rotary_dim/2]): HF `rotate_half`, GPT-NeoX.
    I32EnumCase<"Half", 0, "half">,
    // Pairs (x[2i], x[2i+1]): GPT-J, original RoFormer.
    I32EnumCase<"Interleaved", 1, "interleaved">
  ]> {
  let cppNamespace = "::mlir::rlx";
}

//===----------------------------------------------------------------------===//
// Comparison predicate
//===----------------------------------------------------------------------===//

def RLX_CmpPredicate : I32Enum<"CmpPredicate", "elementwise comparison", [
    I32EnumCase<"EQ", 0, "eq">, I32EnumCase<"NE", 1, "ne">,
    I32EnumCase<"LT", 2, "lt">, I32EnumCase<"LE", 3, "le">,
    I32EnumCase<"GT", 4, "gt">, I32EnumCase<"GE", 5, "ge">
  ]> {
  let cppNamespace = "::mlir::rlx";
}

#endif // RLX_DIALECT_COMMON_RLXENUMS_TD
