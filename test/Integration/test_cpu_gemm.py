"""The CPU's GEMM paths against NumPy.

lir-select-strategy picks the host's tile (6 x 1 vectors on AVX2, 8 x 2 with
AVX-512), so a model run exercises one shape only. These tests hand
`convert-lir-to-loops` each kind of tile through a LIR module whose kernel
already carries it: the fused GEMM + GLU (`glu_gemm`) with gate and up
vectors in pairs (the GLU in registers) and with one vector (the gate and up
strips in turn, the GLU read back), K split into blocks (partial sums kept in
the output between them), rows that leave a tail tile, decode-like single
rows, and a kernel that writes its result over its input.
"""

import numpy as np
import pytest

from conftest import assert_close

GLU = """
lir.entry @glu arena_size = {arena}, param_size = {params}, alignment = 64 {{
  %x = lir.view arena[0] : memref<{m}x{k}xf32>
  %w = lir.view params[0] : memref<{n}x{k}xf32>
  %gu = lir.view arena[{gu_at}] : memref<{m}x{n}xf32>
  %h = lir.view arena[{h_at}] : memref<{m}x{f}xf32>
  lir.io input "x" %x : memref<{m}x{k}xf32>
  lir.io param "gu" %w {{layout = #lir.layout<nk16>}} : memref<{n}x{k}xf32>
  lir.kernel "matmul_glu" ins(%x, %w : memref<{m}x{k}xf32>, memref<{n}x{k}xf32>) outs(%gu, %h : memref<{m}x{n}xf32>, memref<{m}x{f}xf32>) attributes {{config = #lir.config<glu_gemm, tile = [{tile}]>{inplace}}} {{
  ^bb0(%a: tensor<{m}x{k}xf32>, %b: tensor<{n}x{k}xf32>):
    %y = mir.matmul %a, %b {{transpose_rhs}} : (tensor<{m}x{k}xf32>, tensor<{n}x{k}xf32>) -> tensor<{m}x{n}xf32>
    %o = mir.fused_glu %y {{activation = #mir<activation {act}>}} : (tensor<{m}x{n}xf32>) -> tensor<{m}x{f}xf32>
    lir.yield %y, %o : tensor<{m}x{n}xf32>, tensor<{m}x{f}xf32>
  }}
  lir.io output "h" %h : memref<{m}x{f}xf32>
}}
"""


def glu_module(m, k, f, tile, act, inplace):
    n = 2 * f
    x_bytes, gu_bytes = 4 * m * k, 4 * m * n

    def up64(v):
        return (v + 63) // 64 * 64

    # In place: the GLU's result over the input (as lir-plan-arena places
    # it when the kernel reads the input last).
    gu_at = up64(x_bytes)
    h_at = 0 if inplace else up64(gu_at + gu_bytes)
    arena = max(up64(gu_at + gu_bytes), h_at + up64(4 * m * f))
    return GLU.format(m=m, k=k, n=n, f=f, arena=arena, params=4 * n * k,
                      gu_at=gu_at, h_at=h_at, act=act,
                      tile=", ".join(map(str, tile)),
                      inplace=", inplace" if inplace else "")


def silu(v):
    return v / (1 + np.exp(-v))


def gelu_tanh(v):
    return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))


ACTS = {"silu": silu, "gelu_tanh": gelu_tanh}


@pytest.mark.parametrize("m,tile", [
    # Gate and up strips in turn (AVX2's tile), K in three blocks; 13 rows:
    # two whole tiles and a tail of one.
    (13, (6, 1, 32)),
    # Gate and up vectors in pairs (AVX-512's tile), two pairs per tile.
    (13, (8, 2, 32)),
    (13, (4, 4, 0)),
    # More rows than a row block (256): row blocks split between threads.
    (300, (6, 1, 64)),
    (300, (8, 2, 0)),
    # Decode-like: one row, K whole, read in place.
    (1, (1, 4, 96)),
    (1, (1, 1, 96)),
])
@pytest.mark.parametrize("act", ["silu", "gelu_tanh"])
@pytest.mark.parametrize("inplace", [False, True])
def test_glu_gemm_tiles(rlx, m, tile, act, inplace):
    k, f = 96, 48
    rng = np.random.default_rng(m + tile[1])
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((2 * f, k)) * 0.2).astype(np.float32)
    out = rlx.run(glu_module(m, k, f, tile, act, inplace), {"x": x},
                  params={"gu": w})
    gu = x.astype(np.float64) @ w.T.astype(np.float64)
    h = ACTS[act](gu[:, :f]) * gu[:, f:]
    # f32 sums of 96 products of magnitude ~0.2. (The [gate | up] buffer is
    # the kernel's scratch: with pairs in registers it keeps partial sums
    # only.)
    assert_close(out["h"], h, 1e-4, 1e-4)


