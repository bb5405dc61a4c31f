//===- MIREnums.td - MIR enumerations ----------------------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_MIR_IR_MIRENUMS_TD
#define RLX_DIALECT_MIR_IR_MIRENUMS_TD

include "mlir/IR/EnumAttr.td"

// The values are ggml's type codes (GGUF files store them).
def MIR_QuantKind : I32Enum<"QuantKind", "a ggml block quantization", [
    I32EnumCase<"Q4_0", 2, "q4_0">, I32EnumCase<"Q4_1", 3, "q4_1">,
    I32EnumCase<"Q5_0", 6, "q5_0">, I32EnumCase<"Q5_1", 7, "q5_1">,
    I32EnumCase<"Q8_0", 8, "q8_0">, I32EnumCase<"Q2_K", 10, "q2_K">,
    I32EnumCase<"Q3_K", 11, "q3_K">, I32EnumCase<"Q4_K", 12, "q4_K">,
    I32EnumCase<"Q5_K", 13, "q5_K">, I32EnumCase<"Q6_K", 14, "q6_K">
  ]> {
  let cppNamespace = "::mlir::rlx::mir";
}

#endif // RLX_DIALECT_MIR_IR_MIRENUMS_TD
