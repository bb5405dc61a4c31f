// RUN: rlx-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{alignment must be a power of two, got 48}}
lir.entry @entry_c1_alignment arena_size = 64, param_size = 0, alignment = 48 {
}

// -----

// expected-error @+1 {{arena_size and param_size must be non-negative}}
lir.entry @entry_c1_negative arena_size = -1, param_size = 0, alignment = 64 {
}

// -----

lir.entry @entry_c2_duplicate_input arena_size = 128, param_size = 0, alignment = 64 {
  %a = lir.view arena[0] : memref<4xf32>
  %b = lir.view arena[64] : memref<4xf32>
  lir.io input "x" %a : memref<4xf32>
  // expected-error @+1 {{duplicate input name 'x'}}
  lir.io input "x" %b : memref<4xf32>
}

// -----

lir.entry @view_c1_misaligned arena_size = 128, param_size = 0, alignment = 64 {
  // expected-error @+1 {{byte_offset 2 must be a non-negative multiple of the element size (4)}}
  %a = lir.view arena[2] : memref<4xf32>
}

// -----

lir.entry @view_c2_layout_offset arena_size = 128, param_size = 0, alignment = 64 {
  // expected-error @+1 {{layout must be static strides with a zero offset}}
  %a = lir.view arena[0] : memref<4xf32, strided<[1], offset: 4>>
}

// -----

lir.entry @view_c3_past_the_arena arena_size = 64, param_size = 0, alignment = 64 {
  // expected-error @+1 {{view [32, 96) exceeds the arena of 64 bytes}}
  %a = lir.view arena[32] : memref<16xf32>
}

// -----

lir.entry @view_c3_past_the_params arena_size = 64, param_size = 16, alignment = 64 {
  // expected-error @+1 {{view [0, 64) exceeds the params of 16 bytes}}
  %a = lir.view params[0] : memref<16xf32>
}

// -----

/// An offset past the arena whose end wraps: offset + 16 bytes overflows
/// int64 and used to pass the `end > capacity` check.
lir.entry @view_c6_offset_overflows arena_size = 64, param_size = 0, alignment = 64 {
  // expected-error @+1 {{byte_offset 9223372036854775800 + 16 bytes overflows 2^63 - 1}}
  %a = lir.view arena[9223372036854775800] : memref<4xf32>
}

// -----

/// An offset past the arena, no overflow: lir_view_c3.
lir.entry @view_c3_offset_past_the_arena arena_size = 64, param_size = 0, alignment = 64 {
  // expected-error @+1 {{view [4611686018427387904, 4611686018427387920) exceeds the arena of 64 bytes}}
  %a = lir.view arena[4611686018427387904] : memref<4xf32>
}

// -----

/// A size whose bytes wrap 64 bits (2^62 x 4 f32 = 2^66 bytes, 0 mod 2^64).
lir.entry @view_c6_size_overflows arena_size = 64, param_size = 0, alignment = 64 {
  // expected-error @+1 {{view 'memref<4611686018427387904x4xf32>' has a byte size past 2^63 - 1}}
  %a = lir.view arena[0] : memref<4611686018427387904x4xf32>
}

// -----

/// A strided view whose extent wraps although its element count fits.
lir.entry @view_c6_strided_extent_overflows arena_size = 64, param_size = 0, alignment = 64 {
  // expected-error @+1 {{has a byte size past 2^63 - 1}}
  %a = lir.view arena[0] : memref<4x1xf32, strided<[4611686018427387904, 1]>>
}

// -----

lir.entry @alloc_c2_size_overflows arena_size = 0, param_size = 0, alignment = 64 {
  // expected-error @+1 {{buffer 'memref<4611686018427387904x4xf32>' has a byte size past 2^63 - 1}}
  %a = lir.alloc : memref<4611686018427387904x4xf32>
}

// -----

/// The largest view that fits: it ends at 2^63 - 4, inside the arena.
lir.entry @view_c6_largest arena_size = 9223372036854775807, param_size = 0, alignment = 64 {
  %a = lir.view arena[9223372036854775788] : memref<4xf32>
  %b = lir.view arena[0] : memref<2305843009213693951xf32>
}

// -----

lir.entry @view_c4_alias_outside arena_size = 256, param_size = 0, alignment = 64 {
  %a = lir.view arena[0] : memref<8xf32>
  // expected-error @+1 {{alias [16, 48) must lie inside its source [0, 32) in the same space}}
  %b = lir.view arena[16] source(%a : memref<8xf32>) : memref<8xf32>
}

// -----

