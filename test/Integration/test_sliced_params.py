# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Weights per rank (issue 17): mir-fold-param-slices after
mir-shard-tensor-parallel turns each rank's `mir.slice`s and `mir.concat`s of
parameters into sliced parameters (`mir.param` with `source_starts`), which
the loader reads as ranges of the checkpoint tensors.

- The `emulate` form, folded, still equals the unsharded program within 1e-5
  with the weights given as a safetensors file (f32, and bf16 weights kept
  as bf16): the loader assembles every rank's share from the ranges.
- The rank programs, folded, read no slice or concat of a parameter, and
  their parameter pools (`rlx-run --describe=json`) hold exactly half of the
  split weights plus the replicated norms (<= 0.55 of the unsharded pool);
  before folding they held all of it. Run under `mpirun -np 2`, each given
  the whole tensors, they compute the unsharded logits within 1e-5.
- A source too short for its range, or with another other dimension, is
  refused naming the param, the source and both shapes (from a file and
  from --param).
- The stored range copy (bf16 columns and rows, q8_0 block-aligned columns
  and rows from a GGUF file) equals slicing the whole tensor in numpy."""

import json
import re
import struct
import subprocess

import numpy as np
import pytest

from conftest import RLX_RUN
from test_tensor_parallel_ir import LAYER, MODEL, TIED_HEAD, rlx_opt

SHARD = "--mir-shard-tensor-parallel=ranks=2"
FOLD = "--mir-fold-param-slices"


def bf16_bits(a):
    """f32 -> bf16 bit patterns (round to nearest even)."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def write_safetensors(path, tensors):
    """tensors: {name: (dtype string, shape, bytes)}."""
    header, data = {}, b""
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def f32_file(path, params):
    write_safetensors(path, {k: ("F32", v.shape, v.astype(np.float32)
                                 .tobytes()) for k, v in params.items()})


def random_params(shapes, seed):
    rng = np.random.default_rng(seed)
    return {k: (rng.standard_normal(s) * (0.2 if len(s) == 2 else 1.0)
                ).astype(np.float32) for k, s in shapes.items()}


def model_hir(storage=None):
    body = LAYER.format(kv=32, kvh=2).split("\n")[1:-3]
    layer = "\n".join(body).replace("%y = hir.llama_decoder_layer %x",
                                    "%y = hir.llama_decoder_layer %h")
    hir = MODEL.format(layer=layer, head=TIED_HEAD.format(v=100), v=100)
    if storage:
        # The projection weights kept in their stored type (norms f32).
        hir = re.sub(r'(hir\.param "(?:embed|l0\.(?:q|k|v|o|gate|up|down))")',
                     rf"\1 {{storage = {storage}}}", hir)
    return hir


SHAPES = {"embed": (100, 64), "l0.input_norm": (64,), "l0.q": (64, 64),
          "l0.k": (32, 64), "l0.v": (32, 64), "l0.o": (64, 64),
          "l0.post_norm": (64,), "l0.gate": (128, 64), "l0.up": (128, 64),
          "l0.down": (64, 128), "norm": (64,)}
# Ids at both ends of both ranks' vocabulary ranges [0, 50), [50, 100).
INPUTS = {"ids": np.array([[0, 49, 50, 99, 7, 63, 50]], dtype=np.int32),
          "pos": np.arange(7, dtype=np.int32)[None]}


def param_names(text):
    return set(re.findall(r"(%[\w.]+) = mir\.param ", text))


def sliced_or_concatenated_params(text):
    """The lines that slice or concatenate a mir.param result."""
    params = param_names(text)
    bad = []
    for line in text.splitlines():
        m = re.search(r"= mir\.(slice|concat) ([^{:]*)", line)
        if m and any(o.strip() in params for o in m.group(2).split(",")):
            bad.append(line.strip())
    return bad


