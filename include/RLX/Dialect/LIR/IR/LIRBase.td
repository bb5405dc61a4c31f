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

// The values mirror rlx::BufferSpace (RLX/Support/Enums.h): the runtime reads
// them off the IR.
def LIR_MemorySpace : I32Enum<"MemorySpace", "storage a view or binding points into", [
    I32EnumCase<"Arena", 0, "arena">,
    I32EnumCase<"Params", 1, "params">,
    // The constants the SPIR-V code generator pools (bindings only).
    I32EnumCase<"Constants", 2, "constants">
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

//===----------------------------------------------------------------------===//
// Attributes: the decisions made on LIR before code generation
//===----------------------------------------------------------------------===//

class LIR_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<LIR_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

// The values mirror rlx::ParamLayout (RLX/Support/Enums.h).
def LIR_ParamLayout : I32Enum<"ParamLayout", "how a parameter is stored", [
    // As the weight file has it.
    I32EnumCase<"RowMajor", 0, "row_major">,
    // A [N, K] f32 matrix as N/16 panels of [K][16] (the generated GEMM's
    // weight operand), packed when the parameter is loaded.
    I32EnumCase<"NK16", 1, "nk16">,
    // A [N, K] q4_0, q8_0, q4_K, q5_K, q6_K, f16 or bf16 matrix with each group of 8 rows
    // interleaved block by block (the micro-kernels' repacked form: the same
    // bytes, permuted within each group), repacked when the parameter is
    // loaded.
    I32EnumCase<"X8", 2, "x8">
  ]> {
  let cppNamespace = "::mlir::rlx::lir";
}
def LIR_ParamLayoutAttr : EnumAttr<LIR_Dialect, LIR_ParamLayout, "layout"> {
  let assemblyFormat = "`<` $value `>`";
}

def LIR_KernelStrategy : I32Enum<"KernelStrategy",
    "how the code generator implements a kernel", [
    // The back end's one implementation of the kernel's op.
    I32EnumCase<"Default", 0, "default">,
    // A register-tiled GEMM over a weight in the nk16 layout (CPU);
    // `tile` = [rows, 16-lane column vectors, K block].
    I32EnumCase<"GemmGenerated", 1, "gemm_generated">,
    // cblas_sgemm (CPU).
    I32EnumCase<"GemmBlas", 2, "gemm_blas">,
    // A generated GEMM whose epilogue applies the GLU of the kernel's second
    // op (lir-fuse-glu-gemm; CPU); `tile` as for gemm_generated, with an even
    // vector count (gate and up vectors in pairs, the GLU in registers) or
    // one (the gate and up strips in turn, the GLU read back from cache).
    I32EnumCase<"GluGemm", 3, "glu_gemm">,
    // The runtime's micro-kernels for a weight kept as stored (f16, bf16,
    // ggml blocks): activations prepared once (rounded to 8 bits per block
    // for the ggml types, as llama.cpp does), then columns split between
    // threads (CPU).
    I32EnumCase<"Ukernel", 4, "ukernel">,
    // mir.attention with an online softmax over blocks of 16 keys (CPU; head
    // dims that are multiples of 16): `tile` = [heads of a GQA group, query
    // positions] whose rows share a register tile and each key block.
    I32EnumCase<"AttentionBlocked", 5, "attention_blocked">
  ]> {
  let cppNamespace = "::mlir::rlx::lir";
}
def LIR_KernelStrategyAttr
    : EnumAttr<LIR_Dialect, LIR_KernelStrategy, "kernel_strategy">;

def LIR_CollectivePhase : I32Enum<"CollectivePhase",
    "which part of a collective a kernel runs", [
    // The whole collective: the kernel returns with the result in place.
    I32EnumCase<"Whole", 0, "whole">,
    // Starts it (a non-blocking MPI call) and returns at once; the result is
    // not there yet, and neither buffer may be touched until the wait.
    I32EnumCase<"Start", 1, "start">,
    // Completes the collective the last `start` kernel on the same buffers
    // began.
    I32EnumCase<"Wait", 2, "wait">
  ]> {
  let cppNamespace = "::mlir::rlx::lir";
}
def LIR_CollectivePhaseAttr
    : EnumAttr<LIR_Dialect, LIR_CollectivePhase, "phase"> {
  let assemblyFormat = "$value";
}

def LIR_LoweringConfigAttr : LIR_Attr<"LoweringConfig", "config"> {
  let summary = "how one kernel is lowered: strategy, tile sizes, workgroup";
  let description = [{
    Set on a `lir.kernel` by `lir-select-strategy` (and `lir-fuse-glu-gemm`)
    before code generation, read by the code generator: the strategy, its
    tile sizes and, for the SPIR-V code generator, the workgroup size.

    A generated GEMM's tile is [rows, column vectors of 16, K block] and,
    when the K blocks run outermost, a fourth size: the column blocks that
    share each K block of A's packed rows (0 or absent: each column block
    runs over all K blocks in turn).

    ```mlir
    config = #lir.config<gemm_generated, tile = [8, 2, 256]>
    config = #lir.config<gemm_generated, tile = [6, 1, 256, 16]>
    config = #lir.config<attention_blocked, tile = [4, 1]>
    config = #lir.config<default, workgroup = [64, 1, 1]>
    ```
  }];
  let parameters = (ins "KernelStrategy":$strategy,
                        OptionalArrayRefParameter<"int64_t">:$tile,
                        OptionalArrayRefParameter<"int64_t">:$workgroup);
  let assemblyFormat = [{
    `<` $strategy (`,` `tile` `=` `[` $tile^ `]`)?
    (`,` `workgroup` `=` `[` $workgroup^ `]`)? `>`
  }];
  let genVerifyDecl = 1;
}

