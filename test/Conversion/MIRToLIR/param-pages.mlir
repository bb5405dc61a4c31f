// RUN: rlx-opt %s -split-input-file --convert-mir-to-lir -verify-diagnostics | FileCheck %s

/// Params named in `rlx.param_pages` start at their page phase (offset
/// modulo page_size) so that the loader can map their whole pages from the
/// file; the others stay `alignment`-aligned after them. Names that are not
/// params ("missing") are ignored.

// CHECK-LABEL: lir.entry @phased arena_size = 0, param_size = 2432, alignment = 64
module attributes {rlx.param_pages = {page_size = 256 : i64, phases = {"a" = 32 : i64, "b" = 8 : i64, "e0" = 100 : i64, "f0" = 0 : i64, "missing" = 0 : i64}}} {
func.func @phased(%x: tensor<1x8xf32> {rlx.name = "x"}) -> (tensor<1x20xf32> {rlx.name = "y"}, tensor<1x8xf32> {rlx.name = "z"}) {
  // a (256 bytes) at phase 32: offset 32. c (256 bytes) after it, aligned:
  // 320. b at phase 8 past 576: 776. d after b (776 + 256), aligned: 1088.
  // CHECK-DAG: lir.view params[32] : memref<8x8xf32>
  // CHECK-DAG: lir.view params[320] : memref<8x8xf32>
  // CHECK-DAG: lir.view params[776] : memref<8x8xf32>
  // CHECK-DAG: lir.view params[1088] : memref<20x8xf32>
  // e concatenates e0 and e1 along rows: it takes e0's phase 100 past 1728
  // (1892); the other derived param, along columns, is aligned after it.
  // CHECK-DAG: lir.view params[1892] : memref<8x8xf32>
  // CHECK-DAG: lir.view params[2176] : memref<8x8xf32>
  %a = mir.param "a" : tensor<8x8xf32>
  %c = mir.param "c" : tensor<8x8xf32>
  %b = mir.param "b" : tensor<8x8xf32>
  %d = mir.param "d" : tensor<20x8xf32>
  %e = mir.param "e0+e1" {sources = ["e0", "e1"], concat_axis = 0 : i64, source_sizes = array<i64: 4, 4>} : tensor<8x8xf32>
  %f = mir.param "f0+f1" {sources = ["f0", "f1"], concat_axis = 1 : i64, source_sizes = array<i64: 4, 4>} : tensor<8x8xf32>
  %0 = mir.matmul %x, %a : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
  %1 = mir.matmul %0, %c : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
  %2 = mir.matmul %1, %b : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
  %3 = mir.matmul %2, %d {transpose_rhs} : (tensor<1x8xf32>, tensor<20x8xf32>) -> tensor<1x20xf32>
  %4 = mir.matmul %x, %e : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
  %5 = mir.matmul %4, %f : (tensor<1x8xf32>, tensor<8x8xf32>) -> tensor<1x8xf32>
  return %3, %5 : tensor<1x20xf32>, tensor<1x8xf32>
}
}

// -----

// expected-error @+1 {{rlx.param_pages must be a dictionary {page_size = N, phases = {...}}}}
module attributes {rlx.param_pages = 4096 : i64} {
func.func @not_dict(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
}

// -----

// expected-error @+1 {{rlx.param_pages must hold exactly an integer 'page_size' and a dictionary 'phases'}}
module attributes {rlx.param_pages = {phases = {}}} {
func.func @no_page(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
}

// -----

// expected-error @+1 {{rlx.param_pages has page_size 48; it must be a power of two}}
module attributes {rlx.param_pages = {page_size = 48 : i64, phases = {}}} {
func.func @bad_page(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
}

// -----

// expected-error @+1 {{rlx.param_pages gives param 'w' the phase 4096; phases are integers in [0, 4096)}}
module attributes {rlx.param_pages = {page_size = 4096 : i64, phases = {"w" = 4096 : i64}}} {
func.func @bad_phase(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
}

// -----

// expected-error @+1 {{rlx.param_pages gives param 'w' a phase that is not an integer}}
module attributes {rlx.param_pages = {page_size = 4096 : i64, phases = {"w" = "x"}}} {
func.func @not_int(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
}

// -----

// expected-error @+1 {{convert-mir-to-lir: rlx.param_pages has page_size 32, smaller than the alignment (64)}}
module attributes {rlx.param_pages = {page_size = 32 : i64, phases = {}}} {
func.func @small_page(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
}

// -----

// expected-error @+1 {{rlx.param_pages belongs on a builtin.module}}
func.func @on_func(%x: tensor<4xf32>) -> tensor<4xf32> attributes {rlx.param_pages = {page_size = 4096 : i64, phases = {}}} {
  return %x : tensor<4xf32>
}
