//===- Passes.td - RLX conversion passes -------------------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_CONVERSION_PASSES_TD
#define RLX_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// HIRToMIR
//===----------------------------------------------------------------------===//

def ConvertHIRToMIRPass : Pass<"convert-hir-to-mir", "ModuleOp"> {
  let summary = "Lower HIR blocks to MIR (fused ops or primitives)";
  let description = [{
    Replaces every HIR op with MIR. `policy=direct` emits the fused MIR ops
    straight away (`mir.attention_block`, `mir.fused_matmul`,
    `mir.fused_residual_rms_norm`, `mir.fused_glu`, ...); `policy=fusable`
    emits primitives only (matmuls, elementwise ops, softmax, ...), which the
    MIR fusion patterns must find and collapse. Both compute the same
    numbers. Weights named by `hir.param` become `mir.param`; projections
    that share an input (Q/K/V, gate/up) read one derived param that is the
    concatenation of the originals, computed once at load time. Composite
    layers expand fully; `hir.custom` is inlined.

    Under `fusable`, a masked attention needs static sequence lengths (the
    mask is built from `mir.iota`): specialize the shapes first.
  }];
  let options = [
    Option<"policy", "policy", "::rlx::FusionPolicy",
           /*default=*/"::rlx::FusionPolicy::Direct",
           "Lowering policy",
           [{::llvm::cl::values(
             clEnumValN(::rlx::FusionPolicy::Direct, "direct",
                        "the fused MIR ops"),
             clEnumValN(::rlx::FusionPolicy::Fusable, "fusable",
                        "MIR primitives for the fusion patterns"))}]>
  ];
  let dependentDialects = ["::mlir::rlx::mir::MIRDialect",
                           "::mlir::func::FuncDialect"];
}

//===----------------------------------------------------------------------===//
// MIRToLIR
//===----------------------------------------------------------------------===//

def ConvertMIRToLIRPass : Pass<"convert-mir-to-lir", "ModuleOp"> {
  let summary = "Bufferize MIR functions into LIR entry points";
  let description = [{
    Turns every `func.func` whose body is MIR on static shapes into an
    `lir.entry`: each MIR op becomes a `lir.kernel` in program order, each
    tensor a view. Parameters are packed into the parameter pool
    (`alignment`-aligned offsets); every other tensor that owns storage
    gets an unplanned arena buffer (`lir.alloc`) that `lir-plan-arena`
    places later. Reshapes and slices of a buffer become aliasing views (no
    copy). Inputs, params and outputs are listed in the I/O manifest
    (`lir.io`); their names come from the `rlx.name` argument/result
    attributes (default `inputN` / `outputN`).

    A module attribute `rlx.param_pages = {page_size = 4096 : i64, phases =
    {"name" = 96 : i64, ...}}` places each named param at a pool offset
    congruent to its phase modulo the page size instead (the pool is
    page-aligned): where the param's stored bytes start within a page of
    the file the runtime loads them from, so that their whole pages can be
    mapped from the file rather than copied. Names that are not params are
    ignored; a malformed attribute is an error.

    With `expand-fused` (default), `mir.attention_block` is first rewritten
    into the kernels the CPU runs it as (QKV GEMM, views, QK-norm, RoPE,
    attention, output GEMM).

    RoPE, attention and the GEMMs (matmul, batch_matmul, fused_matmul) on
    f16 / bf16 values are computed in f32: a cast to f32 before, the op in
    f32 and a cast back after, so every back end runs what the MIR verifier
    accepts (an f32 query over an f16 / bf16 KV cache, and weights stored
    in lower precision, are read as they are).
  }];
  let options = [
    Option<"alignment", "alignment", "int64_t", /*default=*/"64",
           "Byte alignment of parameters and, through the entry's "
           "`alignment`, of the planned arena buffers (a power of two)">,
    Option<"expandFused", "expand-fused", "bool", /*default=*/"true",
           "First rewrite fused ops the CPU runs as kernel sequences "
           "(mir.attention_block)">
  ];
  let dependentDialects = ["::mlir::rlx::lir::LIRDialect"];
}

//===----------------------------------------------------------------------===//
// LIRToLLVM
//===----------------------------------------------------------------------===//

