# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Weights kept in their stored precision down to the kernels, end to end
through rlx-run: a GGUF file (written by gguf-py) holds a weight in f16, bf16
or a ggml block type, the module marks the parameter `storage = ...`, and the
CPU kernel reads the blocks in place (micro-kernels with activations rounded
per block to 8 bits, or to bf16 for bf16 weights).

Reference: y = x @ dequantize(W)^T in float64 over gguf-py's dequantized
weights, with the activations rounded as the kernels round them (see
`check` for the tolerances). Every test
runs once per micro-kernel ISA this CPU has (RLX_UK_ISA), so the AVX2 and
scalar fallbacks are exercised on an AVX-512 machine too."""

import os
import re
import subprocess
import zlib

import numpy as np
import pytest

from conftest import RLX_RUN

gguf = pytest.importorskip("gguf")
from gguf import quants  # noqa: E402
from gguf.constants import GGML_QUANT_SIZES  # noqa: E402
from gguf.constants import GGMLQuantizationType as T  # noqa: E402

# ggml spelling -> (type, f16 scale offsets in a block) for random blocks.
BLOCK_TYPES = {
    "q4_0": (T.Q4_0, [0]),
    "q4_1": (T.Q4_1, [0, 2]),
    "q5_0": (T.Q5_0, [0]),
    "q5_1": (T.Q5_1, [0, 2]),
    "q8_0": (T.Q8_0, [0]),
    "q2_K": (T.Q2_K, [80, 82]),
    "q3_K": (T.Q3_K, [108]),
    "q4_K": (T.Q4_K, [0, 2]),
    "q5_K": (T.Q5_K, [0, 2]),
    "q6_K": (T.Q6_K, [208]),
}
TYPES = ["f16", "bf16", *BLOCK_TYPES]


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":")[1].split())
    except OSError:
        pass
    return set()


def isas():
    flags = cpu_flags()
    out = ["scalar"]
    if {"avx2", "fma", "f16c"} <= flags:
        out.append("avx2")
    if {"avx512f", "avx512bw", "avx512vl", "avx512_vnni"} <= flags:
        out.append("avx512")
    return out


def storage_attr(name):
    return name if name in ("f16", "bf16") else f"!mir.quant<{name}>"


def random_weight(rng, name, n, k):
    """(bytes for GGUFWriter, raw type or None, dequantized [n, k] f32)."""
    if name in ("f16", "bf16"):
        w = rng.uniform(-1, 1, size=(n, k)).astype(np.float32)
        if name == "f16":
            data = w.astype(np.float16)
            return data, None, data.astype(np.float32)
        data = quants.quantize(w, T.BF16)
        return data, T.BF16, quants.dequantize(data, T.BF16)
    qtype, scales = BLOCK_TYPES[name]
    elements, size = GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, size=(n * k // elements, size),
                          dtype=np.uint8)
    for off in scales:
        h = rng.uniform(-0.05, 0.05, size=blocks.shape[0]).astype(np.float16)
        blocks[:, off:off + 2] = h.view(np.uint8).reshape(-1, 2)
    data = blocks.reshape(n, k // elements * size)
    return data, qtype, quants.dequantize(data, qtype)


def write_gguf(path, tensors):
    writer = gguf.GGUFWriter(str(path), "rlxtest")
    for key, (data, raw) in tensors.items():
        writer.add_tensor(key, data, raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def stored_file(tmp_path, rng, name, n, k, key="w"):
    """A GGUF holding one random [n, k] tensor `key` stored as `name`:
    (path, its dequantized values)."""
    data, raw, values = random_weight(rng, name, n, k)
    path = tmp_path / f"{key}.gguf"
    write_gguf(path, {key: (data, raw)})
    return path, values


def to_bf16(x):
    """x rounded to bf16 (nearest, ties to even), as f32."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def prepared(name, x):
    """x as the kernel rounds it before the dot products (f32, [..., k]),
    following RLX/UKernels/UKernels.h: bf16 to nearest even; the 32-element
    types per block of 32 with d = max|x| / 127, q = rint(x * (1 / d));
    the K-quants per block of 256 with v the first element of largest
    magnitude, s = -128 / v, q = min(127, rint(x * s)), d = 1 / s."""
    if name == "f16":
        return x
    if name == "bf16":
        return to_bf16(x)
    shape = x.shape
    block = 256 if name.endswith("_K") else 32
    xb = x.astype(np.float32).reshape(-1, block)
    one = np.float32(1)
    if block == 32:
        d = (np.abs(xb).max(axis=1, keepdims=True) / np.float32(127))
        d = d.astype(np.float32)
        inv = np.where(d > 0, one / np.where(d > 0, d, one), 0)
        q = np.rint(xb * inv.astype(np.float32))
    else:
        v = xb[np.arange(len(xb)), np.abs(xb).argmax(axis=1)][:, None]
        sc = np.where(v != 0, np.float32(-128) / np.where(v != 0, v, one), 0)
        sc = sc.astype(np.float32)
        q = np.minimum(np.float32(127), np.rint(xb * sc))
        d = np.where(sc != 0, one / np.where(sc != 0, sc, one), 0)
    return (q.astype(np.float32) * d.astype(np.float32)).reshape(shape)


