// RUN: rlx-opt %s -split-input-file -verify-diagnostics | FileCheck %s

/// A sliced param (`source_starts`) round-trips: one source is enough.
// CHECK-LABEL: lir.entry @io_sliced_param
// CHECK: lir.io param "w[8:20]" %{{.*}} {concat_axis = 0 : i64, source_sizes = array<i64: 12>, source_starts = array<i64: 8>, sources = ["w"]} : memref<12x4xf32>
lir.entry @io_sliced_param arena_size = 0, param_size = 512, alignment = 64 {
  %a = lir.view params[0] : memref<12x4xf32>
  lir.io param "w[8:20]" %a {sources = ["w"], concat_axis = 0 : i64, source_sizes = array<i64: 12>, source_starts = array<i64: 8>} : memref<12x4xf32>
}

// -----

lir.entry @io_c2_one_source_without_starts arena_size = 0, param_size = 512, alignment = 64 {
  %a = lir.view params[0] : memref<12x4xf32>
  // expected-error @+1 {{a derived param needs at least two sources}}
  lir.io param "w" %a {sources = ["w"], concat_axis = 0 : i64, source_sizes = array<i64: 12>} : memref<12x4xf32>
}

// -----

lir.entry @io_c6_starts_count arena_size = 0, param_size = 512, alignment = 64 {
  %a = lir.view params[0] : memref<12x4xf32>
  // expected-error @+1 {{source_starts must give one non-negative start per source, with source_sizes}}
  lir.io param "w" %a {sources = ["a", "b"], concat_axis = 0 : i64, source_sizes = array<i64: 6, 6>, source_starts = array<i64: 0>} : memref<12x4xf32>
}

// -----

lir.entry @io_c6_negative_start arena_size = 0, param_size = 512, alignment = 64 {
  %a = lir.view params[0] : memref<12x4xf32>
  // expected-error @+1 {{source_starts must give one non-negative start per source, with source_sizes}}
  lir.io param "w" %a {sources = ["w"], concat_axis = 0 : i64, source_sizes = array<i64: 12>, source_starts = array<i64: -1>} : memref<12x4xf32>
}

// -----

lir.entry @io_c6_starts_without_sources arena_size = 0, param_size = 512, alignment = 64 {
  %a = lir.view params[0] : memref<12x4xf32>
  // expected-error @+1 {{source_starts needs sources}}
  lir.io param "w" %a {source_starts = array<i64: 0>} : memref<12x4xf32>
}
