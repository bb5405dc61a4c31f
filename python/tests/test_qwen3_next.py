# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Qwen3-Next and Qwen3.5's text model (rlx.Qwen3NextFlow): Gated DeltaNet
layers interleaved with gated attention (and, in Qwen3-Next, mixtures of
experts), against transformers' Qwen3NextForCausalLM and Qwen3_5ForCausalLM
on tiny random-weight configs with the real structure (grouped value heads,
partial RoPE, a shared expert, a dense layer): the
prompt's logits within 1e-4 of their scale, then greedy decode steps through
the decode graphs with every layer's state carried (convolution window,
recurrent state, KV cache) against a full recompute by transformers, on the
CPU and on Vulkan (lavapipe); bad configs are named."""

import json
import os

import numpy as np
import pytest

import rlx

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
if not hasattr(transformers, "Qwen3NextForCausalLM"):
    pytest.skip("transformers has no Qwen3NextForCausalLM", allow_module_level=True)


def make(tmp_path, seed=0, kind="qwen3_next", **overrides):
    kw = dict(vocab_size=64, hidden_size=32, intermediate_size=40,
              num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
              head_dim=8, linear_num_value_heads=4, linear_num_key_heads=2,
              linear_key_head_dim=8, linear_value_head_dim=6,
              linear_conv_kernel_dim=4, max_position_embeddings=128)
    if kind == "qwen3_next":
        kw.update(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=12,
                  shared_expert_intermediate_size=16, mlp_only_layers=[1])
        cfg_cls, model_cls = transformers.Qwen3NextConfig, transformers.Qwen3NextForCausalLM
    else:
        # Qwen3.5's text model: separate in_proj_qkv / z / b / a, dense MLPs.
        cfg_cls, model_cls = transformers.Qwen3_5TextConfig, transformers.Qwen3_5ForCausalLM
    kw.update(overrides)
    torch.manual_seed(seed)
    model = model_cls(cfg_cls(**kw)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "A_log" in name:
                p.copy_(torch.log(torch.rand_like(p) * 4 + 0.5))
            elif "dt_bias" in name:
                p.copy_(torch.randn_like(p) * 0.5)
            else:
                p.copy_(torch.randn_like(p) * (0.2 if p.dim() > 1 else 0.1))
    path = tmp_path / kind
    model.save_pretrained(path)
    return path, model


def run(path, ids, device="cpu", past=-1, state=None):
    """The prompt graph on `ids` (or, with `past`, a decode graph over them
    fed `state`): its outputs and the compiled model."""
    recipe = rlx.Qwen3NextFlow.from_model_dir(path)
    weights = rlx.Weights.open(path / "model.safetensors")
    model = rlx.Session(device).compile(recipe.build(weights, len(ids), past))
    model.load_params(weights)
    start = max(past, 0)
    feeds = {"tokens": np.array([ids], np.int32),
             "positions": np.arange(start, start + len(ids), dtype=np.int32)[None]}
    for name, value in (state or {}).items():
        feeds[name] = value
    return model.run(feeds), model


def carried(outputs):
    """The next step's state inputs from a graph's present_* outputs."""
    state = {}
    for name, value in outputs.items():
        if name.startswith("present_"):
            stem = name[len("present_"):]
            state[("past_" + stem) if stem[0] in "kv" and stem[1] == "." else stem] = value
    return state


def reference(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids]), use_cache=False).logits.numpy()


def scale_err(a, b):
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


IDS = [3, 17, 42, 5, 9, 60, 1, 33, 12, 7, 25]


KINDS = ["qwen3_next"] + (["qwen3_5"] if hasattr(transformers, "Qwen3_5ForCausalLM") else [])


@pytest.mark.parametrize("kind", KINDS)
def test_parity_cpu(tmp_path, kind):
    path, model = make(tmp_path, kind=kind)
    recipe = rlx.Qwen3NextFlow.from_model_dir(path)
    assert recipe.linear_layers == [True, True, True, False]
    outputs, compiled = run(path, IDS)
    out = outputs["logits"]
    ref = reference(model, IDS)
    assert out.shape == ref.shape
    assert scale_err(out, ref) < 1e-4
    assert "attention: 1" in compiled.stats.fused_ops
    decode(path, model, IDS[:4], run(path, IDS[:4])[0], "cpu", steps=2)


def test_parity_vulkan(tmp_path):
    path, model = make(tmp_path, seed=1)
    try:
        outputs, _ = run(path, IDS[:7], "vulkan")
    except rlx.RLXError as e:
        if os.environ.get("RLX_REQUIRE_VULKAN") == "1" or "Vulkan" not in str(e):
            raise
        pytest.skip(f"no Vulkan device: {e}")
    assert scale_err(outputs["logits"], reference(model, IDS[:7])) < 1e-4
    decode(path, model, IDS[:7], outputs, "vulkan", steps=2)


def decode(path, model, ids, outputs, device, steps):
    """Greedy steps through decode graphs fed the previous step's state,
    each step's logits against transformers recomputing the whole sequence."""
    ids = list(ids)
    for _ in range(steps):
        ids.append(int(outputs["logits"][0, -1].argmax()))
        outputs, _ = run(path, ids[-1:], device, past=len(ids) - 1,
                         state=carried(outputs))
        ref = reference(model, ids)[:, -1:]
        assert scale_err(outputs["logits"], ref) < 1e-4, len(ids)


