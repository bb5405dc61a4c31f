// RUN: rlx-opt %s --rlx-gpu-pipeline | FileCheck %s

/// The whole GPU pipeline: every kernel is a spirv.module with one
/// GLCompute entry point, its storage buffers at descriptor set 0 (binding =
/// argument), its workgroup size as LocalSize and the minimal version,
/// capabilities and extensions; the schedule names the SPIR-V modules. The
/// GEMM (M = 32, N = 48) is 16x16 threads per 32x32 output tile, staging
/// 16-deep A and B tiles in workgroup memory; softmax is one 64-thread
/// workgroup per row.

// CHECK-LABEL: lir.entry @forward
// CHECK: lir.kernel "matmul" {{.*}}#lir.dispatch<@__spv__forward_k0_matmul::@forward_k0_matmul, workgroups = [2, 1, 1]
// CHECK: lir.kernel "softmax" {{.*}}#lir.dispatch<@__spv__forward_k1_softmax::@forward_k1_softmax, workgroups = [32, 1, 1]

// CHECK-LABEL: spirv.module @__spv__forward_k0_matmul Logical GLSL450 requires #spirv.vce<v1.0, [Shader, Matrix], [SPV_KHR_storage_buffer_storage_class]>
// CHECK-COUNT-2: spirv.GlobalVariable @{{.*}} : !spirv.ptr<!spirv.struct<(!spirv.array<512 x f32>)>, Workgroup>
// CHECK-DAG: spirv.GlobalVariable @forward_k0_matmul_arg_0 bind(0, 0) : !spirv.ptr<!spirv.struct<(!spirv.rtarray<f32, stride=4> [0])>, StorageBuffer>
// CHECK-DAG: spirv.GlobalVariable @forward_k0_matmul_arg_2 bind(0, 2)
// CHECK: spirv.func @forward_k0_matmul() "None"
// CHECK: spirv.ControlBarrier <Workgroup>, <Workgroup>, <AcquireRelease|WorkgroupMemory>
// CHECK: spirv.EntryPoint "GLCompute" @forward_k0_matmul
// CHECK: spirv.ExecutionMode @forward_k0_matmul "LocalSize", 16, 16, 1

// CHECK-LABEL: spirv.module @__spv__forward_k1_softmax
// CHECK: spirv.GlobalVariable @{{.*}} : !spirv.ptr<!spirv.struct<(!spirv.array<64 x f32>)>, Workgroup>
// CHECK: spirv.GL.Exp
// CHECK: spirv.ExecutionMode @forward_k1_softmax "LocalSize", 64, 1, 1
// CHECK-NOT: gpu.module
lir.entry @forward arena_size = 12288, param_size = 7680, alignment = 64 {
  %x = lir.view arena[0] : memref<32x40xf32>
  %w = lir.view params[0] : memref<48x40xf32>
  %y = lir.view arena[5120] : memref<32x48xf32>
  %z = lir.view arena[0] : memref<32x48xf32>
  lir.io input "x" %x : memref<32x40xf32>
  lir.io param "w" %w : memref<48x40xf32>
  lir.kernel "matmul" ins(%x, %w : memref<32x40xf32>, memref<48x40xf32>) outs(%y : memref<32x48xf32>) {
  ^bb0(%t: tensor<32x40xf32>, %u: tensor<48x40xf32>):
    %r = mir.matmul %t, %u {transpose_rhs} : (tensor<32x40xf32>, tensor<48x40xf32>) -> tensor<32x48xf32>
    lir.yield %r : tensor<32x48xf32>
  }
  lir.kernel "softmax" ins(%y : memref<32x48xf32>) outs(%z : memref<32x48xf32>) {
  ^bb0(%t: tensor<32x48xf32>):
    %r = mir.softmax %t {axis = -1 : i64} : (tensor<32x48xf32>) -> tensor<32x48xf32>
    lir.yield %r : tensor<32x48xf32>
  }
  lir.io output "z" %z : memref<32x48xf32>
}