def check(y, x, w, name):
    """y against x_hat w^T in float64, x_hat the activations as the kernel
    rounds them, within 1e-5 * sum_k |w_nk x_hat_k| (the f32 accumulation
    and the f32 per-block scales). A second, independent check against the
    exact activations: within the bound the rounding gives,
    sum_k |w_nk| * |x_k - x_hat_k|, which for the block types is at most
    half a quantization step (d / 2) per element (one for q8_K's clamp)."""
    xh = prepared(name, x).astype(np.float64)
    w64 = w.astype(np.float64)
    ref = xh @ w64.T
    bound = 1e-5 * (np.abs(xh) @ np.abs(w64).T) + 1e-6
    err = np.abs(y.astype(np.float64) - ref)
    worst = np.unravel_index(np.argmax(err / bound), err.shape)
    assert (err <= bound).all(), (
        f"{name}: |y - x_hat w^T| = {err[worst]:.3g} exceeds "
        f"{bound[worst]:.3g} at {worst} (y {y[worst]:.6g}, reference "
        f"{ref[worst]:.6g})")
    x64 = x.astype(np.float64)
    rounding = np.abs(x64 - xh)
    if name not in ("f16", "bf16"):
        block = 256 if name.endswith("_K") else 32
        # Half a step, or for q8_K one whole step where the clamp to 127
        # cuts the value of opposite sign to v.
        step = np.abs(x64).reshape(-1, block).max(axis=1) / 127
        most = 1.0 if block == 256 else 0.5
        # Plus 1e-4 of a step: x / d rounds in f32, where x can be 127
        # steps, so the quotient is off by up to ~1e-5 of a step.
        assert (rounding.reshape(-1, block)
                <= step[:, None] * (most + 1e-4)).all()
    exact = np.abs(y.astype(np.float64) - x64 @ w64.T)
    assert (exact <= rounding @ np.abs(w64).T + bound).all()


def run(tmp_path, mlir, inputs, gguf_path, isa, args=()):
    src = tmp_path / "module.mlir"
    src.write_text(mlir)
    out = tmp_path / "out"
    cmd = [str(RLX_RUN), str(src), "--quiet", "--output-dir", str(out),
           "--params", str(gguf_path), *args]
    for key, arr in inputs.items():
        np.save(tmp_path / f"{key}.npy", arr)
        cmd += ["--input", f"{key}={tmp_path / f'{key}.npy'}"]
    env = dict(os.environ, RLX_UK_ISA=isa)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    return {f.stem: np.load(f) for f in out.glob("*.npy")}


LINEAR = """
func.func @main(%x: tensor<1x{m}x{k}xf32> {{rlx.name = "x"}})
    -> (tensor<1x{m}x{n}xf32> {{rlx.name = "y"}}) {{
  %w = hir.param "w" {{storage = {storage}}} : tensor<{n}x{k}xf32>
  %y = hir.linear %x, %w : (tensor<1x{m}x{k}xf32>, tensor<{n}x{k}xf32>)
      -> tensor<1x{m}x{n}xf32>
  return %y : tensor<1x{m}x{n}xf32>
}}
"""


@pytest.mark.parametrize("isa", isas())
@pytest.mark.parametrize("m", [1, 7])
@pytest.mark.parametrize("name", TYPES)
def test_linear(tmp_path, name, m, isa):
    # A seed per case that does not change between runs (hash() of a str
    # does, with PYTHONHASHSEED).
    rng = np.random.default_rng(zlib.crc32(f"{name}-{m}".encode()))
    n, k = 24, 512
    path, w = stored_file(tmp_path, rng, name, n, k)
    x = rng.standard_normal((1, m, k)).astype(np.float32)
    mlir = LINEAR.format(m=m, k=k, n=n, storage=storage_attr(name))
    y = run(tmp_path, mlir, {"x": x}, path, isa)["y"]
    assert y.shape == (1, m, n)
    check(y[0], x[0], w, name)


def test_linear_ir_reads_blocks(tmp_path):
    """The kernel reads the q4_0 blocks (the ukernel strategy), with no f32
    copy of the weight."""
    rng = np.random.default_rng(1)
    path, _ = stored_file(tmp_path, rng, "q4_0", 8, 64)
    x = rng.standard_normal((1, 2, 64)).astype(np.float32)
    dump = tmp_path / "ir"
    run(tmp_path, LINEAR.format(m=2, k=64, n=8, storage="!mir.quant<q4_0>"),
        {"x": x}, path, "scalar", ["--dump-ir", str(dump)])
    lir = "\n".join(p.read_text() for p in sorted(dump.glob("*lir*")))
    assert "gemm_ukernel" in lir or "ukernel" in lir, lir[:2000]
    assert "8x64x!mir.quant<q4_0>" in lir


EMBED = """
func.func @main(%ids: tensor<1x{t}xi32> {{rlx.name = "ids"}})
    -> (tensor<1x{t}x{k}xf32> {{rlx.name = "h"}}) {{
  %table = hir.param "table" {{storage = {storage}}} : tensor<{v}x{k}xf32>
  %h = hir.embed %ids, %table : (tensor<1x{t}xi32>, tensor<{v}x{k}xf32>)
      -> tensor<1x{t}x{k}xf32>
  return %h : tensor<1x{t}x{k}xf32>
}}
"""


@pytest.mark.parametrize("name", ["f16", "bf16", "q4_0", "q8_0", "q5_1",
                                  "q4_K", "q6_K"])
def test_embedding_rows_bit_exact(tmp_path, name):
    """A token embedding stored as blocks: the gathered rows are the
    dequantized rows, bit for bit."""
    rng = np.random.default_rng(5)
    v, k = 40, 256
    path, table = stored_file(tmp_path, rng, name, v, k, key="table")
    ids = np.array([[3, 0, 39, 3, 17]], dtype=np.int32)
    mlir = EMBED.format(t=5, k=k, v=v, storage=storage_attr(name))
    h = run(tmp_path, mlir, {"ids": ids}, path, "scalar")["h"]
    np.testing.assert_array_equal(h[0].view(np.uint32),
                                  table[ids[0]].view(np.uint32))


