//===- Passes.td - MIR fusion passes -----------------------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The MIR fusion passes: one per fusion (each a thin shell over its
// populateMIRFuse*Patterns entry point), the ordered driver mir-fuse-all and
// the fusion report. See docs/Fusion.md.
//
// The fusions and mir-unfuse are op-agnostic: on a module they rewrite every
// func.func in it, and nested (`builtin.module(func.func(mir-fuse-swiglu))`)
// one function each. MIR already inside LIR kernels is left alone. The
// report reads and records module attributes, so it runs on the module.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_MIR_TRANSFORMS_PASSES_TD
#define RLX_DIALECT_MIR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// Fusion patterns
//===----------------------------------------------------------------------===//

def MIRFuseDequantizePass : Pass<"mir-fuse-dequantize"> {
  let summary = "Let matmuls and gathers read weights as they are stored";
  let description = [{
    Folds a `mir.dequantize` (f16, bf16 or ggml blocks to f32) into the ops
    that read it: the rhs of a transposed `mir.matmul` and the weight of a
    transposed `mir.fused_matmul` become the stored weight (the kernel reads
    the blocks in place), a row `mir.gather` gathers the stored rows (an
    f16/bf16 table: then widens the gathered rows with `mir.cast`). A
    dequantize with another user stays, and the fusion report counts it as
    a missed fusion.
  }];
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect"];
}

def MIRFuseAttentionPass : Pass<"mir-fuse-attention"> {
  let summary = "Fuse primitive scaled dot-product attention into mir.attention";
  let description = [{
    Finds the primitive attention that `convert-hir-to-mir{policy=fusable}`
    emits, rooted at its `mir.softmax`: heads split with reshape + transpose
    (grouped-query K/V repeated with reshape + broadcast + reshape),
    `batch_matmul {transpose_rhs}` of Q and K, a multiply by the scale, an
    optional softcap (`div`, `tanh`, `mul`), an optional mask (causal and
    sliding-window masks built from `iota` + `compare` + `select` with the
    lowest float, or a padding mask `compare(mask, 0, ne)` + `reshape` +
    `select`), softmax over the last axis, `batch_matmul` with V, and the
    heads merged back with transpose + reshape. The whole chain becomes one
    `mir.attention` with `num_heads`, `num_kv_heads`, `head_dim`, `scale`,
    `softcap`, `mask_kind`, `window` and the mask operand.
  }];
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect"];
}

def MIRFuseAttentionBlockPass : Pass<"mir-fuse-attention-block"> {
  let summary = "Fuse QKV projection, RoPE, attention and output projection";
  let description = [{
    Rooted at a `mir.attention` whose Q, K and V are the three column slices
    of one projection (`mir.matmul {transpose_rhs}`, optionally plus a bias,
    as `mir-fuse-shared-input-matmuls` leaves it), optionally through a
    per-head RMSNorm (reshape, `rms_norm`, reshape: QK-norm) and `mir.rope`
    on Q and K, and whose result feeds one output `mir.matmul
    {transpose_rhs}` (optionally plus a bias): the block becomes one
    `mir.attention_block` with the positions, inverse frequencies, QK-norm
    weights, biases and padding mask it needs. K/V read from a cache
    (`mir.concat`) are not a block and are left alone.
  }];
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect"];
}

