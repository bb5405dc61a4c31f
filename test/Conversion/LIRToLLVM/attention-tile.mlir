// RUN: sed 's/TILE/1, 1/' %s | rlx-opt --convert-lir-to-loops | grep -c math.exp | FileCheck %s --check-prefix=ONE
// RUN: sed 's/TILE/2, 1/' %s | rlx-opt --convert-lir-to-loops | grep -c math.exp | FileCheck %s --check-prefix=TWO
// RUN: sed 's/TILE/1, 2/' %s | rlx-opt --convert-lir-to-loops | grep -c math.exp | FileCheck %s --check-prefix=TWO
// RUN: sed 's/TILE/2, 2/' %s | rlx-opt --convert-lir-to-loops | grep -c math.exp | FileCheck %s --check-prefix=FOUR
// RUN: sed 's/TILE/1, 4/' %s | rlx-opt --convert-lir-to-loops | grep -c math.exp | FileCheck %s --check-prefix=FOUR

/// The code generator follows the blocked attention's tile
/// (`#lir.config<attention_blocked, tile = [heads, positions]>`): each row
/// of the register tile (heads x positions) is unrolled with its own online
/// softmax, 4 exponentials per row in this kernel. (Numerics per tile:
/// test/Integration/test_cpu_attention_tile.py.)
// ONE: {{^}}4{{$}}
// TWO: {{^}}8{{$}}
// FOUR: {{^}}16{{$}}

lir.entry @attention_tile arena_size = 4096, param_size = 0, alignment = 64 {
  %q = lir.view arena[0] : memref<1x4x64xf32>
  %k = lir.view arena[1024] : memref<1x4x32xf32>
  %o = lir.view arena[2048] : memref<1x4x64xf32>
  lir.io input "q" %q : memref<1x4x64xf32>
  lir.io input "k" %k : memref<1x4x32xf32>
  lir.kernel "attention" ins(%q, %k, %k : memref<1x4x64xf32>, memref<1x4x32xf32>, memref<1x4x32xf32>) outs(%o : memref<1x4x64xf32>) attributes {config = #lir.config<attention_blocked, tile = [TILE]>} {
  ^bb0(%a: tensor<1x4x64xf32>, %b: tensor<1x4x32xf32>, %c: tensor<1x4x32xf32>):
    %y = mir.attention %a, %b, %c {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64, scale = 0.25 : f32, mask_kind = #mir<mask causal>} : (tensor<1x4x64xf32>, tensor<1x4x32xf32>, tensor<1x4x32xf32>) -> tensor<1x4x64xf32>
    lir.yield %y : tensor<1x4x64xf32>
  }
  lir.io output "o" %o : memref<1x4x64xf32>
}
