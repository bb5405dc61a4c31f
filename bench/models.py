#!/usr/bin/env python3
# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Whole models from GGUF files, RLX beside llama.cpp (rlx-bench --only
models runs this):

    models.py [--threads N] [--types f32,bf16,q8_0,q4_0,q4_K_M]
              [--prompts 128,512] [--decode 64] [--cache DIR] [--quick]
              [--read-bandwidth GBPS] [--json FILE]

Writes random-weight Llama-3.2-1B-shaped GGUFs (hidden 2048, 16 layers,
32/8 heads, ffn 8192, vocab 128256, tied embeddings; --quick: 2 layers,
vocab 32000) into --cache (default build/bench-models; never committed):
f32 first, bf16/f16/q8_0/q4_0 by gguf-py's quantizers, q4_K_M (and any other
llama.cpp file type) by llama.cpp's own quantizer through llama-cpp-python.

For each file and prompt length, one process each:
- RLX: `rlx-run --model FILE --weights-as stored` with RLX_NUM_THREADS=N,
  twice on a fresh compile cache (RLX_CACHE_DIR): cold, every graph
  compiled, then warm, every graph loaded from the cache. Prefill, decode
  and peak RSS are the warm run's; the time to first token (open, build,
  compile, load, prefill, as rlx-run prints it) is given for both;
- llama.cpp: llama-cpp-python with n_threads = n_threads_batch = N, the same
  file: load, prefill of the prompt in one batch, decode steps one token at
  a time (peak RSS of the process).

