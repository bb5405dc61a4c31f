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


def write_gguf(model, path, type_name="f32"):
    """The LLaMA checkpoint as GGUF with llama.cpp's Q/K permutation, its
    matrices stored as `type_name`."""
    import gguf
    cfg = model.config
    w = gguf.GGUFWriter(path, "llama")
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_feed_forward_length(cfg.intermediate_size)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    rope = getattr(cfg, "rope_parameters", None) or {}
    w.add_rope_freq_base(rope.get("rope_theta", getattr(cfg, "rope_theta", 1e4)))
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    w.add_rope_dimension_count(cfg.head_dim)
    # A placeholder SentencePiece vocabulary, so that llama.cpp loads the
    # file too (the tests feed token ids).
    v = cfg.vocab_size
    w.add_tokenizer_model("llama")
    w.add_token_list(["<unk>", "<s>", "</s>"] + [f"<t{i}>" for i in range(3, v)])
    w.add_token_scores([0.0] * v)
    w.add_token_types([2, 3, 3] + [1] * (v - 3))

    def permute(t, heads):
        return (t.reshape(heads, 2, t.shape[0] // heads // 2, *t.shape[1:])
                .swapaxes(1, 2).reshape(t.shape))

    names = {"model.embed_tokens.weight": "token_embd.weight",
             "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    per_layer = {"input_layernorm.weight": "attn_norm.weight",
                 "post_attention_layernorm.weight": "ffn_norm.weight",
                 "self_attn.q_proj.weight": "attn_q.weight",
                 "self_attn.k_proj.weight": "attn_k.weight",
                 "self_attn.v_proj.weight": "attn_v.weight",
                 "self_attn.o_proj.weight": "attn_output.weight",
                 "mlp.gate_proj.weight": "ffn_gate.weight",
                 "mlp.up_proj.weight": "ffn_up.weight",
                 "mlp.down_proj.weight": "ffn_down.weight"}
    for key, t in model.state_dict().items():
        a = t.detach().numpy().astype(np.float32)
        if key == "lm_head.weight" and cfg.tie_word_embeddings:
            continue
        if key in names:
            add_stored(w, names[key], a, type_name)
            continue
        parts = key.split(".")
        i, rest = parts[2], ".".join(parts[3:])
        if rest == "self_attn.q_proj.weight":
            a = permute(a, cfg.num_attention_heads)
        if rest == "self_attn.k_proj.weight":
            a = permute(a, cfg.num_key_value_heads)
        add_stored(w, f"blk.{i}.{per_layer[rest]}", a, type_name)
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
