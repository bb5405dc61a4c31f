//===- LIRBase.td - LIR dialect definition -----------------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_LIR_IR_LIRBASE_TD
#define RLX_DIALECT_LIR_IR_LIRBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def LIR_Dialect : Dialect {
  let name = "lir";
  let cppNamespace = "::mlir::rlx::lir";
  let summary = "Low-level IR: kernels over views of one arena, in order";
  let description = [{
    LIR says what runs, where and in which order. An entry point owns one
    activation arena (planned by liveness) and one parameter pool; every
    tensor is a view (byte offset + memref type) into one of them; kernels
    read and write views in program order; the I/O manifest names the views
    that hold inputs, parameters and outputs. See `docs/Dialects/LIR.md`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect"];
}

class LIR_Op<string mnemonic, list<Trait> traits = []>
    : Op<LIR_Dialect, mnemonic, traits>;

def LIR_MemorySpace : I32Enum<"MemorySpace", "storage a view points into", [
    I32EnumCase<"Arena", 0, "arena">,
    I32EnumCase<"Params", 1, "params">
  ]> {
  let cppNamespace = "::mlir::rlx::lir";
}
def LIR_MemorySpaceAttr : EnumAttr<LIR_Dialect, LIR_MemorySpace, "space"> {
  let assemblyFormat = "$value";
}

def LIR_IOKind : I32Enum<"IOKind", "role of a manifest entry", [
    I32EnumCase<"Input", 0, "input">,
    I32EnumCase<"Param", 1, "param">,
    I32EnumCase<"Output", 2, "output">
  ]> {
  let cppNamespace = "::mlir::rlx::lir";
}
def LIR_IOKindAttr : EnumAttr<LIR_Dialect, LIR_IOKind, "io"> {
  let assemblyFormat = "$value";
}

#endif // RLX_DIALECT_LIR_IR_LIRBASE_TD
