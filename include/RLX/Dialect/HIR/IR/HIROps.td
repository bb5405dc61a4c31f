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
include "mlir/Interfaces/ControlFlowInterfaces.td"

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

def HIR_ParamOp : HIR_Op<"param", [Pure]> {
  let summary = "a named weight tensor (symbolic: no data in the IR)";
  let description = [{
    Declares a weight by name. The runtime binds the data at load time; the
    IR only carries the name, the shape and the element type. The shape must
    be static. `storage`, when set, is the element type the weight is stored
    in (f16, bf16 or ggml blocks, `!mir.quant<...>`): the blocks compute
    with the f32 value, and the lowering keeps the stored weight up to the
    kernels that can read it (`mir.param` of the storage type, then
    `mir.dequantize`).

    ```mlir
    %w = hir.param "model.norm.weight" : tensor<2048xf32>
    %q = hir.param "blk.0.attn_q.weight" {storage = !mir.quant<q4_K>}
        : tensor<2048x2048xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, OptionalAttr<TypeAttr>:$storage);
  let results = (outs HIR_AnyTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
  let builders = [
    OpBuilder<(ins "::mlir::Type":$type, "::mlir::StringAttr":$name), [{
      build($_builder, $_state, type, name, /*storage=*/nullptr);
    }]>
  ];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Shared argument lists
//===----------------------------------------------------------------------===//

// Attention configuration shared by hir.attention and the composite layers.
defvar HIR_AttnConfig = (ins
    ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
    ConfinedAttr<I64Attr, [IntPositive]>:$num_kv_heads,
    ConfinedAttr<I64Attr, [IntPositive]>:$head_dim);

// RoPE configuration of the decoder layers. rotary_dim = 0 means head_dim.
defvar HIR_RopeConfig = (ins
    DefaultValuedAttr<F32Attr, "10000.0">:$rope_theta,
    DefaultValuedAttr<I64Attr, "0">:$rotary_dim,
    DefaultValuedAttr<HIR_RopeStyleAttr, "::mlir::rlx::RopeStyle::Half">:$rope_style);

//===----------------------------------------------------------------------===//
// Embeddings and heads
//===----------------------------------------------------------------------===//

def HIR_EmbedOp : HIR_Op<"embed", [Pure]> {
  let summary = "token embedding lookup";
  let description = [{
    Gathers rows of `table` (`[vocab, hidden]`) for the token ids `ids`
    (`[batch, seq]`, i32 or i64). The result is `[batch, seq, hidden]`.
    Ids outside `[0, vocab)` are a run-time error of the back end.

    ```mlir
    %h = hir.embed %ids, %table
        : (tensor<1x?xi32>, tensor<32000x2048xf32>) -> tensor<1x?x2048xf32>
    ```
  }];
  let arguments = (ins HIR_IndexTensor:$ids, HIR_FloatTensor:$table);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat =
      "$ids `,` $table attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HIR_EmbedScaleOp : HIR_Op<"embed_scale",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "multiply embeddings by a constant (Gemma: sqrt(hidden))";
  let description = [{
    `y = x * scale`. Gemma multiplies token embeddings by `sqrt(hidden)`.

    ```mlir
    %y = hir.embed_scale %x {scale = 45.254834 : f32}
        : (tensor<1x?x2048xf32>) -> tensor<1x?x2048xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input, F32Attr:$scale);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasFolder = 1;
}

def HIR_GatherLastTokenOp : HIR_Op<"gather_last_token", [Pure]> {
  let summary = "keep the last position of the sequence";
  let description = [{
    `[batch, seq, hidden] -> [batch, 1, hidden]`: the hidden state of the last
    token, from which a causal LM predicts the next one.

    ```mlir
    %last = hir.gather_last_token %h
        : (tensor<1x?x2048xf32>) -> tensor<1x1x2048xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HIR_LmHeadOp : HIR_Op<"lm_head", [Pure]> {
  let summary = "project hidden states to vocabulary logits";
  let description = [{
    `logits = x · weightᵀ` with `weight` of shape `[vocab, hidden]`. With
    `tied`, `weight` is the token embedding table (the HF
    `tie_word_embeddings` case); the arithmetic is the same, the flag records
    where the weight comes from.

    ```mlir
    %logits = hir.lm_head %h, %w {tied}
        : (tensor<1x1x2048xf32>, tensor<32000x2048xf32>) -> tensor<1x1x32000xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input, HIR_FloatTensor:$weight,
                   UnitAttr:$tied);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HIR_LogitSoftcapOp : HIR_Op<"logit_softcap",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "soft-cap values: cap * tanh(x / cap)";
  let description = [{
    Gemma 2 bounds its final logits (cap 30) and attention scores (cap 50).

    ```mlir
    %y = hir.logit_softcap %logits {cap = 30.0 : f32}
        : (tensor<1x1x256000xf32>) -> tensor<1x1x256000xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input, F32Attr:$cap);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HIR_ClsPoolOp : HIR_Op<"cls_pool", [Pure]> {
  let summary = "take the first ([CLS]) token";
  let description = [{
    `[batch, seq, hidden] -> [batch, hidden]`.

    ```mlir
    %cls = hir.cls_pool %h : (tensor<2x?x384xf32>) -> tensor<2x384xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def HIR_MeanPoolOp : HIR_Op<"mean_pool", [Pure]> {
  let summary = "mean over the sequence, optionally under an attention mask";
  let description = [{
    `[batch, seq, hidden] -> [batch, hidden]`. With `mask` (`[batch, seq]`,
    nonzero = real token), padded positions are excluded: the
    sentence-transformers mean pooling.

    ```mlir
    %e = hir.mean_pool %h mask(%m)
        : (tensor<2x?x384xf32>, tensor<2x?xi32>) -> tensor<2x384xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input,
                   Optional<HIR_AnyTensor>:$mask);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`mask` `(` $mask^ `)`)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Vision embeddings
//===----------------------------------------------------------------------===//

def HIR_PatchEmbedOp : HIR_Op<"patch_embed", [Pure]> {
  let summary = "image patches to embeddings (a stride-P convolution)";
  let description = [{
    `pixels` is `[batch, channels, height, width]`; `weight` is the HF
    `Conv2d(channels, hidden, kernel_size=P, stride=P)` weight `[hidden,
    channels, P, P]` and `bias` its `[hidden]`. Each `P x P` patch, in
    row-major order over the `(height/P) x (width/P)` grid, becomes one token:
    the result is `[batch, (height/P)*(width/P), hidden]`. Rows or columns
    past the last whole patch are dropped, as the convolution does.

    ```mlir
    %p = hir.patch_embed %pixels, %w, %b {patch_size = 16 : i64}
        : (tensor<?x3x224x224xf32>, tensor<768x3x16x16xf32>, tensor<768xf32>)
        -> tensor<?x196x768xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$pixels, HIR_FloatTensor:$weight,
                   HIR_FloatTensor:$bias,
                   ConfinedAttr<I64Attr, [IntPositive]>:$patch_size);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat = [{
    $pixels `,` $weight `,` $bias attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HIR_InsertTokensOp : HIR_Op<"insert_tokens", [Pure]> {
  let summary = "insert learned tokens into every sequence (CLS, registers)";
  let description = [{
    `input` is `[batch, seq, hidden]` and `tokens` a parameter `[1, n,
    hidden]`; every sequence gets the `n` tokens before its position
    `position` (0: in front, as ViT's `[CLS]`; DINOv2's register tokens go
    after `[CLS]`, at 1). The result is `[batch, seq + n, hidden]`.

    ```mlir
    %x = hir.insert_tokens %p, %cls {position = 0 : i64}
        : (tensor<?x196x768xf32>, tensor<1x1x768xf32>) -> tensor<?x197x768xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input, HIR_FloatTensor:$tokens,
                   DefaultValuedAttr<ConfinedAttr<I64Attr, [IntNonNegative]>,
                                     "0">:$position);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $tokens attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HIR_PositionEmbedOp : HIR_Op<"position_embed",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "add learned 2-D position embeddings, resized to the grid";
  let description = [{
    `input` is `[batch, leading + gh*gw, hidden]`: `leading` tokens (the
    `[CLS]` token) and then the patches of a `gh x gw` grid (`grid`), row
    by row. `table` is the model's `[1, leading + s*s, hidden]` position
    embeddings for an `s x s` grid. The leading tokens add their rows as
    they are; the `s x s` patch rows are resized to `gh x gw` first, by
    PyTorch's bicubic interpolation (`interpolate(mode="bicubic",
    align_corners=False)`, as ViT's and DINOv2's `interpolate_pos_encoding`;
    with `antialias`, PyTorch's antialiased form, as DINOv2 with registers),
    which leaves them unchanged when the grid is `s x s`.

    ```mlir
    %y = hir.position_embed %x, %pos {grid = array<i64: 16, 24>, leading = 1 : i64}
        : (tensor<?x385x768xf32>, tensor<1x197x768xf32>) -> tensor<?x385x768xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input, HIR_FloatTensor:$table,
                   DenseI64ArrayAttr:$grid,
                   DefaultValuedAttr<ConfinedAttr<I64Attr, [IntNonNegative]>,
                                     "1">:$leading,
                   UnitAttr:$antialias);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $table attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

class HIR_RmsNormBase<string mnemonic, string formula>
    : HIR_Op<mnemonic, [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "RMS normalization over the last dimension, " # formula;
  let description = [{
    `y = x / sqrt(mean(x^2, -1) + epsilon) * }] # formula # [{`, with
    `weight` of shape `[hidden]` where `hidden` is the last dimension of `x`.

    ```mlir
    %y = hir.}] # mnemonic # [{ %x, %w {epsilon = 1.0e-05 : f32}
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

def HIR_RmsNormOp : HIR_RmsNormBase<"rms_norm", "weight">;
def HIR_GemmaRmsNormOp : HIR_RmsNormBase<"gemma_rms_norm", "(1 + weight)">;

def HIR_LayerNormOp : HIR_Op<"layer_norm",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "layer normalization over the last dimension";
  let description = [{
    `y = (x - mean) / sqrt(var + epsilon) * gamma + beta`, statistics over the
    last dimension (biased variance, as PyTorch).

    ```mlir
    %y = hir.layer_norm %x, %g, %b {epsilon = 1.0e-12 : f32}
        : (tensor<1x?x384xf32>, tensor<384xf32>, tensor<384xf32>) -> tensor<1x?x384xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input, HIR_FloatTensor:$gamma,
                   HIR_FloatTensor:$beta,
                   DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HIR_LayerScaleOp : HIR_Op<"layer_scale",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "per-channel scale (DINOv2 LayerScale)";
  let description = [{
    `y = x * gamma` with `gamma` of shape `[hidden]`.

    ```mlir
    %y = hir.layer_scale %x, %g
        : (tensor<1x?x768xf32>, tensor<768xf32>) -> tensor<1x?x768xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input, HIR_FloatTensor:$gamma);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat =
      "$input `,` $gamma attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra and elementwise
//===----------------------------------------------------------------------===//

def HIR_LinearOp : HIR_Op<"linear", [Pure]> {
  let summary = "dense layer: act(x · weightᵀ + bias)";
  let description = [{
    `weight` has the Hugging Face layout `[out, in]`; `x` is `[..., in]`; the
    optional `bias` is `[out]`; the result is `[..., out]`.

    ```mlir
    %y = hir.linear %x, %w bias(%b) {activation = #hir<activation gelu>}
        : (tensor<1x?x384xf32>, tensor<1536x384xf32>, tensor<1536xf32>)
        -> tensor<1x?x1536xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input, HIR_FloatTensor:$weight,
                   Optional<HIR_FloatTensor>:$bias,
                   DefaultValuedAttr<HIR_ActivationAttr,
                       "::mlir::rlx::Activation::None">:$activation);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` `(` $bias^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HIR_AddOp : HIR_Op<"add", [Pure, Commutative,
    AllTypesMatch<["lhs", "rhs", "result"]>]> {
  let summary = "elementwise sum of two tensors of the same type (residual)";
  let description = [{
    ```mlir
    %y = hir.add %x, %res : (tensor<1x?x2048xf32>, tensor<1x?x2048xf32>) -> tensor<1x?x2048xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$lhs, HIR_FloatTensor:$rhs);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat =
      "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def HIR_RopeOp : HIR_Op<"rope", [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding";
  let description = [{
    `x` is `[batch, seq, heads * head_dim]`; `positions` is `[batch, seq]` or
    `[seq]` (integer). The first `rotary_dim` channels of every head are
    rotated by `pos * inv_freq[i]`, `inv_freq[i] = theta^(-2i / rotary_dim)`,
    unless the optional `inv_freq` operand (`[rotary_dim / 2]`, f32) is given
    (scaled RoPE variants such as LLaMA 3's are computed by the front end).
    `style = half` pairs channel `i` with `i + rotary_dim / 2` (HF
    `rotate_half`); `interleaved` pairs `2i` with `2i + 1`.

    ```mlir
    %q2 = hir.rope %q, %pos {head_dim = 64 : i64, rotary_dim = 64 : i64, theta = 500000.0 : f32}
        : (tensor<1x?x2048xf32>, tensor<1x?xi32>) -> tensor<1x?x2048xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input, HIR_IndexTensor:$positions,
                   Optional<HIR_FloatTensor>:$inv_freq,
                   ConfinedAttr<I64Attr, [IntPositive]>:$head_dim,
                   ConfinedAttr<I64Attr, [IntPositive]>:$rotary_dim,
                   DefaultValuedAttr<F32Attr, "10000.0">:$theta,
                   DefaultValuedAttr<HIR_RopeStyleAttr,
                       "::mlir::rlx::RopeStyle::Half">:$style);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $positions (`inv_freq` `(` $inv_freq^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HIR_AttentionOp : HIR_Op<"attention", [Pure]> {
  let summary = "scaled dot-product attention with GQA and masks";
  let description = [{
    `q` is `[batch, q_len, num_heads * head_dim]`; `k` and `v` are
    `[batch, kv_len, num_kv_heads * head_dim]`; the result has `q`'s type.
    Query head `h` reads key/value head `h / (num_heads / num_kv_heads)`.
    `scores = q·kᵀ · scale` (scale 0 means `1/sqrt(head_dim)`), soft-capped
    as `softcap * tanh(scores / softcap)` when `softcap > 0`, masked, then
    softmax over keys and multiplied by `v`.

    Masks: `causal` is bottom-right aligned (query `i` sits at position
    `kv_len - q_len + i` and sees keys `j <= ` that position, as in a KV-cache
    step); `sliding_window` is causal and also requires
    `pos(i) - j < window`; `padding` takes the `mask` operand (`[batch,
    kv_len]`, nonzero keeps a key); `none` sees every key.

    ```mlir
    %o = hir.attention %q, %k, %v {num_heads = 32 : i64, num_kv_heads = 8 : i64,
                                   head_dim = 64 : i64, mask_kind = #hir<mask causal>}
        : (tensor<1x?x2048xf32>, tensor<1x?x512xf32>, tensor<1x?x512xf32>) -> tensor<1x?x2048xf32>
    ```
  }];
  let arguments = !con((ins HIR_FloatTensor:$q, HIR_FloatTensor:$k,
                           HIR_FloatTensor:$v, Optional<HIR_AnyTensor>:$mask),
                       HIR_AttnConfig,
                       (ins DefaultValuedAttr<HIR_MaskKindAttr,
                                "::mlir::rlx::MaskKind::Causal">:$mask_kind,
                            DefaultValuedAttr<I64Attr, "0">:$window,
                            DefaultValuedAttr<F32Attr, "0.0">:$scale,
                            DefaultValuedAttr<F32Attr, "0.0">:$softcap));
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat = [{
    $q `,` $k `,` $v (`mask` `(` $mask^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Feed-forward blocks
//===----------------------------------------------------------------------===//

class HIR_GatedFfnBase<string mnemonic, string act>
    : HIR_Op<mnemonic, [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "gated feed-forward: down(" # act # "(gate(x)) * up(x))";
  let description = [{
    `x` is `[..., hidden]`; `w_gate` and `w_up` are `[inter, hidden]`;
    `w_down` is `[hidden, inter]` (Hugging Face layouts, no biases).

    ```mlir
    %y = hir.}] # mnemonic # [{ %x, %wg, %wu, %wd
        : (tensor<1x?x2048xf32>, tensor<8192x2048xf32>, tensor<8192x2048xf32>,
           tensor<2048x8192xf32>) -> tensor<1x?x2048xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input, HIR_FloatTensor:$w_gate,
                   HIR_FloatTensor:$w_up, HIR_FloatTensor:$w_down);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $w_gate `,` $w_up `,` $w_down attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HIR_SwigluOp : HIR_GatedFfnBase<"swiglu", "silu">;
def HIR_GegluOp : HIR_GatedFfnBase<"geglu", "gelu_tanh">;

def HIR_PackedSwigluOp : HIR_Op<"packed_swiglu",
    [Pure, AttrSizedOperandSegments, AllTypesMatch<["input", "result"]>]> {
  let summary = "gated feed-forward with packed gate/up weights and biases";
  let description = [{
    `h = x · w_inᵀ + b_in` with `w_in` `[2*inter, hidden]` (the gate's rows,
    then the up projection's); `y = (silu(h[..., :inter]) * h[..., inter:]) ·
    w_outᵀ + b_out` with `w_out` `[hidden, inter]`. The biases are optional.
    DINOv2's SwiGLU-FFN (`weights_in` / `weights_out`).

    ```mlir
    %y = hir.packed_swiglu %x, %wi bias(%bi), %wo bias(%bo)
        : (tensor<?x257x1536xf32>, tensor<8192x1536xf32>, tensor<8192xf32>,
           tensor<1536x4096xf32>, tensor<1536xf32>) -> tensor<?x257x1536xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input, HIR_FloatTensor:$w_in,
                   Optional<HIR_FloatTensor>:$b_in, HIR_FloatTensor:$w_out,
                   Optional<HIR_FloatTensor>:$b_out);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $w_in (`bias` `(` $b_in^ `)`)? `,` $w_out
    (`bias` `(` $b_out^ `)`)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HIR_MoeMlpOp : HIR_Op<"moe_mlp",
    [Pure, AttrSizedOperandSegments, AllTypesMatch<["input", "result"]>]> {
  let summary = "mixture-of-experts MLP: the router's top experts per token";
  let description = [{
    `x` is `[batch, seq, hidden]`; `router` `[experts, hidden]`; the experts'
    SwiGLU weights are stacks: `w_gate`, `w_up` `[experts, inter, hidden]`,
    `w_down` `[experts, hidden, inter]` (hir.stack of HF per-expert
    weights). Each token runs the `experts_per_token` experts of highest
    `softmax(x · routerᵀ)` probability, their outputs summed with those
    probabilities (renormalized to sum 1 under `norm_topk_prob`); the
    optional `shared_expert(w_gate, w_up, w_down, gate)` is a dense MLP
    every token runs, scaled by `sigmoid(x · gateᵀ)` (`gate`:
    `[1, hidden]`). `activation` is the experts' gate activation (SiLU).
    The decoder layers' `moe(...)` form is this block in place of the MLP.

    ```mlir
    %y = hir.moe_mlp %x router(%r) experts(%wg, %wu, %wd)
           {experts_per_token = 2 : i64, norm_topk_prob}
        : (tensor<1x?x64xf32>, tensor<4x64xf32>, tensor<4x48x64xf32>,
           tensor<4x48x64xf32>, tensor<4x64x48xf32>) -> tensor<1x?x64xf32>
    ```
  }];
  let arguments = !con((ins HIR_FloatTensor:$input, HIR_FloatTensor:$router,
                            HIR_FloatTensor:$w_gate, HIR_FloatTensor:$w_up,
                            HIR_FloatTensor:$w_down,
                            Optional<HIR_FloatTensor>:$shared_w_gate,
                            Optional<HIR_FloatTensor>:$shared_w_up,
                            Optional<HIR_FloatTensor>:$shared_w_down,
                            Optional<HIR_FloatTensor>:$shared_expert_gate),
      (ins ConfinedAttr<I64Attr, [IntPositive]>:$experts_per_token,
           UnitAttr:$norm_topk_prob,
           DefaultValuedAttr<HIR_ActivationAttr,
                             "::mlir::rlx::Activation::Silu">:$activation));
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat = [{
    $input `router` `(` $router `)` `experts` `(` $w_gate `,` $w_up `,`
    $w_down `)` (`shared_expert` `(` $shared_w_gate^ `,` $shared_w_up `,`
    $shared_w_down `,` $shared_expert_gate `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HIR_GeluFfnOp : HIR_Op<"gelu_ffn",
    [Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "BERT feed-forward: gelu(x · w_inᵀ + b_in) · w_outᵀ + b_out";
  let description = [{
    `w_in` is `[inter, hidden]`, `b_in` `[inter]`, `w_out` `[hidden, inter]`,
    `b_out` `[hidden]`. `tanh_approx` selects the tanh form of GELU.

    ```mlir
    %y = hir.gelu_ffn %x, %w1, %b1, %w2, %b2
        : (tensor<1x?x384xf32>, tensor<1536x384xf32>, tensor<1536xf32>,
           tensor<384x1536xf32>, tensor<384xf32>) -> tensor<1x?x384xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input, HIR_FloatTensor:$w_in,
                   HIR_FloatTensor:$b_in, HIR_FloatTensor:$w_out,
                   HIR_FloatTensor:$b_out, UnitAttr:$tanh_approx);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $w_in `,` $b_in `,` $w_out `,` $b_out attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def HIR_StackOp : HIR_Op<"stack", [Pure, SameTypeOperands]> {
  let summary = "stack tensors of one type along a new leading axis";
  let description = [{
    `result[i] = inputs[i]`: `n` tensors of one type `[d...]` make one
    `[n, d...]` tensor, as `torch.stack(inputs)`. The experts of a
    mixture-of-experts layer, stored one weight per expert in HF checkpoints,
    become the stacks the layer takes; stacked parameters are joined once at
    load time (a parameter that concatenates its sources), other values at
    run time.

    ```mlir
    %w = hir.stack %e0, %e1, %e2, %e3
        : (tensor<48x32xf32>, tensor<48x32xf32>, tensor<48x32xf32>,
           tensor<48x32xf32>) -> tensor<4x48x32xf32>
    ```
  }];
  let arguments = (ins Variadic<HIR_AnyTensor>:$inputs);
  let results = (outs HIR_AnyTensor:$result);
  let assemblyFormat =
      "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Composite layers
//===----------------------------------------------------------------------===//

// Mixture of experts: with `moe(router)` (`[experts, hidden]`) the MLP weights
// are stacks, `w_gate` / `w_up` `[experts, inter, hidden]` and `w_down`
// `[experts, hidden, inter]` (hir.stack of the per-expert HF weights, or a
// GGUF's stacked tensors); each token runs the `experts_per_token` experts
// of highest router softmax probability, weighted by those probabilities
// (renormalized to sum 1 under `norm_topk_prob`: Mixtral, Qwen3-MoE). The
// optional `shared_expert(w_gate, w_up, w_down, gate)` (Qwen2-MoE) is a dense
// MLP every token runs, scaled by `sigmoid(x · gateᵀ)` (`gate`: `[1, hidden]`).
defvar HIR_MoeWeights = (ins Optional<HIR_FloatTensor>:$router,
                             Optional<HIR_FloatTensor>:$shared_w_gate,
                             Optional<HIR_FloatTensor>:$shared_w_up,
                             Optional<HIR_FloatTensor>:$shared_w_down,
                             Optional<HIR_FloatTensor>:$shared_expert_gate);

// A pre-norm decoder layer (LLaMA family). The `cached` variants take the past
// keys and values and also return the present ones.
//
// Every variant takes optional biases: `qkv_bias(bq, bk, bv)` (all three or
// none; `[heads*head_dim]`, `[kv_heads*head_dim]` twice), `o_bias(bo)`
// (`[hidden]`) and `mlp_bias(b_gate, b_up, b_down)` (`[inter]`, `[inter]`,
// `[hidden]`), the MLP's gate activation `mlp_activation` (SiLU for
// LLaMA and Qwen3, tanh GELU for Gemma), and the attention scores' `scale`
// (0: 1/sqrt(head_dim); Gemma's query_pre_attn_scalar, or a RoPE attention
// factor squared).
class HIR_DecoderLayerBase<string mnemonic, string what, dag extraWeights,
                           string extraFormat, bit decode,
                           dag extraAttrs = (ins),
                           string defaultAct = "::mlir::rlx::Activation::Silu">
    : HIR_Op<mnemonic, [Pure, AttrSizedOperandSegments]> {
  let summary = what;
  let arguments = !con(
      (ins HIR_FloatTensor:$input, HIR_IndexTensor:$positions),
      !if(decode, (ins HIR_FloatTensor:$past_k, HIR_FloatTensor:$past_v,
                       Optional<HIR_AnyTensor>:$mask), (ins)),
      (ins HIR_FloatTensor:$input_norm, HIR_FloatTensor:$wq,
           HIR_FloatTensor:$wk, HIR_FloatTensor:$wv, HIR_FloatTensor:$wo,
           Optional<HIR_FloatTensor>:$bq, Optional<HIR_FloatTensor>:$bk,
           Optional<HIR_FloatTensor>:$bv, Optional<HIR_FloatTensor>:$bo),
      extraWeights,
      (ins HIR_FloatTensor:$w_gate, HIR_FloatTensor:$w_up,
           HIR_FloatTensor:$w_down, Optional<HIR_FloatTensor>:$b_gate,
           Optional<HIR_FloatTensor>:$b_up, Optional<HIR_FloatTensor>:$b_down,
           Optional<HIR_FloatTensor>:$inv_freq),
      HIR_MoeWeights,
      HIR_AttnConfig, HIR_RopeConfig,
      (ins DefaultValuedAttr<F32Attr, "1.0e-5">:$rms_epsilon,
           DefaultValuedAttr<I64Attr, "0">:$window,
           DefaultValuedAttr<F32Attr, "0.0">:$scale,
           DefaultValuedAttr<HIR_ActivationAttr, defaultAct>:$mlp_activation,
           DefaultValuedAttr<I64Attr, "0">:$experts_per_token,
           UnitAttr:$norm_topk_prob),
      extraAttrs);
  let results = !if(decode,
      (outs HIR_FloatTensor:$result, HIR_FloatTensor:$present_k,
            HIR_FloatTensor:$present_v),
      (outs HIR_FloatTensor:$result));
  let assemblyFormat = "$input `,` $positions "
      # !if(decode, "`past` `(` $past_k `,` $past_v `)` "
                    # "(`mask` `(` $mask^ `)`)? ", "")
      # "`attn` `(` $input_norm `,` $wq `,` $wk `,` $wv `,` $wo `)` "
      # "(`qkv_bias` `(` $bq^ `,` $bk `,` $bv `)`)? "
      # "(`o_bias` `(` $bo^ `)`)? "
      # extraFormat
      # "`mlp` `(` $w_gate `,` $w_up `,` $w_down `)` "
      # "(`mlp_bias` `(` $b_gate^ `,` $b_up `,` $b_down `)`)? "
      # "(`inv_freq` `(` $inv_freq^ `)`)? "
      # "(`moe` `(` $router^ `)`)? "
      # "(`shared_expert` `(` $shared_w_gate^ `,` $shared_w_up `,` "
      # "$shared_w_down `,` $shared_expert_gate `)`)? attr-dict `:` "
      # "functional-type(operands, results)";
  let hasVerifier = 1;
}

defvar HIR_LlamaDesc = [{
    A LLaMA decoder layer, pre-norm:
    ```
    h = x + o_proj(attention(rope(q_proj(rms_norm(x))), rope(k_proj(..)), v_proj(..)))
    y = h + down(silu(gate(rms_norm(h))) * up(rms_norm(h)))
    ```
    Weights use HF layouts: `wq [heads*head_dim, hidden]`, `wk`/`wv`
    `[kv_heads*head_dim, hidden]`, `wo [hidden, heads*head_dim]`, norms
    (`input_norm` before attention, `post_norm` before the MLP) `[hidden]`, `w_gate`/`w_up` `[inter, hidden]`, `w_down [hidden, inter]`.
    Attention is causal, or sliding-window when `window > 0`.
}];

defvar HIR_DecodeDesc = [{
    Decode form: `past_k` / `past_v` are `[batch, past_len, kv_heads*head_dim]`
    (past_len may be 0 for a prefill that fills the cache); the new keys and
    values are appended and returned as `present_k` / `present_v`
    (`[batch, past_len + seq, kv_heads*head_dim]`); `positions` holds the
    absolute positions of the new tokens. The optional `mask`
    (`[batch, past_len + seq]`, nonzero keeps a key) hides cache slots on top
    of the causal mask: a decode graph compiled for a bucket of past lengths
    masks the unused tail of its bucket.
}];

defvar HIR_PostNorm = (ins HIR_FloatTensor:$post_norm);
defvar HIR_PostNormFormat = "`post_norm` `(` $post_norm `)` ";

def HIR_LlamaDecoderLayerOp : HIR_DecoderLayerBase<"llama_decoder_layer",
    "LLaMA decoder layer (GQA + RoPE + SwiGLU, pre-RMSNorm)", HIR_PostNorm,
    HIR_PostNormFormat, 0> {
  let description = HIR_LlamaDesc # [{
    ```mlir
    %y = hir.llama_decoder_layer %x, %pos attn(%n1, %wq, %wk, %wv, %wo)
           post_norm(%n2) mlp(%wg, %wu, %wd) {num_heads = 4 : i64, num_kv_heads = 2 : i64,
           head_dim = 16 : i64} : (...) -> tensor<1x?x64xf32>
    ```
  }];
}

def HIR_LlamaCachedDecoderLayerOp : HIR_DecoderLayerBase<"llama_cached_decoder_layer",
    "LLaMA decoder layer over a KV cache", HIR_PostNorm, HIR_PostNormFormat, 1> {
  let description = HIR_LlamaDesc # HIR_DecodeDesc # [{
    ```mlir
    %y, %k, %v = hir.llama_cached_decoder_layer %x, %pos past(%pk, %pv)
           attn(%n1, %wq, %wk, %wv, %wo) post_norm(%n2) mlp(%wg, %wu, %wd)
           {...} : (...) -> (...)
    ```
  }];
}

defvar HIR_Qwen3Desc = [{
    A Qwen3 decoder layer: a LLaMA layer whose queries and keys are
    RMS-normalized per head (`q_norm`, `k_norm`: `[head_dim]`) before RoPE.
}];

def HIR_Qwen3DecoderLayerOp : HIR_DecoderLayerBase<"qwen3_decoder_layer",
    "Qwen3 decoder layer (LLaMA layer with per-head QK RMSNorm)",
    !con(HIR_PostNorm, (ins HIR_FloatTensor:$q_norm, HIR_FloatTensor:$k_norm)),
    HIR_PostNormFormat # "`qk_norm` `(` $q_norm `,` $k_norm `)` ", 0> {
  let description = HIR_Qwen3Desc # [{
    ```mlir
    %y = hir.qwen3_decoder_layer %x, %pos attn(%n1, %wq, %wk, %wv, %wo)
           post_norm(%n2) qk_norm(%qn, %kn) mlp(%wg, %wu, %wd) {...} : (...) -> tensor<1x?x64xf32>
    ```
  }];
}

def HIR_Qwen3CachedDecoderLayerOp : HIR_DecoderLayerBase<"qwen3_cached_decoder_layer",
    "Qwen3 decoder layer over a KV cache",
    !con(HIR_PostNorm, (ins HIR_FloatTensor:$q_norm, HIR_FloatTensor:$k_norm)),
    HIR_PostNormFormat # "`qk_norm` `(` $q_norm `,` $k_norm `)` ", 1> {
  let description = HIR_Qwen3Desc # HIR_DecodeDesc # [{
    ```mlir
    %y, %k, %v = hir.qwen3_cached_decoder_layer %x, %pos past(%pk, %pv)
           attn(%n1, %wq, %wk, %wv, %wo) post_norm(%n2) qk_norm(%qn, %kn) mlp(%wg, %wu, %wd)
           {...} : (...) -> (...)
    ```
  }];
}

defvar HIR_GemmaDesc = [{
    A Gemma 2 decoder layer: Gemma RMSNorm (`(1 + w)`) before and after both
    the attention and the MLP (`input_norm`, `post_attn_norm`,
    `pre_ffn_norm`, `post_ffn_norm`), GeGLU (tanh GELU) MLP, attention
    scores scaled by `scale` (`query_pre_attn_scalar^-1/2`) and soft-capped
    by `attn_softcap`; `window > 0` makes it a sliding-window layer.
    Gemma 3 adds `qk_norm(q_norm, k_norm)`: per-head Gemma RMSNorms
    (`[head_dim]`, `(1 + w)`) of the queries and keys before RoPE.
}];

defvar HIR_GemmaNorms = (ins HIR_FloatTensor:$post_attn_norm,
                             HIR_FloatTensor:$pre_ffn_norm,
                             HIR_FloatTensor:$post_ffn_norm,
                             Optional<HIR_FloatTensor>:$q_norm,
                             Optional<HIR_FloatTensor>:$k_norm);
defvar HIR_GemmaAttrs = (ins DefaultValuedAttr<F32Attr, "0.0">:$attn_softcap);
defvar HIR_GemmaNormsFormat =
    "`norms` `(` $post_attn_norm `,` $pre_ffn_norm `,` $post_ffn_norm `)` "
    # "(`qk_norm` `(` $q_norm^ `,` $k_norm `)`)? ";

def HIR_GemmaDecoderLayerOp : HIR_DecoderLayerBase<"gemma_decoder_layer",
    "Gemma 2 decoder layer (sandwich norms, GeGLU, softcapped attention)",
    HIR_GemmaNorms, HIR_GemmaNormsFormat, 0, HIR_GemmaAttrs,
    "::mlir::rlx::Activation::GeluTanh"> {
  let description = HIR_GemmaDesc # [{
    ```mlir
    %y = hir.gemma_decoder_layer %x, %pos attn(%n1, %wq, %wk, %wv, %wo)
           norms(%n2, %n3, %n4) mlp(%wg, %wu, %wd)
           {attn_softcap = 50.0 : f32, ...} : (...) -> tensor<1x?x64xf32>
    ```
  }];
}

def HIR_GemmaCachedDecoderLayerOp : HIR_DecoderLayerBase<"gemma_cached_decoder_layer",
    "Gemma 2 decoder layer over a KV cache",
    HIR_GemmaNorms, HIR_GemmaNormsFormat, 1, HIR_GemmaAttrs,
    "::mlir::rlx::Activation::GeluTanh"> {
  let description = HIR_GemmaDesc # HIR_DecodeDesc # [{
    ```mlir
    %y, %k, %v = hir.gemma_cached_decoder_layer %x, %pos past(%pk, %pv)
           attn(%n1, %wq, %wk, %wv, %wo) norms(%n2, %n3, %n4)
           mlp(%wg, %wu, %wd) {...} : (...) -> (...)
    ```
  }];
}

def HIR_BertEncoderLayerOp : HIR_Op<"bert_encoder_layer",
    [Pure]> {
  let summary = "BERT encoder layer (post-LayerNorm, GELU FFN)";
  let description = [{
    ```
    a = layer_norm(x + o(attention(q(x), k(x), v(x), mask)), ln1)
    y = layer_norm(a + w_out(gelu(w_in(a))), ln2)
    ```
    All projections carry biases; weights use HF layouts (`wq`/`wk`/`wv`/`wo`
    `[hidden, hidden]`, `w_in [inter, hidden]`, `w_out [hidden, inter]`).
    The optional `mask` (`[batch, seq]`, nonzero = real token) masks padded
    keys; without it every key is seen. `num_heads * head_dim == hidden`.
    `activation` is the FFN's (exact GELU by default; `gelu_tanh`, `relu`,
    ... as `hidden_act` says).

    ```mlir
    %y = hir.bert_encoder_layer %x mask(%m)
           attn(%wq, %bq, %wk, %bk, %wv, %bv, %wo, %bo) ln1(%g1, %b1)
           ffn(%wi, %bi, %wo2, %bo2) ln2(%g2, %b2)
           {num_heads = 12 : i64, head_dim = 64 : i64} : (...) -> tensor<1x?x768xf32>
    ```
  }];
  let arguments = (ins HIR_FloatTensor:$input, Optional<HIR_AnyTensor>:$mask,
      HIR_FloatTensor:$wq, HIR_FloatTensor:$bq, HIR_FloatTensor:$wk,
      HIR_FloatTensor:$bk, HIR_FloatTensor:$wv, HIR_FloatTensor:$bv,
      HIR_FloatTensor:$wo, HIR_FloatTensor:$bo,
      HIR_FloatTensor:$ln1_gamma, HIR_FloatTensor:$ln1_beta,
      HIR_FloatTensor:$w_in, HIR_FloatTensor:$b_in,
      HIR_FloatTensor:$w_out, HIR_FloatTensor:$b_out,
      HIR_FloatTensor:$ln2_gamma, HIR_FloatTensor:$ln2_beta,
      ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
      ConfinedAttr<I64Attr, [IntPositive]>:$head_dim,
      DefaultValuedAttr<F32Attr, "1.0e-12">:$ln_epsilon,
      DefaultValuedAttr<HIR_ActivationAttr,
                        "::mlir::rlx::Activation::Gelu">:$activation);
  let results = (outs HIR_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`mask` `(` $mask^ `)`)?
    `attn` `(` $wq `,` $bq `,` $wk `,` $bk `,` $wv `,` $bv `,` $wo `,` $bo `)`
    `ln1` `(` $ln1_gamma `,` $ln1_beta `)`
    `ffn` `(` $w_in `,` $b_in `,` $w_out `,` $b_out `)`
    `ln2` `(` $ln2_gamma `,` $ln2_beta `)`
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Escape hatch
//===----------------------------------------------------------------------===//

def HIR_CustomOp : HIR_Op<"custom", [
    SingleBlockImplicitTerminator<"YieldOp">,
    IsolatedFromAbove]> {
  let summary = "a subgraph written directly in MIR (tier-2 escape hatch)";
  let description = [{
    The region receives the operands as block arguments and holds MIR ops
    (and `hir.param` is not allowed inside: pass weights as operands).
    `hir.yield` returns the results. `name` labels the block in reports.
    Lowering to MIR inlines the region.

    ```mlir
    %y = hir.custom "scaled_tanh" (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: tensor<4x8xf32>):
      %t = mir.tanh %a : (tensor<4x8xf32>) -> tensor<4x8xf32>
      hir.yield %t : tensor<4x8xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$name, Variadic<HIR_AnyTensor>:$inputs);
  let results = (outs Variadic<HIR_AnyTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $name `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let hasVerifier = 1;
}

def HIR_YieldOp : HIR_Op<"yield", [Pure, Terminator, HasParent<"CustomOp">]> {
  let summary = "return values from hir.custom";
  let description = [{
    ```mlir
    hir.yield %t : tensor<4x8xf32>
    ```
  }];
  let arguments = (ins Variadic<HIR_AnyTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
}

#endif // RLX_DIALECT_HIR_IR_HIROPS_TD
