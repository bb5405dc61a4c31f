//===- MIROps.td - MIR primitive operations ----------------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_MIR_IR_MIROPS_TD
#define RLX_DIALECT_MIR_IR_MIROPS_TD

include "RLX/Dialect/MIR/IR/MIRBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

def MIR_ParamOp : MIR_Op<"param", [Pure]> {
  let summary = "a named weight tensor (symbolic: no data in the IR)";
  let description = [{
    A weight bound by name at load time. Static shape.

    ```mlir
    %w = mir.param "model.norm.weight" : tensor<2048xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs MIR_AnyTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

def MIR_MatmulOp : MIR_Op<"matmul", [Pure]> {
  let summary = "matrix product with an optional transposed operand";
  let description = [{
    `lhs` is `[..., M, K]` (or `[..., K, M]` with `transpose_lhs`); `rhs` is
    a 2-D `[K, N]` matrix (or `[N, K]` with `transpose_rhs`, the layout of an
    HF linear weight). The result is `[..., M, N]`.

    ```mlir
    %y = mir.matmul %x, %w {transpose_rhs}
        : (tensor<1x?x2048xf32>, tensor<512x2048xf32>) -> tensor<1x?x512xf32>
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$lhs, MIR_FloatTensor:$rhs,
                   UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs MIR_FloatTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // RLX_DIALECT_MIR_IR_MIROPS_TD
