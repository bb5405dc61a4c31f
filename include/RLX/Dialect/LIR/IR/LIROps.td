//===- LIROps.td - LIR operations --------------------------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_LIR_IR_LIROPS_TD
#define RLX_DIALECT_LIR_IR_LIROPS_TD

include "RLX/Dialect/LIR/IR/LIRBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

//===----------------------------------------------------------------------===//
// Entry points and storage
//===----------------------------------------------------------------------===//

def LIR_EntryOp : LIR_Op<"entry", [Symbol, IsolatedFromAbove,
    SingleBlock, NoTerminator]> {
  let summary = "an entry point: one arena, one parameter pool, a schedule";
  let description = [{
    Owns the storage plan of one compiled entry point. `arena_size` bytes of
    activation storage are reused across the schedule by liveness;
    `param_size` bytes hold the parameters, loaded once. The body lists
    views, the I/O manifest (`lir.io`) and the kernels (`lir.kernel`) in
    execution order. `constant_pool` lists the constants the SPIR-V kernels
    read (`convert-lir-to-spirv`). Every offset is a multiple of `alignment` (a power of
    two) unless a view aliases into another (a slice).

    ```mlir
    lir.entry @forward arena_size = 4096, param_size = 1024, alignment = 64 {
      %x = lir.view arena[0] : memref<4x16xf32>
      lir.io input "x" %x : memref<4x16xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$arena_size,
                   I64Attr:$param_size,
                   DefaultValuedAttr<I64Attr, "64">:$alignment,
                   OptionalAttr<LIR_ConstantPoolAttr>:$constant_pool);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `arena_size` `=` $arena_size `,` `param_size` `=` $param_size
    `,` `alignment` `=` $alignment attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The body block.
    ::mlir::Block &getBlock() { return getBody().front(); }
  }];
}

def LIR_AllocOp : LIR_Op<"alloc", [HasParent<"EntryOp">]> {
  let summary = "an activation buffer the arena planner has not placed yet";
  let description = [{
    A buffer of the activation arena whose byte offset is still to be
    chosen: `convert-mir-to-lir` gives every tensor that owns storage (an
    input, a kernel result, an output) one `lir.alloc`, and `lir-plan-arena`
    replaces each with a `lir.view arena[offset]` once it has computed the
    live ranges and placed the buffers. A `lir.view` whose source is a
    `lir.alloc` (a reshape or slice of the buffer) has its `byte_offset`
    relative to the start of the buffer.

    ```mlir
    %qkv = lir.alloc : memref<8x96xf32>
    %k = lir.view arena[128] source(%qkv : memref<8x96xf32>) : memref<8x32xf32, strided<[96, 1]>>
    ```
  }];
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def LIR_ViewOp : LIR_Op<"view", [Pure, HasParent<"EntryOp">]> {
  let summary = "a typed view at a byte offset of the arena or parameter pool";
  let description = [{
    A memref over `space` (the activation arena or the parameter pool)
    starting at `byte_offset`. The memref type gives the shape, the element
    type and, for non-contiguous views such as a slice of the last
    dimension, the strides (the layout's own offset must be 0: the byte
    offset says where the view starts). With `source`, the view aliases the
    storage of another view (a reshape or a slice that needs no copy): it
    must lie inside it and shares its lifetime.

    ```mlir
    %qkv = lir.view arena[0] : memref<8x96xf32>
    %k = lir.view arena[128] source(%qkv) : memref<8x32xf32, strided<[96, 1]>>
    ```
  }];
  let arguments = (ins LIR_MemorySpaceAttr:$space, I64Attr:$byte_offset,
                   Optional<AnyStaticShapeMemRef>:$source);
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat = [{
    custom<Keyword>($space) `[` $byte_offset `]`
    (`source` `(` $source^ `:` type($source) `)`)?
    attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes from the first to one past the last addressed element.
    int64_t getExtentBytes();
    /// The view this one aliases transitively (itself when it owns storage).
    ViewOp getRootView();
  }];
}

//===----------------------------------------------------------------------===//
// I/O manifest
//===----------------------------------------------------------------------===//

def LIR_IOOp : LIR_Op<"io", [HasParent<"EntryOp">]> {
  let summary = "an I/O manifest entry: where a named input, param or output lives";
  let description = [{
    Binds a name to a view. Inputs and outputs live in the arena and params
    in the parameter pool. A derived param (`sources`, `concat_axis`,
    `source_sizes`: each source's extent along the axis) is computed once at
    load time by concatenating the named source params; with
    `source_starts` each source contributes only
    `[source_starts[i], source_starts[i] + source_sizes[i])` along the axis
    (a sliced param, which may have a single source). `index_bound` on an
    integer input says its values index a table of that many rows; the
    runtime rejects values outside `[0, index_bound)`. `layout` on a param
    says how the runtime stores it (`lir-pack-params` chooses it; row major
    when absent).
    Together the `lir.io` ops form the binding manifest the runtime reads:
    name, role, byte offset, shape and element type.

    ```mlir
    lir.io input "tokens" %ids : memref<1x8xi32>
    lir.io param "q+k+v" %w {sources = ["q", "k", "v"], concat_axis = 0 : i64, source_sizes = array<i64: 32, 32, 32>} : memref<96x32xf32>
    ```
  }];
  let arguments = (ins LIR_IOKindAttr:$kind, StrAttr:$name,
                   AnyStaticShapeMemRef:$view,
                   OptionalAttr<StrArrayAttr>:$sources,
                   OptionalAttr<I64Attr>:$concat_axis,
                   OptionalAttr<DenseI64ArrayAttr>:$source_sizes,
                   OptionalAttr<I64Attr>:$index_bound,
                   OptionalAttr<LIR_ParamLayoutAttr>:$layout,
                   OptionalAttr<DenseI64ArrayAttr>:$source_starts);
  let assemblyFormat =
      "custom<Keyword>($kind) $name $view attr-dict `:` type($view)";
  let builders = [
    // Without source ranges (whole sources).
    OpBuilder<(ins "::mlir::rlx::lir::IOKind":$kind, "::llvm::StringRef":$name,
      "::mlir::Value":$view, "::mlir::ArrayAttr":$sources,
      "::mlir::IntegerAttr":$concat_axis,
      "::mlir::DenseI64ArrayAttr":$source_sizes,
      "::mlir::IntegerAttr":$index_bound,
      "::mlir::rlx::lir::ParamLayoutAttr":$layout), [{
      build($_builder, $_state, kind, name, view, sources, concat_axis,
            source_sizes, index_bound, layout, /*source_starts=*/nullptr);
    }]>
  ];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

def LIR_KernelOp : LIR_Op<"kernel", [HasParent<"EntryOp">,
    SingleBlockImplicitTerminator<"YieldOp">, AttrSizedOperandSegments]> {
  let summary = "one kernel: read the `ins` views, write the `outs` views";
  let description = [{
    Operands are `lir.view` results (or `lir.alloc` results before the
    arena is planned). The body states what the kernel computes on value semantics: its block
    arguments are the tensor values of `ins`, it holds one MIR op (plus the
    constants that op reads), and `lir.yield` gives the tensors written to
    `outs`, in order. Kernels run in program order. `library`, when set,
    names a runtime routine that implements the body (e.g. `cblas_sgemm`).
    `inplace` marks a kernel that may write an output over an input it
    reads last (elementwise kernels). `config` is the lowering strategy the
    code generator follows (`lir-select-strategy`); `dispatch` the launch
    of the SPIR-V kernel (`convert-lir-to-spirv`).

    A kernel of strategy `glu_gemm` (`lir-fuse-glu-gemm`) holds two ops: a
    `mir.matmul` whose result (the `[gate | up]` buffer, its first output)
    the `mir.fused_glu` after it reads; it yields both results.

    ```mlir
    lir.kernel "silu" ins(%x : memref<8x32xf32>) outs(%y : memref<8x32xf32>) {
    ^bb0(%t: tensor<8x32xf32>):
      %r = mir.silu %t : (tensor<8x32xf32>) -> tensor<8x32xf32>
      lir.yield %r : tensor<8x32xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$name,
                   Variadic<AnyStaticShapeMemRef>:$ins,
                   Variadic<AnyStaticShapeMemRef>:$outs,
                   OptionalAttr<StrAttr>:$library, UnitAttr:$inplace,
                   OptionalAttr<LIR_LoweringConfigAttr>:$config,
                   OptionalAttr<LIR_DispatchAttr>:$dispatch);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $name (`ins` `(` $ins^ `:` type($ins) `)`)? `outs` `(` $outs `:` type($outs) `)`
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The single non-constant op of the body (the computation).
    ::mlir::Operation *getComputeOp();
  }];
}

