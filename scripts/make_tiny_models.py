#!/usr/bin/env python3
# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Writes small random-weight Hugging Face checkpoints (config.json +
model.safetensors) with `transformers`, for the demo and the parity tests.

    make_tiny_models.py OUT_DIR [--kind llama|qwen3|gemma2|bert|all] [--seed N]
        [--heads N] [--kv-heads N] [--tied] [--layers N] [--window N] [--gguf]
        [--gguf-type f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1] [--name NAME]
        [--vocab N]

Each model goes to OUT_DIR/<name or kind>; with --gguf, the LLaMA one is also
written as OUT_DIR/<name or llama>.gguf (llama.cpp's Q/K row order), its
matrices in --gguf-type (quantized by gguf-py; default f32), its norms f32.
"""

import argparse
import os

import numpy as np
import torch


def llama(args):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=args.vocab, hidden_size=64, intermediate_size=160,
                      num_hidden_layers=args.layers, num_attention_heads=args.heads,
                      num_key_value_heads=args.kv_heads, head_dim=64 // args.heads,
                      rms_norm_eps=1e-5, rope_theta=10000.0,
                      max_position_embeddings=256,
                      tie_word_embeddings=args.tied)
    return LlamaForCausalLM(cfg)


def qwen3(args):
    from transformers import Qwen3Config, Qwen3ForCausalLM
    cfg = Qwen3Config(vocab_size=256, hidden_size=64, intermediate_size=160,
                      num_hidden_layers=args.layers, num_attention_heads=args.heads,
                      num_key_value_heads=args.kv_heads, head_dim=64 // args.heads,
                      rms_norm_eps=1e-6, rope_theta=1000000.0,
                      max_position_embeddings=256,
                      tie_word_embeddings=args.tied)
    return Qwen3ForCausalLM(cfg)


def gemma2(args):
    from transformers import Gemma2Config, Gemma2ForCausalLM
    cfg = Gemma2Config(vocab_size=256, hidden_size=64, intermediate_size=160,
                       num_hidden_layers=max(args.layers, 2),
                       num_attention_heads=args.heads,
                       num_key_value_heads=args.kv_heads, head_dim=64 // args.heads, rms_norm_eps=1e-6, rope_theta=10000.0,
                       max_position_embeddings=256, sliding_window=args.window,
                       query_pre_attn_scalar=16, attn_logit_softcapping=50.0,
                       final_logit_softcapping=30.0)
    return Gemma2ForCausalLM(cfg)


def bert(args):
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=256, hidden_size=64, num_hidden_layers=args.layers,
                     num_attention_heads=4, intermediate_size=128,
                     max_position_embeddings=128, layer_norm_eps=1e-12)
    return BertModel(cfg, add_pooling_layer=False)


KINDS = {"llama": llama, "qwen3": qwen3, "gemma2": gemma2, "bert": bert}


def randomize(model, seed):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name.lower() and name.endswith("weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            else:
                p.copy_(0.08 * torch.randn(p.shape, generator=gen))


def stored(a, type_name):
    """(data, raw ggml type or None) of matrix `a` stored as `type_name`."""
    import gguf
    if type_name == "f32" or a.ndim != 2:
        return a, None
    if type_name == "f16":
        return a.astype(np.float16), None
    qtype = gguf.GGMLQuantizationType[type_name.upper()]
    return gguf.quants.quantize(a, qtype), qtype


def add_stored(writer, name, a, type_name):
    data, qtype = stored(a, type_name)
    writer.add_tensor(name, data, raw_dtype=qtype)


# transformers' model_type -> llama.cpp's architecture name.
GGUF_ARCH = {"llama": "llama", "mistral": "llama", "qwen2": "qwen2",
             "qwen3": "qwen3", "gemma2": "gemma2", "gemma3_text": "gemma3",
             "phi3": "phi3", "bert": "bert"}


def _rope(cfg, layer_type="full_attention"):
    rope = getattr(cfg, "rope_parameters", None) or {}
    return rope.get(layer_type, rope) if layer_type in rope else rope


def _llama3_rope_factors(cfg, head_dim):
    """convert_hf_to_gguf.py's rope_freqs.weight for rope_type llama3."""
    rope = _rope(cfg)
    base = rope["rope_theta"]
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float32) / head_dim))
    factor, low, high = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"]
    old = rope["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / low, old / high
    factors = []
    for f in freqs:
        wavelen = 2 * np.pi / f
        if wavelen < high_wavelen:
            factors.append(1)
        elif wavelen > low_wavelen:
            factors.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            factors.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(factors, dtype=np.float32)


def write_gguf(model, path, type_name="f32"):
    """`model` as llama.cpp's convert_hf_to_gguf.py writes it: gguf-py's own
    tensor names (its TensorNameMap), the metadata llama.cpp reads for the
    architecture, llama's q/k rows permuted for its rotary layout, Gemma's
    norms stored as 1 + w, LLaMA 3 RoPE scaling as rope_freqs.weight and
    Phi-3's LongRoPE factors as tensors; 2-D matrices as `type_name`
    (quantized by gguf-py), the rest f32. A placeholder vocabulary lets
    llama.cpp load the file (the tests feed token ids)."""
    import gguf
    cfg = model.config
    arch = GGUF_ARCH[cfg.model_type]
    w = gguf.GGUFWriter(path, arch)
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(heads)
    v = cfg.vocab_size
    extra = {}
    if arch == "bert":
        w.add_layer_norm_eps(cfg.layer_norm_eps)
        w.add_causal_attention(False)
        w.add_pooling_type(gguf.PoolingType.MEAN)
        w.add_token_type_count(cfg.type_vocab_size)
        w.add_tokenizer_model("bert")
        w.add_token_list(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] +
                         [f"t{i}" for i in range(5, v)])
        w.add_token_types([3, 2, 3, 3, 3] + [1] * (v - 5))
    else:
        w.add_head_count_kv(cfg.num_key_value_heads)
        w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
        w.add_tokenizer_model("llama")
        w.add_token_list(["<unk>", "<s>", "</s>"] + [f"<t{i}>" for i in range(3, v)])
        w.add_token_scores([0.0] * v)
        w.add_token_types([2, 3, 3] + [1] * (v - 3))
    rope = _rope(cfg)
    if arch in ("llama", "qwen2", "phi3", "gemma3"):
        w.add_rope_freq_base(rope.get("rope_theta", 10000.0))
    if arch in ("llama", "phi3"):
        w.add_rope_dimension_count(head_dim)
    if arch in ("qwen3", "gemma2", "gemma3"):
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    if arch in ("gemma2", "gemma3", "phi3") and cfg.sliding_window:
        w.add_sliding_window(cfg.sliding_window)
    if arch == "gemma2":
        w.add_attn_logit_softcapping(cfg.attn_logit_softcapping)
        w.add_final_logit_softcapping(cfg.final_logit_softcapping)
    if arch == "gemma3" and rope.get("rope_type") == "linear":
        w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        w.add_rope_scaling_factor(rope["factor"])
    if arch == "llama" and rope.get("rope_type") == "llama3":
        extra["rope_freqs.weight"] = _llama3_rope_factors(cfg, head_dim)
    if arch == "phi3":
        original = cfg.original_max_position_embeddings
        w.add_rope_scaling_orig_ctx_len(original)
        if rope.get("rope_type") == "longrope":
            scale = cfg.max_position_embeddings / original
            w.add_rope_scaling_attn_factors(
                np.sqrt(1 + np.log(scale) / np.log(original)) if scale > 1 else 1.0)
            extra["rope_factors_long.weight"] = np.array(rope["long_factor"], np.float32)
            extra["rope_factors_short.weight"] = np.array(rope["short_factor"], np.float32)

    def permute(t, n):
        return (t.reshape(n, 2, t.shape[0] // n // 2, *t.shape[1:])
                .swapaxes(1, 2).reshape(t.shape))

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH[arch.upper()],
                                     cfg.num_hidden_layers)
    for key, t in model.state_dict().items():
        a = t.detach().numpy().astype(np.float32)
        if key == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        # The converter keeps BERT's pooler only for CLS pooling.
        if arch == "bert" and (key.endswith("position_ids") or
                               key.startswith("pooler.")):
            continue
        name = names.get_name(key, try_suffixes=(".weight", ".bias"))
        assert name, f"gguf-py has no name for {key}"
        if arch == "llama" and ".self_attn.q_proj." in key:
            a = permute(a, heads)
        if arch == "llama" and ".self_attn.k_proj." in key:
            a = permute(a, cfg.num_key_value_heads)
        if arch.startswith("gemma") and key.endswith("norm.weight"):
            a = a + 1
        add_stored(w, name, a, type_name)
    for name, a in extra.items():
        w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def rewrite_gguf(src, dst, drop=(), add_keys=None, add_tensors=None,
                 drop_keys=()):
    """Copies GGUF `src` to `dst` without the tensors named in `drop` and the
    metadata keys in `drop_keys`, with
    `add_keys(writer)` adding metadata and the arrays of `add_tensors` (name:
    array) added."""
    import gguf
    reader = gguf.GGUFReader(src)
    arch = reader.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dst, arch)
    for field in reader.fields.values():
        if (field.name.startswith("GGUF.") or field.name in drop_keys or
                field.name == "general.architecture"):
            continue
        w.add_key_value(field.name, field.contents(), field.types[0],
                        field.types[-1]
                        if field.types[0] == gguf.GGUFValueType.ARRAY else None)
    if add_keys:
        add_keys(w)
    plain = (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16)
    for t in reader.tensors:
        if t.name in drop:
            continue
        if t.tensor_type in plain:
            w.add_tensor(t.name, np.array(t.data).reshape(
                [int(d) for d in reversed(t.shape)]))
        else:
            w.add_tensor(t.name, np.array(t.data), raw_dtype=t.tensor_type)
    for name, a in (add_tensors or {}).items():
        w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--kind", default="all", choices=["all", *KINDS])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--name", help="directory name (default: the kind)")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--tied", action="store_true")
    ap.add_argument("--window", type=int, default=4,
                    help="Gemma 2's sliding window (default 4)")
    ap.add_argument("--gguf", action="store_true")
    ap.add_argument("--vocab", type=int, default=256,
                    help="the LLaMA model's vocabulary size (default 256)")
    ap.add_argument("--gguf-type", default="f32",
                    choices=["f32", "f16", "bf16", "q8_0", "q4_0", "q4_1",
                             "q5_0", "q5_1"])
    args = ap.parse_args()
    kinds = list(KINDS) if args.kind == "all" else [args.kind]
    for kind in kinds:
        torch.manual_seed(args.seed)
        model = KINDS[kind](args).eval()
        randomize(model, args.seed)
        path = os.path.join(args.out, args.name or kind)
        model.save_pretrained(path, safe_serialization=True)
        if args.gguf and kind == "llama":
            write_gguf(model, path + ".gguf", args.gguf_type)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
