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

def LIR_EntryOp : LIR_Op<"entry", [Symbol, IsolatedFromAbove,
    SingleBlock, NoTerminator]> {
  let summary = "an entry point: one arena, one parameter pool, a schedule";
  let description = [{
    Owns the storage plan of one compiled entry point. `arena_size` bytes of
    activation storage are reused by liveness; `param_size` bytes hold the
    parameters. The body lists views, the I/O manifest and the kernels in
    execution order.

    ```mlir
    lir.entry @forward arena_size = 4096, param_size = 1024, alignment = 64 {
      %x = lir.view arena[0] : memref<4x16xf32>
      lir.io input "x" %x : memref<4x16xf32>
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, I64Attr:$arena_size,
                   I64Attr:$param_size,
                   DefaultValuedAttr<I64Attr, "64">:$alignment);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `arena_size` `=` $arena_size `,` `param_size` `=` $param_size
    `,` `alignment` `=` $alignment attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
}

def LIR_ViewOp : LIR_Op<"view", [Pure, HasParent<"EntryOp">]> {
  let summary = "a typed view at a byte offset of the arena or parameter pool";
  let description = [{
    ```mlir
    %v = lir.view arena[128] : memref<2x8xf32>
    ```
  }];
  let arguments = (ins LIR_MemorySpaceAttr:$space, I64Attr:$byte_offset);
  let results = (outs AnyStaticShapeMemRef:$result);
  let assemblyFormat =
      "$space `[` $byte_offset `]` attr-dict `:` type($result)";
  let hasVerifier = 1;
}

#endif // RLX_DIALECT_LIR_IR_LIROPS_TD
