// RUN: rlx-opt %s | rlx-opt | FileCheck %s
// RUN: rlx-opt %s --mlir-print-op-generic | rlx-opt | FileCheck %s

// A planned entry point: inputs, params (one derived), aliasing views and
// kernels in order.

// CHECK-LABEL: lir.entry @forward arena_size = 4096, param_size = 16384, alignment = 64
lir.entry @forward arena_size = 4096, param_size = 16384, alignment = 64 {
  // CHECK: %[[X:.*]] = lir.view arena[0] : memref<8x32xf32>
  %x = lir.view arena[0] : memref<8x32xf32>
  // CHECK: %[[W:.*]] = lir.view params[0] : memref<96x32xf32>
  %w = lir.view params[0] : memref<96x32xf32>
  %qkv = lir.view arena[1024] : memref<8x96xf32>
  // CHECK: lir.view arena[1152] source(%{{.*}} : memref<8x96xf32>) : memref<8x32xf32, strided<[96, 1]>>
  %k = lir.view arena[1152] source(%qkv : memref<8x96xf32>) : memref<8x32xf32, strided<[96, 1]>>
  %y = lir.view arena[0] : memref<8x32xf32>
  // CHECK: lir.io input "x" %[[X]]
  lir.io input "x" %x : memref<8x32xf32>
  // CHECK: lir.io param "qkv" %[[W]] {concat_axis = 0 : i64, source_sizes = array<i64: 32, 32, 32>, sources = ["q", "k", "v"]}
  lir.io param "qkv" %w {sources = ["q", "k", "v"], concat_axis = 0 : i64, source_sizes = array<i64: 32, 32, 32>} : memref<96x32xf32>
  lir.io output "y" %y : memref<8x32xf32>
  // CHECK: lir.kernel "qkv_proj" ins(%{{.*}}, %{{.*}} : memref<8x32xf32>, memref<96x32xf32>) outs(%{{.*}} : memref<8x96xf32>) attributes {library = "cblas_sgemm"}
  lir.kernel "qkv_proj" ins(%x, %w : memref<8x32xf32>, memref<96x32xf32>) outs(%qkv : memref<8x96xf32>) attributes {library = "cblas_sgemm"} {
  ^bb0(%a: tensor<8x32xf32>, %b: tensor<96x32xf32>):
    %r = mir.matmul %a, %b {transpose_rhs} : (tensor<8x32xf32>, tensor<96x32xf32>) -> tensor<8x96xf32>
    lir.yield %r : tensor<8x96xf32>
  }
  // CHECK: lir.kernel "silu" {{.*}} attributes {inplace}
  lir.kernel "silu" ins(%k : memref<8x32xf32, strided<[96, 1]>>) outs(%y : memref<8x32xf32>) attributes {inplace} {
  ^bb0(%a: tensor<8x32xf32>):
    %r = mir.silu %a : (tensor<8x32xf32>) -> tensor<8x32xf32>
    lir.yield %r : tensor<8x32xf32>
  }
}

// CHECK-LABEL: lir.entry @index_bound
lir.entry @index_bound arena_size = 64, param_size = 0, alignment = 64 {
  %ids = lir.view arena[0] : memref<1x8xi32>
  // CHECK: lir.io input "ids" %{{.*}} {index_bound = 100 : i64}
  lir.io input "ids" %ids {index_bound = 100 : i64} : memref<1x8xi32>
}

// CHECK-LABEL: lir.entry @constant_only
lir.entry @constant_only arena_size = 64, param_size = 0, alignment = 64 {
  %y = lir.view arena[0] : memref<4xf32>
  lir.io output "y" %y : memref<4xf32>
  // CHECK: lir.kernel "fill" outs(
  lir.kernel "fill" outs(%y : memref<4xf32>) {
    %c = mir.constant dense<1.0> : tensor<4xf32>
    lir.yield %c : tensor<4xf32>
  }
}

