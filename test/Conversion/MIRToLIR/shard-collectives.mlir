// RUN: rlx-opt %s -split-input-file --convert-mir-to-lir | FileCheck %s
// RUN: rlx-opt %s -split-input-file --convert-mir-to-lir --lir-plan-arena --convert-lir-to-loops | FileCheck %s --check-prefix=LOOPS

/// The collectives of a rank's program (mir-shard-tensor-parallel) become
/// kernels of their own whose compute op is a LIR collective over the whole
/// grid; the grid goes. On the CPU they call the runtime's MPI routines on
/// one thread. The module keeps whose program it is (rlx.rank).

// CHECK: module attributes {rlx.rank = {rank = 1 : i64, ranks = 2 : i64}}
// CHECK-NOT: shard.grid
// CHECK-LABEL: lir.entry @rank
// CHECK: lir.kernel "all_reduce"
// CHECK: lir.all_reduce %{{.*}} group_size 2 : tensor<1x4x8xf32>
// CHECK: lir.kernel "all_gather"
// CHECK: lir.all_gather %{{.*}} axis 2 group_size 2 : tensor<1x4x8xf32> -> tensor<1x4x16xf32>
// LOOPS: call @rlx_all_reduce_f32
// LOOPS: call @rlx_all_gather_f32
module attributes {rlx.rank = {rank = 1 : i64, ranks = 2 : i64}} {
shard.grid @tp(shape = 2)
func.func @rank(%x: tensor<1x4x8xf32>) -> tensor<1x4x16xf32> {
  %e = mir.exp %x : (tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  %s = shard.all_reduce %e on @tp grid_axes = [0] : tensor<1x4x8xf32> -> tensor<1x4x8xf32>
  %g = shard.all_gather %s on @tp grid_axes = [0] gather_axis = 2 : tensor<1x4x8xf32> -> tensor<1x4x16xf32>
  return %g : tensor<1x4x16xf32>
}
}
