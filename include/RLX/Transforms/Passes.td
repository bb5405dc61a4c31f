//===- Passes.td - RLX cross-dialect passes ----------------*- tablegen -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_TRANSFORMS_PASSES_TD
#define RLX_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def RLXSpecializeShapesPass : Pass<"rlx-specialize-shapes", "ModuleOp"> {
  let summary = "Bind the dynamic dims of a function's inputs to concrete shapes";
  let description = [{
    The second step of the three-step compile (template, specialize,
    compile): in the entry function (`entry`, default: the module's only
    public function with a body), each input named in `shapes`
    (`name:1x128`, the name being the argument's `rlx.name`, else `inputN`)
    takes that shape, and the shapes flow through the HIR and MIR ops so
    that every dynamic dim becomes static. An input with a dynamic dim that
    `shapes` does not name is an error; so are a shape of the wrong rank or
    one that disagrees with a static dim, and a name that is no input. An
    entry without dynamic inputs and without `shapes` is left unchanged.
    The pass works on the module because it picks the entry among its
    functions.

    ```mlir
    // rlx-opt --rlx-specialize-shapes="shapes=x:1x8"
    func.func @f(%x: tensor<1x?xf32> {rlx.name = "x"}) -> tensor<1x?xf32>
    // becomes
    func.func @f(%x: tensor<1x8xf32> {rlx.name = "x"}) -> tensor<1x8xf32>
    ```
  }];
  let options = [
    ListOption<"shapes", "shapes", "std::string",
               "Concrete input shapes, `name:d0xd1x...` each">,
    Option<"entry", "entry", "std::string", /*default=*/"",
           "The function to specialize (default: the only public one)">
  ];
  let dependentDialects = ["::mlir::func::FuncDialect"];
}

#endif // RLX_TRANSFORMS_PASSES_TD