@pytest.mark.parametrize("rows", [1, 2, 5])
@pytest.mark.parametrize("residual", [False, True])
def test_row_major_weight(rlx, rows, residual):
    """A weight lir-pack-params leaves row-major (N = 40 is no multiple of
    16) is multiplied by BLAS: cblas_sgemv for one row (the tied LM head's
    case), cblas_sgemm for more; a residual is added."""
    k, n = 300, 40
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((1, rows, k)).astype(np.float32)
    w = (rng.standard_normal((n, k)) * 0.1).astype(np.float32)
    r = rng.standard_normal((1, rows, n)).astype(np.float32)
    X, W, Y = f"tensor<1x{rows}x{k}xf32>", f"tensor<{n}x{k}xf32>", \
        f"tensor<1x{rows}x{n}xf32>"
    if residual:
        body = (f"%y = mir.fused_matmul %x, %w residual(%r) {{transpose_rhs}} "
                f": ({X}, {W}, {Y}) -> {Y}")
    else:
        body = f"%y = mir.matmul %x, %w {{transpose_rhs}} : ({X}, {W}) -> {Y}"
    mlir = f"""func.func @f(%x: {X} {{rlx.name = "x"}}, %r: {Y} {{rlx.name = "r"}}) -> ({Y} {{rlx.name = "y"}}) {{
  %w = mir.param "w" : {W}
  {body}
  return %y : {Y}
}}
"""
    out = rlx.run(mlir, {"x": x, "r": r}, params={"w": w})["y"]
    want = x.astype(np.float64) @ w.T.astype(np.float64)
    if residual:
        want = want + r
    assert_close(out, want, 1e-5, 1e-5)


GEMM = """
lir.entry @gemm arena_size = {arena}, param_size = {params}, alignment = 64 {{
  %x = lir.view arena[0] : memref<{m}x{k}xf32>
  %r = lir.view arena[{r_at}] : memref<{m}x{n}xf32>
  %y = lir.view arena[{y_at}] : memref<{m}x{n}xf32>
  %w = lir.view params[0] : memref<{n}x{k}xf32>
  %b = lir.view params[{b_at}] : memref<{n}xf32>
  lir.io input "x" %x : memref<{m}x{k}xf32>
  lir.io input "r" %r : memref<{m}x{n}xf32>
  lir.io param "w" %w {{layout = #lir.layout<nk16>}} : memref<{n}x{k}xf32>
  lir.io param "b" %b : memref<{n}xf32>
  lir.kernel "fused_matmul" ins(%x, %w, %b, %r : memref<{m}x{k}xf32>, memref<{n}x{k}xf32>, memref<{n}xf32>, memref<{m}x{n}xf32>) outs(%y : memref<{m}x{n}xf32>) attributes {{config = #lir.config<gemm_generated, tile = [{tile}]>}} {{
  ^bb0(%a: tensor<{m}x{k}xf32>, %bw: tensor<{n}x{k}xf32>, %bb: tensor<{n}xf32>, %br: tensor<{m}x{n}xf32>):
    %o = mir.fused_matmul %a, %bw bias(%bb) residual(%br) {{activation = #mir<activation gelu>, transpose_rhs}} : (tensor<{m}x{k}xf32>, tensor<{n}x{k}xf32>, tensor<{n}xf32>, tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
    lir.yield %o : tensor<{m}x{n}xf32>
  }}
  lir.io output "y" %y : memref<{m}x{n}xf32>
}}
"""


def gemm_module(m, k, n, tile):
    def up64(v):
        return (v + 63) // 64 * 64

    r_at = up64(4 * m * k)
    y_at = r_at + up64(4 * m * n)
    return GEMM.format(m=m, k=k, n=n, arena=y_at + up64(4 * m * n),
                       params=up64(4 * n * k) + 4 * n, b_at=up64(4 * n * k),
                       r_at=r_at, y_at=y_at, tile=", ".join(map(str, tile)))


def gelu(v):
    from math import erf
    return 0.5 * v * (1 + np.vectorize(erf)(v / np.sqrt(2)))


