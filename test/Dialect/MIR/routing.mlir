// RUN: rlx-opt %s | rlx-opt | FileCheck %s

// The routing ops of mixture-of-experts layers round-trip, with dynamic row
// counts (a prefill template).

// CHECK-LABEL: func.func @route
// CHECK: %[[V:.*]], %[[I:.*]] = mir.top_k %{{.*}} {k = 2 : i64} : (tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
// CHECK: mir.top_k %{{.*}} {axis = 0 : i64, k = 3 : i64, largest = false} : (tensor<5x4xi32>) -> (tensor<3x4xi32>, tensor<3x4xi64>)
// CHECK: mir.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}} : (tensor<1x?x2x64xf32>, tensor<8x24x64xbf16>, tensor<1x?x2xi64>) -> tensor<1x?x2x24xf32>
// CHECK: %[[O:.*]], %[[F:.*]] = mir.sort_groups %{{.*}} {num_groups = 8 : i64} : (tensor<1x?x2xi64>) -> (tensor<?xi64>, tensor<9xi64>)
// CHECK: mir.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}} sorted(%[[O]], %[[F]]) : (tensor<1x?x2x64xf32>, tensor<8x24x64xbf16>, tensor<1x?x2xi64>, tensor<?xi64>, tensor<9xi64>) -> tensor<1x?x2x24xf32>
func.func @route(%p: tensor<?x8xf32>, %q: tensor<5x4xi32>, %x: tensor<1x?x2x64xf32>,
                 %w: tensor<8x24x64xbf16>, %g: tensor<1x?x2xi64>)
    -> (tensor<?x2xf32>, tensor<?x2xi64>, tensor<3x4xi32>, tensor<1x?x2x24xf32>) {
  %v, %i = mir.top_k %p {k = 2 : i64} : (tensor<?x8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi64>)
  %s, %j = mir.top_k %q {k = 3 : i64, axis = 0 : i64, largest = false}
      : (tensor<5x4xi32>) -> (tensor<3x4xi32>, tensor<3x4xi64>)
  %y = mir.grouped_matmul %x, %w, %g
      : (tensor<1x?x2x64xf32>, tensor<8x24x64xbf16>, tensor<1x?x2xi64>) -> tensor<1x?x2x24xf32>
  %o, %f = mir.sort_groups %g {num_groups = 8 : i64}
      : (tensor<1x?x2xi64>) -> (tensor<?xi64>, tensor<9xi64>)
  %z = mir.grouped_matmul %x, %w, %g sorted(%o, %f)
      : (tensor<1x?x2x64xf32>, tensor<8x24x64xbf16>, tensor<1x?x2xi64>, tensor<?xi64>, tensor<9xi64>) -> tensor<1x?x2x24xf32>
  return %v, %i, %s, %z : tensor<?x2xf32>, tensor<?x2xi64>, tensor<3x4xi32>, tensor<1x?x2x24xf32>
}
