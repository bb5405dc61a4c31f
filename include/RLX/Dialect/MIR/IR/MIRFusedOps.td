//===- MIRFusedOps.td - MIR fused operations ---------------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The fused MIR ops: what the MIR fusion patterns produce and what the
// `direct` lowering policy emits straight away. Each is defined by the
// composition of primitive ops given in its description. Included from
// MIROps.td.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_MIR_IR_MIRFUSEDOPS_TD
#define RLX_DIALECT_MIR_IR_MIRFUSEDOPS_TD

//===----------------------------------------------------------------------===//
// Matmul with epilogue
//===----------------------------------------------------------------------===//

def MIR_FusedMatmulOp : MIR_Op<"fused_matmul",
    [Pure, AttrSizedOperandSegments, InferTypeOpAdaptor]> {
  let summary = "matmul with bias, activation and residual epilogue";
  let description = [{
    `result = act(input · W + bias) + residual`, where `input · W` is
    `mir.matmul %input, %weight` (`input` is `[..., M, K]`, `weight` is
    `[K, N]` or `[N, K]` with `transpose_rhs`), `bias` is an optional `[N]`
    vector, `act` is `activation` (default `none`) and `residual` is an
    optional tensor of the result type added after the activation. All
    operands have the same element type. The result `[..., M, N]` is inferred.

    `round_to` (f16 or bf16, on an f32 result; `mir-compute-precision` sets
    it) rounds the result, after the residual, to that type, kept as f32:
    what a round trip after the op would give, applied as the GEMM stores.

    ```mlir
    %y = mir.fused_matmul %x, %w bias(%b) residual(%r)
        {transpose_rhs, activation = #mir<activation gelu>}
        : (tensor<1x?x384xf32>, tensor<1536x384xf32>, tensor<1536xf32>,
           tensor<1x?x1536xf32>) -> tensor<1x?x1536xf32>
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$input, MIR_WeightTensor:$weight,
                   Optional<MIR_FloatTensor>:$bias,
                   Optional<MIR_FloatTensor>:$residual,
                   UnitAttr:$transpose_rhs,
                   DefaultValuedAttr<MIR_ActivationAttr,
                                     "::mlir::rlx::Activation::None">:$activation,
                   OptionalAttr<TypeAttr>:$round_to);
  let results = (outs MIR_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `)`)?
    (`residual` `(` $residual^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Residual add + normalization
//===----------------------------------------------------------------------===//

def MIR_FusedResidualRmsNormOp : MIR_Op<"fused_residual_rms_norm",
    [Pure, AllTypesMatch<["input", "residual", "sum", "normed"]>]> {
  let summary = "residual add followed by RMS normalization";
  let description = [{
    `sum = input + residual` (same type, no broadcasting) and
    `normed = mir.rms_norm(sum, weight)` with `epsilon` and `unit_offset` as
    in `mir.rms_norm`. Both results have the type of `input`: `sum` is the
    residual stream carried to the next block, `normed` feeds it.

    `round_to` (f16 or bf16, on an f32 result; `mir-compute-precision` sets
    it) rounds both results (`normed` is computed from the
    unrounded sum) to that type, kept as f32: what a round trip after
    the op would give, without a kernel of its own.

    ```mlir
    %sum, %normed = mir.fused_residual_rms_norm %x, %r, %w
        {epsilon = 1.0e-05 : f32}
        : (tensor<1x?x2048xf32>, tensor<1x?x2048xf32>, tensor<2048xf32>)
        -> (tensor<1x?x2048xf32>, tensor<1x?x2048xf32>)
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$input, MIR_FloatTensor:$residual,
                   MIR_FloatTensor:$weight,
                   DefaultValuedAttr<MIR_F32Attr, "1.0e-5f">:$epsilon,
                   UnitAttr:$unit_offset, OptionalAttr<TypeAttr>:$round_to);
  let results = (outs MIR_FloatTensor:$sum, MIR_FloatTensor:$normed);
  let assemblyFormat = "$input `,` $residual `,` $weight attr-dict `:` "
                       "functional-type(operands, results)";
  let hasVerifier = 1;
}

def MIR_FusedResidualLayerNormOp : MIR_Op<"fused_residual_layer_norm",
    [Pure, AllTypesMatch<["input", "residual", "sum", "normed"]>]> {
  let summary = "residual add followed by layer normalization";
  let description = [{
    `sum = input + residual` (same type, no broadcasting) and
    `normed = mir.layer_norm(sum, gamma, beta)` with `epsilon` as in
    `mir.layer_norm`. Both results have the type of `input`.

    `round_to` (f16 or bf16, on an f32 result; `mir-compute-precision` sets
    it) rounds both results (`normed` is computed from the
    unrounded sum) to that type, kept as f32: what a round trip after
    the op would give, without a kernel of its own.

    ```mlir
    %sum, %normed = mir.fused_residual_layer_norm %x, %r, %g, %b
        {epsilon = 1.0e-12 : f32}
        : (tensor<1x?x384xf32>, tensor<1x?x384xf32>, tensor<384xf32>,
           tensor<384xf32>) -> (tensor<1x?x384xf32>, tensor<1x?x384xf32>)
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$input, MIR_FloatTensor:$residual,
                   MIR_FloatTensor:$gamma, MIR_FloatTensor:$beta,
                   DefaultValuedAttr<MIR_F32Attr, "1.0e-5f">:$epsilon,
                   OptionalAttr<TypeAttr>:$round_to);
  let results = (outs MIR_FloatTensor:$sum, MIR_FloatTensor:$normed);
  let assemblyFormat = "$input `,` $residual `,` $gamma `,` $beta attr-dict "
                       "`:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gated linear unit
//===----------------------------------------------------------------------===//

def MIR_FusedGluOp : MIR_Op<"fused_glu", [Pure, InferTypeOpAdaptor]> {
  let summary = "gated linear unit on a concatenated gate/up projection";
  let description = [{
    `gate_up` is `[..., 2I]`, the gate projection followed by the up
    projection along the last dim. `result = act(gate_up[..., :I]) *
    gate_up[..., I:]`, of shape `[..., I]` (inferred; `?` when the last dim
    is dynamic). `activation = silu` is SwiGLU (LLaMA), `gelu_tanh` is GeGLU
    (Gemma); the default is `silu`. The last dim is even when static.

    `round_to` (f16 or bf16, on an f32 result; `mir-compute-precision` sets
    it) rounds the result to that type, kept as f32: what a round trip after
    the op would give, without a kernel of its own.

    ```mlir
    %h = mir.fused_glu %gu {activation = #mir<activation silu>}
        : (tensor<1x?x16384xf32>) -> tensor<1x?x8192xf32>
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$gate_up,
                   DefaultValuedAttr<MIR_ActivationAttr,
                                     "::mlir::rlx::Activation::Silu">:$activation,
                   OptionalAttr<TypeAttr>:$round_to);
  let results = (outs MIR_FloatTensor:$result);
  let assemblyFormat =
      "$gate_up attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def MIR_AttentionOp : MIR_Op<"attention",
    [Pure, AllTypesMatch<["query", "result"]>]> {
  let summary = "multi-head scaled dot-product attention with GQA and masks";
  let description = [{
    `query` is `[B, Tq, num_heads*head_dim]`; `key` and `value` are
    `[B, Tk, num_kv_heads*head_dim]`; the result has the type of `query`.
    Keys and values share one element type: the query's, or f16 / bf16
    beside an f32 query (a KV cache kept in half precision, read widened).
    Heads are contiguous `head_dim` slices of the last dim. Grouped-query
    attention: `num_heads % num_kv_heads == 0` and query head `h` uses kv
    head `h / (num_heads / num_kv_heads)`.

    Per head: `scores = q · kᵀ · scale`; if `softcap > 0`,
    `scores = softcap · tanh(scores / softcap)`; then the mask; then softmax
    over keys; then `· v`. Masks (`mask_kind`):
    - `none`: every query sees every key.
    - `causal`: bottom-right aligned; query `i` sits at absolute position
      `pos(i) = Tk - Tq + i` and sees keys `j <= pos(i)`.
    - `sliding_window`: causal, and additionally `pos(i) - j < window`;
      `window > 0` is required exactly for this kind (0 otherwise).
    - `padding`: the `mask` operand `[B, Tk]` keeps key `j` of batch `b`
      where `mask[b, j]` is nonzero. The operand is required for this kind and
      allowed for no other.
    A query row that sees no key has an unspecified result.

    ```mlir
    %o = mir.attention %q, %k, %v {num_heads = 32 : i64,
        num_kv_heads = 8 : i64, head_dim = 64 : i64, scale = 1.250000e-01 : f32,
        mask_kind = #mir<mask causal>}
        : (tensor<1x?x2048xf32>, tensor<1x?x512xf32>, tensor<1x?x512xf32>)
        -> tensor<1x?x2048xf32>
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$query, MIR_FloatTensor:$key,
                   MIR_FloatTensor:$value, Optional<MIR_MaskTensor>:$mask,
                   MIR_I64Attr:$num_heads, MIR_I64Attr:$num_kv_heads,
                   MIR_I64Attr:$head_dim, MIR_F32Attr:$scale,
                   DefaultValuedAttr<MIR_F32Attr, "0.0f">:$softcap,
                   DefaultValuedAttr<MIR_MaskKindAttr,
                                     "::mlir::rlx::MaskKind::None">:$mask_kind,
                   DefaultValuedAttr<MIR_I64Attr, "0">:$window);
  let results = (outs MIR_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` `(` $mask^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def MIR_AttentionBlockOp : MIR_Op<"attention_block",
    [Pure, AttrSizedOperandSegments, InferTypeOpAdaptor]> {
  let summary = "a whole self-attention block: QKV projection to output";
  let description = [{
    `input` is `[B, T, H]`. In order:
    1. `qkv = input · w_qkvᵀ (+ qkv_bias)` with `w_qkv`
       `[(num_heads + 2*num_kv_heads)*head_dim, H]` in HF layout (the Q rows,
       then K, then V) and the optional `qkv_bias` of the same leading size.
       `q`, `k`, `v` are the three column ranges of `qkv`.
    2. With `q_norm` and `k_norm` (both or neither, each `[head_dim]`):
       per-head RMSNorm of `q` and `k` with epsilon `norm_epsilon`, scaling by
       `(1 + w)` under `norm_unit_offset` (Qwen3 / Gemma 3 QK-norm).
    3. With `rotary_dim > 0`: `mir.rope` of `q` and `k` with `positions`
       (required then, `[B, T]` or `[T]`), `rope_theta`, `rope_style` and the
       optional `inv_freq` `[rotary_dim/2]`. `rotary_dim = 0` means no RoPE,
       and `positions`/`inv_freq` are not allowed.
    4. `mir.attention` of `q`, `k`, `v` with `num_heads`, `num_kv_heads`,
       `head_dim`, `scale`, `softcap`, `mask_kind`, `window` and the optional
       padding `mask` `[B, T]`, with the same rules (`Tq = Tk = T`).
    5. `result = attn · w_oᵀ (+ out_bias)` with `w_o`
       `[H_out, num_heads*head_dim]` and the optional `out_bias` `[H_out]`.
    The result `[B, T, H_out]` is inferred. All float operands except
    `inv_freq` (f32) have the element type of `input`; `w_qkv` and `w_o` may
    instead be kept as stored (f16, bf16 or ggml blocks, rows a whole number
    of blocks) with an f32 `input`: the projections read them as the
    matmuls do.

    `round_to` (f16 or bf16, on an f32 result; `mir-compute-precision` sets
    it) rounds the result to that type, kept as f32, as the output
    projection stores it; the steps before it keep their f32 values.

    ```mlir
    %y = mir.attention_block %x, %wqkv, %wo positions(%pos) {
        num_heads = 32 : i64, num_kv_heads = 8 : i64, head_dim = 64 : i64,
        rotary_dim = 64 : i64, rope_theta = 5.0e+05 : f32,
        scale = 1.250000e-01 : f32, mask_kind = #mir<mask causal>}
        : (tensor<1x?x2048xf32>, tensor<3072x2048xf32>, tensor<2048x2048xf32>,
           tensor<?xi64>) -> tensor<1x?x2048xf32>
    ```
  }];
  let arguments = (ins MIR_FloatTensor:$input, MIR_WeightTensor:$w_qkv,
                   MIR_WeightTensor:$w_o,
                   Optional<MIR_IndexTensor>:$positions,
                   Optional<MIR_F32Tensor>:$inv_freq,
                   Optional<MIR_FloatTensor>:$q_norm,
                   Optional<MIR_FloatTensor>:$k_norm,
                   Optional<MIR_FloatTensor>:$qkv_bias,
                   Optional<MIR_FloatTensor>:$out_bias,
                   Optional<MIR_MaskTensor>:$mask,
                   MIR_I64Attr:$num_heads, MIR_I64Attr:$num_kv_heads,
                   MIR_I64Attr:$head_dim,
                   DefaultValuedAttr<MIR_I64Attr, "0">:$rotary_dim,
                   DefaultValuedAttr<MIR_F32Attr, "10000.0f">:$rope_theta,
                   DefaultValuedAttr<MIR_RopeStyleAttr,
                                     "::mlir::rlx::RopeStyle::Half">:$rope_style,
                   MIR_F32Attr:$scale,
                   DefaultValuedAttr<MIR_F32Attr, "0.0f">:$softcap,
                   DefaultValuedAttr<MIR_MaskKindAttr,
                                     "::mlir::rlx::MaskKind::None">:$mask_kind,
                   DefaultValuedAttr<MIR_I64Attr, "0">:$window,
                   DefaultValuedAttr<MIR_F32Attr, "1.0e-6f">:$norm_epsilon,
                   UnitAttr:$norm_unit_offset, OptionalAttr<TypeAttr>:$round_to);
  let results = (outs MIR_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $w_qkv `,` $w_o
    (`positions` `(` $positions^ `)`)?
    (`inv_freq` `(` $inv_freq^ `)`)?
    (`q_norm` `(` $q_norm^ `)`)?
    (`k_norm` `(` $k_norm^ `)`)?
    (`qkv_bias` `(` $qkv_bias^ `)`)?
    (`out_bias` `(` $out_bias^ `)`)?
    (`mask` `(` $mask^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise region
//===----------------------------------------------------------------------===//

def MIR_ElementwiseOp : MIR_Op<"elementwise",
    [Pure, IsolatedFromAbove]> {
  let summary = "a fused elementwise computation given by a scalar region";
  let description = [{
    The inputs broadcast (numpy rules, as in `mir.add`) to the result shape,
    which is their broadcast shape. For each result element the body runs on
    the corresponding input elements: the single block has one argument per
    input, of that input's element type, holds only scalar `arith` and `math`
    ops without regions, and ends in `mir.yield` of one value of the result
    element type. The body is isolated from above: constants are defined
    inside it.

    ```mlir
    %y = mir.elementwise %a, %b {
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %y : f32
      %e = math.exp %s : f32
      mir.yield %e : f32
    } : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
    ```
  }];
  let arguments = (ins Variadic<MIR_NumericTensor>:$inputs);
  let results = (outs MIR_NumericTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat =
      "$inputs $body attr-dict `:` functional-type($inputs, results)";
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def MIR_YieldOp : MIR_Op<"yield",
    [Pure, Terminator, HasParent<"ElementwiseOp">]> {
  let summary = "yield the scalar result of a mir.elementwise body";
  let description = [{
    Terminates the body of `mir.elementwise` with the value of the current
    result element; its type is the result element type.

    ```mlir
    mir.yield %e : f32
    ```
  }];
  let arguments = (ins AnyTypeOf<[AnySignlessInteger, F32, F16, BF16]>:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
  let hasVerifier = 1;
}

#endif // RLX_DIALECT_MIR_IR_MIRFUSEDOPS_TD
