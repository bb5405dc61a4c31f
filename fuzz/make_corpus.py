#!/usr/bin/env python3
# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Writes the seed corpus of every fuzz target: valid small files plus each
bad case of the catalogue (fuzz/formats.py), one directory per target.

    make_corpus.py OUT_DIR [--source-dir RLX_SOURCE_DIR]

OUT_DIR/{safetensors,gguf,npy,profile,manifest,config,mlir}/<case>. The
profile and mlir seeds come from the source tree (examples/, test/); the
mlir seeds (those of rlx-fuzz-mlir and rlx-fuzz-passes) also hold valid
random programs of fuzz/difffuzz.py when NumPy is there.
"""

import argparse
import base64
import json
import os
import pathlib
import shutil
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import formats  # noqa: E402

MAX_MLIR_SEED = 8192


def write(d, name, data):
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def manifests():
    ok = {"entry": "main", "arena_size": 128, "param_size": 64, "alignment": 64,
          "entries": [
              {"kind": "input", "name": "tokens", "offset": 0, "dtype": "i32",
               "shape": [1, 4], "index_bound": 16},
              {"kind": "input", "name": "x", "offset": 64, "dtype": "f32",
               "shape": [2, 2]},
              {"kind": "param", "name": "w", "offset": 0, "dtype": "f32",
               "shape": [4]},
              {"kind": "param", "name": "qkv", "offset": 16, "dtype": "f32",
               "shape": [3, 2], "sources": ["q", "k", "v"],
               "source_sizes": [1, 1, 1], "concat_axis": 0},
              {"kind": "output", "name": "y", "offset": 80, "dtype": "f32",
               "shape": [2, 2]}]}
    yield "valid", ok
    yield "empty", {"entry": "f", "arena_size": 0, "param_size": 0, "entries": []}

    def edit(fn):
        m = json.loads(json.dumps(ok))
        fn(m)
        return m
    yield "offset-past-end", edit(lambda m: m["entries"][1].update(offset=120))
    yield "offset-overflow", edit(lambda m: m["entries"][1].update(
        offset=2**63 - 8))
    yield "shape-overflow", edit(lambda m: m["entries"][1].update(
        shape=[2**32, 2**32, 4]))
    yield "dtype-quantized", edit(lambda m: m["entries"][1].update(dtype="q8_0"))
    yield "dtype-unknown", edit(lambda m: m["entries"][1].update(dtype="f8"))
    yield "kind-unknown", edit(lambda m: m["entries"][1].update(kind="state"))
    yield "source-sizes-negative", edit(lambda m: m["entries"][3].update(
        source_sizes=[2**40 + 2, -1, 1]))
    yield "source-sizes-zero", edit(lambda m: m["entries"][3].update(
        shape=[0, 2], source_sizes=[0, 0, 0]))
    yield "source-sizes-overflow", edit(lambda m: m["entries"][3].update(
        source_sizes=[2**62, 2**62, 2**62]))
    yield "sources-not-strings", edit(lambda m: m["entries"][3].update(
        sources=["q", 1, "v"]))
    yield "concat-axis-out-of-range", edit(lambda m: m["entries"][3].update(
        concat_axis=2))
    yield "duplicate-input", edit(lambda m: m["entries"].append(
        dict(m["entries"][1])))
    yield "arena-huge", edit(lambda m: m.update(arena_size=2**62))
    yield "index-bound-zero", edit(lambda m: m["entries"][0].update(index_bound=0))
    yield "alignment-zero", edit(lambda m: m.update(alignment=0))


BAD_PROFILES = {
    "wrong-types": '[fusion]\npolicy = 1\nskip = "yes"\n[backend.cpu]\n'
                   'threads = "four"\n',
    "out-of-range": "[backend.spirv]\nworkgroup_size = 48\n[backend.cpu]\n"
                    "threads = -1\n",
    "unknown-keys": "[fusion]\npolcy = \"direct\"\n[nonsense]\nx = 1\n",
    "not-a-table": "fusion = 3\nbackend = [1, 2]\n",
    "syntax": "[fusion\npolicy = \"direct\"\n",
    "disable-repeats": '[fusion]\ndisable = ["swiglu", "swiglu", 3, "nope"]\n',
    "deep-arrays": "x = " + "[" * 300 + "]" * 300 + "\n",
}


# Inputs that crashed a target once (scripts/fuzz.sh), kept as seeds so that
# every replay runs them again: target -> {name: base64}.
CRASHERS = {
    "npy": {
        # parseShape: shape digits running to the end of the header.
        "crash-shape-digits-to-end":
            "k05VTVBZAQB2AHsnZGVzY3InOiAnPGk0YWxzICgyLCksIH3/////////ICAgJywg"
            "J2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDAsICAgICAgICAgICAg"
            "ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAzMzMzMzMgICAgICAgICAgICAg"
            "ICAgCgEAAAACAAAAAwAAAA==",
    },
    "config": {
        # A gemma2 config with 2e17 layers: one bool per layer (a timeout).
        "timeout-gemma2-layers":
            "ewogIm1vZGVsX3R5cGUiOiAiZ2VtbWEyIiwKICJ2b2NhYl9zaXplIjogMTYsCiAi"
            "aGlkZGVuX3NpemUiOiAxLAogImludGVybWVkaWF0ZV9zaXplIjogMjQsCiAibnVt"
            "X2hpZGRlbl9sYXllcnMiOjIyMjIyMjIyMjIyMjIyMTgzOSwKICJudW1fYXR0ZW50"
            "aW9uX2hlYWRzIjogMiwgIm51bTxfa3lwZXMiOiBbCiAgIiJdCn0=",
    },
    "mlir": {
        # MLIR's lexer reads past a text without a terminating NUL (the
        # harness now parses a terminated copy); it crashed only when the
        # byte after libFuzzer's buffer was not 0.
        "crash-unterminated-text":
            "CgovLyBDSEVDSy1MQUJFTDogZnVuYy5mdW5jIEBuZWdhdGl2ZV91bnN1cHBvcnRl"
            "ZF9hY3RpdmF0aW9uCi8vIENIRUNLLU5PVDogbWlyLmZ1c2VkX21hdG11bAovLyBD"
            "SEVDSzogbWlyLm1hdG11bAovLyBDSEVDSzogbWlyLmV4cApmdW5jLmZ1bmMgQG5l"
            "Z2F0aXZlX3Vuc3VwcG9ydGVkX2FjdGl2YXRpb24oJXg6IHRlbnNvcjw0eDE2eGYz"
            "Mj4sICV3OiB0ZW5zb3I8MTZ4MTZ4ZjMyPikgLT4gdGVuc29yPDR4MTZ4ZjMyPiB7"
            "CiAgJTAgPSBtaXIubWF0bXVsICV4LCAldyB7dHJhbnNwb3NlX3Joc30gOiAodGVu"
            "c29yPDR4MTZ4ZjMyPiwgdGVuc29yPDE2eDE2eGYzMj4pIC0+IHRlbnNvcjw0eDE2"
            "eGYzMj4KICAlMSA9IG1pci5leHAgJTAgOiAodGVuc29yPDR4MTZ4ZjMyPikgLT4g"
            "dGVuc29yPDR4MTZ4ZjMyPgogIHJldHVybiAlMSA6IHRlbnNvcjw0eDE2eGYzMj4K"
            "YWxs",
    },
    "profile": {
        # toml++ parse_key precondition: "[" then a NUL.
        "crash-table-header-nul": "W2Z1c2lvbl0KcG9sY3kgPSAiZGlyZWN0IgpbACxuc2Vuc2VdCnggPSAxCmA=",
        # toml++ whitespace table: U+FEF7 at the start of a line.
        "crash-unicode-whitespace": "77u3aQpiYWNrZW5kID0gWzEsIDJdGg==",
    },
}


def mlir_seeds(src):
    """Each `// -----` piece of the lit tests' .mlir files, and the examples."""
    files = sorted((src / "test").rglob("*.mlir")) + sorted(
        (src / "examples").rglob("*.mlir"))
    for f in files:
        text = f.read_text(errors="replace")
        lines = [ln for ln in text.splitlines()
                 if not ln.lstrip().startswith("// RUN")]
        pieces = "\n".join(lines).split("// -----")
        rel = str(f.relative_to(src)).replace("/", "_")
        for i, piece in enumerate(pieces):
            if piece.strip() and len(piece.encode()) <= MAX_MLIR_SEED:
                yield f"{rel}.{i}.mlir", piece


