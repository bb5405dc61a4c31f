#!/usr/bin/env python3
# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The peers rlx-bench compares RLX with, one per process:

    peers.py --peer torch|ort|iree [--threads N] [--reps N] [--seq T]
             [--llama H,HEADS,KV,HD,INTER] [--bert H,HEADS,INTER]
    peers.py --peer torch --moe H,INTER,EXPERTS,K [--seq T]
    peers.py --peer torch --vision DIR,H,LAYERS,HEADS,IMAGE,PATCH
    peers.py --peer torch --flux DIR,HEADS,HEAD_DIM,DOUBLE,SINGLE,IMAGE_TOKENS,TEXT_TOKENS

Each peer times the same three cases as rlx-bench, in f32 with random
weights: a LLaMA decoder layer over T tokens (prefill), a decode step of that
layer over a KV cache of T positions, and a BERT encoder layer over T tokens.

- torch: PyTorch eager (the modules below, as transformers writes them:
  RMSNorm, RoPE, GQA through repeat_kv, scaled_dot_product_attention,
  SwiGLU), at its best thread setting (1 or N threads, both reported).
- ort: ONNX Runtime on an ONNX export of the same modules, N intra-op
  threads, all graph optimizations.
- iree: IREE (iree-base-compiler + iree-base-runtime) compiled from the same
  ONNX export (iree-import-onnx) for llvm-cpu with the host's CPU features,
  run on the local-task driver with N workers.

Progress goes to stderr; the last line of stdout is a JSON object with one
entry per case: timing statistics in milliseconds, or {"error": why}.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import traceback


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def summarize(times):
    t = sorted(times)

    def q(p):
        pos = p * (len(t) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(t) - 1)
        return t[lo] + (t[hi] - t[lo]) * (pos - lo)

    med = q(0.5)
    return {"median_ms": med * 1e3, "p10_ms": q(0.1) * 1e3,
            "p90_ms": q(0.9) * 1e3, "min_ms": t[0] * 1e3, "runs": len(t),
            "spread_pct": 100 * (q(0.9) - q(0.1)) / med if med else 0}


def time_fn(fn, warmup, reps, budget=60.0):
    for _ in range(warmup):
        fn()
    times = []
    start = time.perf_counter()
    for _ in range(reps):
        a = time.perf_counter()
        fn()
        times.append(time.perf_counter() - a)
        if len(times) >= 3 and time.perf_counter() - start > budget:
            break
    return summarize(times)


# ---------------------------------------------------------------------------
# The layers, in PyTorch
# ---------------------------------------------------------------------------