@pytest.mark.parametrize("prompt", [3, 1])
def test_decode_cpu(tmp_path, prompt):
    # A prompt shorter than the convolution window, and one token.
    path, model = make(tmp_path, seed=2)
    outputs, _ = run(path, IDS[:prompt])
    assert scale_err(outputs["logits"], reference(model, IDS[:prompt])) < 1e-4
    assert outputs["present_conv_state.0"].shape == (1, 3, 2 * 2 * 8 + 4 * 6)
    assert outputs["present_recurrent_state.0"].shape == (1, 4, 8, 6)
    assert outputs["present_k.3"].shape == (1, prompt, 2 * 8)
    decode(path, model, IDS[:prompt], outputs, "cpu", steps=4)


def test_bad_configs(tmp_path):
    path, _ = make(tmp_path)
    cfg = json.loads((path / "config.json").read_text())
    for change, message in [
        ({"linear_num_key_heads": 3}, "must divide linear_num_value_heads"),
        ({"layer_types": ["full_attention"]}, "'layer_types' has 1 entries for 4 layers"),
        ({"rope_parameters": {"rope_type": "yarn", "factor": 2.0}}, "rope_parameters key"),
        ({"hidden_act": "gelu"}, "'hidden_act' = \"gelu\" is not supported"),
        ({"attn_output_gate": False}, "config key 'attn_output_gate' is not one RLX implements"),
    ]:
        (path / "config.json").write_text(json.dumps({**cfg, **change}))
        with pytest.raises(rlx.RLXError, match=message.replace("(", r"\(")):
            rlx.Qwen3NextFlow.from_model_dir(path)


@pytest.mark.parametrize("kind", KINDS)
def test_rlx_run_generates(tmp_path, kind):
    # rlx-run --model runs Qwen3NextGenerator: the prompt graph, then
    # one-token steps over bucketed pasts (16, then 32 slots) with the
    # states carried; greedy ids equal transformers' generate().
    import subprocess
    path, model = make(tmp_path, seed=3, kind=kind)
    exe = os.path.join(os.path.dirname(rlx.__file__), "..", "..", "bin", "rlx-run")
    if not os.path.exists(exe):
        pytest.skip("rlx-run not next to the Python package")
    prompt = IDS[:5]
    proc = subprocess.run([exe, "--model", str(path), "--prompt-ids",
                           ",".join(map(str, prompt)), "--max-new-tokens", "14"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    line = next(l for l in proc.stdout.splitlines() if l.startswith("generated ids:"))
    got = [int(x) for x in line.split(":")[1].split()]
    with torch.no_grad():
        ref = model.generate(torch.tensor([prompt]), max_new_tokens=14,
                             do_sample=False)[0, len(prompt):].tolist()
    assert got == ref


def test_rlx_run_profile(tmp_path):
    # A --profile file applies over the recipe's profile (its decode
    # buckets size the steps: the same ids); Qwen3-Next keeps its weights
    # and states in f32, so a profile asking for another precision is
    # refused by name, not dropped.
    import subprocess
    path, _ = make(tmp_path, seed=3)
    exe = os.path.join(os.path.dirname(rlx.__file__), "..", "..", "bin", "rlx-run")
    if not os.path.exists(exe):
        pytest.skip("rlx-run not next to the Python package")
    base = [exe, "--model", str(path), "--prompt-ids", "1,2,3,4,5",
            "--max-new-tokens", "6", "--no-cache"]

    def ids(*extra, ok=True):
        proc = subprocess.run(base + list(extra), capture_output=True, text=True)
        assert (proc.returncode == 0) == ok, proc.stderr
        if not ok:
            return proc.stderr
        line = next(l for l in proc.stdout.splitlines()
                    if l.startswith("generated ids:"))
        return line.split(":")[1].split()

    buckets = tmp_path / "buckets.rlx.toml"
    buckets.write_text("[execution]\ndecode_buckets = [64]\n")
    assert ids("--profile", str(buckets)) == ids()
    bad = tmp_path / "bf16.rlx.toml"
    bad.write_text('[precision]\nweights = "bf16"\n')
    assert '[precision] weights = "bf16" is implemented for the decoder ' \
        "recipes" in ids("--profile", str(bad), ok=False)


@pytest.mark.skipif("qwen3_5" not in KINDS, reason="transformers has no Qwen3_5ForCausalLM")
def test_qwen3_5_mrope_on_text(tmp_path):
    # Qwen3.5's multimodal RoPE keys: text positions are the same on the
    # three axes, so the result is plain RoPE of the same frequencies.
    path, model = make(tmp_path, kind="qwen3_5", head_dim=16, rope_parameters={
        "rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.5,
        "mrope_section": [2, 1, 1], "mrope_interleaved": True})
    outputs, _ = run(path, IDS)
    assert scale_err(outputs["logits"], reference(model, IDS)) < 1e-4


def test_python_generator(tmp_path):
    path, model = make(tmp_path, seed=4)
    weights = rlx.Weights.open(path / "model.safetensors")
    gen = rlx.Qwen3NextGenerator(rlx.Session(), rlx.Qwen3NextFlow.from_model_dir(path),
                                 weights)
    prompt = IDS[:6]
    got = gen.generate(prompt, 5)
    with torch.no_grad():
        ref = model.generate(torch.tensor([prompt]), max_new_tokens=5,
                             do_sample=False)[0, len(prompt):].tolist()
    assert got == ref
    # Stopping at a token: it is returned, nothing after it.
    assert gen.generate(prompt, 5, stop_tokens=[ref[1]]) == ref[:2]
    with pytest.raises(rlx.RLXError, match="outside the vocabulary"):
        gen.generate([70], 2)