STANDING = """
func.func @main(%x: tensor<{n}x{k}xf32> {{rlx.name = "x"}})
    -> (tensor<{n}x{k}xf32> {{rlx.name = "y"}}) {{
  %w = hir.param "w" {{storage = {storage}}} : tensor<{n}x{k}xf32>
  %y = hir.add %x, %w : (tensor<{n}x{k}xf32>, tensor<{n}x{k}xf32>)
      -> tensor<{n}x{k}xf32>
  return %y : tensor<{n}x{k}xf32>
}}
"""


@pytest.mark.parametrize("name", ["f16", "bf16", "q8_0", "q3_K"])
def test_standing_dequantize(tmp_path, name):
    """A stored weight read by an op that cannot take blocks (an add):
    the mir.dequantize stays a kernel of its own and widens exactly."""
    rng = np.random.default_rng(6)
    n, k = 6, 256
    path, w = stored_file(tmp_path, rng, name, n, k)
    x = rng.standard_normal((n, k)).astype(np.float32)
    mlir = STANDING.format(n=n, k=k, storage=storage_attr(name))
    y = run(tmp_path, mlir, {"x": x}, path, "scalar")["y"]
    np.testing.assert_array_equal(y, x + w)


#===----------------------------------------------------------------------===#
# Whole models: a LLaMA GGUF whose matrices gguf-py quantized
#===----------------------------------------------------------------------===#

# type -> tolerance on the prompt's logits (relative to their scale) against
# PyTorch on the dequantized weights: f16 runs f32 activations, bf16 rounds
# them to bf16 (2^-9 relative), the block types to 8 bits per block.
MODEL_TYPES = {"f16": 1e-5, "bf16": 1e-2, "q8_0": 2e-2, "q4_0": 2e-2,
               "q5_1": 2e-2}
PROMPT = [4, 81, 15, 160, 23, 42, 7]


@pytest.fixture(scope="module")
def quantized_models(tmp_path_factory):
    import sys
    from conftest import ROOT
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    out = tmp_path_factory.mktemp("qmodels")
    for name in MODEL_TYPES:
        subprocess.run([sys.executable,
                        str(ROOT / "scripts" / "make_tiny_models.py"),
                        str(out), "--kind", "llama", "--name", f"llama-{name}",
                        "--seed", "11", "--gguf", "--gguf-type", name],
                       check=True, capture_output=True)
    return out


def dequantized_reference(path, name):
    """The HF model at `path` with every matrix replaced by what the GGUF
    stores: dequantize(quantize(W)) by gguf-py (rows are quantized whole, so
    llama.cpp's Q/K row permutation commutes with it)."""
    import torch
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(
        path, attn_implementation="eager").eval()
    with torch.no_grad():
        for key, p in model.named_parameters():
            if p.dim() != 2:
                continue
            w = p.detach().numpy().astype(np.float32)
            if name == "f16":
                back = w.astype(np.float16).astype(np.float32)
            else:
                qtype = T[name.upper()]
                back = quants.dequantize(quants.quantize(w, qtype), qtype)
            p.copy_(torch.from_numpy(np.ascontiguousarray(back)))
    return model


def run_model(path, tmp_path, weights, extra=()):
    """rlx-run --model on PROMPT: (greedy tokens, prompt logits, stdout)."""
    logits = tmp_path / f"logits-{weights}.npy"
    proc = subprocess.run(
        [str(RLX_RUN), "--model", str(path), "--prompt-ids",
         ",".join(map(str, PROMPT)), "--max-new-tokens", "6",
         "--logits-out", str(logits), "--weights-as", weights, *extra],
        capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    tokens = [int(t) for t in
              proc.stdout.split("tokens:")[1].split("\n")[0].split()]
    return tokens, np.load(logits), proc.stdout


def torch_reference(model):
    """(prompt logits, greedy tokens) of a transformers model on PROMPT."""
    import torch
    with torch.no_grad():
        ref = model(torch.tensor([PROMPT])).logits.numpy()
        greedy = model.generate(torch.tensor([PROMPT]), max_new_tokens=6,
                                do_sample=False)[0, len(PROMPT):].tolist()
    return ref, greedy


def scale_err(got, ref):
    return float(np.abs(got - ref).max() / max(1.0, np.abs(ref).max()))


def params_bytes(stdout):
    return int(stdout.split("params ")[1].split(" bytes")[0])


@pytest.mark.parametrize("name", list(MODEL_TYPES))
def test_llama_gguf_stored(quantized_models, tmp_path, name):
    """`rlx-run --model x.gguf --weights-as stored`: the prompt's logits
    against PyTorch on the dequantized weights, greedy ids equal to it, and
    the compiled graph reads the blocks (the parameter pool is the file's
    size, not f32's)."""
    gguf_path = quantized_models / f"llama-{name}.gguf"
    tokens, got, stdout = run_model(gguf_path, tmp_path, "stored")
    ref, greedy = torch_reference(
        dequantized_reference(quantized_models / f"llama-{name}", name))
    err = scale_err(got, ref)
    assert err < MODEL_TYPES[name], f"{name}: logits off by {err:.3g}"
    assert tokens == greedy
    file_bytes = gguf_path.stat().st_size
    assert params_bytes(stdout) <= file_bytes, (
        f"parameter pool {params_bytes(stdout)} bytes, the file {file_bytes}: "
        "the weights were widened")


def mapped_mib(stdout):
    """(mapped, pool) MiB from rlx-run's 'weights loaded in' line."""
    part = stdout.split("weights loaded in ")[1].split(" MiB mapped")[0]
    mapped, pool = part.split("(")[1].split(" of ")
    return float(mapped), float(pool)


@pytest.mark.parametrize("name", ["bf16", "q8_0"])
def test_llama_gguf_weights_mapped(tmp_path, name):
    """Weights kept as stored are mapped from the GGUF, not copied: the
    compile places each at its file offset's page phase in the parameter
    pool, and loading maps its whole pages from the file (copying only the
    partial pages at its ends). With an 8192-token vocabulary the embedding
    and LM head span many pages; the model must still generate PyTorch's
    greedy ids on the dequantized weights, through the compile cache too."""
    import sys
    from conftest import ROOT
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "make_tiny_models.py"),
                    str(tmp_path), "--kind", "llama", "--name", "big-vocab",
                    "--seed", "5", "--vocab", "8192", "--gguf",
                    "--gguf-type", name], check=True, capture_output=True)
    gguf_path = tmp_path / "big-vocab.gguf"
    ref, greedy = torch_reference(
        dequantized_reference(tmp_path / "big-vocab", name))
    # Kept as the file stores them (x8-interleaved weights are copied).
    profile = tmp_path / "stored.rlx.toml"
    profile.write_text('[backend.cpu]\nrepack_weights = "none"\n')
    cache = ["--cache-dir", str(tmp_path / "cache"), "--profile", str(profile)]
    for attempt in ("cold", "warm"):
        tokens, got, stdout = run_model(gguf_path, tmp_path, "stored", cache)
        mapped, pool = mapped_mib(stdout)
        # Embedding and LM head: 2 x 8192 rows of 64 values.
        row = {"bf16": 128, "q8_0": 68}[name]
        assert mapped * 2**20 >= 0.9 * 2 * 8192 * row, (attempt, stdout)
        assert mapped <= pool
        err = scale_err(got, ref)
        assert err < MODEL_TYPES[name], f"{attempt}: logits off by {err:.3g}"
        assert tokens == greedy, attempt