lir.entry @io_c1_param_in_arena arena_size = 64, param_size = 0, alignment = 64 {
  %a = lir.view arena[0] : memref<4xf32>
  // expected-error @+1 {{param 'w' must live in the params}}
  lir.io param "w" %a : memref<4xf32>
}

// -----

lir.entry @io_c1_output_in_params arena_size = 0, param_size = 64, alignment = 64 {
  %a = lir.view params[0] : memref<4xf32>
  // expected-error @+1 {{output 'y' must live in the arena}}
  lir.io output "y" %a : memref<4xf32>
}

// -----

lir.entry @io_c2_sources_without_axis arena_size = 0, param_size = 64, alignment = 64 {
  %a = lir.view params[0] : memref<4xf32>
  // expected-error @+1 {{sources and concat_axis must be given together}}
  lir.io param "w" %a {sources = ["a", "b"]} : memref<4xf32>
}

// -----

lir.entry @io_c2_derived_input arena_size = 64, param_size = 0, alignment = 64 {
  %a = lir.view arena[0] : memref<4xf32>
  // expected-error @+1 {{only params can be derived}}
  lir.io input "w" %a {sources = ["a", "b"], concat_axis = 0 : i64} : memref<4xf32>
}

// -----

lir.entry @io_c2_one_source arena_size = 0, param_size = 64, alignment = 64 {
  %a = lir.view params[0] : memref<4xf32>
  // expected-error @+1 {{a derived param needs at least two sources}}
  lir.io param "w" %a {sources = ["a"], concat_axis = 0 : i64} : memref<4xf32>
}

// -----

lir.entry @io_c2_axis_range arena_size = 0, param_size = 64, alignment = 64 {
  %a = lir.view params[0] : memref<4xf32>
  // expected-error @+1 {{concat_axis 1 is out of range}}
  lir.io param "w" %a {sources = ["a", "b"], concat_axis = 1 : i64} : memref<4xf32>
}

// -----

lir.entry @kernel_c1_arguments arena_size = 128, param_size = 0, alignment = 64 {
  %a = lir.view arena[0] : memref<4xf32>
  %b = lir.view arena[64] : memref<4xf32>
  // expected-error @+1 {{block argument type 'tensor<8xf32>' does not match input 'memref<4xf32>'}}
  lir.kernel "k" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%t: tensor<8xf32>):
    %c = mir.constant dense<1.0> : tensor<4xf32>
    lir.yield %c : tensor<4xf32>
  }
}

// -----

lir.entry @kernel_c1_argument_count arena_size = 128, param_size = 0, alignment = 64 {
  %a = lir.view arena[0] : memref<4xf32>
  %b = lir.view arena[64] : memref<4xf32>
  // expected-error @+1 {{expects one block argument per input, got 0 for 1}}
  lir.kernel "k" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
    %c = mir.constant dense<1.0> : tensor<4xf32>
    lir.yield %c : tensor<4xf32>
  }
}

// -----

lir.entry @kernel_c2_yield_count arena_size = 128, param_size = 0, alignment = 64 {
  %a = lir.view arena[0] : memref<4xf32>
  %b = lir.view arena[64] : memref<4xf32>
  // expected-error @+1 {{yields 2 values for 1 outputs}}
  lir.kernel "k" ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {
  ^bb0(%t: tensor<4xf32>):
    lir.yield %t, %t : tensor<4xf32>, tensor<4xf32>
  }
}

// -----

lir.entry @kernel_c2_yield_type arena_size = 128, param_size = 0, alignment = 64 {
  %a = lir.view arena[0] : memref<4xf32>
  %b = lir.view arena[64] : memref<4xi32>
  // expected-error @+1 {{yielded type 'tensor<4xf32>' does not match output 'memref<4xi32>'}}
  lir.kernel "k" ins(%a : memref<4xf32>) outs(%b : memref<4xi32>) {
  ^bb0(%t: tensor<4xf32>):
    lir.yield %t : tensor<4xf32>
  }
}

// -----

lir.entry @io_c3_source_sizes arena_size = 0, param_size = 512, alignment = 64 {
  %a = lir.view params[0] : memref<12x4xf32>
  // expected-error @+1 {{source_sizes must have one entry per source and add up to dimension 0 (12)}}
  lir.io param "w" %a {sources = ["a", "b"], concat_axis = 0 : i64, source_sizes = array<i64: 4, 4>} : memref<12x4xf32>
}

// -----