# A fourth tile size (lir-select-strategy gives it when a row block of A over
# all of K passes 3 MiB): the K blocks run outside chunks of that many column
# blocks, the partial sums of every column block of the chunk kept in the
# output between K blocks. 301 rows: row blocks and a tail row; N: 18 pairs
# of vectors and one more (a tail chunk); K: 10.5 K blocks of 256.
@pytest.mark.parametrize("tile", [(6, 1, 256, 4), (8, 2, 512, 3),
                                  (4, 4, 384, 1), (6, 1, 256, 0)])
def test_k_blocks_outermost(rlx, tile):
    m, k, n = 301, 2688, 16 * 37
    rng = np.random.default_rng(tile[2] + tile[3])
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((n, k)) * 0.05).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    r = rng.standard_normal((m, n)).astype(np.float32)
    out = rlx.run(gemm_module(m, k, n, tile), {"x": x, "r": r},
                  params={"w": w, "b": b})["y"]
    want = gelu(x.astype(np.float64) @ w.T.astype(np.float64) + b) + r
    # f32 sums of 2688 products of magnitude ~0.05.
    assert_close(out, want, 2e-4, 2e-4)


@pytest.mark.parametrize("tile", [(6, 1, 256, 2), (8, 2, 256, 3)])
def test_glu_k_blocks_outermost(rlx, tile):
    """The GLU GEMM in the same order: the GLU (gate and up strips in turn, or
    pairs in registers) once the chunk's last K block is done."""
    m, k, f = 301, 2688, 80
    rng = np.random.default_rng(tile[1])
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = (rng.standard_normal((2 * f, k)) * 0.05).astype(np.float32)
    out = rlx.run(glu_module(m, k, f, tile, "silu", False), {"x": x},
                  params={"gu": w})
    gu = x.astype(np.float64) @ w.T.astype(np.float64)
    assert_close(out["h"], silu(gu[:, :f]) * gu[:, f:], 2e-4, 2e-4)


STORED_EPILOGUE = """
func.func @f(%x: tensor<1x{m}x{k}xf32> {{rlx.name = "x"}}, %r: tensor<1x{m}x{n}xf32> {{rlx.name = "r"}}) -> (tensor<1x{m}x{n}xf32> {{rlx.name = "y"}}) {{
  %w = mir.param "w" : tensor<{n}x{k}x{wt}>
  %b = mir.param "b" : tensor<{n}xf32>
  %y = mir.fused_matmul %x, %w bias(%b) residual(%r) {{activation = #mir<activation gelu>, transpose_rhs{round}}} : (tensor<1x{m}x{k}xf32>, tensor<{n}x{k}x{wt}>, tensor<{n}xf32>, tensor<1x{m}x{n}xf32>) -> tensor<1x{m}x{n}xf32>
  return %y : tensor<1x{m}x{n}xf32>
}}
"""


def round_bf16(v):
    u = np.asarray(v, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


# N: one chunk shorter than a vector plus a tail (13), chunks of 16 with a
# short last one (40), an x8 layout (48); M: a few rows (5) and one (1).
@pytest.mark.parametrize("m,n", [(5, 13), (5, 40), (1, 40), (5, 48)])
@pytest.mark.parametrize("round_to", [None, "bf16"])
def test_stored_weight_epilogue_per_chunk(rlx, m, n, round_to):
    """A micro-kernel GEMM (f16 weights kept as stored) applies its epilogue
    (bias, gelu, residual, round_to) to each column chunk it computes: every
    column, the vector part and the single columns after it, against NumPy."""
    k = 64
    rng = np.random.default_rng(n * 10 + m)
    x = rng.standard_normal((1, m, k)).astype(np.float32)
    r = rng.standard_normal((1, m, n)).astype(np.float32)
    w = (rng.standard_normal((n, k)) * 0.1).astype(np.float16)
    b = rng.standard_normal(n).astype(np.float32)
    mlir = STORED_EPILOGUE.format(
        m=m, k=k, n=n, wt="f16",
        round=", round_to = bf16" if round_to else "")
    y = rlx.run(mlir, {"x": x, "r": r}, params={"w": w, "b": b})["y"]
    want = gelu(x.astype(np.float64) @ w.T.astype(np.float64) + b) + r
    if round_to:
        # Rounded once, after the residual: within half a bf16 step of the
        # exact value plus the f32 sums' error.
        assert_close(y, round_bf16(want.astype(np.float32)), 1e-2, 1e-2)
        np.testing.assert_array_equal(y, round_bf16(y))
    else:
        assert_close(y, want, 1e-5, 1e-5)
