// RUN: rlx-opt %s -split-input-file --lir-select-strategy | FileCheck %s
// RUN: rlx-opt %s -split-input-file --lir-select-strategy="attention-rows=1" | FileCheck %s --check-prefix=ONE
// RUN: rlx-opt %s -split-input-file --lir-select-strategy="attention-rows=3" | FileCheck %s --check-prefix=THREE
// RUN: rlx-opt %s -split-input-file --lir-select-strategy="attention-rows=8" | FileCheck %s --check-prefix=EIGHT
// RUN: not rlx-opt %s -split-input-file --lir-select-strategy="attention-rows=-1" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: rlx-opt %s -split-input-file --lir-select-strategy="attention-accumulators=4" | FileCheck %s --check-prefix=AVX2
// RUN: rlx-opt %s -split-input-file --lir-select-strategy="attention-accumulators=4 attention-rows=2" | FileCheck %s --check-prefix=ROWS
// RUN: not rlx-opt %s -split-input-file --lir-select-strategy="attention-accumulators=0" 2>&1 | FileCheck %s --check-prefix=BADACC

/// lir-select-strategy: a mir.attention lowered blocked (head dim a multiple
/// of 16) gets `attention_blocked` with tile = [heads of a GQA group,
/// query positions]. By default the rows are as many as 16 accumulator
/// vectors hold, at most 4: head dims 16 and 64 take 4 rows (the group's 2
/// heads x 2 positions), 128 two (2 heads x 1 position). With
/// `attention-rows`: 1 row; 3 rows = 2 heads x 1 position (whole positions
/// only); 8 rows = 2 heads x 4 positions. A head dim of 24 is lowered one
/// key at a time: no config. A negative row count is an error.
/// `attention-accumulators=4` (AVX2's 16 registers of 8 lanes): head dim 16
/// still takes 4 rows, 64 and 128 one (a row of 64 takes 8 ymm registers);
/// given rows win over it; 0 accumulators is an error.