// An unplanned entry (before lir-plan-arena): buffers are lir.alloc, an
// alias of one has its offset relative to the buffer.
// CHECK-LABEL: lir.entry @unplanned arena_size = 0
lir.entry @unplanned arena_size = 0, param_size = 0, alignment = 64 {
  // CHECK: %[[B:.*]] = lir.alloc : memref<8x96xf32>
  %qkv = lir.alloc : memref<8x96xf32>
  // CHECK: lir.view arena[128] source(%[[B]] : memref<8x96xf32>) : memref<8x32xf32, strided<[96, 1]>>
  %k = lir.view arena[128] source(%qkv : memref<8x96xf32>) : memref<8x32xf32, strided<[96, 1]>>
  %y = lir.alloc : memref<8x32xf32>
  // CHECK: lir.io input "qkv" %[[B]] : memref<8x96xf32>
  lir.io input "qkv" %qkv : memref<8x96xf32>
  lir.io output "y" %y : memref<8x32xf32>
  lir.kernel "neg" ins(%k : memref<8x32xf32, strided<[96, 1]>>) outs(%y : memref<8x32xf32>) {
  ^bb0(%a: tensor<8x32xf32>):
    %r = mir.neg %a : (tensor<8x32xf32>) -> tensor<8x32xf32>
    lir.yield %r : tensor<8x32xf32>
  }
}

// Collectives of a tensor-parallel program: each is the compute op of its
// own kernel.
// CHECK-LABEL: lir.entry @collectives
lir.entry @collectives arena_size = 1024, param_size = 0, alignment = 64 {
  %p = lir.view arena[0] : memref<1x4x8xf32>
  %s = lir.view arena[128] : memref<1x4x8xf32>
  %g = lir.view arena[256] : memref<1x4x16xf32>
  lir.io input "p" %p : memref<1x4x8xf32>
  lir.kernel "all_reduce" ins(%p : memref<1x4x8xf32>) outs(%s : memref<1x4x8xf32>) {
  ^bb0(%a: tensor<1x4x8xf32>):
    // CHECK: lir.all_reduce %{{.*}} group_size 2 : tensor<1x4x8xf32>
    %r = lir.all_reduce %a group_size 2 : tensor<1x4x8xf32>
    lir.yield %r : tensor<1x4x8xf32>
  }
  lir.kernel "all_gather" ins(%s : memref<1x4x8xf32>) outs(%g : memref<1x4x16xf32>) {
  ^bb0(%a: tensor<1x4x8xf32>):
    // CHECK: lir.all_gather %{{.*}} axis 2 group_size 2 : tensor<1x4x8xf32> -> tensor<1x4x16xf32>
    %r = lir.all_gather %a axis 2 group_size 2 : tensor<1x4x8xf32> -> tensor<1x4x16xf32>
    lir.yield %r : tensor<1x4x16xf32>
  }
  lir.io output "g" %g : memref<1x4x16xf32>
}

// The 16-bit floats [precision] compute moves (bf16 sum, f16 gather).
// CHECK-LABEL: lir.entry @collectives_16_bit
lir.entry @collectives_16_bit arena_size = 1024, param_size = 0, alignment = 64 {
  %p = lir.view arena[0] : memref<1x4x8xbf16>
  %s = lir.view arena[128] : memref<1x4x8xbf16>
  %h = lir.view arena[256] : memref<1x4x8xf16>
  %g = lir.view arena[384] : memref<1x4x16xf16>
  lir.io input "p" %p : memref<1x4x8xbf16>
  lir.io input "h" %h : memref<1x4x8xf16>
  lir.kernel "all_reduce" ins(%p : memref<1x4x8xbf16>) outs(%s : memref<1x4x8xbf16>) {
  ^bb0(%a: tensor<1x4x8xbf16>):
    // CHECK: lir.all_reduce %{{.*}} group_size 2 : tensor<1x4x8xbf16>
    %r = lir.all_reduce %a group_size 2 : tensor<1x4x8xbf16>
    lir.yield %r : tensor<1x4x8xbf16>
  }
  lir.kernel "all_gather" ins(%h : memref<1x4x8xf16>) outs(%g : memref<1x4x16xf16>) {
  ^bb0(%a: tensor<1x4x8xf16>):
    // CHECK: lir.all_gather %{{.*}} axis 2 group_size 2 : tensor<1x4x8xf16> -> tensor<1x4x16xf16>
    %r = lir.all_gather %a axis 2 group_size 2 : tensor<1x4x8xf16> -> tensor<1x4x16xf16>
    lir.yield %r : tensor<1x4x16xf16>
  }
  lir.io output "s" %s : memref<1x4x8xbf16>
  lir.io output "g" %g : memref<1x4x16xf16>
}
