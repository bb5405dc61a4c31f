# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The catalogue of bad inputs, end to end through the tools users run
(rlx-run, rlx-exec, rlx-opt): broken safetensors and GGUF files (truncated at
every section boundary, lying lengths, offsets and counts, bad dtypes, nested
arrays, metadata of the wrong type), .npy files with bad headers, configs that
disagree with their weights, inputs of the wrong shape or dtype at run time,
profiles with wrong types, AOT manifests that lie, and models past the memory
budget.

Every case asserts the exact error expected (the file, then the thing that is
wrong), a non-zero exit, and that nothing was run or written: no output
files, no results printed. The byte-level files come from fuzz/formats.py,
the same generator as the fuzz seed corpora."""

import json
import os
import pathlib
import struct
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT, RLX_RUN

sys.path.insert(0, str(ROOT / "fuzz"))
import formats  # noqa: E402

RLX_EXEC = BUILD / "bin" / "rlx-exec"
RLX_OPT = BUILD / "bin" / "rlx-opt"
SCALE = ROOT / "test" / "Tools" / "rlx-run" / "Inputs" / "scale.mlir"
# The tools' error prefix.
ERR = "error: "


def run(cmd, env=None):
    full_env = dict(os.environ)
    full_env.pop("RLX_MEMORY_BUDGET_MB", None)
    full_env.update(env or {})
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                          env=full_env, timeout=600)


def assert_refused(proc, path, fragment, out_dir=None, outputs=()):
    """The tool failed, its error names `path` (when given) and contains
    `fragment`, nothing was run (no result lines) and nothing was written."""
    assert proc.returncode != 0, proc.stdout + proc.stderr
    err = proc.stderr
    assert ERR in err, err
    message = err[err.index(ERR) + len(ERR):]
    if path is not None:
        assert message.startswith(str(path) + ":"), (str(path), message)
    assert fragment in message, (fragment, message)
    assert "ran in" not in proc.stdout and "tokens:" not in proc.stdout, \
        proc.stdout
    if out_dir is not None:
        assert not out_dir.exists() or not any(out_dir.iterdir()), \
            list(out_dir.iterdir())
    for f in outputs:
        assert not pathlib.Path(f).exists(), f


def npy_f32(shape, values=None):
    n = 1
    for d in shape:
        n *= d
    values = values if values is not None else [float(i) for i in range(n)]
    return formats.npy("<f4", shape, formats.f32_bytes(values))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad-inputs")
    (d / "x.npy").write_bytes(npy_f32((1, 3, 4)))
    (d / "w.npy").write_bytes(npy_f32((4,), [1, 2, 3, 4]))
    (d / "w.safetensors").write_bytes(formats.safetensors(
        [("w", "F32", [4], formats.f32_bytes([1, 2, 3, 4]))]))
    return d


#===----------------------------------------------------------------------===#
# safetensors: rlx-run MODULE --params FILE
#===----------------------------------------------------------------------===#

SAFETENSORS = list(formats.bad_safetensors())


@pytest.mark.parametrize("name,data,fragment", SAFETENSORS,
                         ids=[c[0] for c in SAFETENSORS])
def test_safetensors(files, tmp_path, name, data, fragment):
    bad = tmp_path / f"{name}.safetensors"
    bad.write_bytes(data)
    out = tmp_path / "out"
    proc = run([RLX_RUN, SCALE, "--quiet", "--input", f"x={files / 'x.npy'}",
                "--params", bad, "--output-dir", out])
    assert_refused(proc, bad, fragment, out)


def test_safetensors_shard_index_escapes_directory(files, tmp_path):
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"w": "../w.safetensors"}}))
    proc = run([RLX_RUN, SCALE, "--quiet", "--input", f"x={files / 'x.npy'}",
                "--params", tmp_path, "--output-dir", tmp_path / "out"])
    assert_refused(proc, tmp_path / "model.safetensors.index.json",
                   "weight_map: tensor 'w': shard '../w.safetensors' is not "
                   "a plain file name", tmp_path / "out")


def test_safetensors_weight_of_wrong_shape(files, tmp_path):
    bad = tmp_path / "w3.safetensors"
    bad.write_bytes(formats.safetensors(
        [("w", "F32", [3], formats.f32_bytes([1, 2, 3]))]))
    proc = run([RLX_RUN, SCALE, "--quiet", "--input", f"x={files / 'x.npy'}",
                "--params", bad, "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, "weight 'w' has shape [3], the model needs [4]",
                   tmp_path / "out")


#===----------------------------------------------------------------------===#
# GGUF: rlx-run --model FILE.gguf
#===----------------------------------------------------------------------===#

GGUF = list(formats.bad_gguf()) + list(formats.bad_llama_gguf())


@pytest.mark.parametrize("name,data,fragment", GGUF, ids=[c[0] for c in GGUF])
def test_gguf(tmp_path, name, data, fragment):
    bad = tmp_path / f"{name}.gguf"
    bad.write_bytes(data)
    logits = tmp_path / "logits.npy"
    proc = run([RLX_RUN, "--model", bad, "--prompt-ids", "1,2", "--quiet",
                "--logits-out", logits, "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, fragment, tmp_path / "out", [logits])


#===----------------------------------------------------------------------===#
# .npy: rlx-run MODULE --input x=FILE, --param w=FILE
#===----------------------------------------------------------------------===#

NPY = list(formats.bad_npy())


@pytest.mark.parametrize("name,data,fragment", NPY, ids=[c[0] for c in NPY])
def test_npy_input(files, tmp_path, name, data, fragment):
    bad = tmp_path / f"{name}.npy"
    bad.write_bytes(data)
    proc = run([RLX_RUN, SCALE, "--quiet", "--input", f"x={bad}",
                "--param", f"w={files / 'w.npy'}",
                "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, fragment, tmp_path / "out")


def test_npy_param_fortran_order(files, tmp_path):
    bad = tmp_path / "w.npy"
    bad.write_bytes(formats.npy("<f4", (4,), formats.f32_bytes([1, 2, 3, 4]),
                                fortran=True))
    proc = run([RLX_RUN, SCALE, "--quiet", "--input", f"x={files / 'x.npy'}",
                "--param", f"w={bad}", "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, "header: Fortran order is not supported",
                   tmp_path / "out")


#===----------------------------------------------------------------------===#
# Inputs of the wrong shape or dtype at run time
#===----------------------------------------------------------------------===#

def test_input_wrong_dtype(files, tmp_path):
    bad = tmp_path / "x_i32.npy"
    bad.write_bytes(formats.npy("<i4", (1, 3, 4), struct.pack("<12i", *range(12))))
    proc = run([RLX_RUN, SCALE, "--quiet", "--input", f"x={bad}",
                "--param", f"w={files / 'w.npy'}", "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, "input 'x': expected f32[1, 3, 4], got "
                   "i32[1, 3, 4]", tmp_path / "out")


def test_input_wrong_rank(files, tmp_path):
    bad = tmp_path / "x_rank2.npy"
    bad.write_bytes(npy_f32((3, 4)))
    proc = run([RLX_RUN, SCALE, "--quiet", "--input", f"x={bad}",
                "--param", f"w={files / 'w.npy'}", "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, "input 'x' of type tensor<1x?x4xf32> cannot take "
                   "the shape [3, 4]", tmp_path / "out")


def test_input_wrong_static_dim(files, tmp_path):
    bad = tmp_path / "x_dim5.npy"
    bad.write_bytes(npy_f32((1, 3, 5)))
    proc = run([RLX_RUN, SCALE, "--quiet", "--input", f"x={bad}",
                "--param", f"w={files / 'w.npy'}", "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, "input 'x' of type tensor<1x?x4xf32> cannot take "
                   "the shape [1, 3, 5]", tmp_path / "out")


def test_input_unknown_name(files, tmp_path):
    proc = run([RLX_RUN, SCALE, "--quiet", "--input", f"x={files / 'x.npy'}",
                "--input", f"z={files / 'x.npy'}",
                "--param", f"w={files / 'w.npy'}", "--output-dir", tmp_path / "out"])
    assert_refused(proc, files / "x.npy", "unknown input 'z' (the model takes: x)",
                   tmp_path / "out")


@pytest.mark.parametrize("option", [
    ["--kv-cache", "f16"], ["--max-new-tokens", "3"], ["--weights-as", "q8_0"],
    ["--prompt-ids", "1,2"], ["--temperature", "0.5"]])
def test_model_option_with_a_module(files, tmp_path, option):
    """An option of --model runs given with a module is refused by name,
    not dropped."""
    proc = run([RLX_RUN, SCALE, "--quiet", "--input", f"x={files / 'x.npy'}",
                "--param", f"w={files / 'w.npy'}", "--output-dir",
                tmp_path / "out", *option])
    assert_refused(proc, SCALE, f"{option[0]} applies to --model runs",
                   tmp_path / "out")


@pytest.mark.parametrize("section,key,says", [
    ("precision", 'weights = "q8_0"', "applies to model recipes"),
    ("precision", 'kv_cache = "f16"', "applies to model recipes"),
    ("execution", "decode_buckets = [16, 64]",
     "sizes a model recipe's decode graphs")])
def test_model_precision_with_a_module(files, tmp_path, section, key, says):
    """A profile's [precision] weights / kv_cache set what a model recipe
    stores, its [execution] decode_buckets what its generator compiles:
    given with a module, whose params and tensors have the types it declares
    and whose shapes are the inputs', they are refused by name, not
    dropped."""
    profile = tmp_path / "p.rlx.toml"
    profile.write_text(f"[{section}]\n{key}\n")
    proc = run([RLX_RUN, SCALE, "--quiet", "--input", f"x={files / 'x.npy'}",
                "--param", f"w={files / 'w.npy'}", "--profile", profile,
                "--output-dir", tmp_path / "out"])
    name = key.split(" =")[0] if section == "execution" else key
    assert_refused(proc, SCALE, f"[{section}] {name} {says}", tmp_path / "out")


#===----------------------------------------------------------------------===#
# Compile profiles: rlx-run MODULE --profile FILE
#===----------------------------------------------------------------------===#

PROFILES = [
    ("wrong-types", '[fusion]\npolicy = 1\nskip = "yes"\n',
     "2:10: 'fusion.policy' must be a string, got integer"),
    ("threads-string", '[backend.cpu]\nthreads = "four"\n',
     "2:11: 'backend.cpu.threads' must be an integer, got string"),
    ("workgroup-not-power-of-two", "[backend.spirv]\nworkgroup_size = 48\n",
     "2:18: 'backend.spirv.workgroup_size' must be a power of two between 1 "
     "and 1024, got 48"),
    ("table-is-a-number", "fusion = 3\n", "1:10: 'fusion' must be a table, got integer"),
    ("disable-not-strings", "[fusion]\ndisable = [3]\n",
     "2:12: 'fusion.disable[0]' must be a string, got integer"),
    ("bad-table-header", "[\0,x]\n", "1:2: syntax error"),
    ("non-ascii-value", "[fusion]\npolicy = \u00e9\n", "2:10: syntax error"),
]


@pytest.mark.parametrize("name,text,fragment", PROFILES,
                         ids=[c[0] for c in PROFILES])
def test_profile(files, tmp_path, name, text, fragment):
    bad = tmp_path / f"{name}.rlx.toml"
    bad.write_bytes(text.encode())
    proc = run([RLX_RUN, SCALE, "--quiet", "--input", f"x={files / 'x.npy'}",
                "--param", f"w={files / 'w.npy'}", "--profile", bad,
                "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, fragment, tmp_path / "out")


#===----------------------------------------------------------------------===#
# Model directories: config.json against its weights (rlx-run --model DIR)
#===----------------------------------------------------------------------===#

def model_dir(path, config, weights_config=None):
    path.mkdir(parents=True, exist_ok=True)
    (path / "config.json").write_text(
        config if isinstance(config, str) else json.dumps(config))
    (path / "model.safetensors").write_bytes(
        formats.llama_safetensors(weights_config or formats.LLAMA_CONFIG))
    return path


def run_model(d, tmp_path, *args):
    logits = tmp_path / "logits.npy"
    proc = run([RLX_RUN, "--model", d, "--prompt-ids", "1,2", "--quiet",
                "--max-new-tokens", "2", "--logits-out", logits,
                "--output-dir", tmp_path / "out", *args])
    return proc, logits


def test_model_dir_valid(tmp_path):
    """The baseline the disagreeing configs are edits of runs."""
    proc, logits = run_model(model_dir(tmp_path / "m", formats.LLAMA_CONFIG),
                             tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "tokens:" in proc.stdout and logits.exists()


CONFIGS = list(formats.bad_configs())


@pytest.mark.parametrize("name,text,fragment", CONFIGS,
                         ids=[c[0] for c in CONFIGS])
def test_config(tmp_path, name, text, fragment):
    d = model_dir(tmp_path / "m", text)
    proc, logits = run_model(d, tmp_path)
    assert_refused(proc, d / "config.json", fragment, tmp_path / "out", [logits])


L0 = "model.layers.0."
DISAGREE = [
    ("hidden-size", {"hidden_size": 16, "head_dim": 8},
     "weight 'model.embed_tokens.weight' in {w} has shape [16, 8], expected "
     "[16, 16]"),
    ("head-count", {"num_attention_heads": 4, "num_key_value_heads": 2},
     f"weight '{L0}self_attn.q_proj.weight' in {{w}} has shape [8, 8], "
     "expected [16, 8]"),
    ("kv-head-count", {"num_key_value_heads": 2},
     f"weight '{L0}self_attn.k_proj.weight' in {{w}} has shape [4, 8], "
     "expected [8, 8]"),
    ("vocab", {"vocab_size": 32},
     "weight 'model.embed_tokens.weight' in {w} has shape [16, 8], expected "
     "[32, 8]"),
    ("intermediate", {"intermediate_size": 24},
     f"weight '{L0}mlp.gate_proj.weight' in {{w}} has shape [16, 8], "
     "expected [24, 8]"),
    ("layers", {"num_hidden_layers": 2},
     "missing weight 'model.layers.1.input_layernorm.weight' (expected [8]) "
     "in {w}"),
]


@pytest.mark.parametrize("name,edit,fragment", DISAGREE,
                         ids=[c[0] for c in DISAGREE])
def test_config_disagrees_with_weights(tmp_path, name, edit, fragment):
    d = model_dir(tmp_path / "m", dict(formats.LLAMA_CONFIG, **edit))
    proc, logits = run_model(d, tmp_path)
    assert_refused(proc, None, fragment.format(w=d / "model.safetensors"),
                   tmp_path / "out", [logits])


def test_prompt_outside_vocab(tmp_path):
    d = model_dir(tmp_path / "m", formats.LLAMA_CONFIG)
    logits = tmp_path / "logits.npy"
    proc = run([RLX_RUN, "--model", d, "--prompt-ids", "1,16", "--quiet",
                "--logits-out", logits])
    assert_refused(proc, None, "prompt token 16 at position 1 is outside the "
                   f"vocabulary [0, 16) of {d}", None, [logits])


#===----------------------------------------------------------------------===#
# Memory budget
#===----------------------------------------------------------------------===#

def test_budget_refuses_arena(files, tmp_path):
    big = tmp_path / "x_big.npy"
    big.write_bytes(npy_f32((1, 70000, 4), [0.0] * 280000))
    proc = run([RLX_RUN, SCALE, "--quiet", "--input", f"x={big}",
                "--param", f"w={files / 'w.npy'}", "--memory-budget-mb", "1",
                "--output-dir", tmp_path / "out"])
    assert_refused(proc, SCALE, "the compiled model's arena (2240000 bytes) + "
                   "parameters (64 bytes) = 2240064 bytes (2 MiB), over the "
                   "memory budget of 1048576 bytes (--memory-budget-mb 1)",
                   tmp_path / "out")


def test_budget_from_environment(files, tmp_path):
    big = tmp_path / "x_big.npy"
    big.write_bytes(npy_f32((1, 70000, 4), [0.0] * 280000))
    proc = run([RLX_RUN, SCALE, "--quiet", "--input", f"x={big}",
                "--param", f"w={files / 'w.npy'}",
                "--output-dir", tmp_path / "out"],
               env={"RLX_MEMORY_BUDGET_MB": "1"})
    assert_refused(proc, SCALE, "over the memory budget of 1048576 bytes "
                   "(RLX_MEMORY_BUDGET_MB=1)", tmp_path / "out")


def test_budget_refuses_kv_cache(tmp_path):
    d = model_dir(tmp_path / "m", formats.LLAMA_CONFIG)
    proc = run([RLX_RUN, "--model", d, "--prompt-ids", "1,2", "--quiet",
                "--max-context", "100000000", "--memory-budget-mb", "64"])
    assert_refused(proc, d, "the KV cache (1 layers, 100000000 tokens, 4 f32 "
                   "values per key and per value) = 3200000000 bytes (3051 "
                   "MiB), over the memory budget of 67108864 bytes "
                   "(--memory-budget-mb 64)")


#===----------------------------------------------------------------------===#
# AOT manifests and inputs: rlx-exec PREFIX
#===----------------------------------------------------------------------===#

@pytest.fixture(scope="module")
def aot(files):
    prefix = files / "aot" / "scale"
    prefix.parent.mkdir()
    x3 = files / "x3.npy"
    x3.write_bytes(npy_f32((1, 3, 4)))
    proc = run([RLX_RUN, SCALE, "--quiet", "--input", f"x={x3}",
                "--param", f"w={files / 'w.npy'}", "--aot", prefix])
    assert proc.returncode == 0, proc.stderr
    return prefix


def with_manifest(aot, tmp_path, edit):
    prefix = tmp_path / "scale"
    (tmp_path / "scale.so").write_bytes(aot.with_suffix(".so").read_bytes())
    m = json.loads(aot.with_suffix(".json").read_text())
    text = edit(m)
    (tmp_path / "scale.json").write_text(text if isinstance(text, str)
                                         else json.dumps(m))
    return prefix


def set_entry(m, name, **kw):
    for e in m["entries"]:
        if e["name"] == name:
            e.update(kw)


MANIFESTS = [
    ("not-json", lambda m: '{"entry": ', "invalid JSON"),
    ("deep-nesting", lambda m: "[" * 100000,
     "JSON nested deeper than 64 levels"),
    ("entry-past-arena", lambda m: set_entry(m, "y", offset=m["arena_size"]),
     "entry 'y' lies past the end of its storage"),
    ("offset-overflow", lambda m: set_entry(m, "x", offset=2**63 - 8),
     "entry 'x' lies past the end of its storage (48 bytes at offset "
     "9223372036854775800"),
    ("shape-overflow", lambda m: set_entry(m, "x", shape=[2**32, 2**32, 4]),
     "entry 'x': element count of shape [4294967296, 4294967296, 4] "
     "overflows 64 bits"),
    ("quantized-dtype", lambda m: set_entry(m, "x", dtype="q4_0"),
     "entry 'x': dtype 'q4_0' is a storage format, not a runtime type"),
    ("unknown-kind", lambda m: set_entry(m, "x", kind="state"),
     "entry 'x': unknown kind 'state'"),
    ("arena-over-budget", lambda m: m.update(arena_size=2**50),
     "model 'scale': arena (1125899906842624 bytes)"),
]


@pytest.mark.parametrize("name,edit,fragment", MANIFESTS,
                         ids=[c[0] for c in MANIFESTS])
def test_manifest(aot, files, tmp_path, name, edit, fragment):
    prefix = with_manifest(aot, tmp_path, edit)
    proc = run([RLX_EXEC, prefix, "--input", f"x={files / 'x3.npy'}",
                "--param", f"w={files / 'w.npy'}", "--memory-budget-mb", "1024",
                "--output-dir", tmp_path / "out"])
    path = None if name == "arena-over-budget" else prefix.with_suffix(".json")
    assert_refused(proc, path, fragment, tmp_path / "out")


def test_exec_input_wrong_shape(aot, files, tmp_path):
    proc = run([RLX_EXEC, aot, "--input", f"x={files / 'x.npy'}",
                "--param", f"w={files / 'w.npy'}", "--output-dir", tmp_path / "out"])
    assert proc.returncode == 0, proc.stderr  # x.npy is [1, 3, 4] too.
    bad = tmp_path / "x5.npy"
    bad.write_bytes(npy_f32((1, 5, 4)))
    proc = run([RLX_EXEC, aot, "--input", f"x={bad}",
                "--param", f"w={files / 'w.npy'}", "--output-dir", tmp_path / "out2"])
    assert_refused(proc, bad, "input 'x': expected f32[1, 3, 4], got f32[1, 5, 4]",
                   tmp_path / "out2")


#===----------------------------------------------------------------------===#
# .mlir: rlx-opt and rlx-run
#===----------------------------------------------------------------------===#

def test_mlir_syntax_error(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(\n")
    proc = run([RLX_OPT, bad])
    assert proc.returncode != 0
    assert f"{bad}:1:14: error: expected non-function type" in proc.stderr, \
        proc.stderr
    assert proc.stdout == ""


def test_mlir_verifier_error(tmp_path):
    bad = tmp_path / "bad.mlir"
    bad.write_text('func.func @f() {\n  %w = hir.param "" : tensor<4xf32>\n'
                   "  return\n}\n")
    proc = run([RLX_OPT, bad])
    assert proc.returncode != 0
    assert (f"{bad}:2:8: error: 'hir.param' op requires a non-empty parameter "
            "name") in proc.stderr, proc.stderr
    proc = run([RLX_RUN, bad, "--quiet", "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, "parsing failed", tmp_path / "out")
    assert "requires a non-empty parameter name" in proc.stderr


def test_mlir_non_tensor_argument(tmp_path):
    bad = tmp_path / "arg.mlir"
    bad.write_text("func.func @f(%n: i32, %x: tensor<?xf32>) -> tensor<?xf32> {\n"
                   "  return %x : tensor<?xf32>\n}\n")
    x = tmp_path / "x.npy"
    x.write_bytes(npy_f32((3,)))
    proc = run([RLX_RUN, bad, "--quiet", "--input", f"input1={x}",
                "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, "input 'input0' has the type i32; only ranked "
                   "tensors can be specialized", tmp_path / "out")


#===----------------------------------------------------------------------===#
# Files that are not regular files, headers that would take gigabytes
#===----------------------------------------------------------------------===#

# Reading a FIFO or /dev/zero never ends (opening a FIFO blocks until a writer
# comes): these cases must be refused at once, so they run under a short
# timeout instead of the catalogue's ten minutes.
QUICK = 120


def run_quick(cmd, env=None, unset=()):
    full_env = dict(os.environ)
    for name in ("RLX_MEMORY_BUDGET_MB",) + tuple(unset):
        full_env.pop(name, None)
    full_env.update(env or {})
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                          env=full_env, timeout=QUICK)


@pytest.fixture
def fifo(tmp_path):
    def make(name):
        path = tmp_path / name
        os.mkfifo(path)
        return path
    return make


def test_params_dev_zero(files, tmp_path):
    proc = run_quick([RLX_RUN, SCALE, "--quiet", "--input",
                      f"x={files / 'x.npy'}", "--params", "/dev/zero",
                      "--output-dir", tmp_path / "out"])
    assert_refused(proc, "/dev/zero", "cannot open: a character device, not a "
                   "regular file", tmp_path / "out")


def test_params_fifo(files, tmp_path, fifo):
    bad = fifo("w.safetensors")
    proc = run_quick([RLX_RUN, SCALE, "--quiet", "--input",
                      f"x={files / 'x.npy'}", "--params", bad,
                      "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, "cannot open: a FIFO, not a regular file",
                   tmp_path / "out")


def test_npy_input_fifo_and_directory(files, tmp_path, fifo):
    bad = fifo("x.npy")
    proc = run_quick([RLX_RUN, SCALE, "--quiet", "--input", f"x={bad}",
                      "--param", f"w={files / 'w.npy'}",
                      "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, "cannot open: a FIFO, not a regular file",
                   tmp_path / "out")
    d = tmp_path / "dir.npy"
    d.mkdir()
    proc = run_quick([RLX_RUN, SCALE, "--quiet", "--input", f"x={d}",
                      "--param", f"w={files / 'w.npy'}",
                      "--output-dir", tmp_path / "out"])
    assert_refused(proc, d, "cannot open: a directory, not a regular file",
                   tmp_path / "out")


def test_shard_index_fifo(files, tmp_path, fifo):
    index = fifo("model.safetensors.index.json")
    proc = run_quick([RLX_RUN, SCALE, "--quiet", "--input",
                      f"x={files / 'x.npy'}", "--params", tmp_path,
                      "--output-dir", tmp_path / "out"])
    assert_refused(proc, index, "cannot open: a FIFO, not a regular file",
                   tmp_path / "out")


def test_gguf_fifo(tmp_path, fifo):
    bad = fifo("model.gguf")
    proc = run_quick([RLX_RUN, "--model", bad, "--prompt-ids", "1,2",
                      "--quiet", "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, "cannot open: a FIFO, not a regular file",
                   tmp_path / "out")


def test_config_fifo(tmp_path, fifo):
    model = tmp_path / "model"
    model.mkdir()
    bad = fifo("model/config.json")
    proc = run_quick([RLX_RUN, "--model", model, "--prompt-ids", "1,2",
                      "--quiet", "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, "cannot open: a FIFO, not a regular file",
                   tmp_path / "out")


def test_profile_fifo(files, tmp_path, fifo):
    bad = fifo("p.rlx.toml")
    proc = run_quick([RLX_RUN, SCALE, "--quiet", "--input",
                      f"x={files / 'x.npy'}", "--param",
                      f"w={files / 'w.npy'}", "--profile", bad,
                      "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, "cannot read file: a FIFO, not a regular file",
                   tmp_path / "out")


def test_mlir_fifo(tmp_path, fifo):
    bad = fifo("model.mlir")
    proc = run_quick([RLX_RUN, bad, "--quiet", "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, "a FIFO, not a regular file", tmp_path / "out")


def tiny_tensor_header(count):
    """A header of `count` empty tensors: ~60 bytes each in the file, ~4 KiB
    each once llvm::json has parsed them."""
    entry = '{"dtype":"F32","shape":[0],"data_offsets":[0,0]}'
    return "{" + ",".join(f'"t{i}":{entry}' for i in range(count)) + "}"


HEADER_BOUNDS = [
    ("too-many-tensors", lambda: tiny_tensor_header(70000),
     "header: holds 70001 JSON objects: more than the 65536 tensors a file "
     "may hold"),
    ("too-many-metadata-entries",
     lambda: json.dumps({"__metadata__": {f"k{i}": "" for i in range(70000)}}),
     "header: '__metadata__' has 70000 entries, more than 65536"),
    ("too-many-elements",
     lambda: json.dumps({"w": {"dtype": "F32", "shape": [1] * 1200000,
                               "data_offsets": [0, 4]}}),
     "JSON members and elements, more than 1179648 (65536 tensors and 65536 "
     "metadata entries)"),
]


@pytest.mark.parametrize("name,header,fragment", HEADER_BOUNDS,
                         ids=[c[0] for c in HEADER_BOUNDS])
def test_safetensors_header_bounds(files, tmp_path, name, header, fragment):
    bad = tmp_path / f"{name}.safetensors"
    bad.write_bytes(formats.safetensors_raw(header()))
    proc = run_quick([RLX_RUN, SCALE, "--quiet", "--input",
                      f"x={files / 'x.npy'}", "--params", bad,
                      "--output-dir", tmp_path / "out"])
    assert_refused(proc, bad, fragment, tmp_path / "out")


def test_shard_index_too_many_entries(files, tmp_path):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {
        f"t{i}": "a.safetensors" for i in range(1100000)}}))
    proc = run_quick([RLX_RUN, SCALE, "--quiet", "--input",
                      f"x={files / 'x.npy'}", "--params", tmp_path,
                      "--output-dir", tmp_path / "out"])
    assert_refused(proc, index, "holds 2200000 JSON members and elements in 2 "
                   "objects; an index may hold at most 2098176 in 64 objects",
                   tmp_path / "out")


#===----------------------------------------------------------------------===#
# JIT event listeners: no files under $HOME unless asked for
#===----------------------------------------------------------------------===#

def test_jit_leaves_no_perf_dump(files, tmp_path):
    """LLVM's perf listener (on by default in MLIR's ExecutionEngine) wrote
    .debug/jit/llvm-IR-jit-*/jit-PID.dump under $JITDUMPDIR (else a home or
    temporary directory) on every run; it is now opt-in (RLX_JIT_PERF=1)."""
    dirs = {name: tmp_path / name for name in ("home", "tmp", "dumps")}
    for d in dirs.values():
        d.mkdir()
    env = {"HOME": str(dirs["home"]), "TMPDIR": str(dirs["tmp"]),
           "JITDUMPDIR": str(dirs["dumps"])}
    unset = ("RLX_JIT_PERF", "RLX_JIT_GDB")
    base = [RLX_RUN, SCALE, "--quiet", "--input", f"x={files / 'x.npy'}",
            "--param", f"w={files / 'w.npy'}"]
    proc = run_quick(base + ["--output-dir", tmp_path / "out"], env, unset)
    assert proc.returncode == 0, proc.stderr
    for d in dirs.values():
        assert list(d.rglob("*")) == [], d
    # Opting in writes the dump where the check above looks.
    proc = run_quick(base + ["--output-dir", tmp_path / "out2"],
                     dict(env, RLX_JIT_PERF="1"), unset)
    assert proc.returncode == 0, proc.stderr
    assert list((dirs["dumps"] / ".debug" / "jit").rglob("jit-*.dump")), \
        list(tmp_path.rglob("*"))


#===----------------------------------------------------------------------===#
# Weights holding NaN or infinities: loaded, with a warning naming the tensor
#===----------------------------------------------------------------------===#

DOWN = "model.layers.0.mlp.down_proj.weight"


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """make_tiny_models.py's LLaMA as safetensors + f32 GGUF, and as a q8_0
    GGUF."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    out = tmp_path_factory.mktemp("nonfinite")
    for name, gguf_type in (("llama", "f32"), ("llama-q8_0", "q8_0")):
        subprocess.run([sys.executable,
                        str(ROOT / "scripts" / "make_tiny_models.py"),
                        str(out), "--kind", "llama", "--name", name,
                        "--seed", "5", "--gguf", "--gguf-type", gguf_type],
                       check=True, capture_output=True,
                       env=dict(os.environ, HF_HUB_OFFLINE="1",
                                TRANSFORMERS_VERBOSITY="error"))
    return out