// CHECK-LABEL: lir.entry @attention
// CHECK: lir.kernel "hd16" {{.*}}config = #lir.config<attention_blocked, tile = [2, 2]>
// CHECK: lir.kernel "hd64" {{.*}}config = #lir.config<attention_blocked, tile = [2, 2]>
// CHECK: lir.kernel "hd128" {{.*}}config = #lir.config<attention_blocked, tile = [2, 1]>
// CHECK: lir.kernel "hd24"
// CHECK-NOT: config
// ONE: lir.kernel "hd16" {{.*}}config = #lir.config<attention_blocked, tile = [1, 1]>
// THREE: lir.kernel "hd16" {{.*}}config = #lir.config<attention_blocked, tile = [2, 1]>
// EIGHT: lir.kernel "hd16" {{.*}}config = #lir.config<attention_blocked, tile = [2, 4]>
// BAD: error: lir-select-strategy: attention-rows must be >= 0 (0: from the head dim), got -1
// AVX2: lir.kernel "hd16" {{.*}}config = #lir.config<attention_blocked, tile = [2, 2]>
// AVX2: lir.kernel "hd64" {{.*}}config = #lir.config<attention_blocked, tile = [1, 1]>
// AVX2: lir.kernel "hd128" {{.*}}config = #lir.config<attention_blocked, tile = [1, 1]>
// ROWS: lir.kernel "hd64" {{.*}}config = #lir.config<attention_blocked, tile = [2, 1]>
// BADACC: error: lir-select-strategy: attention-accumulators must be > 0, got 0
lir.entry @attention arena_size = 81920, param_size = 0, alignment = 64 {
  %q = lir.view arena[0] : memref<1x8x64xf32>
  %k = lir.view arena[2048] : memref<1x8x32xf32>
  %o = lir.view arena[3072] : memref<1x8x64xf32>
  %q4 = lir.view arena[5120] : memref<1x8x256xf32>
  %k4 = lir.view arena[13312] : memref<1x8x128xf32>
  %o4 = lir.view arena[17408] : memref<1x8x256xf32>
  %q5 = lir.view arena[25600] : memref<1x8x512xf32>
  %k5 = lir.view arena[41984] : memref<1x8x256xf32>
  %o5 = lir.view arena[50176] : memref<1x8x512xf32>
  %q3 = lir.view arena[66560] : memref<1x8x96xf32>
  %k3 = lir.view arena[69632] : memref<1x8x48xf32>
  %o3 = lir.view arena[71168] : memref<1x8x96xf32>
  lir.io input "q" %q : memref<1x8x64xf32>
  lir.io input "k" %k : memref<1x8x32xf32>
  lir.io input "q4" %q4 : memref<1x8x256xf32>
  lir.io input "k4" %k4 : memref<1x8x128xf32>
  lir.io input "q5" %q5 : memref<1x8x512xf32>
  lir.io input "k5" %k5 : memref<1x8x256xf32>
  lir.io input "q3" %q3 : memref<1x8x96xf32>
  lir.io input "k3" %k3 : memref<1x8x48xf32>
  lir.kernel "hd16" ins(%q, %k, %k : memref<1x8x64xf32>, memref<1x8x32xf32>, memref<1x8x32xf32>) outs(%o : memref<1x8x64xf32>) {
  ^bb0(%a: tensor<1x8x64xf32>, %b: tensor<1x8x32xf32>, %c: tensor<1x8x32xf32>):
    %y = mir.attention %a, %b, %c {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x8x64xf32>, tensor<1x8x32xf32>, tensor<1x8x32xf32>) -> tensor<1x8x64xf32>
    lir.yield %y : tensor<1x8x64xf32>
  }
  lir.kernel "hd64" ins(%q4, %k4, %k4 : memref<1x8x256xf32>, memref<1x8x128xf32>, memref<1x8x128xf32>) outs(%o4 : memref<1x8x256xf32>) {
  ^bb0(%a: tensor<1x8x256xf32>, %b: tensor<1x8x128xf32>, %c: tensor<1x8x128xf32>):
    %y = mir.attention %a, %b, %c {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 64 : i64, scale = 0.125 : f32, mask_kind = #mir<mask causal>} : (tensor<1x8x256xf32>, tensor<1x8x128xf32>, tensor<1x8x128xf32>) -> tensor<1x8x256xf32>
    lir.yield %y : tensor<1x8x256xf32>
  }
  lir.kernel "hd128" ins(%q5, %k5, %k5 : memref<1x8x512xf32>, memref<1x8x256xf32>, memref<1x8x256xf32>) outs(%o5 : memref<1x8x512xf32>) {
  ^bb0(%a: tensor<1x8x512xf32>, %b: tensor<1x8x256xf32>, %c: tensor<1x8x256xf32>):
    %y = mir.attention %a, %b, %c {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 128 : i64, scale = 0.125 : f32, mask_kind = #mir<mask causal>} : (tensor<1x8x512xf32>, tensor<1x8x256xf32>, tensor<1x8x256xf32>) -> tensor<1x8x512xf32>
    lir.yield %y : tensor<1x8x512xf32>
  }
  lir.kernel "hd24" ins(%q3, %k3, %k3 : memref<1x8x96xf32>, memref<1x8x48xf32>, memref<1x8x48xf32>) outs(%o3 : memref<1x8x96xf32>) {
  ^bb0(%a: tensor<1x8x96xf32>, %b: tensor<1x8x48xf32>, %c: tensor<1x8x48xf32>):
    %y = mir.attention %a, %b, %c {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 24 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x8x96xf32>, tensor<1x8x48xf32>, tensor<1x8x48xf32>) -> tensor<1x8x96xf32>
    lir.yield %y : tensor<1x8x96xf32>
  }
  lir.io output "o" %o : memref<1x8x64xf32>
  lir.io output "o4" %o4 : memref<1x8x256xf32>
  lir.io output "o5" %o5 : memref<1x8x512xf32>
  lir.io output "o3" %o3 : memref<1x8x96xf32>
}
