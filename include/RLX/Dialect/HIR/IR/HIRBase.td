//===- HIRBase.td - HIR dialect definition -----------------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_HIR_IR_HIRBASE_TD
#define RLX_DIALECT_HIR_IR_HIRBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "RLX/Dialect/Common/RLXEnums.td"

def HIR_Dialect : Dialect {
  let name = "hir";
  let cppNamespace = "::mlir::rlx::hir";
  let summary = "High-level IR: transformer blocks as the model author meant them";
  let description = [{
    HIR holds a model as the author wrote it: value-semantic ranked tensors
    flowing through blocks such as `hir.rms_norm`, `hir.attention`,
    `hir.swiglu` and whole decoder layers. Weights are symbolic
    (`hir.param`): the IR carries a name, a shape and an element type, never
    data. Sequence and past-length dimensions may be dynamic. See
    `docs/Dialects/HIR.md` for the numbered constraints the verifiers check.
  }];
  let useDefaultAttributePrinterParser = 1;
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect"];
}

class HIR_Op<string mnemonic, list<Trait> traits = []>
    : Op<HIR_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enum attributes
//===----------------------------------------------------------------------===//

def HIR_ActivationAttr : EnumAttr<HIR_Dialect, RLX_Activation, "activation"> {
  let cppNamespace = "::mlir::rlx::hir";
}
def HIR_MaskKindAttr : EnumAttr<HIR_Dialect, RLX_MaskKind, "mask"> {
  let cppNamespace = "::mlir::rlx::hir";
}
def HIR_RopeStyleAttr : EnumAttr<HIR_Dialect, RLX_RopeStyle, "rope_style"> {
  let cppNamespace = "::mlir::rlx::hir";
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

def HIR_FloatTensor : RankedTensorOf<[AnyFloat]>;
def HIR_IndexTensor : RankedTensorOf<[I32, I64]>;
def HIR_AnyTensor : RankedTensorOf<[AnyType]>;

#endif // RLX_DIALECT_HIR_IR_HIRBASE_TD