def poison_safetensors(path, name, values):
    """Overwrites the first f32 elements of tensor `name` with `values`."""
    data = bytearray(path.read_bytes())
    (size,) = struct.unpack("<Q", data[:8])
    entry = json.loads(data[8:8 + size])[name]
    assert entry["dtype"] == "F32", entry
    start = 8 + size + entry["data_offsets"][0]
    data[start:start + 4 * len(values)] = struct.pack(f"<{len(values)}f",
                                                      *values)
    path.write_bytes(bytes(data))


def copy_model(src, dst):
    """A copy of model directory or file `src` to poison."""
    import shutil
    (shutil.copytree if src.is_dir() else shutil.copyfile)(src, dst)
    return dst


def gguf_tensor(path, name):
    """The bytes of GGUF tensor `name`, mapped for writing."""
    import gguf
    reader = gguf.GGUFReader(str(path), "r+")
    (t,) = [t for t in reader.tensors if t.name == name]
    return t.data.reshape(-1).view("u1")


def warned(proc, tensor, path, count):
    """rlx-run ran and warned once, naming `tensor` as `path` names it. (The
    decode graphs load from the file stacked with the flow's synthesized
    parameters, and name that stack: "<path> + <synthesized by the flow>".)"""
    assert proc.returncode == 0, proc.stderr
    assert "tokens:" in proc.stdout, proc.stdout
    lines = [line for line in proc.stderr.splitlines() if "non-finite" in line]
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(
        f"rlx-run: warning: weight '{tensor}' in {path}"), lines[0]
    assert lines[0].endswith(
        f" has {count} non-finite values (NaN or Inf)"), lines[0]