@pytest.mark.parametrize("storage", [None, "bf16"])
def test_folded_emulation_matches_unsharded(rlx, storage):
    params = random_params(SHAPES, 11)
    if storage == "bf16":
        # The projection weights as bf16, the norms (kept f32) as f32.
        weights = rlx.tmp / "model_bf16.safetensors"
        write_safetensors(weights, {
            k: (("BF16", v.shape, bf16_bits(v).tobytes()) if v.ndim == 2
                else ("F32", v.shape, v.tobytes()))
            for k, v in params.items()})
    else:
        weights = rlx.tmp / "model.safetensors"
        f32_file(weights, params)

    args = ["--params", str(weights)]
    if storage:
        # The matmuls that read bf16 weights in place round differently
        # from f32 ones (1e-2 here), and folding changes which read them:
        # every program dequantizes its weights once instead, so that what
        # differs is only how the weights were loaded.
        profile = rlx.tmp / "f32.rlx.toml"
        profile.write_text('[fusion]\ndisable = ["dequantize"]\n')
        args += ["--profile", str(profile)]

    mir = rlx_opt(rlx, model_hir(storage), "--convert-hir-to-mir=policy=direct")
    expected = rlx.run(mir, INPUTS, args=args)["logits"]
    emulated = rlx_opt(rlx, mir, f"{SHARD} emulate=true")
    folded = rlx_opt(rlx, emulated, FOLD)
    assert "source_starts" in folded
    assert sliced_or_concatenated_params(folded) == []
    if storage:
        # The sliced params keep the stored type, widened once.
        assert re.search(r'mir\.param "l0\.q\[0:32\][^"]*" \{[^}]*\} : '
                         r'tensor<64x64xbf16>', folded)
    actual = rlx.run(folded, INPUTS, args=args)["logits"]
    assert np.abs(expected).max() > 0.1
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5)
    if storage is None:
        # The same weights given one by one (setParam of whole tensors).
        again = rlx.run(folded, INPUTS, params)["logits"]
        np.testing.assert_allclose(again, expected, rtol=1e-5, atol=1e-5)
        # Compiled ahead of time: the ranges travel in the JSON manifest.
        (rlx.tmp / "aot").mkdir()
        prefix = rlx.tmp / "aot" / "model"
        aot = rlx.run(folded, INPUTS, args=["--params", str(weights),
                                            "--aot", str(prefix)])["logits"]
        np.testing.assert_allclose(aot, expected, rtol=1e-5, atol=1e-5)
        entries = json.loads(prefix.with_suffix(".json").read_text())
        assert any("source_starts" in e for e in entries["entries"])
        # rlx-exec reads that manifest.
        exec_out = rlx.tmp / "exec_out"
        cmd = [str(RLX_RUN.parent / "rlx-exec"), str(prefix), "--params",
               str(weights), "--output-dir", str(exec_out)]
        for name in INPUTS:
            cmd += ["--input", f"{name}={rlx.tmp / f'in_{name}.npy'}"]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        np.testing.assert_allclose(np.load(exec_out / "logits.npy"), expected,
                                   rtol=1e-5, atol=1e-5)
        # The compile cache keeps the manifest too: the second run loads it.
        cache = ["--cache-dir", str(rlx.tmp / "cache")]
        for _ in range(2):
            cached = rlx.run(folded, INPUTS,
                             args=["--params", str(weights), *cache])
            np.testing.assert_allclose(cached["logits"], expected, rtol=1e-5,
                                       atol=1e-5)
        assert any((rlx.tmp / "cache").rglob("*"))