def MIRFuseElementwisePass : Pass<"mir-fuse-elementwise"> {
  let summary = "Fuse chains of elementwise ops into mir.elementwise regions";
  let description = [{
    Collects each maximal tree of float elementwise MIR ops (unary ops and
    broadcasting binary ops) in which every intermediate result has a single
    use, with at least two ops, into one `mir.elementwise` whose body
    computes the same math with scalar `arith` and `math` ops. Rank-0 splat
    constants become `arith.constant`s in the body. Activations are expanded
    by their definitions (e.g. `silu(x) = x * sigmoid(x)`).
  }];
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def MIRFuseMatmulEpiloguePass : Pass<"mir-fuse-matmul-epilogue"> {
  let summary = "Fuse bias, activation and residual adds into mir.fused_matmul";
  let description = [{
    `mir.matmul` → optional `mir.add` of an `[N]` bias → optional activation
    (`gelu`, `gelu {tanh_approx}`, `silu`, `relu`, `sigmoid`, `tanh`) →
    optional `mir.add` of a residual of the result type, with at least one of
    the three and every intermediate used once, becomes one
    `mir.fused_matmul`. A residual add whose sum feeds a norm is left to
    `mir-fuse-residual-norm`.
  }];
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect"];
}

def MIRFuseResidualNormPass : Pass<"mir-fuse-residual-norm"> {
  let summary = "Fuse a residual add and the norm of its sum";
  let description = [{
    `mir.add %stream, %branch` (operands and result of one type) followed by
    `mir.rms_norm` or `mir.layer_norm` of the sum becomes
    `mir.fused_residual_rms_norm` / `mir.fused_residual_layer_norm`, whose
    `sum` result replaces the other uses of the add. The residual operand is
    the stream: the add operand that has other uses (or the left one).
  }];
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect"];
}

def MIRFuseSharedInputMatmulsPass : Pass<"mir-fuse-shared-input-matmuls"> {
  let summary = "Merge matmuls that share their input into one matmul";
  let description = [{
    Two or more `mir.matmul`s on the same input with parameter weights of one
    layout (Q/K/V, gate/up) become one matmul over a derived `mir.param`
    (`sources`, `concat_axis`; concatenated once at load time, never per run)
    followed by one `mir.slice` per original result. When every matmul is
    followed by the add of a parameter bias, the biases are concatenated too.
  }];
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect"];
}

def MIRFuseSwigluPass : Pass<"mir-fuse-swiglu"> {
  let summary = "Fuse the gated linear unit on a gate/up projection";
  let description = [{
    `act(slice(gu, last, 0, I)) * slice(gu, last, I, I)` with `gu` of last
    dim `2I` and `act` an activation (`silu` for SwiGLU, `gelu {tanh_approx}`
    for GeGLU) becomes `mir.fused_glu %gu {activation}`. The gate must be the
    first half.
  }];
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect"];
}

//===----------------------------------------------------------------------===//
// Distribution
//===----------------------------------------------------------------------===//

def MIRShardTensorParallelPass
    : Pass<"mir-shard-tensor-parallel", "ModuleOp"> {
  let summary = "Partition fused decoder layers Megatron-style over N ranks";
  let description = [{
    Rewrites every `func.func` of decoder layers in fused MIR form (as
    `convert-hir-to-mir{policy=direct}` or `mir-fuse-all` leave it) into
    the program of one rank of a 1-D grid of `ranks` devices
    (`shard.grid @<grid>(shape = ranks)`):
    - `mir.attention_block`: whole query heads per rank (Q/K/V rows
      column-parallel); KV heads split when `ranks` divides them, replicated
      (each rank takes the one KV head its query heads read) when they
      divide `ranks`; the output projection row-parallel (columns of `w_o`);
      the partial result is summed by one `shard.all_reduce`, after which
      the output bias (if any) is added once.
    - gated MLP (`matmul`/`fused_matmul` → `mir.fused_glu` →
      `matmul`/`fused_matmul`) and activation MLP (`fused_matmul` with an
      activation → `matmul`/`fused_matmul`): gate/up (or up) rows
      column-parallel, down columns row-parallel, one `shard.all_reduce`,
      then the down bias and residual added once.
    - `mir.attention` with explicit projections (a decode step's, reading
      a KV cache): one QKV projection sliced into q, k and v, per-head ops
      (reshape/rms_norm head norms, `mir.rope`, `mir.cast`), the cache
      concatenations (`mir.concat` of a function argument, along the
      tokens), the attention and its output projection. The rank's rows of
      the QKV weight, the same ops on its channels, its columns of the
      output weight and one `shard.all_reduce`; the cache arguments and the
      returned caches become the rank's KV heads (the function's signature
      changes). Refused with `emulate`.
    - everything else (norms, residual adds, RoPE tables) is replicated.
    Per-rank weights are `mir.slice`s of the full `mir.param`s (of the
    sources of a derived parameter), concatenated with `mir.concat` where a
    rank's Q/K/V or gate/up rows are not contiguous; a loader can map only
    the sliced rows/columns of a parameter read only through static slices.
    - embedding lookups (`mir.gather` along axis 0 of a parameter table):
      vocabulary-parallel, each rank holding rows
      `[r*V/ranks, (r+1)*V/ranks)`, looking up the ids shifted by its offset,
      zeroing the rows of ids outside its range, one `shard.all_reduce`.
    - any other projection of a parameter (the LM head, tied or not): its
      weight rows (vocabulary) split the same way, each rank computing its
      logits, one `shard.all_gather` along the last axis. With
      `local-logits` there is no all-gather: the function returns the
      rank's slice (rows `[r*V/ranks, (r+1)*V/ranks)` of the vocabulary),
      through elementwise ops with scalar operands only (a final softcap);
      a caller then reduces it across ranks (Generator: the argmax, or each
      rank's top-k, is all that a greedy or top-k sampler needs).
    A vocabulary not divisible by `ranks` is refused by name, as is
    primitive attention (batch_matmul / softmax).

    With `emulate` the function instead computes every rank's share and sums
    the partials with `mir.add` where the all-reduce would be: one ordinary
    MIR function, for checking the partition numerically with the existing
    pipelines.
  }];
  let options = [
    Option<"ranks", "ranks", "int64_t", /*default=*/"2",
           "Number of ranks (tensor-parallel degree)">,
    Option<"rank", "rank", "int64_t", /*default=*/"0",
           "The rank whose program is produced, in [0, ranks)">,
    Option<"grid", "grid", "std::string", /*default=*/"\"tp\"",
           "Symbol of the 1-D shard.grid (created when missing)">,
    Option<"emulate", "emulate", "bool", /*default=*/"false",
           "Compute every rank's share in one function, all-reduces as "
           "mir.add (numerical checks)">,
    Option<"localLogits", "local-logits", "bool", /*default=*/"false",
           "Return the rank's slice of the LM head's logits [..., V/ranks] "
           "instead of all-gathering them (a caller reduces them: argmax or "
           "top-k per rank)">
  ];
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect",
                           "::mlir::shard::ShardDialect"];
}