def LIR_YieldOp : LIR_Op<"yield", [Pure, Terminator, HasParent<"KernelOp">]> {
  let summary = "the values a kernel writes to its outs";
  let description = [{
    ```mlir
    lir.yield %r : tensor<8x32xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

def LIR_AllReduceOp : LIR_Op<"all_reduce", [
    AllTypesMatch<["input", "result"]>, HasParent<"KernelOp">]> {
  let summary = "sum a tensor over every rank of the process group";
  let description = [{
    The compute op of a collective kernel: every one of the `group_size`
    ranks (the whole MPI world, `MPI_COMM_WORLD`) contributes its `input`
    and receives the elementwise sum (`MPI_Allreduce` with `MPI_SUM`).
    `convert-mir-to-lir` makes it from a `shard.all_reduce` with
    `reduction = sum` whose grid axes span the whole `shard.grid`; f32, f16
    or bf16 (a 16-bit sum is computed in f32 and rounded once per pair).
    The runtime refuses to run an entry whose group size differs from the
    number of processes it runs on (docs/Distributed.md).

    `phase` (default `whole`) splits the collective over two kernels so that
    the kernels between them run while it is in flight
    (`lir-async-collectives`): a `start` kernel (`MPI_Iallreduce`) and,
    later, a `wait` kernel on the same `ins` and `outs` buffers, which
    completes it. Every `start` has one `wait` after it, and no kernel
    between the two reads or writes either buffer (checked by the entry's
    verifier).
    ```mlir
    %s = lir.all_reduce %p group_size 2 : tensor<1x7x64xf32>
    %a = lir.all_reduce %p group_size 2 phase start : tensor<1x7x64xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$group_size,
                   DefaultValuedAttr<LIR_CollectivePhaseAttr,
                       "::mlir::rlx::lir::CollectivePhase::Whole">:$phase);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `group_size` $group_size (`phase` custom<Keyword>($phase)^)?
    attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def LIR_AllGatherOp : LIR_Op<"all_gather", [HasParent<"KernelOp">]> {
  let summary = "concatenate every rank's tensor along one axis";
  let description = [{
    The compute op of a collective kernel: every one of the `group_size`
    ranks contributes its `input`, and every rank receives the inputs
    concatenated along `axis` in rank order (`MPI_Allgather`, then a reorder
    when `axis` is not the outermost). Made by `convert-mir-to-lir` from a
    `shard.all_gather` whose grid axes span the whole `shard.grid`; f32, f16
    or bf16.
    ```mlir
    %y = lir.all_gather %x axis 2 group_size 2
        : tensor<1x7x50xf32> -> tensor<1x7x100xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, I64Attr:$axis,
                   I64Attr:$group_size);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `axis` $axis `group_size` $group_size attr-dict `:` type($input)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // RLX_DIALECT_LIR_IR_LIROPS_TD
