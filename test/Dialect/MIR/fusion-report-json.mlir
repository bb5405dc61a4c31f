// RUN: rlx-opt %s --mir-fusion-report=record-baseline --mir-fuse-all --mir-fusion-report=json-file=%t.json > /dev/null 2> %t.remarks
// RUN: FileCheck %s < %t.json
// RUN: FileCheck %s --check-prefix=REMARK < %t.remarks

/// The JSON form of the report; the baseline recorded before fusion gives
/// the "before" histogram.

// REMARK: remark: fusion report (cpu): 1 missed; fused ops before: {}; after: {mir.fused_glu = 1, mir.fused_matmul = 1}

// CHECK:      "target": "cpu",
// CHECK-NEXT: "fusions": [
// CHECK-NEXT:   "dequantize",
// CHECK-NEXT:   "shared-input-matmul",
// CHECK-NEXT:   "swiglu",
// CHECK-NEXT:   "attention",
// CHECK-NEXT:   "attention-block",
// CHECK-NEXT:   "residual-norm",
// CHECK-NEXT:   "matmul-epilogue",
// CHECK-NEXT:   "elementwise-region"
// CHECK-NEXT: ],
// CHECK-NEXT: "missed": [
// CHECK-NEXT:   {
// CHECK-NEXT:     "fusion": "matmul-epilogue",
// CHECK-NEXT:     "op": "mir.fused_matmul",
// CHECK-NEXT:     "location": "{{.*}}fusion-report-json.mlir:{{[0-9]+}}:{{[0-9]+}}",
// CHECK-NEXT:     "reason": "unsupported epilogue activation",
// CHECK-NEXT:     "detail": "'mir.exp'",
// CHECK-NEXT:     "hint": "mir.fused_matmul takes {{.*}}"
// CHECK-NEXT:   }
// CHECK-NEXT: ],
// CHECK-NEXT: "histogram": {
// CHECK-NEXT:   "before": {
// CHECK-DAG:      "mir.matmul": 3
// CHECK-DAG:      "mir.silu": 1
// CHECK:        },
// CHECK-NEXT:   "after": {
// CHECK-DAG:      "mir.fused_glu": 1
// CHECK-DAG:      "mir.fused_matmul": 1
// CHECK:        }
// CHECK-NEXT: },
// CHECK-NEXT: "fused": {
// CHECK-NEXT:   "before": {},
// CHECK-NEXT:   "after": {
// CHECK-NEXT:     "mir.fused_glu": 1,
// CHECK-NEXT:     "mir.fused_matmul": 1
// CHECK-NEXT:   }
// CHECK-NEXT: }

func.func @mlp(%x: tensor<4x16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %wg = mir.param "gate" : tensor<32x16xf32>
  %wu = mir.param "up" : tensor<32x16xf32>
  %wd = mir.param "down" : tensor<16x32xf32>
  %0 = mir.matmul %x, %wg {transpose_rhs} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %1 = mir.silu %0 : (tensor<4x32xf32>) -> tensor<4x32xf32>
  %2 = mir.matmul %x, %wu {transpose_rhs} : (tensor<4x16xf32>, tensor<32x16xf32>) -> tensor<4x32xf32>
  %3 = mir.mul %1, %2 : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32>
  %4 = mir.matmul %3, %wd {transpose_rhs} : (tensor<4x32xf32>, tensor<16x32xf32>) -> tensor<4x16xf32>
  %5 = mir.add %4, %b : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %6 = mir.exp %5 : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %6 : tensor<4x16xf32>
}