def MIROverlapCollectivesPass : Pass<"mir-overlap-collectives", "ModuleOp"> {
  let summary = "Split row-parallel projections and their all-reduces over "
                "the tokens";
  let description = [{
    A `shard.all_reduce` of a projection's partial sums (the row-parallel
    `mir.matmul` or `mir.fused_matmul` of `mir-shard-tensor-parallel`, or a
    `mir.attention_block`, whose output projection it first expands, as the
    CPU's `convert-mir-to-lir` would) becomes `chunks` projections of
    consecutive token ranges (axis `rank - 2`, sizes differing by at most
    one), each followed by its own all-reduce, and a `mir.concat` of the
    sums. After `lir-async-collectives` each chunk's all-reduce is in flight
    while the next chunk's projection computes. Only a projection whose
    result has one use (the all-reduce) and at least `chunks` tokens
    (static) is split; a decode step (one token) is left as it is.
    `chunks = 1` changes nothing; less than 1 is an error.

    ```mlir
    // chunks = 2, 8 tokens:
    %p = mir.matmul %h, %w {transpose_rhs}
        : (tensor<1x8x64xf32>, tensor<32x64xf32>) -> tensor<1x8x32xf32>
    %r = shard.all_reduce %p on @tp grid_axes = [0] : ...
    // becomes
    %h0 = mir.slice %h {axis = 1, start = 0, size = 4} : ... -> tensor<1x4x64xf32>
    %p0 = mir.matmul %h0, %w {transpose_rhs} : ... -> tensor<1x4x32xf32>
    %r0 = shard.all_reduce %p0 on @tp grid_axes = [0] : ...
    %h1 = mir.slice %h {axis = 1, start = 4, size = 4} : ...
    %p1 = mir.matmul %h1, %w {transpose_rhs} : ...
    %r1 = shard.all_reduce %p1 on @tp grid_axes = [0] : ...
    %r = mir.concat %r0, %r1 {axis = 1} : ... -> tensor<1x8x32xf32>
    ```
  }];
  let options = [
    Option<"chunks", "chunks", "int64_t", /*default=*/"2",
           "Token ranges each row-parallel projection and its all-reduce "
           "are split into (1: no split)">
  ];
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect",
                           "::mlir::shard::ShardDialect"];
}

