//===- RLXDialect.td - The rlx dialect of shared attributes -*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_DIALECT_COMMON_RLXDIALECT_TD
#define RLX_DIALECT_COMMON_RLXDIALECT_TD

include "mlir/IR/DialectBase.td"

def RLX_Dialect : Dialect {
  let name = "rlx";
  let cppNamespace = "::mlir::rlx";
  let summary = "The discardable attributes every RLX level shares";
  let description = [{
    No ops: the dialect owns and verifies the `rlx.*` attributes that
    outlive one level of IR.

    - `rlx.name` (string, on the arguments and results of the function
      that is compiled): the name of that input or output in the binding
      manifest (`lir.io`), the runtime and the tools.
    - `rlx.index_bound` (positive integer, on integer arguments): the
      arguments' values index a table of that many rows.
    - `rlx.param_pages` (on a module,
      `{page_size = 4096 : i64, phases = {"name" = 96 : i64, ...}}`): where
      the stored bytes of params start within a page of the file the
      runtime loads them from; convert-mir-to-lir places those params at the
      same phase in the parameter pool so that their pages can be mapped
      from the file. The page size is a power of two, phases lie in
      [0, page_size).
    - `rlx.rank` (on a module, `{rank = 1 : i64, ranks = 2 : i64}`): the
      module is rank `rank`'s program of a tensor-parallel split over
      `ranks` processes (`mir-shard-tensor-parallel` sets it). The binding
      manifest records the rank and the runtime refuses to run the program
      as any other rank of its communicator. `ranks` is at least 2 and
      `rank` lies in [0, ranks).

    Any other `rlx.*` attribute is an error.
  }];
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
}

#endif // RLX_DIALECT_COMMON_RLXDIALECT_TD
