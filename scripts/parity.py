#!/usr/bin/env python3
# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Compares what `rlx-run --model` computed with the Hugging Face
`transformers` reference on the same checkpoint (eager attention, f32).

    parity.py MODEL_DIR --prompt-ids 1,2,3 [--logits L.npy] [--tokens 4,5,6]
        [--step-logits S.npy] [--hidden H.npy] [--embedding E.npy]

Prints the largest differences and exits non-zero beyond the tolerance
(1e-4 relative to the output scale; identical greedy tokens)."""

import argparse
import sys

import numpy as np
import torch


def rel(a, b):
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("--logits")
    ap.add_argument("--tokens")
    ap.add_argument("--step-logits")
    ap.add_argument("--hidden")
    ap.add_argument("--embedding")
    ap.add_argument("--tolerance", type=float, default=1e-4)
    args = ap.parse_args()
    ids = [int(t) for t in args.prompt_ids.split(",")]
    from transformers import AutoConfig
    kind = AutoConfig.from_pretrained(args.model).model_type
    ok = True

    def report(what, err):
        nonlocal ok
        good = err <= args.tolerance
        ok &= good
        print(f"  {what}: max |diff| / scale = {err:.2e} "
              f"({'ok' if good else 'FAIL'}, tolerance {args.tolerance:g})")

    if kind == "bert":
        from transformers import AutoModel
        m = AutoModel.from_pretrained(args.model, attn_implementation="eager").eval()
        with torch.no_grad():
            h = m(torch.tensor([ids])).last_hidden_state.numpy()
        if args.hidden:
            report("last hidden state vs transformers", rel(np.load(args.hidden), h))
        if args.embedding:
            e = np.load(args.embedding)
            ref = h.mean(1)
            cos = float((e * ref).sum() / np.linalg.norm(e) / np.linalg.norm(ref))
            print(f"  mean-pooled embedding cosine vs transformers: {cos:.7f}")
            ok &= cos >= 0.99999
        return 0 if ok else 1

    from transformers import AutoModelForCausalLM
    m = AutoModelForCausalLM.from_pretrained(args.model, attn_implementation="eager").eval()
    with torch.no_grad():
        if args.logits:
            ref = m(torch.tensor([ids])).logits.numpy()
            report("prompt logits vs transformers", rel(np.load(args.logits), ref))
        if args.tokens:
            toks = [int(t) for t in args.tokens.split(",")]
            hf = m.generate(torch.tensor([ids]), max_new_tokens=len(toks),
                            do_sample=False)[0, len(ids):].tolist()
            same = hf == toks
            ok &= same
            print(f"  greedy tokens {'identical to' if same else 'DIFFER from'} "
                  f"transformers.generate: {hf}")
            if args.step_logits:
                full = m(torch.tensor([ids + toks[:-1]])).logits.numpy()[0]
                steps = np.load(args.step_logits)
                report("KV-cache step logits vs full recompute",
                       rel(steps, full[len(ids) - 1:len(ids) - 1 + len(steps)]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