@pytest.mark.parametrize("weights_as", ["f32", "stored"])
def test_nonfinite_safetensors_weight(tiny_models, tmp_path, weights_as):
    d = copy_model(tiny_models / "llama", tmp_path / "m")
    poison_safetensors(d / "model.safetensors", DOWN,
                       [float("nan"), 1.0, float("-inf")])
    proc = run([RLX_RUN, "--model", d, "--prompt-ids", "1,2", "--quiet",
                "--max-new-tokens", "2", "--weights-as", weights_as])
    warned(proc, DOWN, d / "model.safetensors", 2)


def test_finite_weights_give_no_warning(tiny_models, tmp_path):
    proc = run([RLX_RUN, "--model", tiny_models / "llama", "--prompt-ids",
                "1,2", "--quiet", "--max-new-tokens", "2"])
    assert proc.returncode == 0, proc.stderr
    assert "non-finite" not in proc.stderr, proc.stderr


@pytest.mark.parametrize("weights_as", ["f32", "stored"])
def test_nonfinite_gguf_weight(tiny_models, tmp_path, weights_as):
    path = copy_model(tiny_models / "llama.gguf", tmp_path / "m.gguf")
    data = gguf_tensor(path, "blk.0.ffn_down.weight")
    data[:8] = list(struct.pack("<2f", float("inf"), float("nan")))
    proc = run([RLX_RUN, "--model", path, "--prompt-ids", "1,2", "--quiet",
                "--max-new-tokens", "2", "--weights-as", weights_as])
    warned(proc, "blk.0.ffn_down.weight", path, 2)


@pytest.mark.parametrize("weights_as", ["f32", "stored"])
def test_nonfinite_gguf_block_scale(tiny_models, tmp_path, weights_as):
    """A q8_0 block whose f16 scale is infinite makes its 32 values
    non-finite (blk.0.attn_q.weight: rows permuted for llama.cpp, read
    through readStored/readF32)."""
    for tensor, name in (("blk.0.ffn_down.weight", "ffn-down"),
                         ("blk.0.attn_q.weight", "attn-q")):
        path = copy_model(tiny_models / "llama-q8_0.gguf",
                          tmp_path / f"{name}.gguf")
        data = gguf_tensor(path, tensor)
        data[34:36] = list(struct.pack("<H", 0x7c00))  # block 1's d
        proc = run([RLX_RUN, "--model", path, "--prompt-ids", "1,2",
                    "--quiet", "--max-new-tokens", "2", "--weights-as",
                    weights_as])
        warned(proc, tensor, path, 32)