def run_repacked(gguf_path, tmp_path, isa, min_x8=4, agree=1e-4):
    """rlx-run --model on PROMPT with [backend.cpu] repack_weights = "none"
    and "x8" under RLX_UK_ISA=isa: {repack: (greedy tokens, prompt logits,
    the LIR dumped)}. The two layouts' logits agree within `agree` of their
    scale: the same products summed in another order, which over several
    layers of 8-bit activations (a K-quant file's q8_K blocks of 256) may
    round a later layer's activation differently."""
    runs = {}
    for repack in ("none", "x8"):
        profile = tmp_path / f"{repack}.rlx.toml"
        profile.write_text(f'[backend.cpu]\nrepack_weights = "{repack}"\n')
        dump = tmp_path / f"ir-{isa}-{repack}"
        logits = tmp_path / f"logits-{isa}-{repack}.npy"
        proc = subprocess.run(
            [str(RLX_RUN), "--model", str(gguf_path), "--prompt-ids",
             ",".join(map(str, PROMPT)), "--max-new-tokens", "6",
             "--logits-out", str(logits), "--weights-as", "stored",
             "--profile", str(profile), "--dump-ir", str(dump)],
            capture_output=True, text=True, env=dict(os.environ, RLX_UK_ISA=isa))
        assert proc.returncode == 0, proc.stderr
        tokens = [int(t) for t in
                  proc.stdout.split("tokens:")[1].split("\n")[0].split()]
        lir = "\n".join(p.read_text() for p in sorted(dump.rglob("*lir*")))
        runs[repack] = (tokens, np.load(logits), lir)
    assert "#lir.layout<x8>" not in runs["none"][2]
    x8 = re.findall(r'lir.io param "([^"]+)".*#lir.layout<x8>', runs["x8"][2])
    assert len(set(x8)) >= min_x8, x8
    assert runs["x8"][0] == runs["none"][0]
    assert scale_err(runs["x8"][1], runs["none"][1]) < agree
    return runs


@pytest.mark.parametrize("isa", isas())
@pytest.mark.parametrize("name", ["q4_0", "q8_0", "f16", "bf16"])
def test_llama_gguf_weights_interleaved(quantized_models, tmp_path, name, isa):
    """[backend.cpu] repack_weights = "x8": the q4_0 / q8_0 matrices are
    interleaved by groups of 8 rows at load (f16 / bf16 by pairs of
    elements; layout x8 in the LIR), on every
    micro-kernel ISA. The prompt's logits match the stored layout's run and
    PyTorch's on the dequantized weights, with the same greedy ids."""
    runs = run_repacked(quantized_models / f"llama-{name}.gguf", tmp_path, isa)
    ref, greedy = torch_reference(
        dequantized_reference(quantized_models / f"llama-{name}", name))
    err = scale_err(runs["x8"][1], ref)
    assert err < MODEL_TYPES[name], f"{name}: logits off by {err:.3g}"
    assert runs["x8"][0] == greedy


@pytest.fixture(scope="module")
def tied_models(tmp_path_factory):
    """LLaMA GGUFs in q4_0, q8_0 and bf16 whose LM head is the token
    embedding."""
    import sys
    from conftest import ROOT
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    out = tmp_path_factory.mktemp("tied")
    for name in ("q4_0", "q8_0", "bf16"):
        subprocess.run([sys.executable,
                        str(ROOT / "scripts" / "make_tiny_models.py"),
                        str(out), "--kind", "llama", "--name",
                        f"llama-{name}", "--seed", "12", "--tied", "--gguf",
                        "--gguf-type", name],
                       check=True, capture_output=True)
    return out