def ConvertLIRToLoopsPass : Pass<"convert-lir-to-loops", "ModuleOp"> {
  let summary = "Generate CPU kernels for LIR entry points (scf/vector/memref)";
  let description = [{
    Replaces each `lir.entry` with a function
    `@<entry>(%arena: memref<?xi8>, %params: memref<?xi8>)` (C interface)
    that materializes every view with `memref.view` and calls one kernel
    function per `lir.kernel`, in schedule order. Kernel functions are
    written in the scf, vector, memref, arith and math dialects from the MIR
    op of the kernel body: elementwise ops, norms, softmax and reductions
    are vectorized (512-bit vectors, scalar tails); matmuls follow their
    `config` (`lir-select-strategy`): `gemm_generated` is a register-tiled
    GEMM with fused epilogues over a weight stored nk16 (`lir-pack-params`),
    `glu_gemm` the same with the GLU in its epilogue (`lir-fuse-glu-gemm`),
    anything else calls OpenBLAS `cblas_sgemm`; attention is one flash-style
    kernel over blocks of keys. The entry must be planned (`lir-plan-arena`). Kernels run SPMD on the
    runtime's threads (`@<entry>_spmd`), splitting their work into chunks
    and ending with a barrier. Kernels that compute the same thing on the
    same types share one function.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def RLXApproximateMathPass : Pass<"rlx-approximate-math", "ModuleOp"> {
  let summary = "Replace exp, tanh, erf and log with polynomial approximations";
  let description = [{
    Vector math on the CPU would otherwise become one libm call per lane.
    The upstream approximations are accurate to a few ulp in f32. `cos`,
    `sin` and `pow` are left to libm.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
}

def RLXExpandBF16Pass : Pass<"rlx-expand-bf16"> {
  let summary = "Expand f32 <-> bf16 conversions into integer operations";
  let description = [{
    Arith and math computations on bf16 values compute in f32 between an
    extension of their operands and a truncation of their results; then
    `arith.truncf` to bf16 becomes round-to-nearest-even on the bits (a NaN
    becomes the quiet NaN 0x7FC0) and `arith.extf` from bf16 a shift,
    scalars and vectors alike (upstream's `populateExpandBFloat16Patterns`). Without it
    LLVM calls compiler-rt's `__truncsfbf2` once per lane on CPUs without
    AVX512_BF16, which the JIT does not provide; with it every CPU rounds
    the same way.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::vector::VectorDialect"];
}

def RLXSplitLargeFunctionsPass
    : Pass<"rlx-split-large-functions", "ModuleOp"> {
  let summary = "Split entry functions of many kernel calls into chunks";
  let description = [{
    An entry point lowers to one function that calls its kernels in order.
    With thousands of kernels that one function dominates the JIT: LLVM's
    register allocator is superlinear in a function's live ranges (a 4000-
    kernel module took 15 s to JIT, 2000 kernels 2.6 s). A single-block
    `llvm.func` with more than `calls-per-function` calls, whose other
    operations are free of side effects and whose calls' results are
    unused, becomes a sequence of calls to `noinline` internal functions
    of at most that many calls each, in the same order; each chunk takes
    the original arguments and recomputes the pure values it needs.
    Functions of another shape are left as they are.
  }];
  let options = [
    Option<"callsPerFunction", "calls-per-function", "unsigned",
           /*default=*/"64",
           "The most calls one function keeps (0: no splitting)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

//===----------------------------------------------------------------------===//
// LIRToSPIRV
//===----------------------------------------------------------------------===//

def ConvertLIRToSPIRVPass : Pass<"convert-lir-to-spirv", "ModuleOp"> {
  let summary = "Generate SPIR-V compute kernels for LIR entry points";
  let description = [{
    Writes every `lir.kernel` as a `gpu.func` (gpu, scf, arith, math and
    memref on flat storage-buffer memrefs) in its own `gpu.module`, picks its
    workgroup size and count, sets `spirv.entry_point_abi`, and converts each
    `gpu.module` into a `spirv.module` for a Vulkan target environment
    (`spirv.target_env` from the options). Kernels that compute the same
    thing on the same views share one module. Matmuls and attention stage
    their operands through workgroup memory.

    The `lir.entry` stays as the dispatch schedule: each `lir.kernel` gets
    `rlx.spirv.entry_point` (the SPIR-V function), `rlx.spirv.workgroups`
    (x, y, z) and `rlx.spirv.bindings`, one `array<i64: space, offset,
    range, view_offset, view_bytes, writes>` per storage buffer: space 0 is
    the arena, 1 the parameter pool, 2 the constant pool; `offset` is the
    view's byte offset rounded down to `storage-buffer-alignment` (the
    element offset of the view inside that binding is compiled into the
    kernel). Non-splat constants go to a constant pool described on the
    entry (`rlx.spirv.constants`, `rlx.spirv.constant_offsets`,
    `rlx.spirv.constant_bytes`). With `gpu-only`, the pass stops before the
    SPIR-V conversion.
  }];
  let options = [
    Option<"workgroupSize", "workgroup-size", "int64_t", /*default=*/"64",
           "Threads per workgroup of elementwise kernels (a power of two)">,
    Option<"storageBufferAlignment", "storage-buffer-alignment", "int64_t",
           /*default=*/"256",
           "Alignment of descriptor offsets (the device's "
           "minStorageBufferOffsetAlignment; 256 suits every device)">,
    Option<"maxWorkgroupInvocations", "max-workgroup-invocations", "int64_t",
           /*default=*/"256", "The device's maxComputeWorkGroupInvocations">,
    Option<"maxSharedMemory", "max-shared-memory", "int64_t",
           /*default=*/"32768",
           "The device's maxComputeSharedMemorySize, in bytes">,
    Option<"int64", "int64", "bool", /*default=*/"true",
           "The device has shaderInt64 (i64 tensors)">,
    Option<"int8", "int8", "bool", /*default=*/"true",
           "The device has shaderInt8 and storageBuffer8BitAccess (i1/i8 "
           "tensors; emulated with 32-bit words otherwise)">,
    Option<"float16", "float16", "bool", /*default=*/"false",
           "The device has shaderFloat16 and storageBuffer16BitAccess">,
    Option<"gpuOnly", "gpu-only", "bool", /*default=*/"false",
           "Stop after generating the gpu.func kernels">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::spirv::SPIRVDialect"];
}

def RLXSerializeSPIRVPass : Pass<"rlx-serialize-spirv", "ModuleOp"> {
  let summary = "Write every spirv.module as a SPIR-V binary";
  let description = [{
    Serializes each `spirv.module` with `mlir::spirv::serialize`, validates
    it with spirv-tools for Vulkan 1.1 (as the Vulkan back end does: an
    invalid module is an error on the `spirv.module` naming its kernel) and
    writes it to `<output-dir>/<module name>.spv` (for `spirv-dis`). The IR
    is not changed.
  }];
  let options = [
    Option<"outputDir", "output-dir", "std::string", /*default=*/"\".\"",
           "Directory for the .spv files">,
    Option<"validate", "validate", "bool", /*default=*/"true",
           "Validate every module with spirv-tools before writing it">
  ];
}

#endif // RLX_CONVERSION_PASSES_TD
