// The three-step compile with rlx-opt, as Session::buildTemplate,
// Template::specialize and Specialized::compile do it: the template is fused
// MIR with the dynamic dim kept; a specialization binds it and plans the
// arena; two specializations of one template plan different arenas.

// RUN: rlx-opt %s --rlx-compile-pipeline 2>/dev/null > %t.template.mlir
// RUN: FileCheck %s --check-prefix=TEMPLATE < %t.template.mlir
// RUN: rlx-opt %t.template.mlir --rlx-specialize-shapes="shapes=x:1x5x64" --rlx-compile-pipeline --convert-mir-to-lir --lir-plan-arena 2>/dev/null | FileCheck %s --check-prefix=FIVE
// RUN: rlx-opt %t.template.mlir --rlx-specialize-shapes="shapes=x:1x9x64" --rlx-compile-pipeline --convert-mir-to-lir --lir-plan-arena 2>/dev/null | FileCheck %s --check-prefix=NINE
// Step 3 (the code) from the template, as Specialized::compile does.
// RUN: rlx-opt %t.template.mlir --rlx-cpu-pipeline="shapes=x:1x5x64" | FileCheck %s --check-prefix=CODE
// RUN: not rlx-opt %t.template.mlir --rlx-cpu-pipeline 2>&1 | FileCheck %s --check-prefix=UNBOUND

// TEMPLATE-NOT: hir.
// TEMPLATE: func.func @norm_proj(%{{.*}}: tensor<1x?x64xf32> {rlx.name = "x"}) -> tensor<1x?x32xf32>
// TEMPLATE: mir.rms_norm {{.*}} -> tensor<1x?x64xf32>
// TEMPLATE: mir.matmul {{.*}} -> tensor<1x?x32xf32>

// FIVE: lir.entry @norm_proj arena_size = 2560, param_size = 8448
// FIVE: lir.io input "x" {{.*}} : memref<1x5x64xf32>
// NINE: lir.entry @norm_proj arena_size = 4608, param_size = 8448
// NINE: lir.io input "x" {{.*}} : memref<1x9x64xf32>
// CODE: llvm.func @norm_proj_spmd(

// UNBOUND: input 'x' has the dynamic type 'tensor<1x?x64xf32>'; give its shape

func.func @norm_proj(%x: tensor<1x?x64xf32> {rlx.name = "x"}) -> tensor<1x?x32xf32> {
  %w = hir.param "norm.weight" : tensor<64xf32>
  %y = hir.rms_norm %x, %w {epsilon = 1.0e-6 : f32}
      : (tensor<1x?x64xf32>, tensor<64xf32>) -> tensor<1x?x64xf32>
  %p = hir.param "proj.weight" : tensor<32x64xf32>
  %z = hir.linear %y, %p : (tensor<1x?x64xf32>, tensor<32x64xf32>)
      -> tensor<1x?x32xf32>
  return %z : tensor<1x?x32xf32>
}