@pytest.mark.parametrize("isa", isas())
@pytest.mark.parametrize("name", ["q4_0", "q8_0", "bf16"])
def test_tied_embedding_interleaved(tied_models, tmp_path, name, isa):
    """A tied embedding, the table the prompt's ids gather and the LM head's
    weight, is kept x8 too: the gather finds each row in its group of 8
    (rlx_dequantize_x8_rows; bf16 rows put back as stored by rlx_uk_unpack). The same tokens and logits as the stored
    layout's run, and PyTorch's on the dequantized weights."""
    import torch
    runs = run_repacked(tied_models / f"llama-{name}.gguf", tmp_path, isa)
    x8 = re.findall(r'lir.io param "([^"]+)".*#lir.layout<x8>', runs["x8"][2])
    assert "model.embed_tokens.weight" in x8, sorted(set(x8))
    model = dequantized_reference(tied_models / f"llama-{name}", name)
    ref, greedy = torch_reference(model)
    tolerance = MODEL_TYPES[name]
    err = scale_err(runs["x8"][1], ref)
    assert err < tolerance, f"{name}: logits off by {err:.3g}"
    # Greedy ids equal PyTorch's up to its first near-tie: a step whose
    # top-2 logits are closer than the 8-bit activations' tolerance (this
    # q4_0 model has one at step 1: 0.5% of the logits' scale).
    with torch.no_grad():
        out = model.generate(torch.tensor([PROMPT]), max_new_tokens=6,
                             do_sample=False, output_scores=True,
                             return_dict_in_generate=True)
    decisive = 0
    for scores in out.scores:
        top = torch.topk(scores[0], 2).values
        if float(top[0] - top[1]) < 2 * tolerance * max(1.0, float(top[0])):
            break
        decisive += 1
    assert decisive >= 1
    assert runs["x8"][0][:decisive] == greedy[:decisive]


def test_aot_refuses_stored(tmp_path):
    """An AOT library does not link the micro-kernels yet: a clear error
    before anything is written, not a library that fails to load."""
    rng = np.random.default_rng(2)
    path, _ = stored_file(tmp_path, rng, "q8_0", 8, 64)
    src = tmp_path / "module.mlir"
    src.write_text(LINEAR.format(m=2, k=64, n=8, storage="!mir.quant<q8_0>"))
    np.save(tmp_path / "x.npy", np.zeros((1, 2, 64), np.float32))
    proc = subprocess.run(
        [str(RLX_RUN), str(src), "--input", f"x={tmp_path / 'x.npy'}",
         "--params", str(path), "--aot", str(tmp_path / "lib")],
        capture_output=True, text=True)
    assert proc.returncode == 1
    assert "AOT: the model keeps weights as stored" in proc.stderr
    assert not (tmp_path / "lib.so").exists()


# --weights-as TYPE on an f32 checkpoint: matrices converted at load (ggml's
# reference quantizers, byte-exact with gguf-py's), same tolerances.
REQUANTIZE = {"bf16": 1e-2, "f16": 1e-5, "q8_0": 2e-2, "q4_0": 2e-2}
# --compute: (least, most) scale_err off the f32 computation, and the most
# off transformers' model cast to that type (measured: bf16 0.011, f16
# 0.0014 off transformers').
COMPUTE_TOLERANCE = {"bf16": (1e-3, 3e-2), "f16": (1e-4, 4e-3)}


@pytest.mark.parametrize("name", list(REQUANTIZE))
def test_llama_weights_converted_at_load(quantized_models, tmp_path, name):
    hf_dir = quantized_models / "llama-f16"  # its safetensors are f32
    tokens, got, _ = run_model(hf_dir, tmp_path, name)
    ref, greedy = torch_reference(dequantized_reference(hf_dir, name))
    err = scale_err(got, ref)
    assert err < REQUANTIZE[name], f"{name}: logits off by {err:.3g}"
    assert tokens == greedy


