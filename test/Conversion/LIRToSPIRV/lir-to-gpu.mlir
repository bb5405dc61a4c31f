// RUN: rlx-opt %s --convert-lir-to-spirv=gpu-only | FileCheck %s
// RUN: rlx-opt %s --convert-lir-to-spirv="gpu-only storage-buffer-alignment=16" | FileCheck %s --check-prefix=ALIGN16

/// Each kernel becomes a gpu.func over flat storage-buffer memrefs in a
/// gpu.module of its own, with its workgroup size in spirv.entry_point_abi;
/// the lir.kernel keeps the dispatch: entry point, workgroup count and one
/// binding per view (#lir.dispatch, #lir.binding).
/// A view whose byte offset is not a multiple of the storage-buffer
/// alignment is bound at the offset rounded down and read at an element
/// offset compiled into the kernel; kernels with equal bodies, types and
/// element offsets share one function. Non-splat constants go to the
/// constant pool (#lir.constant_pool, bindings in space `constants`).

// CHECK-LABEL: lir.entry @forward
// CHECK-SAME: constant_pool = #lir.constant_pool<bytes = 256, values = [dense<{{\[}}[1.000000e+00], [2.000000e+00], [3.000000e+00], [4.000000e+00]]> : tensor<4x1xf32>], offsets = [0]>
// CHECK: lir.kernel "matmul" {{.*}} attributes {dispatch = #lir.dispatch<@forward_k0_matmul::@forward_k0_matmul, workgroups = [1, 1, 1], bindings = [<space = arena, offset = 0, range = 320, view_offset = 0, view_bytes = 320, writes = false>, <space = params, offset = 0, range = 3200, view_offset = 0, view_bytes = 3200, writes = false>, <space = arena, offset = 256, range = 704, view_offset = 320, view_bytes = 640, writes = true>]>}
// CHECK: lir.kernel "exp" {{.*}}dispatch = #lir.dispatch<@forward_k1_exp::@forward_k1_exp, workgroups = [2, 1, 1], bindings = [<space = arena, offset = 256, range = 624, view_offset = 320, view_bytes = 560, writes = false>, <space = arena, offset = 768, range = 512, view_offset = 960, view_bytes = 320, writes = true>]>
// CHECK: lir.kernel "exp" {{.*}}dispatch = #lir.dispatch<@forward_k2_exp::@forward_k2_exp, workgroups = [2, 1, 1], bindings = [<space = arena, offset = 256, range = 704, view_offset = 400, view_bytes = 560, writes = false>, <space = arena, offset = 0, range = 320, view_offset = 0, view_bytes = 320, writes = true>]>
// CHECK: lir.kernel "add" {{.*}}bindings = [<space = arena, offset = 768, range = 512, view_offset = 960, view_bytes = 320, writes = false>, <space = arena, offset = 1280, range = 320, view_offset = 1280, view_bytes = 320, writes = true>, <space = constants, offset = 0, range = 16, view_offset = 0, view_bytes = 16, writes = false>]>

// A GEMV (M = 4 rows, K = 20): a thread per column of the [N, K] weight, 64
// columns per workgroup, partial sums of the 4 rows in workgroup memory.
// CHECK-LABEL: gpu.module @forward_k0_matmul
// CHECK: gpu.func @forward_k0_matmul(%{{.*}}: memref<?xf32, #spirv.storage_class<StorageBuffer>>, %{{.*}}: memref<?xf32, #spirv.storage_class<StorageBuffer>>, %{{.*}}: memref<?xf32, #spirv.storage_class<StorageBuffer>>) kernel attributes {spirv.entry_point_abi = #spirv.entry_point_abi<workgroup_size = [64, 1, 1]>}
// CHECK: memref.alloc() : memref<4x64xf32, #spirv.storage_class<Workgroup>>
// CHECK: gpu.barrier

// The strided view at byte 320 is bound at 256: element offset 16.
// CHECK-LABEL: gpu.module @forward_k1_exp
// CHECK: %[[C16:.*]] = arith.constant 16 : index
// CHECK: gpu.block_id x
// CHECK: arith.remui
// CHECK: math.exp

// CHECK-LABEL: gpu.module @forward_k2_exp
// CHECK-LABEL: gpu.module @forward_k3_add

// With 16-byte descriptor offsets both slices are aligned: one exp kernel.
// ALIGN16: #lir.dispatch<@forward_k1_exp::@forward_k1_exp
// ALIGN16: #lir.dispatch<@forward_k1_exp::@forward_k1_exp
// ALIGN16: gpu.module @forward_k1_exp
// ALIGN16-NOT: gpu.module @forward_k{{[0-9]+}}_exp
// ALIGN16: gpu.module @forward_k2_add
lir.entry @forward arena_size = 1600, param_size = 3200, alignment = 64 {
  %x = lir.view arena[0] : memref<4x20xf32>
  %w = lir.view params[0] : memref<40x20xf32>
  %y = lir.view arena[320] : memref<4x40xf32>
  %a = lir.view arena[320] source(%y : memref<4x40xf32>) : memref<4x20xf32, strided<[40, 1]>>
  %b = lir.view arena[400] source(%y : memref<4x40xf32>) : memref<4x20xf32, strided<[40, 1]>>
  %o1 = lir.view arena[960] : memref<4x20xf32>
  %o2 = lir.view arena[0] : memref<4x20xf32>
  %o3 = lir.view arena[1280] : memref<4x20xf32>
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
  lir.kernel "add" ins(%o1 : memref<4x20xf32>) outs(%o3 : memref<4x20xf32>) {
  ^bb0(%t: tensor<4x20xf32>):
    %c = mir.constant dense<[[1.0], [2.0], [3.0], [4.0]]> : tensor<4x1xf32>
    %r = mir.add %t, %c : (tensor<4x20xf32>, tensor<4x1xf32>) -> tensor<4x20xf32>
    lir.yield %r : tensor<4x20xf32>
  }
  lir.io output "a" %o1 : memref<4x20xf32>
  lir.io output "b" %o2 : memref<4x20xf32>
  lir.io output "c" %o3 : memref<4x20xf32>
}