def LIR_BindingAttr : LIR_Attr<"Binding", "binding"> {
  let summary = "one storage buffer of a SPIR-V dispatch";
  let description = [{
    A byte range of the arena, the parameter pool or the constant pool bound
    as one storage buffer: `offset` is the view's byte offset rounded down
    to the device's storage-buffer alignment, `range` the bound bytes;
    `view_offset` and `view_bytes` are the bytes the kernel may touch (for
    the runtime's hazard tracking), `writes` whether it writes them.

    ```mlir
    #lir.binding<space = arena, offset = 0, range = 512, view_offset = 128, view_bytes = 256, writes = true>
    ```
  }];
  let parameters = (ins "MemorySpace":$space, "int64_t":$offset,
                        "int64_t":$range, "int64_t":$view_offset,
                        "int64_t":$view_bytes, "bool":$writes);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def LIR_DispatchAttr : LIR_Attr<"Dispatch", "dispatch"> {
  let summary = "how the Vulkan runtime launches one kernel";
  let description = [{
    Set on each `lir.kernel` by `convert-lir-to-spirv`: the SPIR-V entry
    point (`@module::@function`), the workgroup count and one binding per
    storage buffer, in descriptor order.

    ```mlir
    dispatch = #lir.dispatch<@k0::@k0, workgroups = [4, 1, 1], bindings = [<space = arena, offset = 0, range = 256, view_offset = 0, view_bytes = 256, writes = true>]>
    ```
  }];
  let parameters = (ins "SymbolRefAttr":$entry_point,
                        ArrayRefParameter<"int64_t">:$workgroups,
                        ArrayRefParameter<"BindingAttr">:$bindings);
  let assemblyFormat = [{
    `<` $entry_point `,` `workgroups` `=` `[` $workgroups `]` `,`
    `bindings` `=` `[` $bindings `]` `>`
  }];
  let genVerifyDecl = 1;
}

def LIR_ConstantPoolAttr : LIR_Attr<"ConstantPool", "constant_pool"> {
  let summary = "the non-splat constants the SPIR-V kernels read";
  let description = [{
    Set on the `lir.entry` by `convert-lir-to-spirv`: the pool's size in
    bytes, the constants and the byte offset of each.
  }];
  let parameters = (ins "int64_t":$bytes, "ArrayAttr":$values,
                        OptionalArrayRefParameter<"int64_t">:$offsets);
  let assemblyFormat = [{
    `<` `bytes` `=` $bytes `,` `values` `=` $values `,`
    `offsets` `=` `[` (`]`) : ($offsets^ `]`)? `>`
  }];
  let genVerifyDecl = 1;
}

#endif // RLX_DIALECT_LIR_IR_LIRBASE_TD
