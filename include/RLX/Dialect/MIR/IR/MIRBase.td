//===- MIRBase.td - MIR dialect definition -----------------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_MIR_IR_MIRBASE_TD
#define RLX_DIALECT_MIR_IR_MIRBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"
include "mlir/IR/EnumAttr.td"
include "RLX/Dialect/Common/RLXEnums.td"
include "RLX/Dialect/MIR/IR/MIREnums.td"

def MIR_Dialect : Dialect {
  let name = "mir";
  let cppNamespace = "::mlir::rlx::mir";
  let summary = "Mid-level IR: the tensor DAG of primitive and fused ops";
  let description = [{
    MIR says what is computed: a DAG of value-semantic tensor ops. Primitive
    ops (matmul, broadcasting binary ops, activations, reductions, norms,
    data movement) are what HIR lowers to under the `fusable` policy; fused
    ops (matmul with epilogue, residual + norm, SwiGLU, attention, attention
    block, elementwise regions) are what the fusion patterns produce and what
    the `direct` policy emits straight away. See `docs/Dialects/MIR.md`.
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
  let hasConstantMaterializer = 1;
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::rlx::RLXDialect"];
}

class MIR_Op<string mnemonic, list<Trait> traits = []>
    : Op<MIR_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enum attributes
//===----------------------------------------------------------------------===//

def MIR_ActivationAttr : EnumAttr<MIR_Dialect, RLX_Activation, "activation"> {
  let cppNamespace = "::mlir::rlx::mir";
}
def MIR_MaskKindAttr : EnumAttr<MIR_Dialect, RLX_MaskKind, "mask"> {
  let cppNamespace = "::mlir::rlx::mir";
}
def MIR_RopeStyleAttr : EnumAttr<MIR_Dialect, RLX_RopeStyle, "rope_style"> {
  let cppNamespace = "::mlir::rlx::mir";
}
def MIR_CmpPredicateAttr : EnumAttr<MIR_Dialect, RLX_CmpPredicate, "cmp"> {
  let cppNamespace = "::mlir::rlx::mir";
}

//===----------------------------------------------------------------------===//
// Attribute constraints
//===----------------------------------------------------------------------===//

// A signless i64 attribute read back as a signed `int64_t` (axes, starts and
// offsets may be negative; upstream `I64Attr` returns `uint64_t`).
def MIR_I64Attr : TypedSignlessIntegerAttrBase<
    I64, "int64_t", "64-bit signless integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}

// An f32 attribute read back as a C++ `float`.
def MIR_F32Attr : FloatAttrBase<F32, "32-bit float attribute"> {
  let returnType = "float";
  let convertFromStorage = "$_self.getValue().convertToFloat()";
}

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

// The floating-point element types MIR computes in.
def MIR_Float : AnyTypeOf<[F32, F16, BF16], "f32, f16 or bf16">;

//===----------------------------------------------------------------------===//
// Weight storage types
//===----------------------------------------------------------------------===//

def MIR_QuantType : TypeDef<MIR_Dialect, "Quant",
    [MemRefElementTypeInterface]> {
  let mnemonic = "quant";
  let summary = "an element of a tensor stored in ggml blocks";
  let description = [{
    The storage type of a weight kept as llama.cpp writes it: along the last
    dimension, every `blockElements` consecutive elements are one block of
    `blockBytes` bytes (scales and packed integers, see ggml-common.h), so
    the last dimension of a tensor of this element type is a multiple of
    the block size (32 for q4_0, q4_1, q5_0, q5_1 and q8_0; 256 for the
    K-quants). Only weights have this type; kernels read the blocks in place
    or dequantize them (`mir.dequantize`).

    ```mlir
    %w = mir.param "blk.0.ffn_down.weight" : tensor<2048x8192x!mir.quant<q4_K>>
    ```
  }];
  let parameters = (ins "QuantKind":$kind);
  let assemblyFormat = "`<` $kind `>`";
  let extraClassDeclaration = [{
    /// Elements per block (32 or 256).
    int64_t getBlockElements() const;
    /// Bytes per block.
    int64_t getBlockBytes() const;
  }];
}

def MIR_FloatTensor : RankedTensorOf<[F32, F16, BF16]>;
// A weight in its stored precision: a float type or ggml blocks.
def MIR_WeightTensor : RankedTensorOf<[F32, F16, BF16, MIR_QuantType]>;
def MIR_F32Tensor : RankedTensorOf<[F32]>;
def MIR_IntTensor : RankedTensorOf<[AnySignlessInteger]>;
def MIR_NumericTensor : RankedTensorOf<[AnySignlessInteger, F32, F16, BF16]>;
def MIR_IndexTensor : RankedTensorOf<[I32, I64]>;
def MIR_BoolTensor : RankedTensorOf<[I1]>;
// An attention key-padding mask: nonzero (true) keeps the key.
def MIR_MaskTensor : RankedTensorOf<[I1, I32, I64, F32, F16, BF16]>;
def MIR_AnyTensor : RankedTensorOf<[AnyType]>;

#endif // RLX_DIALECT_MIR_IR_MIRBASE_TD
