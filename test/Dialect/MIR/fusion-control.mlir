// RUN: rlx-opt %s --test-mir-fusion-control --split-input-file 2>&1 | FileCheck %s
// RUN: rlx-opt %s --test-mir-fusion-control=only-function=fuse_here --split-input-file 2>&1 | FileCheck %s --check-prefix=ONLY
// RUN: rlx-opt %s --test-mir-fusion-control=fusion=matmul-epilogue --split-input-file 2>&1 | FileCheck %s --check-prefix=EPI

/// The fusion patterns consult the control function populateMIR*Patterns
/// takes before they rewrite a root: a refused root (tagged test.no_fuse, or
/// outside `only-function`) stays unfused, an accepted one fuses.

// CHECK: remark: control function asked 1 time(s)
// CHECK-LABEL: func.func @fuse_here
// CHECK: mir.fused_glu
// ONLY-LABEL: func.func @fuse_here
// ONLY: mir.fused_glu
// EPI-LABEL: func.func @fuse_here
// EPI-NOT: mir.fused_glu
func.func @fuse_here(%gu: tensor<4x64xf32>) -> tensor<4x32xf32> {
  %g = mir.slice %gu {axis = 1 : i64, start = 0 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %a = mir.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = mir.slice %gu {axis = 1 : i64, start = 32 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %h = mir.mul %a, %u : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %h : tensor<4x32xf32>
}

// -----

/// Refused: the root (the mul) is tagged.
// CHECK-LABEL: func.func @negative_tagged
// CHECK-NOT: mir.fused_glu
// CHECK: mir.mul {{.*}}test.no_fuse
func.func @negative_tagged(%gu: tensor<4x64xf32>) -> tensor<4x32xf32> {
  %g = mir.slice %gu {axis = 1 : i64, start = 0 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %a = mir.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = mir.slice %gu {axis = 1 : i64, start = 32 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %h = mir.mul %a, %u {test.no_fuse} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %h : tensor<4x32xf32>
}

// -----

/// Refused under only-function=fuse_here: another function.
// ONLY-LABEL: func.func @elsewhere
// ONLY-NOT: mir.fused_glu
// CHECK-LABEL: func.func @elsewhere
// CHECK: mir.fused_glu
func.func @elsewhere(%gu: tensor<4x64xf32>) -> tensor<4x32xf32> {
  %g = mir.slice %gu {axis = 1 : i64, start = 0 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %a = mir.silu %g : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %u = mir.slice %gu {axis = 1 : i64, start = 32 : i64, size = 32 : i64} : (tensor<4x64xf32>) -> tensor<4x32xf32>
  %h = mir.mul %a, %u : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  return %h : tensor<4x32xf32>
}
