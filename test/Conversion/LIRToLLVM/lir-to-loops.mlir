// RUN: rlx-opt %s --convert-lir-to-loops | FileCheck %s
// RUN: rlx-opt %s --convert-lir-to-llvm | FileCheck %s --check-prefix=LLVM

/// An entry becomes a C-interface function over the arena and the parameter
/// pool; views are memref.view (plus reinterpret_cast when strided); kernels
/// that compute the same thing on the same types share one function; GEMMs
/// call cblas_sgemm; elementwise kernels are vectorized with a scalar tail.

// CHECK: func.func private @cblas_sgemm(i32, i32, i32, i32, i32, i32, f32, !llvm.ptr, i32, !llvm.ptr, i32, f32, !llvm.ptr, i32)
// CHECK-LABEL: func.func @forward(%{{.*}}: memref<?xi8>, %{{.*}}: memref<?xi8>) attributes {llvm.emit_c_interface
// CHECK: memref.view %{{.*}}[%{{.*}}][] : memref<?xi8> to memref<4x40xf32>
// CHECK: memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [4, 20], strides: [40, 1]
// CHECK: call @[[MM:forward_k0_matmul]](
// CHECK: call @[[EXP:forward_k1_exp]](
// CHECK: call @[[EXP]](
// CHECK-NOT: call
// CHECK: return

// CHECK: func.func private @[[MM]]
// CHECK: call @cblas_sgemm

// CHECK: func.func private @[[EXP]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: vector.load {{.*}} : memref<4x20xf32, strided<[40, 1]>>, vector<16xf32>
// CHECK: math.exp {{.*}} : vector<16xf32>
// CHECK: vector.store
// CHECK: memref.load
// CHECK: math.exp {{.*}} : f32

// LLVM-LABEL: llvm.func @forward
// LLVM: llvm.call @forward_k0_matmul
// LLVM-LABEL: llvm.func @_mlir_ciface_forward
// LLVM-NOT: math.
// LLVM-NOT: scf.
lir.entry @forward arena_size = 1536, param_size = 3200, alignment = 64 {
  %x = lir.view arena[0] : memref<4x20xf32>
  %w = lir.view params[0] : memref<40x20xf32>
  %y = lir.view arena[320] : memref<4x40xf32>
  %a = lir.view arena[320] source(%y : memref<4x40xf32>) : memref<4x20xf32, strided<[40, 1]>>
  %b = lir.view arena[400] source(%y : memref<4x40xf32>) : memref<4x20xf32, strided<[40, 1]>>
  %o1 = lir.view arena[960] : memref<4x20xf32>
  %o2 = lir.view arena[0] : memref<4x20xf32>
  lir.io input "x" %x : memref<4x20xf32>
  lir.io param "w" %w : memref<40x20xf32>
  lir.kernel "matmul" ins(%x, %w : memref<4x20xf32>, memref<40x20xf32>) outs(%y : memref<4x40xf32>) {
  ^bb0(%t: tensor<4x20xf32>, %u: tensor<40x20xf32>):
    %r = mir.matmul %t, %u {transpose_rhs} : (tensor<4x20xf32>, tensor<40x20xf32>) -> tensor<4x40xf32>
    lir.yield %r : tensor<4x40xf32>
  }
  lir.kernel "exp" ins(%a : memref<4x20xf32, strided<[40, 1]>>) outs(%o1 : memref<4x20xf32>) {
  ^bb0(%t: tensor<4x20xf32>):
    %r = mir.exp %t : (tensor<4x20xf32>) -> tensor<4x20xf32>
    lir.yield %r : tensor<4x20xf32>
  }
  lir.kernel "exp" ins(%b : memref<4x20xf32, strided<[40, 1]>>) outs(%o2 : memref<4x20xf32>) {
  ^bb0(%t: tensor<4x20xf32>):
    %r = mir.exp %t : (tensor<4x20xf32>) -> tensor<4x20xf32>
    lir.yield %r : tensor<4x20xf32>
  }
  lir.io output "a" %o1 : memref<4x20xf32>
  lir.io output "b" %o2 : memref<4x20xf32>
}