def describe(rlx, text, name):
    path = rlx.tmp / f"{name}.mlir"
    path.write_text(text)
    proc = subprocess.run([str(RLX_RUN), str(path), "--describe=json"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["params"]


def test_rank_programs_hold_half_the_weights(rlx):
    mir = rlx_opt(rlx, model_hir(), "--convert-hir-to-mir=policy=direct")
    full = describe(rlx, mir, "full")["bytes"]
    replicated = 4 * (64 + 64 + 64)  # the three norms
    split = 4 * sum(int(np.prod(s)) for s in SHAPES.values() if len(s) == 2)
    assert full == split + replicated
    for r in (0, 1):
        rank = rlx_opt(rlx, mir, f"{SHARD} rank={r}")
        assert sliced_or_concatenated_params(rank) != []
        assert describe(rlx, rank, f"rank{r}")["bytes"] == full
        folded = rlx_opt(rlx, rank, FOLD)
        assert sliced_or_concatenated_params(folded) == []
        assert "mir.concat" not in folded
        # Rank r's Q/K/V rows as one range-derived param, read as ranges.
        lo, kv = 32 * r, 16 * r
        assert (f'"l0.q[{lo}:{lo + 32}]+l0.k[{kv}:{kv + 16}]'
                f'+l0.v[{kv}:{kv + 16}]"') in folded
        assert f'"l0.o[:,{lo}:{lo + 32}]"' in folded
        assert f'"embed[{50 * r}:{50 * r + 50}]"' in folded
        got = describe(rlx, folded, f"rank{r}_folded")
        assert got["bytes"] == split // 2 + replicated
        assert got["bytes"] <= 0.55 * full


def test_mpi_folded_ranks_match_unsharded(rlx):
    """The folded rank programs under mpirun -np 2, each given the whole
    checkpoint tensors (--param) and keeping only its ranges."""
    import test_mpi_tensor_parallel as mpi
    if not mpi.built_with_mpi():
        pytest.skip("RLX was built without MPI")
    params = random_params(SHAPES, 13)
    mir = rlx_opt(rlx, model_hir(), "--convert-hir-to-mir=policy=direct")
    expected = rlx.run(mir, INPUTS, params)["logits"]
    programs = [rlx_opt(rlx, rlx_opt(rlx, mir, f"{SHARD} rank={r}"), FOLD)
                for r in (0, 1)]
    assert all(sliced_or_concatenated_params(p) == [] for p in programs)
    outs = mpi.run_ranks(rlx.tmp, programs, INPUTS, params)
    for r, out in enumerate(outs):
        np.testing.assert_allclose(out["logits"], expected, rtol=1e-5,
                                   atol=1e-5, err_msg=f"rank {r}")


def sliced_module(src_shape, rows, cols, dtype="f32"):
    """A function returning one sliced param of weight "w" (rows [a, b) or
    columns [a, b)), widened to f32 when stored in another type."""
    axis, (a, b) = (0, rows) if rows else (1, cols)
    shape = list(src_shape)
    shape[axis] = b - a
    name = f"w[{a}:{b}]" if axis == 0 else f"w[:,{a}:{b}]"
    ty = "tensor<" + "x".join(map(str, shape)) + f"x{dtype}>"
    f32 = "tensor<" + "x".join(map(str, shape)) + "xf32>"
    param = (f'%w = mir.param "{name}" {{sources = ["w"], concat_axis = '
             f'{axis} : i64, source_sizes = array<i64: {b - a}>, '
             f'source_starts = array<i64: {a}>}} : {ty}')
    body = f"  {param}\n"
    result = "%w"
    if dtype != "f32":
        body += f"  %f = mir.dequantize %w : ({ty}) -> {f32}\n"
        result = "%f"
    return (f'func.func @main(%x: tensor<1xf32> {{rlx.name = "x"}}) -> '
            f'({f32} {{rlx.name = "y"}}) {{\n{body}'
            f"  return {result} : {f32}\n}}\n")


X = {"x": np.zeros(1, np.float32)}


def test_bad_source_shapes(rlx):
    module = sliced_module((16, 4), (8, 16), None)
    short = rlx.tmp / "short.safetensors"
    f32_file(short, {"w": np.ones((12, 4), np.float32)})
    err = rlx.run(module, X, args=["--params", str(short)], expect_fail=True)
    assert "param 'w[8:16]'" in err and "source 'w'" in err
    assert "[8, 16) along axis 0" in err
    assert "[12, 4]" in err and "[8, 4]" in err
    wide = rlx.tmp / "wide.safetensors"
    f32_file(wide, {"w": np.ones((16, 5), np.float32)})
    err = rlx.run(module, X, args=["--params", str(wide)], expect_fail=True)
    assert "param 'w[8:16]'" in err and "source 'w'" in err
    assert "[16, 5]" in err and "[8, 4]" in err
    assert "differs in another dimension" in err
    # The same through --param (setParam of a tensor).
    err = rlx.run(module, X, {"w": np.ones((12, 4), np.float32)},
                  expect_fail=True)
    assert "param 'w[8:16]'" in err and "[12, 4]" in err
    # A good source: exactly its rows.
    w = np.arange(64, dtype=np.float32).reshape(16, 4)
    good = rlx.tmp / "good.safetensors"
    f32_file(good, {"w": w})
    y = rlx.run(module, X, args=["--params", str(good)])["y"]
    np.testing.assert_array_equal(y, w[8:16])
    y = rlx.run(module, X, {"w": w})["y"]
    np.testing.assert_array_equal(y, w[8:16])


@pytest.mark.parametrize("rows,cols", [((3, 7), None), (None, (32, 64))])
def test_bf16_range_copy(rlx, rows, cols):
    w = np.random.default_rng(3).standard_normal((8, 96)).astype(np.float32)
    bits = bf16_bits(w)
    path = rlx.tmp / "w.safetensors"
    write_safetensors(path, {"w": ("BF16", w.shape, bits.tobytes())})
    y = rlx.run(sliced_module(w.shape, rows, cols, "bf16"), X,
                args=["--params", str(path)])["y"]
    want = bf16_to_f32(bits)
    want = want[rows[0]:rows[1]] if rows else want[:, cols[0]:cols[1]]
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("rows,cols", [((1, 3), None), (None, (32, 96)),
                                       (None, (16, 48))])
def test_q8_0_range_copy(rlx, rows, cols):
    gguf = pytest.importorskip("gguf")
    from gguf import quants
    from gguf.constants import GGMLQuantizationType as T
    w = np.random.default_rng(5).standard_normal((4, 128)).astype(np.float32)
    blocks = quants.quantize(w, T.Q8_0)
    path = rlx.tmp / "w.gguf"
    writer = gguf.GGUFWriter(str(path), "rlxtest")
    writer.add_tensor("w", blocks, raw_dtype=T.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    module = sliced_module(w.shape, rows, cols, "!mir.quant<q8_0>")
    if cols == (16, 48):
        # Half a block: refused by the verifier (mir_param_c9).
        err = rlx.run(module, X, args=["--params", str(path)],
                      expect_fail=True)
        assert "block boundary" in err
        return
    y = rlx.run(module, X, args=["--params", str(path)])["y"]
    want = quants.dequantize(blocks, T.Q8_0)
    want = want[rows[0]:rows[1]] if rows else want[:, cols[0]:cols[1]]
    np.testing.assert_array_equal(y, want)
