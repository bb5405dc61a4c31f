// RUN: rlx-opt %s --rlx-expand-bf16 | FileCheck %s

// f32 -> bf16 rounds on the bits: bias 0x7FFF plus the lowest kept bit, a
// NaN becomes a quiet NaN; nothing is left as a float truncation (which LLVM
// makes a __truncsfbf2 call per lane on CPUs without AVX512_BF16).
// CHECK-LABEL: func.func @trunc_vector(
// CHECK-NOT: arith.truncf
// CHECK-DAG: arith.constant dense<32767> : vector<16xi32>
// CHECK-DAG: arith.cmpf une
// CHECK: arith.shrui
// CHECK: arith.trunci {{.*}} : vector<16xi32> to vector<16xi16>
// CHECK: arith.bitcast {{.*}} : vector<16xi16> to vector<16xbf16>
func.func @trunc_vector(%x: vector<16xf32>) -> vector<16xbf16> {
  %y = arith.truncf %x : vector<16xf32> to vector<16xbf16>
  return %y : vector<16xbf16>
}

// CHECK-LABEL: func.func @trunc_scalar(
// CHECK-NOT: arith.truncf
// CHECK: arith.bitcast {{.*}} : i16 to bf16
func.func @trunc_scalar(%x: f32) -> bf16 {
  %y = arith.truncf %x : f32 to bf16
  return %y : bf16
}

// bf16 -> f32 is a shift into the high half.
// CHECK-LABEL: func.func @extend(
// CHECK-NOT: arith.extf
// CHECK: arith.extui {{.*}} : vector<8xi16> to vector<8xi32>
// CHECK: arith.shli
// CHECK: arith.bitcast {{.*}} : vector<8xi32> to vector<8xf32>
func.func @extend(%x: vector<8xbf16>) -> vector<8xf32> {
  %y = arith.extf %x : vector<8xbf16> to vector<8xf32>
  return %y : vector<8xf32>
}

// Other float types are left alone.
// CHECK-LABEL: func.func @f16_untouched(
// CHECK: arith.truncf {{.*}} : f32 to f16
func.func @f16_untouched(%x: f32) -> f16 {
  %y = arith.truncf %x : f32 to f16
  return %y : f16
}

// Arithmetic and math on bf16 compute in f32 between conversions, which
// are then expanded: no bf16 float operation is left.
// CHECK-LABEL: func.func @compute(
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
// CHECK: arith.mulf {{.*}} : vector<4xf32>
// CHECK: math.exp {{.*}} : vector<4xf32>
// CHECK: arith.cmpf olt, {{.*}} : vector<4xf32>
// CHECK: arith.select {{.*}} : vector<4xi1>, vector<4xbf16>
func.func @compute(%a: vector<4xbf16>, %b: vector<4xbf16>) -> vector<4xbf16> {
  %m = arith.mulf %a, %b : vector<4xbf16>
  %e = math.exp %m : vector<4xbf16>
  %lt = arith.cmpf olt, %a, %b : vector<4xbf16>
  %s = arith.select %lt, %e, %a : vector<4xi1>, vector<4xbf16>
  return %s : vector<4xbf16>
}
