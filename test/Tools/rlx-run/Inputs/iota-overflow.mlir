// A result of 2^62 x 4 f32: 2^66 bytes, 0 modulo 2^64. Its size used to wrap
// to a 0-byte arena that the JIT'd iota then wrote past.
func.func @iota_overflow() -> (tensor<4611686018427387904x4xf32> {rlx.name = "y"}) {
  %y = mir.iota {axis = 0 : i64} : tensor<4611686018427387904x4xf32>
  return %y : tensor<4611686018427387904x4xf32>
}
