//===- Passes.td - LIR passes ------------------------------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_LIR_TRANSFORMS_PASSES_TD
#define RLX_DIALECT_LIR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def LIRAsyncCollectivesPass : Pass<"lir-async-collectives", "ModuleOp"> {
  let summary = "Run each all-reduce beside the kernels that do not need it";
  let description = [{
    An `lir.all_reduce` kernel whose next kernel neither reads nor writes
    its buffers becomes a `start` kernel (a non-blocking `MPI_Iallreduce`)
    and a `wait` kernel, placed right before the first later kernel that
    touches either buffer (or at the end of the entry): the kernels between
    run while the sum is in flight. A kernel whose result the next kernel
    reads stays whole. `mir-overlap-collectives` makes such gaps by
    splitting a row-parallel projection and its all-reduce over the
    tokens. Before or after `lir-plan-arena` (buffers compare by storage).

    ```mlir
    // Before:
    lir.kernel "all_reduce" ins(%p0 : ...) outs(%r0 : ...) { lir.all_reduce }
    lir.kernel "matmul" ins(%x1, %w : ...) outs(%p1 : ...) { mir.matmul }
    lir.kernel "concat" ins(%r0, %r1 : ...) outs(%r : ...) { mir.concat }
    // After:
    lir.kernel "all_reduce" ins(%p0 : ...) outs(%r0 : ...) {
      lir.all_reduce ... phase start }
    lir.kernel "matmul" ins(%x1, %w : ...) outs(%p1 : ...) { mir.matmul }
    lir.kernel "all_reduce_wait" ins(%p0 : ...) outs(%r0 : ...) {
      lir.all_reduce ... phase wait }
    lir.kernel "concat" ins(%r0, %r1 : ...) outs(%r : ...) { mir.concat }
    ```
  }];
}

def LIRFuseGluGemmPass : Pass<"lir-fuse-glu-gemm", "ModuleOp"> {
  let summary = "Make a GEMM and the GLU that reads its result one kernel";
  let description = [{
    When a `mir.fused_glu` kernel directly follows the `mir.matmul` kernel
    that writes its `[gate | up]` input, nothing else reads that buffer and
    the matmul's weight is stored `nk16` (`lir-pack-params`), both become
    one `matmul_glu` kernel of strategy `glu_gemm`: the generated GEMM
    applies `act(gate) * up` in its epilogue. The kernel writes both
    buffers (`[gate | up]` as scratch) and is `inplace` when the GLU's
    result shares bytes with the matmul's input. CPU only.

    ```mlir
    // Before:
    lir.kernel "matmul" ins(%x, %w : ...) outs(%gu : ...) { mir.matmul ... }
    lir.kernel "fused_glu" ins(%gu : ...) outs(%h : ...) { mir.fused_glu ... }
    // After:
    lir.kernel "matmul_glu" ins(%x, %w : ...) outs(%gu, %h : ...)
        attributes {config = #lir.config<glu_gemm>} { mir.matmul; mir.fused_glu }
    ```
  }];
}

def LIRPackParamsPass : Pass<"lir-pack-params", "ModuleOp"> {
  let summary = "Store GEMM weights as the generated GEMM reads them";
  let description = [{
    Sets `layout = #lir.layout<nk16>` on each param that only the
    right-hand side of transposed f32 matmuls reads (`[N, K]` with N a
    multiple of 16; a param concatenated along N with every source a
    multiple of 16): the runtime stores it as N/16 panels of `[K][16]` when
    it loads it, and the generated GEMM streams it. A param read any other
    way, through an alias, or by no kernel keeps its row-major layout. CPU
    only; run it after `lir-plan-arena`, before `lir-fuse-glu-gemm` and
    `lir-select-strategy`.

    With `x8`, a q4_0, q8_0, q4_K, q5_K, q6_K, f16 or bf16 param that only such
    matmuls and embedding gathers read (`[N, K]`, N a multiple of 8; sources
    concatenated along N, each a multiple of 8) gets
    `layout = #lir.layout<x8>`: the runtime interleaves each group of 8 rows
    block by block (f16 / bf16: pair by pair of elements) when it loads it
    (`rlx_uk_repack`), and the micro-kernels read it with lanes along output
    columns. Such a param is then copied at load rather than mapped from the
    file. A tied embedding is x8 too: its gather finds each row in its group
    (`rlx_dequantize_x8_rows`; an f16 / bf16 table's gather, a kernel of its
    own, puts each row back as stored with `rlx_uk_unpack`).
  }];
  let options = [
    Option<"nk16", "nk16", "bool", /*default=*/"true",
           "Pack f32 GEMM weights as nk16 panels">,
    Option<"x8", "x8", "bool", /*default=*/"false",
           "Interleave q4_0, q8_0, q4_K, q5_K, q6_K, f16 and bf16 GEMM weights "
           "by groups of 8 rows">
  ];
}