Prints a table with the ratios (RLX / llama.cpp for speeds, llama.cpp / RLX
for time and memory, so above 1 is RLX ahead) and, with --read-bandwidth,
decode against the memory bound (file bytes / bandwidth). The last line of
stdout is the JSON of every figure.
"""

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
BUILD = pathlib.Path(os.environ.get("RLX_BUILD_DIR", ROOT / "build"))

FULL = dict(hidden=2048, layers=16, heads=32, kv_heads=8, ffn=8192,
            vocab=128256)
QUICK = dict(hidden=2048, layers=2, heads=32, kv_heads=8, ffn=8192,
             vocab=32000)
GGUFPY_TYPES = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1"}
# llama.cpp's LLAMA_FTYPE_MOSTLY_* codes for the files its quantizer makes.
LLAMA_FTYPES = {"q4_K_M": 15, "q4_K_S": 14, "q5_K_M": 17, "q5_K_S": 16,
                "q6_K": 18, "q3_K_M": 12, "q2_K": 10}


def log(*args):
    print(*args, file=sys.stderr, flush=True)


#===----------------------------------------------------------------------===#
# The files
#===----------------------------------------------------------------------===#


def tensor_list(shape):
    """(GGUF name, numpy shape) of a tied LLaMA, file order."""
    h, f, v = shape["hidden"], shape["ffn"], shape["vocab"]
    hd = h // shape["heads"]
    kv = shape["kv_heads"] * hd
    out = [("token_embd.weight", (v, h))]
    for i in range(shape["layers"]):
        b = f"blk.{i}."
        out += [(b + "attn_norm.weight", (h,)), (b + "attn_q.weight", (h, h)),
                (b + "attn_k.weight", (kv, h)), (b + "attn_v.weight", (kv, h)),
                (b + "attn_output.weight", (h, h)),
                (b + "ffn_norm.weight", (h,)), (b + "ffn_gate.weight", (f, h)),
                (b + "ffn_up.weight", (f, h)), (b + "ffn_down.weight", (h, f))]
    out.append(("output_norm.weight", (h,)))
    return out


def values(name, shape, seed):
    import numpy as np
    rng = np.random.default_rng([seed, sum(map(ord, name)), len(name)])
    if len(shape) == 1:
        return (1.0 + 0.05 * rng.standard_normal(shape)).astype(np.float32)
    return (0.02 * rng.standard_normal(shape, dtype=np.float32))


def write_gguf_py(path, shape, type_name, seed=0):
    """A LLaMA GGUF written tensor by tensor (bounded memory), matrices in
    `type_name` (gguf-py's quantizers), norms f32."""
    import gguf
    import numpy as np
    from gguf import quants
    from gguf.constants import GGMLQuantizationType as T
    qtype = {"f32": T.F32, "f16": T.F16, "bf16": T.BF16, "q8_0": T.Q8_0,
             "q4_0": T.Q4_0, "q4_1": T.Q4_1, "q5_0": T.Q5_0,
             "q5_1": T.Q5_1}[type_name]
    tmp = path.with_suffix(".part")
    w = gguf.GGUFWriter(str(tmp), "llama")
    w.add_name(f"rlx-bench llama {type_name}")
    w.add_context_length(131072)
    w.add_embedding_length(shape["hidden"])
    w.add_block_count(shape["layers"])
    w.add_feed_forward_length(shape["ffn"])
    w.add_head_count(shape["heads"])
    w.add_head_count_kv(shape["kv_heads"])
    w.add_rope_freq_base(500000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_dimension_count(shape["hidden"] // shape["heads"])
    w.add_vocab_size(shape["vocab"])
    # A placeholder SentencePiece vocabulary: llama.cpp refuses a file
    # without one (the benchmark feeds token ids).
    vocab = shape["vocab"]
    w.add_tokenizer_model("llama")
    w.add_token_list(["<unk>", "<s>", "</s>"] +
                     [f"<t{i}>" for i in range(3, vocab)])
    w.add_token_scores([0.0] * vocab)
    w.add_token_types([2, 3, 3] + [1] * (vocab - 3))
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    tensors = tensor_list(shape)

    def stored(name, shp):
        a = values(name, shp, seed)
        if len(shp) == 1 or qtype == T.F32:
            return a, T.F32
        if qtype == T.F16:
            return a.astype(np.float16), T.F16
        return quants.quantize(a, qtype), qtype

    for name, shp in tensors:
        t = T.F32 if len(shp) == 1 else qtype
        elements, size = gguf.GGML_QUANT_SIZES[t]
        nbytes = int(np.prod(shp)) // elements * size
        if t in (T.F32, T.F16):
            w.add_tensor_info(name, shp, np.dtype(np.float32 if t == T.F32
                                                  else np.float16), nbytes)
        else:  # gguf-py takes the shape in bytes per row for raw types
            rows = (*shp[:-1], shp[-1] // elements * size)
            w.add_tensor_info(name, rows, np.dtype(np.uint8), nbytes,
                              raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, shp in tensors:
        data, _ = stored(name, shp)
        w.write_tensor_data(data)
    w.close()
    tmp.rename(path)


def quantize_llama_cpp(src, dst, type_name, threads):
    import llama_cpp
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = LLAMA_FTYPES[type_name]
    params.nthread = threads
    tmp = dst.with_suffix(".part")
    # llama.cpp logs to stdout, which carries this script's table.
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        rc = llama_cpp.llama_model_quantize(str(src).encode(),
                                            str(tmp).encode(), params)
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    if rc != 0:
        raise RuntimeError(f"llama_model_quantize({type_name}) returned {rc}")
    tmp.rename(dst)


def ensure_file(cache, shape, type_name, threads):
    tag = f"L{shape['layers']}-V{shape['vocab']}"
    path = cache / f"llama-{tag}-{type_name}.gguf"
    if path.exists():
        return path
    cache.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    if type_name in GGUFPY_TYPES:
        log(f"writing {path.name} (gguf-py)...")
        write_gguf_py(path, shape, type_name)
    elif type_name in LLAMA_FTYPES:
        src = ensure_file(cache, shape, "f32", threads)
        log(f"writing {path.name} (llama.cpp's quantizer)...")
        quantize_llama_cpp(src, path, type_name, threads)
    else:
        raise SystemExit(f"models.py: unknown type '{type_name}'")
    log(f"  {path.stat().st_size / 1e9:.2f} GB in {time.time() - t0:.0f} s")
    return path


#===----------------------------------------------------------------------===#
# Running
#===----------------------------------------------------------------------===#


def run_measured(cmd, env=None, timeout=1800):
    """(returncode, stdout, stderr, peak RSS bytes, wall seconds)."""
    t0 = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return -1, out, "timed out", 0, time.time() - t0
    # The --measure wrapper reports the command's own peak RSS (wait4).
    rss = 0
    m = re.search(r"peak_rss_bytes (\d+)", err)
    if m:
        rss = int(m.group(1))
    return proc.returncode, out, err, rss, time.time() - t0


def peak_rss_wrapper(cmd):
    """`cmd` run under this script's --measure mode, which reports the
    child's own peak RSS (wait4) on stderr."""
    return [sys.executable, __file__, "--measure", "--", *cmd]


def measure_child(cmd):
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    print(f"peak_rss_bytes {usage.ru_maxrss * 1024}", file=sys.stderr)
    code = os.waitstatus_to_exitcode(status)
    sys.exit(code if code >= 0 else 128 - code)


def prompt_ids(n, vocab):
    return [(7 + 131 * i) % vocab for i in range(n)]


def rlx_run(path, prompt, decode, threads, cache_dir):
    """One rlx-run process with its compile cache in `cache_dir`."""
    cmd = [str(BUILD / "bin" / "rlx-run"), "--model", str(path),
           "--prompt-ids", ",".join(map(str, prompt)),
           "--max-new-tokens", str(decode + 1), "--weights-as", "stored",
           "--max-context", str(len(prompt) + decode + 8)]
    env = dict(os.environ, RLX_NUM_THREADS=str(threads),
               RLX_CACHE_DIR=str(cache_dir))
    env.pop("RLX_NO_CACHE", None)
    rc, out, err, rss, wall = run_measured(peak_rss_wrapper(cmd), env)
    if rc != 0:
        return {"error": (err.strip().splitlines() or ["failed"])[-1]}
    m = re.search(r"prefill: (\d+) tokens in ([\d.]+) ms.*decode: (\d+) "
                  r"steps, ([\d.]+) tok/s; (\d+) graphs compiled \((\d+) "
                  r"from the compile cache\) in ([\d.]+) s; weights "
                  r"loaded in ([\d.]+) s \(([\d.]+) of [\d.]+ MiB mapped "
                  r"from the file\); first token after ([\d.]+) s", out)
    if not m:
        return {"error": "unreadable rlx-run output: " + out[-300:]}
    return {"prefill_tok_s": int(m.group(1)) / (float(m.group(2)) / 1e3),
            "decode_tok_s": float(m.group(4)),
            "graphs": int(m.group(5)), "graphs_cached": int(m.group(6)),
            "compile_s": float(m.group(7)), "load_s": float(m.group(8)),
            "mapped_mib": float(m.group(9)),
            "ttft_s": float(m.group(10)), "peak_rss_bytes": rss,
            "wall_s": wall}


def rlx_cold_warm(path, prompt, decode, threads):
    """rlx-run twice on one fresh compile cache: cold (every graph compiled)
    then warm (every graph from the cache). Speeds and memory are the warm
    run's; the cold run adds its time to first token and compile time."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="rlx-bench-cache-") as cache:
        cold = rlx_run(path, prompt, decode, threads, cache)
        if "error" in cold:
            return cold
        warm = rlx_run(path, prompt, decode, threads, cache)
    if "error" in warm:
        return warm
    warm["ttft_cold_s"] = cold["ttft_s"]
    warm["compile_cold_s"] = cold["compile_s"]
    warm["graphs_cold"] = cold["graphs"]
    return warm


def llama_child(path, n_prompt, decode, threads, vocab):
    """Runs in its own process: prints the JSON of one llama.cpp run."""
    import llama_cpp
    t0 = time.time()
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=n_prompt + decode + 8,
                          n_batch=max(n_prompt, 32), n_ubatch=max(n_prompt, 32),
                          n_threads=threads, n_threads_batch=threads,
                          verbose=False)
    load = time.time() - t0
    prompt = prompt_ids(n_prompt, vocab)
    t1 = time.time()
    llm.eval(prompt)
    prefill = time.time() - t1
    # Decode steps feed a fixed token: the work per step does not depend on
    # which (the logits are computed either way).
    t2 = time.time()
    for i in range(decode):
        llm.eval([prompt[i % n_prompt]])
    dec = time.time() - t2
    print(json.dumps({"load_s": load, "prefill_tok_s": n_prompt / prefill,
                      "decode_tok_s": decode / dec,
                      "ttft_s": time.time() - t0 - dec}))


def llama_run(path, n_prompt, decode, threads, vocab):
    cmd = [sys.executable, __file__, "--llama-child", str(path),
           "--prompts", str(n_prompt), "--decode", str(decode),
           "--threads", str(threads), "--vocab", str(vocab)]
    rc, out, err, rss, wall = run_measured(peak_rss_wrapper(cmd))
    if rc != 0:
        return {"error": (err.strip().splitlines() or ["failed"])[-1]}
    r = json.loads(out.strip().splitlines()[-1])
    r["peak_rss_bytes"] = rss
    r["wall_s"] = wall
    return r


#===----------------------------------------------------------------------===#
# Report
#===----------------------------------------------------------------------===#


def fmt(v, spec):
    return format(v, spec) if isinstance(v, (int, float)) else "-"


def ratio(a, b):
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b:
        return a / b
    return None


def print_table(results, bandwidth):
    cols = ["file", "GB", "T", "prefill tok/s rlx | llama | x",
            "decode tok/s rlx | llama | x",
            "TTFT s rlx cold | warm | llama | x cold | x warm",
            "peak RSS GB rlx | llama | x"]
    print(" | ".join(cols))
    for r in results:
        a, b = r.get("rlx", {}), r.get("llama.cpp", {})
        row = [r["file"], f"{r['file_bytes'] / 1e9:.2f}", str(r["prompt"])]
        for key, spec, invert in [("prefill_tok_s", ".1f", False),
                                  ("decode_tok_s", ".2f", False),
                                  ("ttft_s", ".2f", True),
                                  ("peak_rss_bytes", ".2f", True)]:
            x, y = a.get(key), b.get(key)
            if key == "ttft_s":
                c = a.get("ttft_cold_s")
                row.append(f"{fmt(c, spec)} | {fmt(x, spec)} | "
                           f"{fmt(y, spec)} | {fmt(ratio(y, c), '.2f')} | "
                           f"{fmt(ratio(y, x), '.2f')}")
                continue
            scale = 1e-9 if key == "peak_rss_bytes" else 1
            q = ratio(y, x) if invert else ratio(x, y)
            row.append(f"{fmt(x * scale if x else x, spec)} | "
                       f"{fmt(y * scale if y else y, spec)} | "
                       f"{fmt(q, '.2f')}")
        print(" | ".join(row))
        for who in ("rlx", "llama.cpp"):
            if "error" in r.get(who, {}):
                print(f"  {who}: {r[who]['error']}")
        if bandwidth and isinstance(a.get("decode_tok_s"), float):
            bound = r["file_bytes"] / (bandwidth * 1e9)
            print(f"  decode bound {1 / bound:.2f} tok/s (file / "
                  f"{bandwidth:.1f} GB/s): rlx at "
                  f"{bound * a['decode_tok_s']:.2f} of it")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--types", default="f32,bf16,q8_0,q4_0,q4_K_M")
    ap.add_argument("--prompts", default="128,512")
    ap.add_argument("--decode", type=int, default=64)
    ap.add_argument("--cache", default=str(BUILD / "bench-models"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--read-bandwidth", type=float, default=0)
    ap.add_argument("--json")
    ap.add_argument("--peers", default="llama.cpp",
                    help="llama.cpp, or empty for RLX alone")
    ap.add_argument("--llama-child", help=argparse.SUPPRESS)
    ap.add_argument("--vocab", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        measure_child(args.rest)
    if args.llama_child:
        llama_child(args.llama_child, int(args.prompts), args.decode,
                    args.threads, args.vocab)
        return
    shape = QUICK if args.quick else FULL
    prompts = [int(p) for p in args.prompts.split(",") if p]
    decode = 8 if args.quick else args.decode
    have_llama = False
    if "llama.cpp" in args.peers:
        try:
            import llama_cpp  # noqa: F401
            have_llama = True
        except ImportError:
            log("models.py: llama-cpp-python is not installed "
                "(RLX_SETUP_PEERS=1 scripts/setup.sh): RLX alone")
    results = []
    for type_name in [t for t in args.types.split(",") if t]:
        if type_name in LLAMA_FTYPES and not have_llama:
            results.append({"file": type_name, "file_bytes": 0, "prompt": 0,
                            "rlx": {"error": "needs llama.cpp's quantizer"}})
            continue
        path = ensure_file(pathlib.Path(args.cache), shape, type_name,
                           args.threads)
        # Read once, so that every run finds the file in the page cache
        # (the first one would otherwise also time the disk).
        with open(path, "rb") as f:
            while f.read(1 << 24):
                pass
        for n in prompts:
            log(f"{path.name}, prompt {n}: rlx...")
            r = {"file": type_name, "path": str(path),
                 "file_bytes": path.stat().st_size, "prompt": n,
                 "rlx": rlx_cold_warm(path, prompt_ids(n, shape["vocab"]),
                                      decode, args.threads)}
            if have_llama:
                log(f"{path.name}, prompt {n}: llama.cpp...")
                r["llama.cpp"] = llama_run(path, n, decode, args.threads,
                                           shape["vocab"])
            results.append(r)
    print_table(results, args.read_bandwidth)
    report = {"threads": args.threads, "shape": shape, "decode": decode,
              "read_bandwidth_gbps": args.read_bandwidth, "results": results}
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(report, indent=1))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