//===----------------------------------------------------------------------===//
// Precision
//===----------------------------------------------------------------------===//

def MIRComputePrecisionPass : Pass<"mir-compute-precision"> {
  let summary = "Hold the activations between ops in bf16 or f16";
  let description = [{
    The profile's `[precision] compute`: every activation (a float tensor
    an op computes, directly or through other ops, from the function's
    arguments) is rounded to `type` where it passes to another op, so the
    values between ops are those of a model computing in `type`; each
    kernel still computes and accumulates in f32 (as bf16 BLAS and
    PyTorch's bf16 kernels do). Parameters, constants and what is computed
    from them alone keep their type; so do the values a function returns
    (the logits, the KV cache, whose type is `[precision] kv_cache`), and
    the arguments are taken as they come (a decode step's past keys and
    values were rounded by the steps before). Data movement (reshape,
    transpose, slice, split, concat, tile) of arguments and values already
    rounded is not rounded again, nor is a `mir.cast` from `type`.

    The rounding is an f32 -> `type` -> f32 round trip: appended to the body
    of a producing `mir.elementwise`, prepended to the body of a consuming
    one, and otherwise one `mir.elementwise` of its own per value. Run it
    after fusion (the round trips would hide the patterns). `type = f32`
    changes nothing; another type is an error.

    A tensor-parallel collective (`shard.all_reduce`, `shard.all_gather`)
    of an f32 activation moves it in `type`: a `mir.cast` to `type` (which
    is its rounding), the collective on `type`, a `mir.cast` back to f32.
    The runtime's 16-bit all-reduce sums each pair in f32 and rounds once,
    so over 2 ranks the values are those of an f32 sum of the rounded
    partials, rounded: what the round trips alone would give, for half the
    bytes.
  }];
  let options = [
    Option<"type", "type", "std::string", /*default=*/"\"f32\"",
           "Element type of the activations between ops: f32 (no change), "
           "bf16 or f16">
  ];
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect",
                           "::mlir::arith::ArithDialect"];
}

//===----------------------------------------------------------------------===//
// Drivers and reports
//===----------------------------------------------------------------------===//

