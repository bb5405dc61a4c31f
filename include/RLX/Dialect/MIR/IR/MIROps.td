//===- MIROps.td - MIR primitive operations ----------------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The primitive MIR ops: what HIR lowers to under the `fusable` policy. The
// fused ops live in MIRFusedOps.td, included at the end. Constraints are
// numbered in docs/Dialects/MIR.md (`mir_<op>_cN`); the verifiers cite them.
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
    A weight bound by name at load time; the IR carries only the name, the
    shape and the element type. The shape is static.

    A *derived* parameter carries `sources` (two or more parameter names),
    `concat_axis` and `source_sizes` (each source's extent along the axis):
    the runtime computes it once at load time by concatenating the named
    source tensors along `concat_axis`, in the order given. Fusion uses it to
    merge the Q/K/V projections or the gate/up projections into one weight.
    `name` is then the name of the derived tensor. The three attributes are
    present together or not at all; the sizes add up to the result's
    dimension along the axis, and the loader checks each source's shape.

    A *sliced* parameter also carries `source_starts`: source `i` then
    contributes `[source_starts[i], source_starts[i] + source_sizes[i])` of
    its extent along `concat_axis` (the other dimensions whole), and a single
    source is allowed (one tensor's row or column range). The loader reads
    only those ranges (a rank of a tensor-parallel program holds only its
    share); `mir-fold-param-slices` makes such parameters from `mir.slice`s
    and `mir.concat`s of parameters.

    ```mlir
    %w = mir.param "model.norm.weight" : tensor<2048xf32>
    %qkv = mir.param "layers.0.attn.qkv.weight"
        {sources = ["layers.0.attn.q.weight", "layers.0.attn.k.weight",
                    "layers.0.attn.v.weight"], concat_axis = 0 : i64,
         source_sizes = array<i64: 2048, 512, 512>}
        : tensor<3072x2048xf32>
    %o0 = mir.param "layers.0.attn.o.weight[:,0:1024]"
        {sources = ["layers.0.attn.o.weight"], concat_axis = 1 : i64,
         source_sizes = array<i64: 1024>, source_starts = array<i64: 0>}
        : tensor<2048x1024xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<StrArrayAttr>:$sources,
                   OptionalAttr<MIR_I64Attr>:$concat_axis,
                   OptionalAttr<DenseI64ArrayAttr>:$source_sizes,
                   OptionalAttr<DenseI64ArrayAttr>:$source_starts);
  let results = (outs MIR_AnyTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let builders = [
    OpBuilder<(ins "::mlir::Type":$type, "::llvm::StringRef":$name), [{
      build($_builder, $_state, type, $_builder.getStringAttr(name),
            /*sources=*/nullptr, /*concat_axis=*/nullptr,
            /*source_sizes=*/nullptr, /*source_starts=*/nullptr);
    }]>
  ];
  let hasVerifier = 1;
}

def MIR_ConstantOp : MIR_Op<"constant",
    [ConstantLike, Pure, AllTypesMatch<["value", "result"]>]> {
  let summary = "a tensor constant held in the IR";
  let description = [{
    Materializes the elements attribute `value` (a dense, splat or resource
    elements attribute) as a tensor value of the same type. The type is static.
    Used for small tables and for the results of constant folding; weights are
    `mir.param`.

    ```mlir
    %c = mir.constant dense<1.0> : tensor<4xf32>
    ```
  }];
  let arguments = (ins ElementsAttr:$value);
  let results = (outs MIR_NumericTensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

def MIR_IotaOp : MIR_Op<"iota", [Pure]> {
  let summary = "a tensor holding the index along one axis";
  let description = [{
    `result[i_0, ..., i_(n-1)] = i_axis`, converted to the element type
    (integer or float). The shape is static and `axis` is in `[0, rank)`.
    Position ids and masks are built from it.

    ```mlir
    %pos = mir.iota {axis = 0 : i64} : tensor<128xi64>
    ```
  }];
  let arguments = (ins MIR_I64Attr:$axis);
  let results = (outs MIR_NumericTensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Matrix products
//===----------------------------------------------------------------------===//

def MIR_MatmulOp : MIR_Op<"matmul", [Pure, InferTypeOpAdaptor]> {
  let summary = "matrix product of a batch of rows and a 2-D weight";
  let description = [{
    `lhs` is `[..., M, K]` with rank >= 2 (or `[..., K, M]` with
    `transpose_lhs`, which swaps its last two dims); `rhs` is a 2-D `[K, N]`
    matrix (or `[N, K]` with `transpose_rhs`: the layout of an HF linear
    weight). The result is `[..., M, N]`, with the leading dims of `lhs`. The
    operands have the same element type, or `rhs` is a weight `[N, K]`
    (`transpose_rhs`) stored in lower precision (f16, bf16 or ggml blocks)
    that the kernel reads as it is stored; `K` must match when both are
    static. The result type is inferred (the element type of `lhs`).

    ```mlir
    %y = mir.matmul %x, %w {transpose_rhs}
        : (tensor<1x?x2048xf32>, tensor<512x2048xf32>) -> tensor<1x?x512xf32>
    %z = mir.matmul %x, %q {transpose_rhs}
        : (tensor<1x?x2048xf32>, tensor<512x2048x!mir.quant<q4_0>>)
        -> tensor<1x?x512xf32>
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$lhs, MIR_WeightTensor:$rhs,
                   UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs MIR_FloatTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def MIR_BatchMatmulOp : MIR_Op<"batch_matmul", [Pure, InferTypeOpAdaptor]> {
  let summary = "batched matrix product with equal batch dims";
  let description = [{
    `lhs` is `[B..., M, K]` and `rhs` is `[B..., K, N]`, both of the same rank
    >= 3 with equal batch dims `B...` (no broadcasting) and the same element
    type. `transpose_lhs` / `transpose_rhs` swap the last two dims of the
    operand. The result `[B..., M, N]` is inferred. Attention scores
    (`q·kᵀ`) and the weighted sum (`p·v`) use it.

    ```mlir
    %s = mir.batch_matmul %q, %k {transpose_rhs}
        : (tensor<1x32x?x64xf32>, tensor<1x32x?x64xf32>) -> tensor<1x32x?x?xf32>
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$lhs, MIR_FloatTensor:$rhs,
                   UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs MIR_FloatTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Binary broadcasting ops
//===----------------------------------------------------------------------===//

// An elementwise binary op with numpy broadcasting. The operands have the same
// element type; the result type is inferred (see mir::broadcastShapes).
class MIR_BinaryOp<string mnemonic, string opSummary, string semantics,
                   Type operandType = MIR_NumericTensor,
                   list<Trait> traits = []>
    : MIR_Op<mnemonic, !listconcat([Pure, SameOperandsElementType,
                                    InferTypeOpAdaptor], traits)> {
  let summary = opSummary;
  let description = semantics # [{

    The operands broadcast with numpy rules: shapes are aligned on the right,
    a missing or size-1 dim stretches to the other operand's size, and
    otherwise the sizes must be equal. A dynamic dim is compatible with any
    size; it broadcasts with a static size `n > 1` to `n` and with `1` or `?`
    to `?`. Both operands have the same element type, which is the result's.
    The result type is inferred.

    ```mlir
    %y = mir.}] # mnemonic # [{ %a, %b
        : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
    ```
  }];
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs operandType:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return verifyBroadcastingOp(getOperation());
    }
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes) {
      return inferBroadcastingReturnType(location, adaptor.getOperands(),
                                         /*resultElementType=*/nullptr,
                                         inferredReturnTypes);
    }
  }];
}

def MIR_AddOp : MIR_BinaryOp<"add", "elementwise addition with broadcasting", [{
    `result = lhs + rhs`. Folds `x + 0 -> x` when `0` is a splat constant
    and the result type is the type of `x`.
  }], MIR_NumericTensor, [Commutative]> {
  let hasFolder = 1;
}

def MIR_SubOp : MIR_BinaryOp<"sub", "elementwise subtraction with broadcasting", [{
    `result = lhs - rhs`. Folds `x - 0 -> x` when `0` is a splat constant
    and the result type is the type of `x`.
  }]> {
  let hasFolder = 1;
}

def MIR_MulOp : MIR_BinaryOp<"mul", "elementwise multiplication with broadcasting", [{
    `result = lhs * rhs`. Folds `x * 1 -> x` when `1` is a splat constant
    and the result type is the type of `x`.
  }], MIR_NumericTensor, [Commutative]> {
  let hasFolder = 1;
}

def MIR_DivOp : MIR_BinaryOp<"div", "elementwise division with broadcasting", [{
    `result = lhs / rhs`: IEEE division on floats, signed division rounding
    toward zero on integers. Folds `x / 1 -> x` when `1` is a splat constant
    and the result type is the type of `x`.
  }]> {
  let hasFolder = 1;
}

def MIR_MaxOp : MIR_BinaryOp<"max", "elementwise maximum with broadcasting", [{
    `result = max(lhs, rhs)`: signed on integers; on floats a NaN operand
    gives NaN.
  }], MIR_NumericTensor, [Commutative]>;

def MIR_MinOp : MIR_BinaryOp<"min", "elementwise minimum with broadcasting", [{
    `result = min(lhs, rhs)`: signed on integers; on floats a NaN operand
    gives NaN.
  }], MIR_NumericTensor, [Commutative]>;

def MIR_PowOp : MIR_BinaryOp<"pow", "elementwise power with broadcasting", [{
    `result = lhs ^ rhs` (C `powf`) on float tensors.
  }], MIR_FloatTensor>;

//===----------------------------------------------------------------------===//
// Comparison and selection
//===----------------------------------------------------------------------===//

def MIR_CompareOp : MIR_Op<"compare",
    [Pure, SameOperandsElementType, InferTypeOpAdaptor]> {
  let summary = "elementwise comparison with broadcasting, giving i1";
  let description = [{
    `result = lhs <predicate> rhs` as an `i1` tensor. The operands have the
    same element type and broadcast as in `mir.add`; the result shape is their
    broadcast shape. Integers compare signed. Floats compare ordered (a NaN
    operand gives false) except `ne`, which is true on NaN.

    ```mlir
    %m = mir.compare %a, %b {predicate = #mir<cmp lt>}
        : (tensor<?x1xi64>, tensor<?xi64>) -> tensor<?x?xi1>
    ```
  }];
  let arguments = (ins MIR_NumericTensor:$lhs, MIR_NumericTensor:$rhs,
                   MIR_CmpPredicateAttr:$predicate);
  let results = (outs MIR_BoolTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def MIR_SelectOp : MIR_Op<"select", [Pure, InferTypeOpAdaptor]> {
  let summary = "elementwise choice between two tensors, with broadcasting";
  let description = [{
    `result = cond ? on_true : on_false`. `cond` is an `i1` tensor; the two
    value operands have the same element type, which is the result's. All
    three broadcast together as in `mir.add`; the result shape is their
    broadcast shape.

    ```mlir
    %y = mir.select %mask, %scores, %neg_inf
        : (tensor<?x?xi1>, tensor<1x32x?x?xf32>, tensor<f32>)
        -> tensor<1x32x?x?xf32>
    ```
  }];
  let arguments = (ins MIR_BoolTensor:$cond, MIR_AnyTensor:$on_true,
                   MIR_AnyTensor:$on_false);
  let results = (outs MIR_AnyTensor:$result);
  let assemblyFormat = "$cond `,` $on_true `,` $on_false attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Unary float ops
//===----------------------------------------------------------------------===//

// An elementwise unary op on float tensors; the result has the operand's type.
class MIR_UnaryFloatOp<string mnemonic, string opSummary, string semantics,
                       list<Trait> traits = []>
    : MIR_Op<mnemonic, !listconcat([Pure, SameOperandsAndResultType,
                                    InferTypeOpInterface], traits)> {
  let summary = opSummary;
  let description = semantics # [{

    Applied elementwise to an f32, f16 or bf16 tensor of any shape; the result
    has the operand's type.

    ```mlir
    %y = mir.}] # mnemonic # [{ %x : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$input);
  let results = (outs MIR_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
}

def MIR_ExpOp : MIR_UnaryFloatOp<"exp", "elementwise natural exponential", [{
    `result = e^x`.
  }]>;

def MIR_LogOp : MIR_UnaryFloatOp<"log", "elementwise natural logarithm", [{
    `result = ln(x)`; NaN for negative `x`, `-inf` at 0.
  }]>;

def MIR_SqrtOp : MIR_UnaryFloatOp<"sqrt", "elementwise square root", [{
    `result = sqrt(x)`; NaN for negative `x`.
  }]>;

def MIR_RsqrtOp : MIR_UnaryFloatOp<"rsqrt", "elementwise reciprocal square root", [{
    `result = 1 / sqrt(x)`; `+inf` at 0, NaN for negative `x`.
  }]>;

def MIR_TanhOp : MIR_UnaryFloatOp<"tanh", "elementwise hyperbolic tangent", [{
    `result = tanh(x)`.
  }]>;

def MIR_ErfOp : MIR_UnaryFloatOp<"erf", "elementwise Gauss error function", [{
    `result = erf(x) = 2/sqrt(pi) * integral_0^x exp(-t^2) dt`.
  }]>;

def MIR_SinOp : MIR_UnaryFloatOp<"sin", "elementwise sine", [{
    `result = sin(x)` for `x` in radians (sinusoidal timestep and position
    embeddings).
  }]>;

def MIR_CosOp : MIR_UnaryFloatOp<"cos", "elementwise cosine", [{
    `result = cos(x)` for `x` in radians.
  }]>;

def MIR_SigmoidOp : MIR_UnaryFloatOp<"sigmoid", "elementwise logistic sigmoid", [{
    `result = 1 / (1 + e^-x)`.
  }]>;

def MIR_SiluOp : MIR_UnaryFloatOp<"silu", "elementwise SiLU (swish) activation", [{
    `result = x * sigmoid(x)`.
  }]>;

def MIR_GeluOp : MIR_UnaryFloatOp<"gelu", "elementwise GELU activation", [{
    `result = 0.5 x (1 + erf(x / sqrt(2)))`, or with `tanh_approx` the
    tanh approximation `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`
    (HF `gelu_pytorch_tanh`, `gelu_new`).
  }]> {
  let arguments = (ins MIR_FloatTensor:$input, UnitAttr:$tanh_approx);
}

def MIR_ReluOp : MIR_UnaryFloatOp<"relu", "elementwise rectified linear unit", [{
    `result = max(x, 0)`.
  }]>;

def MIR_NegOp : MIR_UnaryFloatOp<"neg", "elementwise negation", [{
    `result = -x`. Folds `neg(neg(x)) -> x`.
  }]> {
  let hasFolder = 1;
}

def MIR_AbsOp : MIR_UnaryFloatOp<"abs", "elementwise absolute value", [{
    `result = |x|` (`np.abs`). Folds `abs(abs(x))` and `abs(neg(x))` to
    `abs(x)`.
  }]> {
  let hasFolder = 1;
}

def MIR_FloorOp : MIR_UnaryFloatOp<"floor", "elementwise floor", [{
    `result = floor(x)`, the largest integer not above `x` (`np.floor`).
    Folds `floor(floor(x))`, `floor(ceil(x))` and `floor(round(x))` to the
    inner op.
  }]> {
  let hasFolder = 1;
}

def MIR_CeilOp : MIR_UnaryFloatOp<"ceil", "elementwise ceiling", [{
    `result = ceil(x)`, the smallest integer not below `x` (`np.ceil`).
    Folds `ceil` of `floor`, `ceil` or `round` to the inner op.
  }]> {
  let hasFolder = 1;
}

def MIR_RoundOp : MIR_UnaryFloatOp<"round", "elementwise round half to even", [{
    `result = x` rounded to the nearest integer, halves to the even one
    (`np.round`, `np.rint`: `round(2.5) = 2`, `round(-1.5) = -2`). Folds
    `round` of `floor`, `ceil` or `round` to the inner op.
  }]> {
  let hasFolder = 1;
}

def MIR_SignOp : MIR_UnaryFloatOp<"sign", "elementwise sign", [{
    `result = 1` for `x > 0`, `-1` for `x < 0`, `x` itself for zeros and
    NaN (`np.sign`). Folds `sign(sign(x))` to `sign(x)`.
  }]> {
  let hasFolder = 1;
}

def MIR_ClipOp : MIR_UnaryFloatOp<"clip", "elementwise clamp to [min, max]", [{
    `result = min(max(x, min), max)` (`np.clip(x, min, max)`); NaN stays
    NaN. `min` and `max` are f32 attributes, `-inf` / `+inf` for no bound.
    Verified: neither is NaN and `min <= max`. Folds to `x` when both bounds
    are infinite, and `clip(clip(x))` with nested bounds to the inner clip.
  }]> {
  let arguments = (ins MIR_FloatTensor:$input, MIR_F32Attr:$min, MIR_F32Attr:$max);
  let hasVerifier = 1;
  let hasFolder = 1;
}

def MIR_ActivationOp : MIR_UnaryFloatOp<"activation",
    "elementwise activation function named by an attribute", [{}]> {
  let description = [{
    `result = act(x)` for `act` = `activation`, one of RLX's activations:
    the ones with no op of their own (`quick_gelu`, `relu2`, `relu6`,
    `leaky_relu`, `mish`, `gelu_10`, `laplace`, `hardswish`, `sqrtsoftplus`)
    and, equivalently, those with one (`relu`, `gelu`, `gelu_tanh`, `silu`,
    `sigmoid`, `tanh`; MIRBuilder builds those as their own op). `none` is
    refused: the identity is the input itself.

    Applied elementwise to an f32, f16 or bf16 tensor of any shape; the result
    has the operand's type.

    ```mlir
    %y = mir.activation %x {activation = #mir<activation mish>}
        : (tensor<1x?x64xf32>) -> tensor<1x?x64xf32>
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$input, MIR_ActivationAttr:$activation);
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

// A reduction over a set of axes; the result type is inferred.
class MIR_ReduceOp<string mnemonic, string opSummary, string semantics,
                   Type operandType = MIR_NumericTensor>
    : MIR_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = opSummary;
  let description = semantics # [{

    `axes` is a non-empty list of distinct axes in `[0, rank)`. The reduced
    dims are dropped from the result, or kept with size 1 under `keep_dims`.
    The element type is preserved. The result type is inferred.

    ```mlir
    %y = mir.}] # mnemonic # [{ %x {axes = array<i64: 2>, keep_dims}
        : (tensor<1x?x64xf32>) -> tensor<1x?x1xf32>
    ```
  }];
  let arguments = (ins operandType:$input, DenseI64ArrayAttr:$axes,
                   UnitAttr:$keep_dims);
  let results = (outs operandType:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return verifyReduceOp(getOperation(), getInput().getType(), getAxes());
    }
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes) {
      return inferReduceReturnType(location, adaptor.getInput().getType(),
                                   adaptor.getAxes(), adaptor.getKeepDims(),
                                   inferredReturnTypes);
    }
  }];
}

def MIR_ReduceSumOp : MIR_ReduceOp<"reduce_sum", "sum over a set of axes", [{
    `result = sum of input over axes`.
  }]>;

def MIR_ReduceMeanOp : MIR_ReduceOp<"reduce_mean", "mean over a set of axes", [{
    `result = sum of input over axes / number of reduced elements`, on float
    tensors.
  }], MIR_FloatTensor>;

def MIR_ReduceMaxOp : MIR_ReduceOp<"reduce_max", "maximum over a set of axes", [{
    `result = max of input over axes` (signed on integers).
  }]>;

def MIR_ReduceMinOp : MIR_ReduceOp<"reduce_min", "minimum over a set of axes", [{
    `result = min of input over axes` (signed on integers; NaN propagates).
  }]>;

def MIR_ReduceProdOp : MIR_ReduceOp<"reduce_prod", "product over a set of axes", [{
    `result = product of input over axes` (wrapping on integers).
  }]>;

// The index of the largest or smallest element along one axis.
class MIR_ArgReduceOp<string mnemonic, string opSummary, string semantics>
    : MIR_Op<mnemonic, [Pure, InferTypeOpAdaptor]> {
  let summary = opSummary;
  let description = semantics # [{

    `axis` is in `[-rank, rank)` (negative counts from the end). The axis is
    dropped from the result, or kept with size 1 under `keep_dims`. The
    result is `i64` (NumPy's `intp`); ties give the first index, and a NaN
    wins over every number (the first NaN), as in NumPy. Integers compare
    signed.

    ```mlir
    %i = mir.}] # mnemonic # [{ %x {axis = -1 : i64}
        : (tensor<4x32000xf32>) -> tensor<4xi64>
    ```
  }];
  let arguments = (ins MIR_NumericTensor:$input,
                   DefaultValuedAttr<MIR_I64Attr, "-1">:$axis,
                   UnitAttr:$keep_dims);
  let results = (outs RankedTensorOf<[I64]>:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::llvm::LogicalResult $cppClass::verify() {
      return verifyArgReduceOp(getOperation(), getInput().getType(), getAxis());
    }
    ::llvm::LogicalResult $cppClass::inferReturnTypes(
        ::mlir::MLIRContext *context, std::optional<::mlir::Location> location,
        Adaptor adaptor,
        ::llvm::SmallVectorImpl<::mlir::Type> &inferredReturnTypes) {
      return inferArgReduceReturnType(location, adaptor.getInput().getType(),
                                      adaptor.getAxis(), adaptor.getKeepDims(),
                                      inferredReturnTypes);
    }
  }];
}

def MIR_ArgMaxOp : MIR_ArgReduceOp<"argmax", "index of the maximum along an axis", [{
    `result = argmax of input along axis` (`np.argmax`).
  }]>;

def MIR_ArgMinOp : MIR_ArgReduceOp<"argmin", "index of the minimum along an axis", [{
    `result = argmin of input along axis` (`np.argmin`).
  }]>;

def MIR_CumSumOp : MIR_Op<"cumsum",
    [Pure, SameOperandsAndResultType, InferTypeOpInterface]> {
  let summary = "inclusive prefix sum along one axis";
  let description = [{
    `result[..., j, ...] = sum of input[..., 0..j, ...]` along `axis`
    (`np.cumsum`), in order (wrapping on integers). `axis` is in
    `[-rank, rank)`; the result has the operand's type.

    ```mlir
    %c = mir.cumsum %x {axis = 1 : i64} : (tensor<2x7xf32>) -> tensor<2x7xf32>
    ```
  }];
  let arguments = (ins MIR_NumericTensor:$input, MIR_I64Attr:$axis);
  let results = (outs MIR_NumericTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Routing: top-k selection, grouping and per-row expert matmuls (mixture of
// experts)
//===----------------------------------------------------------------------===//

// top_k orders numbers: no i1 (torch.topk refuses bool too).
def MIR_TopKTensor : RankedTensorOf<[I8, I16, I32, I64, F32, F16, BF16]>;

def MIR_TopKOp : MIR_Op<"top_k", [Pure, InferTypeOpAdaptor]> {
  let summary = "the k largest (or smallest) values along an axis, and where";
  let description = [{
    `values` holds the `k` largest elements of each line of `input` along
    `axis`, in descending order (ascending, the `k` smallest, when `largest`
    is false); `indices` (`i64`) holds their positions on the line
    (`torch.topk(input, k, axis, largest, sorted=True)`). Equal values come
    in the order of their indices; a NaN ranks above every number under
    `largest` and below every number otherwise. Integers compare signed.
    `axis` is in `[-rank, rank)` and `k` in `[1, size of the axis]`; both
    results have the input's shape with the axis of size `k`.

    Each line is walked `k` times (O(k n)): meant for routing and sampling
    (k small), not sorting.

    ```mlir
    %w, %i = mir.top_k %probs {k = 2 : i64}
        : (tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
    ```
  }];
  let arguments = (ins MIR_TopKTensor:$input, MIR_I64Attr:$k,
                   DefaultValuedAttr<MIR_I64Attr, "-1">:$axis,
                   DefaultValuedAttr<BoolAttr, "true">:$largest);
  let results = (outs MIR_TopKTensor:$values,
                      RankedTensorOf<[I64]>:$indices);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def MIR_SortGroupsOp : MIR_Op<"sort_groups", [Pure, InferTypeOpAdaptor]> {
  let summary = "the rows of each group, in order: a counting sort";
  let description = [{
    `groups` (any shape, i32 or i64) names a group in `[0, num_groups)` per
    row (row = the flattened position; a negative group counts from the end,
    one outside `[-G, G)` is clamped, as mir.grouped_matmul reads them).
    `order` (`[R]`, i64) lists the rows group by group, each group's in
    increasing row order (a stable sort); `offsets` (`[G + 1]`, i64) are
    where each group's rows start in `order` (`offsets[G] = R`). A
    mixture-of-experts layer sorts its token slots by expert once and hands
    both to its grouped matmuls, which then take each expert's rows in
    tiles.

    ```mlir
    %order, %offsets = mir.sort_groups %experts {num_groups = 8 : i64}
        : (tensor<1x?x2xi64>) -> (tensor<?xi64>, tensor<9xi64>)
    ```
  }];
  let arguments = (ins MIR_IndexTensor:$groups,
                   ConfinedAttr<MIR_I64Attr, [IntPositive]>:$num_groups);
  let results = (outs RankedTensorOf<[I64]>:$order,
                      RankedTensorOf<[I64]>:$offsets);
  let assemblyFormat =
      "$groups attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def MIR_GroupedMatmulOp : MIR_Op<"grouped_matmul",
    [Pure, InferTypeOpAdaptor, AttrSizedOperandSegments]> {
  let summary = "row-wise matmul with a weight chosen per row from a stack";
  let description = [{
    `result[..., n] = sum_k input[..., k] * weights[groups[...], n, k]`:
    each row of `input` (`[..., K]`, rank >= 2) is multiplied by the
    transposed `[N, K]` matrix its group selects from `weights` (`[G, N, K]`,
    a stack of HF linear weights, e.g. the experts of a mixture-of-experts
    layer). `groups` has the input's shape without `K` (i32 or i64) and is
    read at run time: a negative group counts from the end, one outside
    `[-G, G)` uses a clamped matrix (as mir.gather). The result is the
    input's shape with `N` last, in the input's element type (inferred); the
    weights may be stored in f16 or bf16 (f32 accumulation).

    The kernels run group by group: each weight row of a group is read once
    for all the rows routed to it, and a group no row selects is never read
    (a decode step reads only the routed experts).

    With `sorted(order, offsets)` (mir.sort_groups of `groups`), the kernel
    takes each group's rows from `order[offsets[g] : offsets[g + 1]]` in
    tiles of four rows sharing every weight load, instead of scanning all
    rows per group.

    ```mlir
    %y = mir.grouped_matmul %x, %w, %e
        : (tensor<1x?x2x2048xf32>, tensor<8x1408x2048xf32>, tensor<1x?x2xi64>)
        -> tensor<1x?x2x1408xf32>
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$input, MIR_FloatTensor:$weights,
                   MIR_IndexTensor:$groups,
                   Optional<RankedTensorOf<[I64]>>:$order,
                   Optional<RankedTensorOf<[I64]>>:$offsets);
  let results = (outs MIR_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weights `,` $groups (`sorted` `(` $order^ `,` $offsets `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Recurrences: the state scans of linear-attention layers
//===----------------------------------------------------------------------===//

def MIR_GatedDeltaRuleOp : MIR_Op<"gated_delta_rule",
    [Pure, InferTypeOpAdaptor]> {
  let summary = "the gated delta rule recurrence of linear attention";
  let description = [{
    The recurrence of Gated DeltaNet layers (Qwen3-Next, Qwen3.5 linear
    attention; transformers' `torch_recurrent_gated_delta_rule`). For each
    batch `b` and value head `h`, with `q_t = query[b, t, hk]`,
    `k_t = key[b, t, hk]` for the key head `hk = h / (Hv / Hk)` (each key
    head serves `Hv / Hk` consecutive value heads, as `repeat_interleave`),
    and a state `S` (`[Dk, Dv]`, `initial_state[b, h]` or zeros):

    ```
    q_t, k_t = x * rsqrt(sum(x * x) + 1e-6)    (under qk_l2norm)
    q_t = q_t * scale                          (default 1 / sqrt(Dk))
    S = S * exp(g[b, t, h])
    delta = (value[b, t, h] - S^T k_t) * beta[b, t, h]
    S = S + k_t (outer) delta
    result[b, t, h] = S^T q_t
    ```

    for `t = 0 .. T-1` in order; `final_state[b, h]` is `S` after the last
    step. A decode step is `T = 1` with the previous step's `final_state`
    as `initial_state` (the state is carried like a KV cache). `g` is the
    log of the decay; f32 throughout.

    ```mlir
    %o, %s = mir.gated_delta_rule %q, %k, %v, %g, %beta
        initial_state(%s0) {qk_l2norm}
        : (tensor<1x?x16x128xf32>, tensor<1x?x16x128xf32>,
           tensor<1x?x32x128xf32>, tensor<1x?x32xf32>, tensor<1x?x32xf32>,
           tensor<1x32x128x128xf32>)
        -> (tensor<1x?x32x128xf32>, tensor<1x32x128x128xf32>)
    ```
  }];
  let arguments = (ins MIR_F32Tensor:$query, MIR_F32Tensor:$key,
                   MIR_F32Tensor:$value, MIR_F32Tensor:$g,
                   MIR_F32Tensor:$beta,
                   Optional<MIR_F32Tensor>:$initial_state,
                   OptionalAttr<MIR_F32Attr>:$scale, UnitAttr:$qk_l2norm);
  let results = (outs MIR_F32Tensor:$result, MIR_F32Tensor:$final_state);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $g `,` $beta
    (`initial_state` `(` $initial_state^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Softmax and normalization
//===----------------------------------------------------------------------===//

def MIR_SoftmaxOp : MIR_Op<"softmax",
    [Pure, SameOperandsAndResultType, InferTypeOpInterface]> {
  let summary = "softmax along one axis";
  let description = [{
    `result = exp(x - max(x)) / sum(exp(x - max(x)))` along `axis`, computed
    in a numerically stable way. `axis` is in `[-rank, rank)`; a negative axis
    counts from the end (the default `-1` is the last dim). The result has the
    operand's type.

    ```mlir
    %p = mir.softmax %s {axis = -1 : i64}
        : (tensor<1x32x?x?xf32>) -> tensor<1x32x?x?xf32>
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$input,
                   DefaultValuedAttr<MIR_I64Attr, "-1">:$axis);
  let results = (outs MIR_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def MIR_LogSoftmaxOp : MIR_Op<"log_softmax",
    [Pure, SameOperandsAndResultType, InferTypeOpInterface]> {
  let summary = "log of the softmax along one axis";
  let description = [{
    `result = x - max(x) - log(sum(exp(x - max(x))))` along `axis`, without
    forming the softmax (no `log(0)` for very negative scores). `axis` is in
    `[-rank, rank)`, as for `mir.softmax`. The result has the operand's type.

    ```mlir
    %l = mir.log_softmax %s {axis = -1 : i64}
        : (tensor<4x32000xf32>) -> tensor<4x32000xf32>
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$input,
                   DefaultValuedAttr<MIR_I64Attr, "-1">:$axis);
  let results = (outs MIR_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def MIR_RmsNormOp : MIR_Op<"rms_norm",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "RMS normalization over the last dimension";
  let description = [{
    `result = x / sqrt(mean(x^2, -1) + epsilon) * w`, or `* (1 + w)` with
    `unit_offset` (Gemma's RMSNorm). `weight` is 1-D of size the last dim of
    `x` with the same element type; `epsilon > 0`. The result has the type of
    `x`.

    `round_to` (f16 or bf16, on an f32 result; `mir-compute-precision` sets
    it) rounds the result to that type, kept as f32: what a round trip after
    the op would give, without a kernel of its own.

    ```mlir
    %y = mir.rms_norm %x, %w {epsilon = 1.0e-05 : f32}
        : (tensor<1x?x2048xf32>, tensor<2048xf32>) -> tensor<1x?x2048xf32>
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$input, MIR_FloatTensor:$weight,
                   DefaultValuedAttr<MIR_F32Attr, "1.0e-5f">:$epsilon,
                   UnitAttr:$unit_offset, OptionalAttr<TypeAttr>:$round_to);
  let results = (outs MIR_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def MIR_LayerNormOp : MIR_Op<"layer_norm",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "layer normalization over the last dimension";
  let description = [{
    `result = (x - mean(x, -1)) / sqrt(var(x, -1) + epsilon) * gamma + beta`
    with the biased variance. `gamma` and `beta` are 1-D of size the last dim
    of `x` with the same element type; `epsilon > 0`. The result has the type
    of `x`.

    `round_to` (f16 or bf16, on an f32 result; `mir-compute-precision` sets
    it) rounds the result to that type, kept as f32: what a round trip after
    the op would give, without a kernel of its own.

    ```mlir
    %y = mir.layer_norm %x, %g, %b {epsilon = 1.0e-12 : f32}
        : (tensor<1x?x384xf32>, tensor<384xf32>, tensor<384xf32>)
        -> tensor<1x?x384xf32>
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$input, MIR_FloatTensor:$gamma,
                   MIR_FloatTensor:$beta,
                   DefaultValuedAttr<MIR_F32Attr, "1.0e-5f">:$epsilon,
                   OptionalAttr<TypeAttr>:$round_to);
  let results = (outs MIR_FloatTensor:$result);
  let assemblyFormat = "$input `,` $gamma `,` $beta attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Rotary position embedding
//===----------------------------------------------------------------------===//

def MIR_RopeOp : MIR_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding of every head";
  let description = [{
    `input` is `[B, T, N*head_dim]`; `positions` is an integer `[B, T]` or
    `[T]` tensor of absolute positions. In each head, the first `rotary_dim`
    channels (even, `0 < rotary_dim <= head_dim`) are rotated in pairs by the
    angle `pos * inv_freq[i]`, `i` in `[0, rotary_dim/2)`; the remaining
    channels pass through. `inv_freq[i] = theta^(-2i/rotary_dim)` unless the
    optional f32 operand `inv_freq` (`[rotary_dim/2]`, e.g. Llama 3 scaled
    frequencies) is given, in which case `theta` is ignored. For a pair
    `(a, b)`: `a' = a cos - b sin`, `b' = b cos + a sin`.

    `style = half` pairs channel `i` with `i + rotary_dim/2` (HF
    `rotate_half`, GPT-NeoX); `style = interleaved` pairs `2i` with `2i+1`
    (GPT-J). The result has the type of `input`.

    ```mlir
    %q2 = mir.rope %q, %pos {head_dim = 64 : i64, rotary_dim = 64 : i64,
                             theta = 5.0e+05 : f32}
        : (tensor<1x?x2048xf32>, tensor<?xi64>) -> tensor<1x?x2048xf32>
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$input, MIR_IndexTensor:$positions,
                   Optional<MIR_F32Tensor>:$inv_freq,
                   MIR_I64Attr:$head_dim, MIR_I64Attr:$rotary_dim,
                   DefaultValuedAttr<MIR_F32Attr, "10000.0f">:$theta,
                   DefaultValuedAttr<MIR_RopeStyleAttr,
                                     "::mlir::rlx::RopeStyle::Half">:$style);
  let results = (outs MIR_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions (`inv_freq` `(` $inv_freq^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def MIR_GatherOp : MIR_Op<"gather", [Pure, InferTypeOpAdaptor]> {
  let summary = "gather slices of a table along one axis by index";
  let description = [{
    `result[p..., i..., s...] = table[p..., indices[i...], s...]` where `p`
    ranges over `table.shape[:axis]` and `s` over `table.shape[axis+1:]`. The
    result shape is `table.shape[:axis] + indices.shape +
    table.shape[axis+1:]` (inferred); the element type is the table's.
    `indices` is i32 or i64; a negative index counts from the end
    (`np.take`), and one outside `[-size, size)` reads a clamped row.
    `axis` is in `[0, rank(table))`. Token embedding lookup is the `axis = 0`
    case.

    ```mlir
    %e = mir.gather %table, %ids {axis = 0 : i64}
        : (tensor<32000x2048xf32>, tensor<1x?xi64>) -> tensor<1x?x2048xf32>
    ```
  }];
  let arguments = (ins MIR_AnyTensor:$table, MIR_IndexTensor:$indices,
                   DefaultValuedAttr<MIR_I64Attr, "0">:$axis);
  let results = (outs MIR_AnyTensor:$result);
  let assemblyFormat =
      "$table `,` $indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def MIR_ReshapeOp : MIR_Op<"reshape", [Pure]> {
  let summary = "reinterpret a tensor's elements under a new shape";
  let description = [{
    Same elements in row-major order, new shape; the element type is
    unchanged. The product of the static dims is equal on both sides, and both
    sides have the same number of dynamic dims: at run time the k-th dynamic
    dim of the result equals the k-th dynamic dim of the input. This covers
    the reshapes a transformer needs (`[B, T, N*D] <-> [B, T, N, D]`,
    `[1, T, H] <-> [T, H]`) with `T` (and `B`) dynamic, and it keeps every
    result dim computable without a shape operand.

    Folds when the type does not change and when the input is a constant;
    `reshape(reshape(x))` canonicalizes to one `reshape` of `x`.

    ```mlir
    %y = mir.reshape %x : (tensor<1x?x2048xf32>) -> tensor<1x?x32x64xf32>
    ```
  }];
  let arguments = (ins MIR_AnyTensor:$input);
  let results = (outs MIR_AnyTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizeMethod = 1;
}

def MIR_TransposeOp : MIR_Op<"transpose", [Pure, InferTypeOpAdaptor]> {
  let summary = "permute the dims of a tensor";
  let description = [{
    Permutes the dims: result dim `k` is input dim `permutation[k]`, so
    `result.shape[k] = input.shape[permutation[k]]` and
    `result[i_0, ..., i_(n-1)] = input[j]` with `j[permutation[k]] = i_k`.
    `permutation` is a permutation of `0..rank-1`. The result type is
    inferred.

    Folds the identity permutation; `transpose(transpose(x))` canonicalizes
    to one transpose (or to `x` when the two cancel).

    ```mlir
    %y = mir.transpose %x {permutation = array<i64: 0, 2, 1, 3>}
        : (tensor<1x?x32x64xf32>) -> tensor<1x32x?x64xf32>
    ```
  }];
  let arguments = (ins MIR_AnyTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs MIR_AnyTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizeMethod = 1;
}

def MIR_SliceOp : MIR_Op<"slice", [Pure, InferTypeOpAdaptor]> {
  let summary = "a range of one axis, with a step";
  let description = [{
    Takes `size` entries of `axis`, the first at `start` and each next one
    `step` further (`np.take(x, start' + step * arange(size), axis)`; a
    negative `step` walks backwards: numpy's `a[5:1:-2]` is `start = 5,
    size = 2, step = -2`). All other dims are kept. A negative `start`
    counts from the end of the axis (`start = -1, size = 1` takes the last
    row, also of a dynamic sequence). `axis` is in `[0, rank)`,
    `size >= 0` (0: an empty slice), `step != 0` (default 1), and every
    position `start' + i * step` lies inside the axis, where
    `start' = start` or `dim + start` for a negative `start` (an empty slice
    needs `0 <= start' <= dim`). On a dynamic dim this is checked at compile
    time only where the sign of the positions decides it (all of them
    negative, or all non-negative). The result has `size` at `axis`
    (inferred).

    Folds a unit-step slice of the whole axis to its input; a slice of at
    most one element canonicalizes to step 1, and `slice(slice(x))` on the
    same axis to one slice (starts added, steps multiplied) when both starts
    can be made non-negative.

    ```mlir
    %last = mir.slice %h {axis = 1 : i64, start = -1 : i64, size = 1 : i64}
        : (tensor<1x?x2048xf32>) -> tensor<1x1x2048xf32>
    %rev = mir.slice %x {axis = 0 : i64, start = 5 : i64, size = 2 : i64,
                         step = -2 : i64} : (tensor<8xf32>) -> tensor<2xf32>
    ```
  }];
  let arguments = (ins MIR_AnyTensor:$input, MIR_I64Attr:$axis,
                   MIR_I64Attr:$start, MIR_I64Attr:$size,
                   DefaultValuedAttr<MIR_I64Attr, "1">:$step);
  let results = (outs MIR_AnyTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
  let hasCanonicalizeMethod = 1;
}

def MIR_SplitOp : MIR_Op<"split", [Pure, InferTypeOpAdaptor]> {
  let summary = "consecutive ranges of one axis, one result each";
  let description = [{
    Cuts `axis` into consecutive pieces of `sizes[i]` entries, result `i`
    being entries `[sizes[0] + ... + sizes[i-1], ... + sizes[i])` with all
    other dims kept (`np.split(x, np.cumsum(sizes)[:-1], axis)`). A negative
    `axis` counts from the end. There is one result per size, at least one;
    each size is `>= 0` (0: an empty piece), and on a static dim the sizes
    add up to it (on a dynamic dim the sum is the dim at run time). The
    result types are inferred. Each result is the slice of its range; a
    single piece folds to the input.

    ```mlir
    %q, %k, %v = mir.split %qkv {axis = -1 : i64, sizes = array<i64: 64, 16, 16>}
        : (tensor<1x?x96xf32>) -> (tensor<1x?x64xf32>, tensor<1x?x16xf32>, tensor<1x?x16xf32>)
    ```
  }];
  let arguments = (ins MIR_AnyTensor:$input, MIR_I64Attr:$axis,
                   DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<MIR_AnyTensor>:$results);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def MIR_TileOp : MIR_Op<"tile", [Pure, InferTypeOpAdaptor]> {
  let summary = "repeat the whole tensor along each axis";
  let description = [{
    `result[i...] = input[i % shape(input)...]`: `multiples[d]` copies of the
    input along each dim `d` (`np.tile` with one multiple per dim). The
    result dim is `dim * multiple` (dynamic for a dynamic dim; inferred).
    Folds to the input when every multiple is 1.

    ```mlir
    %t = mir.tile %x {multiples = array<i64: 1, 3>}
        : (tensor<2x5xf32>) -> tensor<2x15xf32>
    ```
  }];
  let arguments = (ins MIR_AnyTensor:$input, DenseI64ArrayAttr:$multiples);
  let results = (outs MIR_AnyTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def MIR_PadOp : MIR_Op<"pad", [Pure, InferTypeOpAdaptor]> {
  let summary = "pad each axis with a constant";
  let description = [{
    Adds `low[d]` elements before and `high[d]` after the input along each dim
    `d`, all equal to `value` (converted to the element type as `mir.cast`
    converts: rounded for floats, truncated toward zero for integers;
    nonzero is true for `i1`): `np.pad(x, list(zip(low, high)),
    constant_values=value)`. The result dim is `low + dim + high` (inferred).
    Folds to the input when every pad is 0.

    ```mlir
    %p = mir.pad %x {low = array<i64: 0, 1>, high = array<i64: 2, 0>,
                     value = 0.0 : f64} : (tensor<2x5xf32>) -> tensor<4x6xf32>
    ```
  }];
  let arguments = (ins MIR_NumericTensor:$input, DenseI64ArrayAttr:$low,
                   DenseI64ArrayAttr:$high,
                   DefaultValuedAttr<F64Attr, "0.0">:$value);
  let results = (outs MIR_NumericTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def MIR_OneHotOp : MIR_Op<"one_hot", [Pure]> {
  let summary = "one-hot encoding of integer indices";
  let description = [{
    `result[..., j, ...] = (indices[...] == j) ? 1 : 0` with the new axis of
    size `depth` at `axis` of the result (`axis` is in `[-rank-1, rank]` of
    the indices, negative counting from the end of the result; the default
    `-1` appends it). An index outside `[0, depth)` gives a row of zeros
    (`tf.one_hot`; `np.eye(depth)[i]` for indices in range). The result
    element type is any numeric type (1 and 0 in it).

    ```mlir
    %h = mir.one_hot %ids {depth = 10 : i64}
        : (tensor<4xi64>) -> tensor<4x10xf32>
    ```
  }];
  let arguments = (ins MIR_IndexTensor:$indices, MIR_I64Attr:$depth,
                   DefaultValuedAttr<MIR_I64Attr, "-1">:$axis);
  let results = (outs MIR_NumericTensor:$result);
  let assemblyFormat =
      "$indices attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def MIR_ConcatOp : MIR_Op<"concat", [Pure, InferTypeOpAdaptor]> {
  let summary = "concatenate tensors along one axis";
  let description = [{
    Joins one or more tensors of the same rank and element type along `axis`
    (in `[0, rank)`); all other dims are equal (a dynamic dim is compatible
    with any size and takes the static size of another input when there is
    one). The result dim at `axis` is the sum of the inputs' (dynamic if any
    of them is). The result type is inferred. Folds a single input.

    ```mlir
    %kv = mir.concat %past, %new {axis = 1 : i64}
        : (tensor<1x?x256xf32>, tensor<1x1x256xf32>) -> tensor<1x?x256xf32>
    ```
  }];
  let arguments = (ins Variadic<MIR_AnyTensor>:$inputs, MIR_I64Attr:$axis);
  let results = (outs MIR_AnyTensor:$result);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def MIR_BroadcastOp : MIR_Op<"broadcast", [Pure]> {
  let summary = "numpy-broadcast a tensor to a larger shape";
  let description = [{
    Broadcasts `input` to the result shape with numpy rules: shapes are
    aligned on the right, and each input dim is 1 (stretched) or equal to the
    result dim; missing leading dims are added. The element type is unchanged.
    There is no shape operand, so a dynamic result dim must come from an input
    dim that is not a static 1 (it takes that dim's run-time size). Folds
    when the types are equal.

    ```mlir
    %y = mir.broadcast %b : (tensor<64xf32>) -> tensor<8x64xf32>
    ```
  }];
  let arguments = (ins MIR_AnyTensor:$input);
  let results = (outs MIR_AnyTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

def MIR_DequantizeOp : MIR_Op<"dequantize", [Pure]> {
  let summary = "a weight stored in lower precision, as a float tensor";
  let description = [{
    Widens `input`, a weight stored in f16, bf16 or ggml blocks
    (`!mir.quant<...>`), to the float element type of the result, element by
    element as llama.cpp's dequantizers do. The shapes are equal. The fusion
    `mir-fuse-dequantize` folds it into the matmuls and gathers that read
    the weight, which then read the stored blocks in place; one left
    standing is a missed fusion.

    ```mlir
    %w = mir.param "blk.0.attn_q.weight" : tensor<2048x2048x!mir.quant<q8_0>>
    %f = mir.dequantize %w : (tensor<2048x2048x!mir.quant<q8_0>>) -> tensor<2048x2048xf32>
    ```
  }];
  let arguments = (ins MIR_WeightTensor:$input);
  let results = (outs MIR_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def MIR_CastOp : MIR_Op<"cast", [Pure]> {
  let summary = "elementwise element-type conversion";
  let description = [{
    Converts each element to the result element type; the shape is unchanged
    (a dynamic dim is compatible with any size). Float to float rounds to
    nearest even; integer to float is signed (`i1` unsigned: true is 1);
    float to integer rounds toward zero; integer to integer sign-extends or
    truncates (`i1` zero-extends). Folds when the types are equal.

    ```mlir
    %h = mir.cast %x : (tensor<1x?x2048xbf16>) -> tensor<1x?x2048xf32>
    ```
  }];
  let arguments = (ins MIR_NumericTensor:$input);
  let results = (outs MIR_NumericTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

include "RLX/Dialect/MIR/IR/MIRFusedOps.td"

#endif // RLX_DIALECT_MIR_IR_MIROPS_TD