lir.entry @io_c3_sizes_without_sources arena_size = 0, param_size = 512, alignment = 64 {
  %a = lir.view params[0] : memref<12x4xf32>
  // expected-error @+1 {{source_sizes needs sources}}
  lir.io param "w" %a {source_sizes = array<i64: 12>} : memref<12x4xf32>
}

// -----

lir.entry @io_c4_index_bound_on_float arena_size = 64, param_size = 0, alignment = 64 {
  %a = lir.view arena[0] : memref<4xf32>
  // expected-error @+1 {{index_bound must be positive and set on an integer input}}
  lir.io input "x" %a {index_bound = 10 : i64} : memref<4xf32>
}

// -----

lir.entry @alloc_c1_layout arena_size = 0, param_size = 0, alignment = 64 {
  // expected-error @+1 {{must have the identity layout, got 'memref<4x4xf32, strided<[8, 1]>>'}}
  %a = lir.alloc : memref<4x4xf32, strided<[8, 1]>>
}

// -----

lir.entry @view_c5_alias_outside_buffer arena_size = 0, param_size = 0, alignment = 64 {
  %a = lir.alloc : memref<4x8xf32>
  // expected-error @+1 {{alias [64, 192) must lie in the arena, inside its unplanned buffer of 128 bytes}}
  %b = lir.view arena[64] source(%a : memref<4x8xf32>) : memref<4x8xf32>
}

// -----

lir.entry @view_c5_alias_of_alias arena_size = 0, param_size = 0, alignment = 64 {
  %a = lir.alloc : memref<4x8xf32>
  %b = lir.view arena[64] source(%a : memref<4x8xf32>) : memref<2x8xf32>
  // expected-error @+1 {{alias [96, 160) must lie in the arena, inside its unplanned buffer of 128 bytes}}
  %c = lir.view arena[96] source(%b : memref<2x8xf32>) : memref<2x8xf32>
}

// -----

lir.entry @io_c1_param_alloc arena_size = 0, param_size = 0, alignment = 64 {
  %a = lir.alloc : memref<4xf32>
  // expected-error @+1 {{param 'w' must live in the params}}
  lir.io param "w" %a : memref<4xf32>
}

// -----