def LIRPlanArenaPass : Pass<"lir-plan-arena", "ModuleOp"> {
  let summary = "Place the unplanned buffers of each entry in one arena";
  let description = [{
    Computes the live range of every `lir.alloc` over the kernel schedule
    (from the kernel that writes it, or the start for inputs, to the last
    kernel that reads it or any view aliasing it, or the end for outputs),
    lets an elementwise kernel write over a same-sized input buffer it is
    the last to read (`inplace`), stores the first operand of a concat in
    the head of its result when it lies there contiguously (every dim
    before the axis is 1) and nothing writes it after the concat (the
    kernel then copies only the other operands: a KV-cache step appends to
    the past keys without copying them; an input so placed shares its bytes
    with the result), places the buffers best-fit at the
    entry's alignment, replaces each `lir.alloc` by a `lir.view arena[...]`
    (views aliasing it move with it) and sets the entry's `arena_size`.
    Entries without `lir.alloc` are left unchanged. With `stats`, a remark
    per entry gives the arena size, the naive sum of all buffers and the
    peak live set.

    ```mlir
    // Before:
    %x = lir.alloc : memref<4x16xf32>
    %y = lir.alloc : memref<4x16xf32>
    // After (%x dies when %y is written, so they share storage):
    %x = lir.view arena[0] : memref<4x16xf32>
    %y = lir.view arena[0] : memref<4x16xf32>
    ```
  }];
  let options = [
    Option<"inplace", "inplace", "bool", /*default=*/"true",
           "Let elementwise kernels write over an input they read last "
           "and concats keep their first operand in place">,
    Option<"stats", "stats", "bool", /*default=*/"false",
           "Report arena bytes, the naive sum and the peak live set">
  ];
}

def LIRSelectStrategyPass : Pass<"lir-select-strategy", "ModuleOp"> {
  let summary = "Annotate each kernel with how the CPU code generator lowers it";
  let description = [{
    Sets `config = #lir.config<...>` on the kernels whose lowering is a
    choice: a matmul whose weight is stored `nk16` gets the generated GEMM
    with its register tile (`gemm_generated`, `tile = [rows, 16-lane column
    vectors, K block]`: the pass options, adapted to the shape: a GEMM of
    at most `gemm-mr` rows streams each weight once with one row tile and
    K whole), any other matmul `gemm_blas`; a `glu_gemm` kernel gets its
    tile (gate and up share the register tile); a `mir.attention` lowered
    blocked (head dim a multiple of 16) gets `attention_blocked` with
    `tile = [heads, query positions]`: `attention-rows` register rows (0:
    as many as `attention-accumulators` vectors of 16 lanes hold, at least
    1 and at most 4), as many heads of a
    GQA group as divide it, the rest positions. `convert-lir-to-loops`
    follows the annotations; kernels without one have a single
    implementation.
  }];
  let options = [
    Option<"gemmMr", "gemm-mr", "int64_t", /*default=*/"8",
           "Rows of the generated GEMM's register tile">,
    Option<"gemmNv", "gemm-nv", "int64_t", /*default=*/"2",
           "16-lane column vectors of the generated GEMM's register tile">,
    Option<"gemmKc", "gemm-kc", "int64_t", /*default=*/"256",
           "K block of the generated GEMM (0: all of K)">,
    Option<"attentionRows", "attention-rows", "int64_t", /*default=*/"0",
           "Query rows of the blocked attention's register tile (0: from "
           "the head dim and attention-accumulators, at most 4)">,
    Option<"attentionAccumulators", "attention-accumulators", "int64_t",
           /*default=*/"16",
           "16-lane accumulator vectors the blocked attention's register "
           "tile keeps when attention-rows is 0 (16: 32 registers of 16 "
           "lanes, AVX-512; 4: 16 of 8 lanes, AVX2)">
  ];
}

def LIRVerifyPlanPass : Pass<"lir-verify-plan", "ModuleOp"> {
  let summary = "Check that no two simultaneously live buffers overlap";
  let description = [{
    For every `lir.entry`, computes the live range of each storage-owning
    arena view (from the first kernel that writes it, or the start for
    inputs, to the last kernel that reads it or any view aliasing it, or the
    end for outputs) and fails if two views overlap in bytes while both are
    live. The one legal overlap is in place: a kernel marked `inplace` may
    write a view over an input that it is the last to read. Also fails when
    a kernel reads an arena view that nothing wrote. Run it after
    `convert-mir-to-lir` to check the planner, or on hand-written LIR.
  }];
}

#endif // RLX_DIALECT_LIR_TRANSFORMS_PASSES_TD