def MIRFuseAllPass : Pass<"mir-fuse-all"> {
  let summary = "Run the MIR fusions a target claims, in the documented order";
  let description = [{
    Runs, one after the other and each to a fixed point: shared-input-matmul,
    swiglu, attention, attention-block, residual-norm, matmul-epilogue,
    elementwise-region, skipping those whose fused op the target does not
    claim (`mlir::rlx::getMIRFusionTargetKinds`) and those named in
    `disable` (the names of `[fusion].disable` in a compile profile).
  }];
  let options = [
    Option<"target", "target", "::rlx::Target",
           /*default=*/"::rlx::Target::Cpu",
           "Code generator whose fused ops are produced",
           [{::llvm::cl::values(
             clEnumValN(::rlx::Target::Cpu, "cpu", "the CPU code generator"),
             clEnumValN(::rlx::Target::Spirv, "spirv",
                        "the SPIR-V code generator"))}]>,
    ListOption<"disable", "disable", "std::string",
               "Fusions not to run (e.g. `attention-block,swiglu`)">
  ];
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def MIRUnfusePass : Pass<"mir-unfuse"> {
  let summary = "Expand fused MIR ops back into the primitives they stand for";
  let description = [{
    The inverse of the fusions, for a back end asked to run plain ops
    (`[backend.cpu] unfuse_regions` / `[backend.spirv] unfuse_regions`): a
    debugging aid that keeps the fused graph's structure but executes each
    fused op as its documented composition. `mir.fused_matmul` becomes
    `matmul` (+ `add` bias) (+ activation) (+ `add` residual);
    `mir.fused_residual_rms_norm` / `_layer_norm` an `add` and the norm;
    `mir.fused_glu` two `slice`s, the activation and a `mul`;
    `mir.attention` the primitive attention (split heads, GQA repeat,
    `batch_matmul`, scale, softcap, masks, `softmax`, `batch_matmul`);
    `mir.attention_block` its GEMMs, slices, QK-norm, RoPE and that
    attention; `mir.elementwise` one MIR op per scalar op of its body.
    An op whose composition is not expressible is left fused with a remark:
    a causal or sliding-window attention over a dynamic sequence length (the
    mask needs static lengths), a `fused_glu` with a dynamic last dim, an
    elementwise body op without a MIR counterpart.
  }];
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect"];
}

def MIRFusionReportPass : Pass<"mir-fusion-report", "ModuleOp"> {
  let summary = "Explain recognisable but unfused patterns; count fused ops";
  let description = [{
    Runs every fusion matcher the target claims over the module without
    rewriting anything. Each pattern that is recognisable but was not fused
    is reported as a remark on its root op,
    `missed fusion '<fusion>': <reason>; hint: <fix>`, and a remark on the
    module gives the number of misses and the fused-op histogram after
    fusion (and before it, when a baseline was recorded). With `json-file`
    the same report is written as JSON. With `assert-clean` every miss is an
    error and the pass fails. With `remarks=false` nothing is printed unless
    an assert-clean check fails (the pipelines ask for remarks only when
    their `fusion-report` option is set).

    With `record-baseline` the pass only records the current op histogram in
    the module attribute `mir.fusion_baseline`; a later report prints it as
    the "before" histogram and removes the attribute. The compile pipeline
    runs it so before the fusions.
  }];
  let options = [
    Option<"jsonFile", "json-file", "std::string", /*default=*/"\"\"",
           "Write the report as JSON to this file (`-` for stdout)">,
    Option<"assertClean", "assert-clean", "bool", /*default=*/"false",
           "Fail, as errors, if any fusion was missed">,
    Option<"remarks", "remarks", "bool", /*default=*/"true",
           "Report misses and the summary as remarks (errors under "
           "assert-clean are always reported)">,
    Option<"recordBaseline", "record-baseline", "bool", /*default=*/"false",
           "Only record the op histogram as the baseline for a later report">,
    Option<"target", "target", "::rlx::Target",
           /*default=*/"::rlx::Target::Cpu",
           "Report only the fusions this code generator claims",
           [{::llvm::cl::values(
             clEnumValN(::rlx::Target::Cpu, "cpu", "the CPU code generator"),
             clEnumValN(::rlx::Target::Spirv, "spirv",
                        "the SPIR-V code generator"))}]>,
    ListOption<"disable", "disable", "std::string",
               "Fusions not to report (disabled in the pipeline)">
  ];
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

def MIRFoldParamSlicesPass : Pass<"mir-fold-param-slices"> {
  let summary = "Fold static slices and concatenations of parameters into "
                "sliced parameters";
  let description = [{
    Rewrites what reads only part of the weights into parameters the loader
    computes once, reading only the part it needs (`mir.param` with
    `source_starts`, see docs/Dialects/MIR.md):
    - `mir.slice` (static start and size along one axis) of a `mir.param`
      (plain; derived or sliced along the same axis, whose sources' ranges
      it then narrows, over one or several sources) becomes one sliced
      `mir.param`;
    - `mir.concat` whose operands are all parameters (plain, or derived or
      sliced along the concat axis) becomes one derived `mir.param` with a
      range per source (adjacent ranges of one source merge);
    - the same through a `mir.dequantize` of parameters (a weight read in
      its stored precision): the sliced parameter keeps the stored type and
      is widened once.
    The new parameter's name says what it holds: the source's name and, for
    part of it, the range in brackets, `name[a:b]` along axis 0 and
    `name[:,a:b]` (one `:,` per leading axis) along another axis; the
    sources of a concatenation joined by `+`, e.g.
    `l0.q[0:32]+l0.k[0:16]+l0.v[0:16]`. Slices along another axis than a
    derived parameter's, concatenations along another axis than an
    operand's, dynamic slices and operands that are not parameters are
    left as they are. Run it after `mir-shard-tensor-parallel`: a rank
    then holds only its share of the weights.
  }];
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect"];
}

#endif // RLX_DIALECT_MIR_TRANSFORMS_PASSES_TD