def test_profile_weights_and_refused_mixed(quantized_models, tmp_path):
    """[precision] weights in a profile file converts the matrices (the
    parameter pool shrinks to q4_0's size); mixed, which no back end
    implements, is refused by name."""
    hf_dir = quantized_models / "llama-f16"
    base = [str(RLX_RUN), "--model", str(hf_dir), "--prompt-ids", "1,2,3",
            "--max-new-tokens", "2"]
    sizes = {}
    for weights in ("f32", "q4_0"):
        profile = tmp_path / f"{weights}.rlx.toml"
        profile.write_text(f'[precision]\nweights = "{weights}"\n')
        proc = subprocess.run(base + ["--profile", str(profile)],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        sizes[weights] = int(proc.stdout.split("params ")[1].split(" ")[0])
    assert sizes["q4_0"] < sizes["f32"] / 5
    profile = tmp_path / "mixed.rlx.toml"
    profile.write_text('[precision]\nmixed = "auto"\n')
    proc = subprocess.run(base + ["--profile", str(profile)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert '[precision] mixed = "auto" is not implemented' in proc.stderr


def half_reference(path, dtype):
    """The prompt logits (as f32) and greedy tokens of the transformers
    model at `path` cast to `dtype` (its weights and every activation in
    it; eager attention, whose softmax is f32)."""
    import torch
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(
        path, attn_implementation="eager", dtype=dtype).eval()
    with torch.no_grad():
        ref = model(torch.tensor([PROMPT])).logits.float().numpy()
        greedy = model.generate(torch.tensor([PROMPT]), max_new_tokens=6,
                                do_sample=False)[0, len(PROMPT):].tolist()
    return ref, greedy


@pytest.mark.parametrize("compute", ["bf16", "f16"])
def test_compute_precision_is_the_models_in_it(quantized_models, tmp_path,
                                               compute):
    """`--compute bf16` / `f16` (with the weights in that type): the prompt's
    logits move off RLX's f32 computation on the same weights by about that
    type's rounding, stay within it of transformers' model cast to that type
    (which rounds at its own op boundaries: inside attention, after each
    multiply of RoPE, where RLX's fused kernels keep f32), and the greedy
    tokens are that model's. The same through a profile file."""
    import torch
    hf_dir = quantized_models / "llama-f16"  # its safetensors are f32
    ref, greedy = half_reference(
        hf_dir, {"bf16": torch.bfloat16, "f16": torch.float16}[compute])
    _, f32_logits, _ = run_model(hf_dir, tmp_path, compute)
    tokens, logits, _ = run_model(hf_dir, tmp_path, compute,
                                  ("--compute", compute))
    low, high = COMPUTE_TOLERANCE[compute]
    assert low < scale_err(logits, f32_logits) < high
    assert scale_err(logits, ref) < high
    assert tokens == greedy
    profile = tmp_path / "compute.rlx.toml"
    profile.write_text(f'[precision]\ncompute = "{compute}"\n'
                       f'weights = "{compute}"\n')
    _, from_profile, _ = run_model(hf_dir, tmp_path, compute,
                                   ("--profile", str(profile)))
    np.testing.assert_array_equal(from_profile, logits)


#===----------------------------------------------------------------------===#
# A Q4_K_M file made by llama.cpp's own quantizer
#===----------------------------------------------------------------------===#


def unpermute(t, heads):
    """Inverse of convert_hf_to_gguf.py's Q/K row permutation."""
    return (t.reshape(heads, t.shape[0] // heads // 2, 2, *t.shape[1:])
            .swapaxes(1, 2).reshape(t.shape))


@pytest.fixture(scope="module")
def q4_k_m_model(tmp_path_factory):
    """(HF model with the file's dequantized weights, q4_K_M GGUF path, ggml
    types in the file): a random LLaMA with rows of 256 and 512 so that
    llama.cpp's Q4_K_M recipe uses q4_K and q6_K, quantized by
    llama_model_quantize from an f32 GGUF."""
    return llama_cpp_quantized(tmp_path_factory, "q4_K_M",
                               15)  # LLAMA_FTYPE_MOSTLY_Q4_K_M


@pytest.fixture(scope="module")
def q5_k_m_model(tmp_path_factory):
    """The same model as q4_k_m_model in llama.cpp's Q5_K_M (q5_K and
    q6_K)."""
    return llama_cpp_quantized(tmp_path_factory, "q5_K_M",
                               17)  # LLAMA_FTYPE_MOSTLY_Q5_K_M


def llama_cpp_quantized(tmp_path_factory, name, ftype):
    """(HF model with the file's dequantized weights, GGUF path, ggml types
    in the file) of the random LLaMA quantized by llama.cpp to `ftype`."""
    torch = pytest.importorskip("torch")
    llama_cpp = pytest.importorskip("llama_cpp")
    from transformers import LlamaConfig, LlamaForCausalLM
    import sys
    from conftest import ROOT
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_tiny_models
    out = tmp_path_factory.mktemp(name)
    cfg = LlamaConfig(vocab_size=256, hidden_size=256, intermediate_size=512,
                      num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=64, rms_norm_eps=1e-5,
                      rope_theta=10000.0, max_position_embeddings=256,
                      tie_word_embeddings=False)
    torch.manual_seed(5)
    model = LlamaForCausalLM(cfg).eval()
    make_tiny_models.randomize(model, 5)
    f32 = out / "f32.gguf"
    make_tiny_models.write_gguf(model, str(f32))
    q = out / f"{name}.gguf"
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = 2
    assert llama_cpp.llama_model_quantize(str(f32).encode(), str(q).encode(),
                                          params) == 0
    reader = gguf.GGUFReader(str(q))
    types = {}
    hf = {}
    names = {"token_embd.weight": "model.embed_tokens.weight",
             "output_norm.weight": "model.norm.weight",
             "output.weight": "lm_head.weight"}
    per_layer = {"attn_norm": "input_layernorm", "ffn_norm":
                 "post_attention_layernorm", "attn_q": "self_attn.q_proj",
                 "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
                 "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj",
                 "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}
    for t in reader.tensors:
        shape = tuple(int(d) for d in reversed(t.shape))
        w = quants.dequantize(t.data, t.tensor_type).reshape(shape)
        types[t.name] = t.tensor_type.name.lower().replace("_k", "_K")
        if t.name in names:
            key = names[t.name]
        else:
            _, layer, kind, _ = t.name.split(".")
            key = f"model.layers.{layer}.{per_layer[kind]}.weight"
            if kind == "attn_q":
                w = unpermute(w, cfg.num_attention_heads)
            if kind == "attn_k":
                w = unpermute(w, cfg.num_key_value_heads)
        hf[key] = torch.from_numpy(np.ascontiguousarray(w, np.float32))
    missing, unexpected = model.load_state_dict(hf, strict=False)
    assert not unexpected and not [m for m in missing if "rotary" not in m]
    return model, q, types


# The prompt logits of a K-quant file kept as stored (q8_K activations, one
# scale per 256 elements) against PyTorch on its dequantized weights, over
# the test model's two layers: measured 0.045 (Q5_K_M) and 0.059 (Q4_K_M);
# llama.cpp's own on the same Q4_K_M file is 0.050.
K_QUANT_TOLERANCE = 8e-2


def test_llama_q4_k_m_from_llama_cpp(q4_k_m_model, tmp_path):
    """The K-quants as llama.cpp writes them. Widened at load (--weights-as
    f32), the logits match PyTorch on the file's dequantized weights (gguf-py)
    to 1e-4: the blocks are read right. Kept as stored, the greedy ids are
    PyTorch's and the logits within K_QUANT_TOLERANCE, the 8-bit activation
    rounding per block of 256 (llama.cpp's q8_K scheme) over two layers."""
    model, path, types = q4_k_m_model
    assert {"q4_K", "q6_K"} <= set(types.values()), types
    ref, greedy = torch_reference(model)
    for weights, tolerance in (("f32", 1e-4), ("stored", K_QUANT_TOLERANCE)):
        tokens, got, stdout = run_model(path, tmp_path, weights)
        err = scale_err(got, ref)
        assert err < tolerance, f"{weights}: logits off by {err:.3g}"
        assert tokens == greedy, weights
    assert params_bytes(stdout) <= path.stat().st_size


@pytest.mark.parametrize("isa", isas())
def test_q4_k_m_interleaved(q4_k_m_model, tmp_path, isa):
    """llama.cpp's Q4_K_M file with its q4_K and q6_K matrices x8-interleaved
    at load: the stored layout's greedy ids on the same
    ISA, logits within its tolerance of PyTorch's. (Greedy ids equal to
    PyTorch's are test_llama_q4_k_m_from_llama_cpp's: with 8-bit activations
    this model has near-ties that the scalar kernels' summation order
    flips.)"""
    model, path, _ = q4_k_m_model
    runs = run_repacked(path, tmp_path, isa, min_x8=2,
                        agree=K_QUANT_TOLERANCE)
    ref, _ = torch_reference(model)
    assert scale_err(runs["x8"][1], ref) < K_QUANT_TOLERANCE


@pytest.mark.parametrize("isa", isas())
def test_q5_k_m_from_llama_cpp(q5_k_m_model, tmp_path, isa):
    """llama.cpp's Q5_K_M file (q5_K and q6_K blocks) kept as stored, plain
    and x8-interleaved (q5_K has an x8 form): PyTorch's greedy ids on the
    file's dequantized weights, logits within the 8-bit activation
    rounding's K_QUANT_TOLERANCE; widened to f32 within 1e-4."""
    model, path, types = q5_k_m_model
    assert {"q5_K", "q6_K"} <= set(types.values()), types
    ref, greedy = torch_reference(model)
    runs = run_repacked(path, tmp_path, isa, min_x8=2,
                        agree=K_QUANT_TOLERANCE)
    x8 = re.findall(r'lir.io param "([^"]+)".*#lir.layout<x8>.*q5_K',
                    runs["x8"][2])
    assert x8, "no q5_K param interleaved"
    for layout in ("none", "x8"):
        assert scale_err(runs[layout][1], ref) < K_QUANT_TOLERANCE, layout
        assert runs[layout][0] == greedy, layout
    if isa == isas()[0]:
        tokens, got, _ = run_model(path, tmp_path, "f32")
        assert scale_err(got, ref) < 1e-4
        assert tokens == greedy


def test_prompt_graph_reads_blocks(quantized_models, q4_k_m_model):
    """The full-sequence prompt graph (--logits-out, --describe) reads the
    blocks as the generation's graphs do: no weight is dequantized into the
    arena, q+k+v and gate+up are joined as stored where their types agree
    and multiplied one by one where they do not (a Q4_K_M file's q6_K v
    rows), so the arena stays far below the widened weights."""
    for path in (quantized_models / "llama-q4_0.gguf", q4_k_m_model[1]):
        proc = subprocess.run(
            [str(RLX_RUN), "--model", str(path), "--prompt-ids",
             ",".join(map(str, PROMPT)), "--weights-as", "stored",
             "--describe"], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert "mir.dequantize" not in proc.stdout, proc.stdout
        arena = int(re.search(r"arena: (\d+) bytes", proc.stdout).group(1))
        params = int(re.search(r"params: .*?(\d+) bytes", proc.stdout).group(1))
        assert arena < params, proc.stdout


def test_q4_k_m_logits_against_llama_cpp(q4_k_m_model, tmp_path):
    """The same Q4_K_M file through llama.cpp (llama-cpp-python): both
    runtimes round activations to 8 bits (llama.cpp also keeps its KV cache
    in f16), so each is compared with the exact reference (PyTorch on the
    dequantized weights): RLX's error is of llama.cpp's size (two
    independent roundings of one scheme on one small model: within 1.5x of
    it; measured 0.059 against 0.050), and the two agree on the next token
    at most positions."""
    llama_cpp = pytest.importorskip("llama_cpp")
    model, path, _ = q4_k_m_model
    ref, _ = torch_reference(model)
    _, got, _ = run_model(path, tmp_path, "stored")
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=64, n_batch=64,
                          n_threads=2, logits_all=True, verbose=False)
    llm.eval(PROMPT)
    theirs = np.array(llm.scores[:len(PROMPT)], dtype=np.float32)
    assert np.abs(theirs).max() > 0, "llama.cpp returned no logits"
    ours_err, theirs_err = scale_err(got[0], ref[0]), scale_err(theirs, ref[0])
    print(f"RLX {ours_err:.3g}, llama.cpp {theirs_err:.3g}, between "
          f"{scale_err(got[0], theirs):.3g}")
    assert theirs_err < 0.2, "llama.cpp did not run the same model"
    assert ours_err <= theirs_err * 1.5
    assert (got[0].argmax(-1) == theirs.argmax(-1)).mean() >= 0.7


#===----------------------------------------------------------------------===#
# Vulkan: the kernels decode the stored weights themselves
#===----------------------------------------------------------------------===#

# Every stored type: f16 natively, bf16 and each ggml block type decoded by
# the shaders' loads (the K-quants from random blocks with f16 scales in
# [-0.05, 0.05], K = 256 = one super-block per row).
VULKAN_TYPES = TYPES


@pytest.mark.parametrize("m", [1, 7, 40])
@pytest.mark.parametrize("name", VULKAN_TYPES)
def test_vulkan_linear(tmp_path, name, m):
    """GEMV (m <= 4) and tiled GEMM over a weight kept as stored, on the GPU:
    f32 activations times the decoded weight, against numpy on gguf-py's
    dequantized weight (1e-5 of sum |w x|: no activation rounding here)."""
    from conftest import require_vulkan
    require_vulkan()
    rng = np.random.default_rng(zlib.crc32(f"{name}-{m}-vk".encode()))
    n, k = 24, 256
    path, w = stored_file(tmp_path, rng, name, n, k)
    x = rng.standard_normal((1, m, k)).astype(np.float32)
    mlir = LINEAR.format(m=m, k=k, n=n, storage=storage_attr(name))
    y = run(tmp_path, mlir, {"x": x}, path, "scalar",
            ["--device", "vulkan"])["y"]
    x64, w64 = x[0].astype(np.float64), w.astype(np.float64)
    ref = x64 @ w64.T
    bound = 1e-5 * (np.abs(x64) @ np.abs(w64).T) + 1e-6
    err = np.abs(y[0] - ref)
    assert (err <= bound).all(), float((err / bound).max())


# A bf16 table gathers bf16 rows, which the SPIR-V back end does not store
# (refused by name, below); ggml block tables gather f32 rows.
@pytest.mark.parametrize("name", ["f16", *BLOCK_TYPES])
def test_vulkan_embedding(tmp_path, name):
    from conftest import require_vulkan
    require_vulkan()
    rng = np.random.default_rng(8)
    v, k = 40, 256
    path, table = stored_file(tmp_path, rng, name, v, k, key="table")
    ids = np.array([[3, 0, 39, 3, 17]], dtype=np.int32)
    mlir = EMBED.format(t=5, k=k, v=v, storage=storage_attr(name))
    h = run(tmp_path, mlir, {"ids": ids}, path, "scalar",
            ["--device", "vulkan"])["h"]
    np.testing.assert_array_equal(h[0], table[ids[0]])


def test_vulkan_refuses_bf16_gather(tmp_path):
    """A bf16 embedding table gathers bf16 rows, an activation in bf16, which
    the SPIR-V back end does not implement: refused by name."""
    from conftest import require_vulkan
    require_vulkan()
    rng = np.random.default_rng(9)
    path, _ = stored_file(tmp_path, rng, "bf16", 40, 256, key="table")
    src = tmp_path / "module.mlir"
    src.write_text(EMBED.format(t=5, k=256, v=40, storage="bf16"))
    np.save(tmp_path / "ids.npy", np.zeros((1, 5), np.int32))
    proc = subprocess.run(
        [str(RLX_RUN), str(src), "--input", f"ids={tmp_path / 'ids.npy'}",
         "--params", str(path), "--device", "vulkan"],
        capture_output=True, text=True)
    assert proc.returncode == 1
    assert "the SPIR-V back end reads bf16 and ggml blocks only as " \
        "weights, not as the model's tensors" in proc.stderr


@pytest.mark.parametrize("name", ["f16", "q8_0", "q4_0", "q5_1"])
def test_vulkan_llama_gguf_stored(quantized_models, tmp_path, name):
    """A whole LLaMA GGUF on the GPU with its weights as stored: the shaders
    decode them and keep f32 activations, so the logits match PyTorch on
    the dequantized weights to 1e-4."""
    from conftest import require_vulkan
    require_vulkan()
    gguf_path = quantized_models / f"llama-{name}.gguf"
    tokens, got, _ = run_model(gguf_path, tmp_path, "stored",
                               ["--device", "vulkan"])
    ref, greedy = torch_reference(
        dequantized_reference(quantized_models / f"llama-{name}", name))
    assert scale_err(got, ref) < 1e-4
    assert tokens == greedy


def test_vulkan_q4_k_m_from_llama_cpp(q4_k_m_model, tmp_path):
    """The Q4_K_M file llama.cpp's quantizer wrote (q4_K and q6_K blocks)
    on the GPU with its weights as stored: the shaders decode the K-quants
    and keep f32 activations, so the logits match PyTorch on the file's
    dequantized weights to 1e-4 and the greedy ids are PyTorch's."""
    from conftest import require_vulkan
    require_vulkan()
    model, path, types = q4_k_m_model
    assert {"q4_K", "q6_K"} <= set(types.values()), types
    ref, greedy = torch_reference(model)
    tokens, got, stdout = run_model(path, tmp_path, "stored",
                                    ["--device", "vulkan"])
    err = scale_err(got, ref)
    print(f"types {sorted(set(types.values()))}: logits off by {err:.3g}")
    assert err < 1e-4, f"logits off by {err:.3g}"
    assert tokens == greedy
    assert params_bytes(stdout) <= path.stat().st_size


@pytest.mark.parametrize("name", ["bf16", *BLOCK_TYPES])
def test_vulkan_standing_dequantize(tmp_path, name):
    """A stored weight read by an add: the GPU's own dequantize kernel,
    bit for bit gguf-py's dequantize."""
    from conftest import require_vulkan
    require_vulkan()
    rng = np.random.default_rng(10)
    n, k = 6, 256
    path, w = stored_file(tmp_path, rng, name, n, k)
    x = rng.standard_normal((n, k)).astype(np.float32)
    mlir = STANDING.format(n=n, k=k, storage=storage_attr(name))
    y = run(tmp_path, mlir, {"x": x}, path, "scalar",
            ["--device", "vulkan"])["y"]
    np.testing.assert_array_equal(y, x + w)


@pytest.mark.parametrize("isa,message", [
    ("avx9", "unknown micro-kernel instruction set 'avx9' (expected one of: "
             "avx512, avx512-nobf16, avx2, scalar)"),
    ("", "unknown micro-kernel instruction set ''")])
def test_bad_ukernel_isa_refused(tmp_path, isa, message):
    """RLX_UK_ISA is honoured or refused by name, never ignored."""
    rng = np.random.default_rng(11)
    path, _ = stored_file(tmp_path, rng, "q8_0", 8, 64)
    src = tmp_path / "module.mlir"
    src.write_text(LINEAR.format(m=2, k=64, n=8, storage="!mir.quant<q8_0>"))
    np.save(tmp_path / "x.npy", np.zeros((1, 2, 64), np.float32))
    proc = subprocess.run(
        [str(RLX_RUN), str(src), "--input", f"x={tmp_path / 'x.npy'}",
         "--params", str(path)],
        capture_output=True, text=True, env=dict(os.environ, RLX_UK_ISA=isa))
    assert proc.returncode == 1
    assert f"RLX_UK_ISA: {message}" in proc.stderr