def build_modules(torch, args):
    nn = torch.nn
    F = torch.nn.functional
    h, heads, kv, hd, inter = args.llama
    bh, bheads, binter = args.bert

    class RMSNorm(nn.Module):
        def __init__(self, n, eps=1e-5):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))
            self.eps = eps

        def forward(self, x):
            var = x.pow(2).mean(-1, keepdim=True)
            return self.weight * (x * torch.rsqrt(var + self.eps))

    def rotate_half(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    def repeat_kv(x, n):
        if n == 1:
            return x
        b, k, t, d = x.shape
        return x[:, :, None, :, :].expand(b, k, n, t, d).reshape(b, k * n, t, d)

    class LlamaLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.input_layernorm = RMSNorm(h)
            self.q_proj = nn.Linear(h, heads * hd, bias=False)
            self.k_proj = nn.Linear(h, kv * hd, bias=False)
            self.v_proj = nn.Linear(h, kv * hd, bias=False)
            self.o_proj = nn.Linear(heads * hd, h, bias=False)
            self.post_attention_layernorm = RMSNorm(h)
            self.gate_proj = nn.Linear(h, inter, bias=False)
            self.up_proj = nn.Linear(h, inter, bias=False)
            self.down_proj = nn.Linear(inter, h, bias=False)

        def attend(self, x, cos, sin, past_k=None, past_v=None, causal=False):
            b, t, _ = x.shape
            r = x
            x = self.input_layernorm(x)
            q = self.q_proj(x).view(b, t, heads, hd).transpose(1, 2)
            k = self.k_proj(x).view(b, t, kv, hd).transpose(1, 2)
            v = self.v_proj(x).view(b, t, kv, hd).transpose(1, 2)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            if past_k is not None:
                k = torch.cat([past_k, k], dim=2)
                v = torch.cat([past_v, v], dim=2)
            a = F.scaled_dot_product_attention(
                q, repeat_kv(k, heads // kv), repeat_kv(v, heads // kv),
                is_causal=causal)
            a = a.transpose(1, 2).reshape(b, t, heads * hd)
            x = r + self.o_proj(a)
            y = self.post_attention_layernorm(x)
            x = x + self.down_proj(F.silu(self.gate_proj(y)) * self.up_proj(y))
            return x, k, v

    class LlamaPrefill(LlamaLayer):
        def forward(self, x, cos, sin):
            return self.attend(x, cos, sin, causal=True)[0]

    class LlamaDecode(LlamaLayer):
        def forward(self, x, cos, sin, past_k, past_v):
            return self.attend(x, cos, sin, past_k, past_v)

    class BertLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.q = nn.Linear(bh, bh)
            self.k = nn.Linear(bh, bh)
            self.v = nn.Linear(bh, bh)
            self.o = nn.Linear(bh, bh)
            self.ln1 = nn.LayerNorm(bh, eps=1e-12)
            self.inter = nn.Linear(bh, binter)
            self.out = nn.Linear(binter, bh)
            self.ln2 = nn.LayerNorm(bh, eps=1e-12)

        def forward(self, x):
            b, t, _ = x.shape
            d = bh // bheads

            def split(y):
                return y.view(b, t, bheads, d).transpose(1, 2)

            a = F.scaled_dot_product_attention(split(self.q(x)), split(self.k(x)),
                                               split(self.v(x)))
            a = a.transpose(1, 2).reshape(b, t, bh)
            x = self.ln1(x + self.o(a))
            return self.ln2(x + self.out(F.gelu(self.inter(x))))

    return LlamaPrefill, LlamaDecode, BertLayer


def init_random(torch, module):
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "norm" in name or name.startswith("ln"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.02 * torch.randn(p.shape, generator=gen))
    return module.eval()


def rope(torch, positions, hd, theta=500000.0):
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    freqs = positions[:, None].float() * inv[None, :]
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos()[None, None], emb.sin()[None, None]


def cases(torch, args):
    """(name, module, example inputs as a tuple, input names, output names)"""
    LlamaPrefill, LlamaDecode, BertLayer = build_modules(torch, args)
    h, heads, kv, hd, inter = args.llama
    t = args.seq
    gen = torch.Generator().manual_seed(1)
    out = []
    cos, sin = rope(torch, torch.arange(t), hd)
    out.append(("llama_prefill", init_random(torch, LlamaPrefill()),
                (torch.randn(1, t, h, generator=gen), cos, sin),
                ["x", "cos", "sin"], ["out"]))
    cos1, sin1 = rope(torch, torch.tensor([t]), hd)
    out.append(("llama_decode", init_random(torch, LlamaDecode()),
                (torch.randn(1, 1, h, generator=gen), cos1, sin1,
                 torch.randn(1, kv, t, hd, generator=gen),
                 torch.randn(1, kv, t, hd, generator=gen)),
                ["x", "cos", "sin", "past_k", "past_v"], ["out", "k", "v"]))
    out.append(("bert", init_random(torch, BertLayer()),
                (torch.randn(1, t, args.bert[0], generator=gen),),
                ["x"], ["out"]))
    return out


def reps_for(name, args):
    return args.reps * (3 if name == "llama_decode" else 1)


# ---------------------------------------------------------------------------
# Peers
# ---------------------------------------------------------------------------

def torch_best(torch, name, fn, reps, threads, note=""):
    """`fn` timed under 1 and `threads` torch threads: the faster one's
    statistics, with both medians in the note."""
    per = {}
    for n in sorted({1, threads}):
        torch.set_num_threads(n)
        with torch.inference_mode():
            per[n] = time_fn(fn, 2, reps)
        log(f"torch {name} threads={n}: {per[n]['median_ms']:.2f} ms")
    n = min(per, key=lambda k: per[k]["median_ms"])
    stats = dict(per[n])
    stats["note"] = ", ".join(f"{k} thr {v['median_ms']:.1f} ms"
                              for k, v in sorted(per.items())) + \
        f"; best {n}" + note
    return stats


def run_torch(args):
    import torch
    result = {}
    for name, module, inputs, _, _ in cases(torch, args):
        result[name] = torch_best(torch, name, lambda: module(*inputs),
                                  reps_for(name, args), args.threads)
    result["label"] = f"pytorch {torch.__version__} eager"
    return result


def run_torch_moe(args):
    """transformers' MixtralSparseMoeBlock (hidden, expert intermediate,
    experts, top-k as --moe gives them), prefill over --seq tokens and one
    decode token, at its best thread setting."""
    import torch
    import transformers
    h, inter, experts, k = args.moe
    cfg = transformers.MixtralConfig(hidden_size=h, intermediate_size=inter,
                                     num_local_experts=experts,
                                     num_experts_per_tok=k)
    torch.manual_seed(0)
    block = transformers.models.mixtral.modeling_mixtral.MixtralSparseMoeBlock(
        cfg).eval()
    with torch.no_grad():
        for p in block.parameters():
            p.normal_(0, 0.02)
    gen = torch.Generator().manual_seed(1)
    result = {}
    for name, t in (("moe_prefill", args.seq), ("moe_decode", 1)):
        x = torch.randn(1, t, h, generator=gen)
        result[name] = torch_best(
            torch, name, lambda: block(x), args.reps * (3 if t == 1 else 1),
            args.threads, f"; transformers {transformers.__version__}")
    result["label"] = f"pytorch {torch.__version__} eager"
    return result


def run_torch_vision(args):
    """transformers' Dinov2Model (hidden, layers, heads, image and patch size
    as --vision gives them, MLP ratio 4) on one image; its random weights are
    saved to DIR (once) for rlx-bench to run the same checkpoint."""
    import torch
    import transformers
    path, (h, layers, heads, image, patch) = args.vision[0], args.vision[1:]
    cfg = transformers.Dinov2Config(hidden_size=h, num_hidden_layers=layers,
                                    num_attention_heads=heads,
                                    image_size=image, patch_size=patch)
    torch.manual_seed(0)
    model = transformers.Dinov2Model(cfg).eval()
    if not os.path.exists(os.path.join(path, "config.json")):
        tmp = path + ".tmp"
        model.save_pretrained(tmp)
        os.replace(tmp, path)
    x = torch.randn(1, 3, image, image, generator=torch.Generator().manual_seed(1))
    result = {"vision": torch_best(
        torch, "vision", lambda: model(pixel_values=x), args.reps,
        args.threads, f"; transformers {transformers.__version__}")}
    result["label"] = f"pytorch {torch.__version__} eager"
    return result


def flux_inputs(torch, ni, nt, in_ch, joint, pooled):
    """The FLUX transformer's inputs for rlx-bench and the peer: random
    latents and text, integer ids of a square latent grid."""
    g = torch.Generator().manual_seed(1)
    side = int(round(ni ** 0.5))
    img_ids = torch.zeros(ni, 3)
    img_ids[:, 1] = torch.arange(ni) // side
    img_ids[:, 2] = torch.arange(ni) % side
    return dict(hidden_states=torch.randn(1, ni, in_ch, generator=g),
                encoder_hidden_states=torch.randn(1, nt, joint, generator=g),
                pooled_projections=torch.randn(1, pooled, generator=g),
                timestep=torch.tensor([0.5]), img_ids=img_ids,
                txt_ids=torch.zeros(nt, 3))


def run_torch_flux(args):
    """diffusers' FluxTransformer2DModel (heads, head dim, double and single
    blocks, image and text tokens as --flux gives them; 64 latent channels,
    joint and pooled dims the model width), one denoising step; its random
    weights are saved to DIR (once) for rlx-bench."""
    import diffusers
    import torch
    path, (heads, hd, double, single, ni, nt) = args.flux[0], args.flux[1:]
    d = heads * hd
    axes = [hd // 8, (hd - hd // 8) // 2, hd - hd // 8 - (hd - hd // 8) // 2]
    axes = [a - a % 2 for a in axes]
    axes[0] += hd - sum(axes)
    torch.manual_seed(0)
    model = diffusers.FluxTransformer2DModel(
        patch_size=1, in_channels=64, num_layers=double,
        num_single_layers=single, attention_head_dim=hd,
        num_attention_heads=heads, joint_attention_dim=d,
        pooled_projection_dim=d, axes_dims_rope=tuple(axes)).eval()
    if not os.path.exists(os.path.join(path, "config.json")):
        tmp = path + ".tmp"
        model.save_pretrained(tmp)
        os.replace(tmp, path)
    x = flux_inputs(torch, ni, nt, 64, d, d)
    result = {"flux": torch_best(
        torch, "flux", lambda: model(**x), args.reps, args.threads,
        f"; diffusers {diffusers.__version__}")}
    result["label"] = f"pytorch {torch.__version__} eager"
    return result


def export_onnx(torch, name, module, inputs, in_names, out_names, path):
    if os.path.exists(path):
        return path
    log(f"exporting {name} to {path}")
    tmp = path + ".tmp"
    with torch.no_grad():
        torch.onnx.export(module, inputs, tmp, input_names=in_names,
                          output_names=out_names, opset_version=17,
                          dynamo=False)
    os.replace(tmp, path)
    return path


def cache_dir(args):
    h, heads, kv, hd, inter = args.llama
    key = f"l{h}-{heads}-{kv}-{hd}-{inter}-b{'-'.join(map(str, args.bert))}-t{args.seq}"
    d = os.path.join(args.cache, key)
    os.makedirs(d, exist_ok=True)
    return d


def run_ort(args):
    import numpy as np  # noqa: F401
    import onnxruntime as ort
    import torch
    result = {"label": f"onnxruntime {ort.__version__}"}
    d = cache_dir(args)
    for name, module, inputs, in_names, out_names in cases(torch, args):
        try:
            path = export_onnx(torch, name, module, inputs, in_names, out_names,
                               os.path.join(d, name + ".onnx"))
            so = ort.SessionOptions()
            so.intra_op_num_threads = args.threads
            so.inter_op_num_threads = 1
            so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            sess = ort.InferenceSession(path, so,
                                        providers=["CPUExecutionProvider"])
            feeds = {n: x.numpy() for n, x in zip(in_names, inputs)}
            result[name] = time_fn(lambda: sess.run(None, feeds), 2,
                                   reps_for(name, args))
            result[name]["note"] = f"{args.threads} intra-op threads"
            log(f"ort {name}: {result[name]['median_ms']:.2f} ms")
        except Exception as e:  # noqa: BLE001
            log(traceback.format_exc())
            result[name] = {"error": f"{type(e).__name__}: {e}"[:300]}
    return result


def run_iree(args):
    import subprocess
    import iree.compiler as ireec
    import iree.runtime as ireert
    import torch
    try:
        from importlib.metadata import version as dist_version
        version = dist_version("iree-base-compiler")
    except Exception:  # noqa: BLE001
        version = "?"
    result = {"label": f"iree {version} llvm-cpu host"}
    try:
        ireert.flags.parse_flags(f"--task_topology_max_group_count={args.threads}")
    except Exception as e:  # noqa: BLE001
        log(f"iree: cannot set the worker count: {e}")
    d = cache_dir(args)
    importer = os.path.join(os.path.dirname(sys.executable), "iree-import-onnx")
    for name, module, inputs, in_names, out_names in cases(torch, args):
        try:
            onnx_path = export_onnx(torch, name, module, inputs, in_names,
                                    out_names, os.path.join(d, name + ".onnx"))
            mlir_path = os.path.join(d, name + ".iree.mlir")
            vmfb_path = os.path.join(d, name + ".vmfb")
            if not os.path.exists(vmfb_path):
                if not os.path.exists(mlir_path):
                    log(f"iree: importing {onnx_path}")
                    cmd = [importer] if os.path.exists(importer) else \
                        [sys.executable, "-m", "iree.compiler.tools.import_onnx"]
                    subprocess.run(cmd + [onnx_path, "-o", mlir_path + ".tmp"],
                                   check=True, capture_output=True, text=True)
                    os.replace(mlir_path + ".tmp", mlir_path)
                log(f"iree: compiling {mlir_path}")
                ireec.compile_file(
                    mlir_path, output_file=vmfb_path + ".tmp",
                    target_backends=["llvm-cpu"],
                    extra_args=["--iree-llvmcpu-target-cpu=host",
                                "--iree-input-type=onnx"])
                os.replace(vmfb_path + ".tmp", vmfb_path)
            config = ireert.Config("local-task")
            with open(vmfb_path, "rb") as f:
                vm_module = ireert.VmModule.copy_buffer(config.vm_instance,
                                                        f.read())
            ctx = ireert.SystemContext(config=config)
            ctx.add_vm_module(vm_module)
            fn = ctx.modules[vm_module.name]["main_graph"]
            feeds = [x.numpy() for x in inputs]

            def call():
                out = fn(*feeds)
                if isinstance(out, (list, tuple)):
                    for o in out:
                        o.to_host()
                else:
                    out.to_host()

            result[name] = time_fn(call, 2, reps_for(name, args))
            result[name]["note"] = f"local-task, {args.threads} workers"
            log(f"iree {name}: {result[name]['median_ms']:.2f} ms")
        except subprocess.CalledProcessError as e:
            result[name] = {"error": f"iree-import-onnx failed: "
                                     f"{(e.stderr or '').strip()[-300:]}"}
        except Exception as e:  # noqa: BLE001
            log(traceback.format_exc())
            result[name] = {"error": f"{type(e).__name__}: {e}"[:300]}
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--peer", required=True, choices=["torch", "ort", "iree"])
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--llama", default="2048,32,8,64,8192")
    p.add_argument("--bert", default="768,12,3072")
    p.add_argument("--moe", default="",
                   help="H,INTER,EXPERTS,K: time transformers' Mixtral MoE "
                        "block instead (torch only)")
    p.add_argument("--vision", default="",
                   help="DIR,H,LAYERS,HEADS,IMAGE,PATCH: time transformers' "
                        "Dinov2Model instead, saving its weights to DIR "
                        "(torch only)")
    p.add_argument("--flux", default="",
                   help="DIR,HEADS,HEAD_DIM,DOUBLE,SINGLE,IMAGE_TOKENS,"
                        "TEXT_TOKENS: time diffusers' FluxTransformer2DModel "
                        "instead, saving its weights to DIR (torch only)")
    p.add_argument("--cache", default=os.path.join(tempfile.gettempdir(),
                                                   "rlx-bench-peers"))
    args = p.parse_args()
    args.llama = [int(x) for x in args.llama.split(",")]
    args.bert = [int(x) for x in args.bert.split(",")]
    run = {"torch": run_torch, "ort": run_ort, "iree": run_iree}[args.peer]
    if args.moe:
        args.moe = [int(x) for x in args.moe.split(",")]
        if args.peer != "torch":
            p.error("--moe is measured with --peer torch only")
        run = run_torch_moe
    if args.vision:
        parts = args.vision.split(",")
        args.vision = [parts[0]] + [int(x) for x in parts[1:]]
        if args.peer != "torch" or len(args.vision) != 6:
            p.error("--vision DIR,H,LAYERS,HEADS,IMAGE,PATCH is measured with "
                    "--peer torch only")
        run = run_torch_vision
    if args.flux:
        parts = args.flux.split(",")
        args.flux = [parts[0]] + [int(x) for x in parts[1:]]
        if args.peer != "torch" or len(args.flux) != 7:
            p.error("--flux DIR,HEADS,HEAD_DIM,DOUBLE,SINGLE,IMAGE_TOKENS,"
                    "TEXT_TOKENS is measured with --peer torch only")
        run = run_torch_flux
    try:
        result = run(args)
    except ImportError as e:
        why = f"not installed ({e.name or e}); RLX_SETUP_PEERS=1 scripts/setup.sh"
        result = {"label": args.peer,
                  **{c: {"error": why} for c in ("llama_prefill", "llama_decode",
                                                 "bert")}}
    except Exception as e:  # noqa: BLE001
        log(traceback.format_exc())
        why = f"{type(e).__name__}: {e}"[:300]
        result = {"label": args.peer,
                  **{c: {"error": why} for c in ("llama_prefill", "llama_decode",
                                                 "bert")}}
    print(json.dumps(result))


if __name__ == "__main__":
    main()