DIFFFUZZ_SEEDS = 48


def difffuzz_seeds():
    """Valid random MIR and HIR functions (fuzz/difffuzz.py), if NumPy is
    installed: seeds that get past verification into the passes."""
    try:
        import difffuzz
    except ImportError:
        return
    for seed in range(DIFFFUZZ_SEEDS):
        text, _, _ = difffuzz.generate(seed)
        if len(text.encode()) <= MAX_MLIR_SEED:
            yield f"difffuzz-{seed}.mlir", text


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out")
    ap.add_argument("--source-dir", default=str(HERE.parent))
    args = ap.parse_args()
    out, src = pathlib.Path(args.out), pathlib.Path(args.source_dir)
    for sub in ["safetensors", "gguf", "npy", "profile", "manifest", "config",
                "mlir"]:
        shutil.rmtree(out / sub, ignore_errors=True)

    for name, data in formats.valid_safetensors():
        write(out / "safetensors", f"valid-{name}", data)
    for name, data, _ in formats.bad_safetensors():
        write(out / "safetensors", f"bad-{name}", data)
    for name, data in formats.valid_gguf():
        write(out / "gguf", f"valid-{name}", data)
    for name, data, _ in list(formats.bad_gguf()) + list(formats.bad_llama_gguf()):
        write(out / "gguf", f"bad-{name}", data)
    for name, data in formats.valid_npy():
        write(out / "npy", f"valid-{name}", data)
    for name, data, _ in formats.bad_npy():
        write(out / "npy", f"bad-{name}", data)
    for f in sorted((src / "examples" / "profiles").glob("*.toml")):
        write(out / "profile", f"valid-{f.name}", f.read_bytes())
    for f in sorted((src / "test").rglob("*.toml")):
        write(out / "profile", "test-" + str(f.relative_to(src)).replace("/", "_"),
              f.read_bytes())
    for name, text in BAD_PROFILES.items():
        write(out / "profile", f"bad-{name}.toml", text)
    for name, m in manifests():
        write(out / "manifest", f"{name}.json", json.dumps(m, indent=1))
    for name, c in formats.valid_configs():
        write(out / "config", f"valid-{name}.json", json.dumps(c, indent=1))
    for name, text, _ in formats.bad_configs():
        write(out / "config", f"bad-{name}.json", text)
    for name, text in mlir_seeds(src):
        write(out / "mlir", name, text)
    for name, text in difffuzz_seeds():
        write(out / "mlir", name, text)
    for target, cases in CRASHERS.items():
        for name, b64 in cases.items():
            write(out / target, name, base64.b64decode(b64))
    counts = {d.name: len(list(d.iterdir())) for d in sorted(out.iterdir())
              if d.is_dir()}
    print("make_corpus:", ", ".join(f"{k} {v}" for k, v in counts.items()))


if __name__ == "__main__":
    main()
