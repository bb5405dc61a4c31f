// RUN: rm -rf %t && rlx-opt %s -split-input-file -verify-diagnostics --rlx-serialize-spirv=output-dir=%t
// RUN: ls %t | FileCheck %s
// RUN: rm -rf %t.off && rlx-opt %s -split-input-file --rlx-serialize-spirv="output-dir=%t.off validate=false" > /dev/null
// RUN: ls %t.off | FileCheck %s --check-prefix=OFF

/// rlx-serialize-spirv validates every module with spirv-tools (Vulkan 1.1)
/// before writing it, as the Vulkan back end does before creating pipelines:
/// an invalid module is an error naming its kernel (the module name without
/// `__spv__`) and is not written. `validate=false` writes it anyway.

// CHECK: __spv__valid_kernel.spv
// CHECK-NOT: invalid_kernel
// OFF-DAG: __spv__invalid_kernel.spv
// OFF-DAG: __spv__valid_kernel.spv

spirv.module @__spv__valid_kernel Logical GLSL450 requires #spirv.vce<v1.3, [Shader], []> {
  spirv.func @valid_kernel() "None" {
    spirv.Return
  }
  spirv.EntryPoint "GLCompute" @valid_kernel
  spirv.ExecutionMode @valid_kernel "LocalSize", 64, 1, 1
}

// -----

/// The SPIR-V dialect accepts a GLCompute entry point without a workgroup
/// size; Vulkan requires LocalSize (VUID-StandaloneSpirv-LocalSize-06426).

// expected-error @+1 {{SPIR-V validation of kernel 'invalid_kernel' failed (Vulkan 1.1)}}
spirv.module @__spv__invalid_kernel Logical GLSL450 requires #spirv.vce<v1.3, [Shader], []> {
  spirv.func @invalid_kernel() "None" {
    spirv.Return
  }
  spirv.EntryPoint "GLCompute" @invalid_kernel
}
