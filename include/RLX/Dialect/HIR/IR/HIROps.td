//===- HIROps.td - HIR operations --------------------------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_HIR_IR_HIROPS_TD
#define RLX_DIALECT_HIR_IR_HIROPS_TD

include "RLX/Dialect/HIR/IR/HIRBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

def HIR_ParamOp : HIR_Op<"param", [Pure]> {
  let summary = "a named weight tensor (symbolic: no data in the IR)";
  let description = [{
    Declares a weight by name. The runtime binds the data at load time; the
    IR only carries the name, the shape and the element type. The shape must
    be static.

    ```mlir
    %w = hir.param "model.norm.weight" : tensor<2048xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name);
  let results = (outs HIR_AnyTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def HIR_RmsNormOp : HIR_Op<"rms_norm", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "RMS normalization over the last dimension";
  let description = [{
    `y = x / sqrt(mean(x^2, -1) + epsilon) * weight`, with `weight` of shape
    `[hidden]` where `hidden` is the last dimension of `x`.

    ```mlir
    %y = hir.rms_norm %x, %w {epsilon = 1.0e-05 : f32}
        : (tensor<1x?x2048xf32>, tensor<2048xf32>) -> tensor<1x?x2048xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input, HIR_FloatTensor:$weight,
                   DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // RLX_DIALECT_HIR_IR_HIROPS_TD