lir.entry @io_c5_layout_shape arena_size = 0, param_size = 4096, alignment = 64 {
  %w = lir.view params[0] : memref<40x16xf32>
  // expected-error @+1 {{layout nk16 needs an f32 [N, K] param with N (and every concatenated source's N) a multiple of 16}}
  lir.io param "w" %w {layout = #lir.layout<nk16>} : memref<40x16xf32>
}

// -----

lir.entry @io_c7_x8_f32 arena_size = 0, param_size = 4096, alignment = 64 {
  %w = lir.view params[0] : memref<16x16xf32>
  // expected-error @+1 {{layout x8 needs a q4_0, q8_0, q4_K, q5_K, q6_K, f16 or bf16 [N, K] param with N (and every source's N, concatenated along N) a multiple of 8}}
  lir.io param "w" %w {layout = #lir.layout<x8>} : memref<16x16xf32>
}

// -----

lir.entry @io_c7_x8_rows arena_size = 0, param_size = 4096, alignment = 64 {
  %w = lir.view params[0] : memref<12x64x!mir.quant<q4_0>>
  // expected-error @+1 {{layout x8 needs a q4_0, q8_0, q4_K, q5_K, q6_K, f16 or bf16 [N, K] param}}
  lir.io param "w" %w {layout = #lir.layout<x8>} : memref<12x64x!mir.quant<q4_0>>
}

// -----

lir.entry @io_c7_x8_sources arena_size = 0, param_size = 4096, alignment = 64 {
  %w = lir.view params[0] : memref<16x64x!mir.quant<q8_0>>
  // expected-error @+1 {{layout x8 needs a q4_0, q8_0, q4_K, q5_K, q6_K, f16 or bf16 [N, K] param}}
  lir.io param "w" %w {layout = #lir.layout<x8>, sources = ["a", "b"], concat_axis = 0 : i64, source_sizes = array<i64: 4, 12>} : memref<16x64x!mir.quant<q8_0>>
}

// -----

lir.entry @io_c7_x8_q3_K arena_size = 0, param_size = 4096, alignment = 64 {
  %w = lir.view params[0] : memref<8x256x!mir.quant<q3_K>>
  // expected-error @+1 {{layout x8 needs a q4_0, q8_0, q4_K, q5_K, q6_K, f16 or bf16 [N, K] param}}
  lir.io param "w" %w {layout = #lir.layout<x8>} : memref<8x256x!mir.quant<q3_K>>
}

// -----

lir.entry @config_c1_tile arena_size = 64, param_size = 0, alignment = 64 {
  %a = lir.view arena[0] : memref<4xf32>
  // expected-error @+1 {{a gemm_generated kernel needs tile = [rows > 0, column vectors > 0, K block >= 0]}}
  lir.kernel "k" ins(%a : memref<4xf32>) outs(%a : memref<4xf32>) attributes {config = #lir.config<gemm_generated, tile = [8, 0, 16]>} {
  ^bb0(%t: tensor<4xf32>):
    lir.yield %t : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{binding [0, 16) must be non-empty and contain the view [0, 32)}}
func.func private @binding_c1_range() attributes {b = #lir.binding<space = arena, offset = 0, range = 16, view_offset = 0, view_bytes = 32, writes = false>}

// -----

// expected-error @+1 {{only arena bindings may be written}}
func.func private @binding_c1_writes_params() attributes {b = #lir.binding<space = params, offset = 0, range = 16, view_offset = 0, view_bytes = 16, writes = true>}

// -----

// expected-error @+1 {{workgroups must be three positive counts}}
func.func private @dispatch_c1_workgroups() attributes {d = #lir.dispatch<@m::@f, workgroups = [1, 0, 1], bindings = [<space = arena, offset = 0, range = 16, view_offset = 0, view_bytes = 16, writes = true>]>}

// -----

// expected-error @+1 {{constant at 8 (16 bytes) exceeds the pool of 16 bytes}}
func.func private @constant_pool_c1() attributes {c = #lir.constant_pool<bytes = 16, values = [dense<1.0> : tensor<4xf32>], offsets = [8]>}

// -----

// expected-error @+1 {{a glu_gemm kernel needs tile = [rows > 0, column vectors > 0, K block >= 0] or [..., column blocks per K block >= 0]}}
func.func private @config_c1_column_blocks() attributes {c = #lir.config<glu_gemm, tile = [6, 1, 256, -1]>}

// -----

// expected-error @+1 {{a gemm_generated kernel needs tile = [rows > 0, column vectors > 0, K block >= 0] or [..., column blocks per K block >= 0]}}
func.func private @config_c1_five_sizes() attributes {c = #lir.config<gemm_generated, tile = [6, 1, 256, 4, 1]>}

// -----

// expected-error @+1 {{tile sizes are only for generated GEMMs and blocked attention}}
func.func private @config_c1_tile_on_default() attributes {c = #lir.config<default, tile = [1, 1, 1]>}

// -----

// expected-error @+1 {{an attention_blocked kernel needs tile = [heads > 0, query positions > 0]}}
func.func private @config_c4_attention_tile_rank() attributes {c = #lir.config<attention_blocked, tile = [4]>}

// -----

// expected-error @+1 {{an attention_blocked kernel needs tile = [heads > 0, query positions > 0]}}
func.func private @config_c4_attention_tile_zero() attributes {c = #lir.config<attention_blocked, tile = [0, 2]>}

// -----

// expected-error @+1 {{a glu_gemm tile holds 1 or an even number of column vectors (gate and up in pairs), not 3}}
func.func private @config_c3_glu_odd_vectors() attributes {c = #lir.config<glu_gemm, tile = [4, 3, 64]>}

// -----

lir.entry @collective_c1_group arena_size = 256, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<4xf32>
  %y = lir.view arena[64] : memref<4xf32>
  lir.kernel "all_reduce" ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{group_size must be at least 1, got 0}}
    %r = lir.all_reduce %a group_size 0 : tensor<4xf32>
    lir.yield %r : tensor<4xf32>
  }
}

// -----

lir.entry @collective_c1_f64 arena_size = 256, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<4xf64>
  %y = lir.view arena[64] : memref<4xf64>
  lir.kernel "all_reduce" ins(%x : memref<4xf64>) outs(%y : memref<4xf64>) {
  ^bb0(%a: tensor<4xf64>):
    // expected-error @+1 {{moves f32, f16 or bf16 tensors only, got 'tensor<4xf64>'}}
    %r = lir.all_reduce %a group_size 2 : tensor<4xf64>
    lir.yield %r : tensor<4xf64>
  }
}

// -----

lir.entry @collective_c2_shape arena_size = 256, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<2x4xf32>
  %y = lir.view arena[64] : memref<2x12xf32>
  lir.kernel "all_gather" ins(%x : memref<2x4xf32>) outs(%y : memref<2x12xf32>) {
  ^bb0(%a: tensor<2x4xf32>):
    // expected-error @+1 {{result 'tensor<2x12xf32>' is not 2 inputs 'tensor<2x4xf32>' concatenated along axis 1}}
    %r = lir.all_gather %a axis 1 group_size 2 : tensor<2x4xf32> -> tensor<2x12xf32>
    lir.yield %r : tensor<2x12xf32>
  }
}

// -----

lir.entry @collective_c2_axis arena_size = 256, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<2x4xf32>
  %y = lir.view arena[64] : memref<2x8xf32>
  lir.kernel "all_gather" ins(%x : memref<2x4xf32>) outs(%y : memref<2x8xf32>) {
  ^bb0(%a: tensor<2x4xf32>):
    // expected-error @+1 {{axis 2 is out of range for 'tensor<2x4xf32>'}}
    %r = lir.all_gather %a axis 2 group_size 2 : tensor<2x4xf32> -> tensor<2x8xf32>
    lir.yield %r : tensor<2x8xf32>
  }
}

// -----

lir.entry @entry_c3_wait_without_start arena_size = 256, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<4xf32>
  %y = lir.view arena[64] : memref<4xf32>
  %z = lir.view arena[128] : memref<4xf32>
  %y2 = lir.view arena[72] : memref<2xf32>
  // expected-error @+1 {{waits for an all_reduce that no earlier 'start' kernel on the same buffers began}}
  lir.kernel "all_reduce_wait" ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %r = lir.all_reduce %a group_size 2 phase wait : tensor<4xf32>
    lir.yield %r : tensor<4xf32>
  }
}

// -----

lir.entry @entry_c3_wait_other_buffers arena_size = 256, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<4xf32>
  %y = lir.view arena[64] : memref<4xf32>
  %z = lir.view arena[128] : memref<4xf32>
  %y2 = lir.view arena[72] : memref<2xf32>
  lir.kernel "all_reduce" ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %r = lir.all_reduce %a group_size 2 phase start : tensor<4xf32>
    lir.yield %r : tensor<4xf32>
  }
  // expected-error @+1 {{waits for an all_reduce that no earlier 'start' kernel on the same buffers began}}
  lir.kernel "all_reduce_wait" ins(%x : memref<4xf32>) outs(%z : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %r = lir.all_reduce %a group_size 2 phase wait : tensor<4xf32>
    lir.yield %r : tensor<4xf32>
  }
}

// -----

lir.entry @entry_c3_never_waited arena_size = 256, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<4xf32>
  %y = lir.view arena[64] : memref<4xf32>
  %z = lir.view arena[128] : memref<4xf32>
  %y2 = lir.view arena[72] : memref<2xf32>
  // expected-error @+1 {{starts an all_reduce that no later 'wait' kernel completes}}
  lir.kernel "all_reduce" ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %r = lir.all_reduce %a group_size 2 phase start : tensor<4xf32>
    lir.yield %r : tensor<4xf32>
  }
  lir.kernel "exp" ins(%z : memref<4xf32>) outs(%z : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %r = mir.exp %a : (tensor<4xf32>) -> tensor<4xf32>
    lir.yield %r : tensor<4xf32>
  }
}

// -----

lir.entry @entry_c3_touched_in_flight arena_size = 256, param_size = 0, alignment = 64 {
  %x = lir.view arena[0] : memref<4xf32>
  %y = lir.view arena[64] : memref<4xf32>
  %z = lir.view arena[128] : memref<4xf32>
  %y2 = lir.view arena[72] : memref<2xf32>
  lir.kernel "all_reduce" ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %r = lir.all_reduce %a group_size 2 phase start : tensor<4xf32>
    lir.yield %r : tensor<4xf32>
  }
  lir.kernel "exp" ins(%z : memref<4xf32>) outs(%z : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %r = mir.exp %a : (tensor<4xf32>) -> tensor<4xf32>
    lir.yield %r : tensor<4xf32>
  }
  // expected-error @+1 {{touches a buffer of the all_reduce that kernel 'all_reduce' started, before its wait}}
  lir.kernel "exp" ins(%y2 : memref<2xf32>) outs(%y2 : memref<2xf32>) {
  ^bb0(%a: tensor<2xf32>):
    %r = mir.exp %a : (tensor<2xf32>) -> tensor<2xf32>
    lir.yield %r : tensor<2xf32>
  }
  lir.kernel "all_reduce_wait" ins(%x : memref<4xf32>) outs(%y : memref<4xf32>) {
  ^bb0(%a: tensor<4xf32>):
    %r = lir.all_reduce %a group_size 2 phase wait : tensor<4xf32>
    lir.yield %r : tensor<4xf32>
  }
}
