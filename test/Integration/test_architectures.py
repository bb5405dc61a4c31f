# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Architectures and config options against the `transformers` model classes:
each config is instantiated with random weights (biases and norms included,
so a dropped bias or a wrong activation shows), saved with
`save_pretrained`, and run with `rlx-run --model`: prompt logits within 1e-4
of the logits' scale and greedy ids equal. Then the configurations RLX does
not implement: each is refused with an error naming the key and its value,
and config keys or tensors RLX does not know are named."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import RLX_RUN, ROOT, require_vulkan

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

SMALL = dict(vocab_size=128, hidden_size=64, intermediate_size=96,
             num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             max_position_embeddings=128)


def randomize(model, seed):
    """Every parameter random (transformers zero-initializes biases and sets
    norms to one, which would hide them)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.15 * torch.randn(p.shape, generator=g))
    return model


def make(tmp_path, kind, seed=1, **overrides):
    """A saved random `kind` ("llama", "mistral", ...) model directory."""
    classes = {
        "llama": ("LlamaConfig", "LlamaForCausalLM"),
        "mistral": ("MistralConfig", "MistralForCausalLM"),
        "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
        "qwen3": ("Qwen3Config", "Qwen3ForCausalLM"),
        "gemma2": ("Gemma2Config", "Gemma2ForCausalLM"),
        "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM"),
        "phi3": ("Phi3Config", "Phi3ForCausalLM"),
        "bert": ("BertConfig", "BertModel"),
        "mixtral": ("MixtralConfig", "MixtralForCausalLM"),
        "qwen2_moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM"),
        "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM"),
    }
    cfg_name, model_name = classes[kind]
    args = dict(SMALL)
    if kind == "bert":
        args.pop("num_key_value_heads")
    elif kind != "phi3":
        args["head_dim"] = 16
    if kind == "phi3":
        args.update(pad_token_id=0)
    if kind == "gemma2":
        args.update(query_pre_attn_scalar=16, attn_logit_softcapping=50.0,
                    final_logit_softcapping=30.0, sliding_window=4)
    if kind == "gemma3":
        args.update(query_pre_attn_scalar=16, sliding_window=4,
                    num_hidden_layers=4, sliding_window_pattern=2)
    args.update(overrides)
    cfg = getattr(transformers, cfg_name)(**args)
    torch.manual_seed(seed)
    model = randomize(getattr(transformers, model_name)(cfg), seed).eval()
    out = tmp_path / kind
    model.save_pretrained(out)
    return out, model


def rlx(path, prompt, *args):
    return subprocess.run(
        [str(RLX_RUN), "--model", str(path), "--prompt-ids",
         ",".join(map(str, prompt)), *args], capture_output=True, text=True)


def scale_err(a, b):
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


PROMPT = [3, 17, 5, 99, 42, 8, 61, 23, 11, 77, 2, 90, 34]


def check_decoder(tmp_path, path, model, new_tokens=6, policy="direct",
                  device=()):
    """Prompt logits within 1e-4 of the logits' scale and greedy ids equal;
    `device` adds rlx-run arguments (--device vulkan)."""
    logits = tmp_path / "logits.npy"
    proc = rlx(path, PROMPT, "--max-new-tokens", "0", "--logits-out",
               str(logits), "--policy", policy, "--quiet", *device)
    assert proc.returncode == 0, proc.stderr
    with torch.no_grad():
        ref = model(torch.tensor([PROMPT])).logits.numpy()
    assert scale_err(np.load(logits), ref) < 1e-4
    proc = rlx(path, PROMPT, "--max-new-tokens", str(new_tokens),
               "--policy", policy, *device)
    assert proc.returncode == 0, proc.stderr
    tokens = [int(t) for t in
              proc.stdout.split("tokens:")[1].split("\n")[0].split()]
    # rlx-run --prompt-ids does not stop at EOS: neither does the reference.
    model.generation_config.eos_token_id = None
    with torch.no_grad():
        hf = model.generate(torch.tensor([PROMPT]), max_new_tokens=new_tokens,
                            do_sample=False)[0, len(PROMPT):].tolist()
    assert tokens == hf
    return proc


def check_encoder(tmp_path, path, model, ids):
    """rlx-run's last hidden state of `ids` within 1e-4 of BertModel's."""
    proc = rlx(path, ids, "--output-dir", str(tmp_path), "--quiet")
    assert proc.returncode == 0, proc.stderr
    with torch.no_grad():
        h = model(torch.tensor([ids])).last_hidden_state.numpy()
    assert scale_err(np.load(tmp_path / "last_hidden_state.npy"), h) < 1e-4


#===----------------------------------------------------------------------===#
# Architectures and options
#===----------------------------------------------------------------------===#

@pytest.mark.parametrize("policy", ["direct", "fusable"])
def test_llama_attention_and_mlp_biases(tmp_path, policy):
    path, model = make(tmp_path, "llama", attention_bias=True, mlp_bias=True)
    check_decoder(tmp_path, path, model, policy=policy)


# Every activation transformers' ACT2FN has that RLX implements.
ACTIVATIONS = ["silu", "swish", "gelu", "gelu_python", "gelu_new",
               "gelu_pytorch_tanh", "gelu_python_tanh", "gelu_fast",
               "gelu_accurate", "gelu_10", "quick_gelu", "relu", "relu2",
               "relu6", "leaky_relu", "mish", "laplace", "hardswish",
               "sqrtsoftplus", "sigmoid", "tanh", "linear"]


@pytest.mark.parametrize("act", ACTIVATIONS)
def test_llama_hidden_act(tmp_path, act):
    path, model = make(tmp_path, "llama", hidden_act=act)
    check_decoder(tmp_path, path, model, new_tokens=3)


@pytest.mark.parametrize("act", ["mish", "quick_gelu"])
def test_llama_hidden_act_fusable(tmp_path, act):
    """Unfused, the activation is a mir.activation that mir-fuse-swiglu
    folds into the GLU."""
    path, model = make(tmp_path, "llama", hidden_act=act)
    check_decoder(tmp_path, path, model, new_tokens=3, policy="fusable")


@pytest.mark.parametrize("act", ["mish", "gelu_10", "laplace", "hardswish"])
def test_llama_hidden_act_vulkan(tmp_path, act):
    """The SPIR-V kernels' activations: prompt logits on Vulkan against
    transformers (1e-4 of the logits' scale)."""
    require_vulkan()
    path, model = make(tmp_path, "llama", hidden_act=act)
    logits = tmp_path / "logits.npy"
    proc = rlx(path, PROMPT, "--max-new-tokens", "0", "--logits-out",
               str(logits), "--device", "vulkan", "--quiet")
    assert proc.returncode == 0, proc.stderr
    with torch.no_grad():
        ref = model(torch.tensor([PROMPT])).logits.numpy()
    assert scale_err(np.load(logits), ref) < 1e-4


def test_llama_linear_rope_scaling(tmp_path):
    path, model = make(tmp_path, "llama", rope_parameters={
        "rope_type": "linear", "factor": 2.5, "rope_theta": 500.0})
    check_decoder(tmp_path, path, model)


ROPES = {
    "dynamic": {"rope_type": "dynamic", "factor": 2.0},
    "yarn": {"rope_type": "yarn", "factor": 4.0,
             "original_max_position_embeddings": 32},
    "yarn-mscale": {"rope_type": "yarn", "factor": 8.0, "mscale": 0.7,
                    "mscale_all_dim": 1.0, "beta_fast": 16.0, "beta_slow": 2.0,
                    "original_max_position_embeddings": 16},
    "yarn-attention-factor": {"rope_type": "yarn", "factor": 3.0,
                              "attention_factor": 1.3, "truncate": False,
                              "original_max_position_embeddings": 40},
}


@pytest.mark.parametrize("rope", list(ROPES))
def test_llama_rope_types(tmp_path, rope):
    params = dict(ROPES[rope], rope_theta=500.0)
    path, model = make(tmp_path, "llama", rope_parameters=params)
    check_decoder(tmp_path, path, model)


def test_phi3_longrope(tmp_path):
    """LongRoPE's short factors and attention factor; the context is capped
    at original_max_position_embeddings, past which transformers switches
    to the long factors."""
    g = np.random.default_rng(4)
    short = (1.0 + g.random(8)).round(3).tolist()
    long = (2.0 + g.random(8)).round(3).tolist()
    path, model = make(tmp_path, "phi3", max_position_embeddings=256,
                       original_max_position_embeddings=64,
                       rope_parameters={"rope_type": "longrope",
                                        "rope_theta": 1000.0,
                                        "short_factor": short,
                                        "long_factor": long,
                                        "original_max_position_embeddings": 64})
    check_decoder(tmp_path, path, model)
    proc = rlx(path, list(range(60)), "--max-new-tokens", "8")
    assert proc.returncode != 0
    assert "exceeds the context of 64" in proc.stderr, proc.stderr


@pytest.mark.parametrize("policy", ["direct", "fusable"])
@pytest.mark.parametrize("window", [4, None])
def test_mistral(tmp_path, window, policy):
    path, model = make(tmp_path, "mistral", sliding_window=window)
    check_decoder(tmp_path, path, model, new_tokens=8, policy=policy)


@pytest.mark.parametrize("policy", ["direct", "fusable"])
def test_qwen2_qkv_bias(tmp_path, policy):
    path, model = make(tmp_path, "qwen2")
    check_decoder(tmp_path, path, model, policy=policy)


def test_qwen2_sliding_window_from_max_window_layers(tmp_path):
    path, model = make(tmp_path, "qwen2", use_sliding_window=True,
                       sliding_window=4, max_window_layers=1)
    assert model.config.layer_types == ["full_attention", "sliding_attention"]
    check_decoder(tmp_path, path, model, new_tokens=8)


def test_qwen3_sliding_window_and_bias(tmp_path):
    path, model = make(tmp_path, "qwen3", use_sliding_window=True,
                       sliding_window=4, max_window_layers=1,
                       attention_bias=True)
    check_decoder(tmp_path, path, model, new_tokens=8)


@pytest.mark.parametrize("act", ["gelu", "gelu_pytorch_tanh", "quick_gelu",
                                 "relu2"])
def test_gemma2_hidden_activation(tmp_path, act):
    path, model = make(tmp_path, "gemma2", hidden_activation=act)
    check_decoder(tmp_path, path, model)


def test_gemma2_attention_bias(tmp_path):
    path, model = make(tmp_path, "gemma2", attention_bias=True)
    check_decoder(tmp_path, path, model)


@pytest.mark.parametrize("policy", ["direct", "fusable"])
def test_gemma3(tmp_path, policy):
    """Interleaved local/global layers with their own RoPE bases, Gemma
    q/k norms, sandwich norms, embedding scaling, linear RoPE scaling on the
    global layers only."""
    path, model = make(tmp_path, "gemma3", rope_parameters={
        "full_attention": {"rope_type": "linear", "factor": 4.0,
                           "rope_theta": 100000.0},
        "sliding_attention": {"rope_type": "default", "rope_theta": 100.0}})
    assert model.config.layer_types == ["sliding_attention", "full_attention"] * 2
    check_decoder(tmp_path, path, model, new_tokens=8, policy=policy)


def test_gemma3_default_pattern(tmp_path):
    path, model = make(tmp_path, "gemma3", num_hidden_layers=7,
                       sliding_window_pattern=6,
                       final_logit_softcapping=20.0)
    cfg = json.loads((path / "config.json").read_text())
    cfg.pop("layer_types")
    (path / "config.json").write_text(json.dumps(cfg))
    check_decoder(tmp_path, path, model)


@pytest.mark.parametrize("policy", ["direct", "fusable"])
@pytest.mark.parametrize("window", [None, 5])
def test_phi3_fused_matrices(tmp_path, window, policy):
    """Phi-3 stores q/k/v in one qkv_proj and gate/up in one gate_up_proj:
    the recipe reads row ranges of them."""
    path, model = make(tmp_path, "phi3", sliding_window=window)
    check_decoder(tmp_path, path, model, policy=policy)


@pytest.mark.parametrize("act", ["gelu", "gelu_new", "relu", "silu",
                                 "gelu_10", "quick_gelu", "relu2", "relu6",
                                 "leaky_relu", "mish", "laplace", "hardswish",
                                 "sqrtsoftplus"])
def test_bert_hidden_act(tmp_path, act):
    path, model = make(tmp_path, "bert", hidden_act=act)
    check_encoder(tmp_path, path, model, [101, 7, 55, 23, 102])


#===----------------------------------------------------------------------===#
# Refused by name
#===----------------------------------------------------------------------===#

def edit_config(path, **changes):
    cfg_path = path / "config.json"
    cfg = json.loads(cfg_path.read_text())
    for k, v in changes.items():
        if v is ...:
            cfg.pop(k, None)
        else:
            cfg[k] = v
    cfg_path.write_text(json.dumps(cfg))


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    base = tmp_path_factory.mktemp("saved")
    return {kind: make(base, kind)[0]
            for kind in ["llama", "qwen2", "gemma3", "bert"]}


def copy_dir(src, dst):
    dst.mkdir()
    for f in src.iterdir():
        (dst / f.name).write_bytes(f.read_bytes())
    return dst


REFUSED = [
    ("llama", {"rope_scaling": {"rope_type": "linear", "factor": 2.0}},
     "'rope_scaling' = {\"factor\":2,\"rope_type\":\"linear\"} disagrees with "
     "'rope_parameters'"),
    ("llama", {"hidden_act": "prelu"},
     "'hidden_act' = \"prelu\" is not supported (supported: silu"),
    ("llama", {"hidden_act": "xielu"},
     "not prelu or xielu, which carry learned parameters RLX does not read "
     "yet"),
    ("llama", {"hidden_act": 3},
     "'hidden_act' must be a string, found a number (3)"),
    ("llama", {"tie_word_embeddings": "yes"},
     "'tie_word_embeddings' must be true or false, found a string (\"yes\")"),
    ("llama", {"attention_bias": "true"},
     "'attention_bias' must be true or false, found a string"),
    ("llama", {"model_type": 7},
     "'model_type' must be a string, found a number (7)"),
    ("llama", {"model_type": ...}, "missing 'model_type' (supported: llama"),
    ("llama", {"rms_norm_eps": -1e-5},
     "'rms_norm_eps' must be positive, found -1e-05"),
    ("llama", {"num_attention_heads": 6, "head_dim": ...},
     "hidden_size (64) is not a multiple of num_attention_heads (6) and no "
     "head_dim is given"),
    ("llama", {"rope_parameters": {"rope_type": "ntk-by-parts", "factor": 4.0,
                                   "rope_theta": 10000.0}},
     "'rope_parameters.rope_type' = \"ntk-by-parts\" is not supported "
     "(supported: default, linear, llama3, dynamic, yarn, longrope)"),
    ("llama", {"rope_parameters": {"rope_type": "yarn", "factor": 4.0,
                                   "rope_theta": 10000.0}},
     "missing 'rope_parameters.original_max_position_embeddings'"),
    ("llama", {"rope_parameters": {"rope_type": "default",
                                   "rope_theta": 10000.0, "factor": 2.0}},
     "'rope_parameters.factor' is not supported for rope_type 'default'"),
    ("llama", {"rope_parameters": {"rope_type": "linear", "factor": "2"}},
     "'rope_parameters.factor' must be a number, found a string"),
    ("llama", {"partial_rotary_factor": 0.5},
     "'partial_rotary_factor' = 0.5 is not supported"),
    ("llama", {"quantization_config": {"quant_method": "gptq"}},
     "'quantization_config' is not supported"),
    ("llama", {"num_hidden_layers": 2.5},
     "'num_hidden_layers' must be a positive integer, found a number (2.5)"),
    ("qwen2", {"layer_types": ["full_attention", "chunked_attention"]},
     "layer_types: \"chunked_attention\" is not supported"),
    ("qwen2", {"layer_types": ["full_attention"]},
     "layer_types has 1 entries for num_hidden_layers = 2"),
    ("gemma3", {"attn_logit_softcapping": 50.0},
     "'attn_logit_softcapping' = 50 is not supported (transformers' Gemma 3 "
     "does not apply it)"),
    ("bert", {"position_embedding_type": "relative_key"},
     "'position_embedding_type' = \"relative_key\" is not supported"),
    ("bert", {"is_decoder": True}, "'is_decoder' = true is not supported"),
    ("bert", {"hidden_act": "prelu"}, "'hidden_act' = \"prelu\""),
    ("llama", {"model_type": "falcon"},
     "no decoder recipe for model_type 'falcon' (supported: llama, mistral, "
     "qwen2, qwen3, gemma2, gemma3_text, phi3, mixtral, qwen2_moe, "
     "qwen3_moe)"),
]


@pytest.mark.parametrize("kind,changes,message", REFUSED,
                         ids=[str(i) for i in range(len(REFUSED))])
def test_refused_by_name(saved, tmp_path, kind, changes, message):
    path = copy_dir(saved[kind], tmp_path / "m")
    edit_config(path, **changes)
    proc = rlx(path, [1, 2, 3], "--max-new-tokens", "1")
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr
    assert "config.json" in proc.stderr or "no decoder recipe" in message


@pytest.mark.parametrize("changes,message", [
    ({"hidden_act": "x" * 1000000}, "'hidden_act' = \"xxx"),
    ({"model_type": "y" * 1000000}, "no decoder recipe for model_type 'yyy"),
    ({"rope_scaling": {"rope_type": "z" * 1000000}, "rope_parameters": ...},
     "'rope_scaling.rope_type' = \"zzz"),
    ({"k" * 1000000: 1}, "config key 'kkk"),
])
def test_huge_config_values_are_not_echoed(saved, tmp_path, changes, message):
    """A 1 MB value or key is quoted by its first 64 bytes and its size."""
    path = copy_dir(saved["llama"], tmp_path / "m")
    edit_config(path, **changes)
    proc = rlx(path, [1, 2, 3], "--max-new-tokens", "1")
    assert message in proc.stderr, proc.stderr[:2000]
    assert "... (1000000 bytes)" in proc.stderr, proc.stderr[:2000]
    assert len(proc.stderr) < 4000


def test_bert_input_longer_than_positions(saved):
    """Refused before compiling, naming the config key."""
    proc = rlx(saved["bert"], [5] * 129, "--quiet")
    assert proc.returncode != 0
    assert "input of 129 tokens exceeds the model's 128 positions " \
        "(max_position_embeddings)" in proc.stderr, proc.stderr
    assert "compiled" not in proc.stdout + proc.stderr


def test_utf8_bom_in_config(saved, tmp_path):
    path = copy_dir(saved["llama"], tmp_path / "m")
    cfg = path / "config.json"
    cfg.write_bytes(b"\xef\xbb\xbf" + cfg.read_bytes())
    proc = rlx(path, [1, 2, 3], "--max-new-tokens", "1")
    assert proc.returncode == 0, proc.stderr


def test_unknown_config_key_is_a_warning(saved, tmp_path):
    path = copy_dir(saved["llama"], tmp_path / "m")
    edit_config(path, my_new_scaling=2.0)
    proc = rlx(path, [1, 2, 3], "--max-new-tokens", "1")
    assert proc.returncode == 0, proc.stderr
    assert ("warning: config key 'my_new_scaling' (model_type 'llama') is "
            "not known to RLX and was ignored") in proc.stderr


def test_unused_tensors_are_an_error(tmp_path):
    """A checkpoint with biases under a config without attention_bias: the
    biases would be silently dropped."""
    path, _ = make(tmp_path, "llama", attention_bias=True)
    edit_config(path, attention_bias=False)
    proc = rlx(path, [1, 2, 3], "--max-new-tokens", "1")
    assert proc.returncode != 0
    assert "model.safetensors: 8 tensors the model does not use: " \
        in proc.stderr
    assert "'model.layers.0.self_attn.q_proj.bias'" in proc.stderr
    assert "--allow-unused-weights" in proc.stderr
    proc = rlx(path, [1, 2, 3], "--max-new-tokens", "1",
               "--allow-unused-weights")
    assert proc.returncode == 0, proc.stderr
    assert "warning: " in proc.stderr and "does not use" in proc.stderr


def test_bert_pooler_is_a_warning(saved):
    proc = rlx(saved["bert"], [101, 7, 102], "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "warning: ignoring 2 tensors of heads RLX does not compute: " \
        "'pooler.dense." in proc.stderr


def test_bert_positions_disagree_with_config(saved, tmp_path):
    path = copy_dir(saved["bert"], tmp_path / "m")
    edit_config(path, max_position_embeddings=512)
    proc = rlx(path, [101, 7, 102], "--quiet")
    assert proc.returncode != 0
    assert ("has 128 positions, but max_position_embeddings is 512"
            in proc.stderr), proc.stderr


#===----------------------------------------------------------------------===#
# The same architectures from GGUF files as llama.cpp writes them
#===----------------------------------------------------------------------===#

# make_tiny_models.write_gguf writes a checkpoint as llama.cpp's converter
# does (gguf-py's tensor names, llama.cpp's metadata); llama.cpp reading each
# file to transformers' logits checks those conventions independently, except
# where llama.cpp (llama-cpp-python 0.3.36) computes otherwise than
# transformers: Phi-3's sliding window and LongRoPE (logits off by 1.4 of
# their scale); RLX follows transformers there.
LLAMA_CPP_DIFFERS = {"phi3-longrope", "phi3-window"}
GGUF_MODELS = {
    "llama-biases": ("llama", dict(attention_bias=True)),
    "llama3-rope": ("llama", dict(max_position_embeddings=256, rope_parameters=dict(
        rope_type="llama3", rope_theta=10000.0, factor=8.0, low_freq_factor=1.0,
        high_freq_factor=4.0, original_max_position_embeddings=32))),
    "qwen2": ("qwen2", {}),
    "qwen3": ("qwen3", dict(head_dim=24)),
    "gemma2": ("gemma2", dict(query_pre_attn_scalar=16)),
    # llama.cpp's Gemma 3: a local layer every layer but each sixth, local
    # theta 10000, 1/sqrt(head size) scaling.
    "gemma3": ("gemma3", dict(num_hidden_layers=6, sliding_window_pattern=6,
                              sliding_window=4, head_dim=16,
                              query_pre_attn_scalar=16)),
    "phi3": ("phi3", {}),
    "phi3-longrope": ("phi3", dict(
        max_position_embeddings=256, original_max_position_embeddings=64,
        rope_parameters=dict(rope_type="longrope", rope_theta=10000.0,
                             short_factor=[1.0 + 0.1 * i for i in range(8)],
                             long_factor=[2.0 + 0.1 * i for i in range(8)]))),
    "phi3-window": ("phi3", dict(sliding_window=5)),
}


def write_gguf(model, path, type_name="f32"):
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_tiny_models
    make_tiny_models.write_gguf(model, str(path), type_name)


def rewrite_gguf(src, dst, **kw):
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_tiny_models
    make_tiny_models.rewrite_gguf(str(src), str(dst), **kw)


@pytest.mark.parametrize("name", list(GGUF_MODELS))
def test_gguf_architectures(tmp_path, name):
    """Each architecture from a GGUF against transformers on the original
    checkpoint; llama.cpp reads the same file to the same logits, so the file
    is as llama.cpp's converter writes it."""
    kind, overrides = GGUF_MODELS[name]
    _, model = make(tmp_path, kind, **overrides)
    path = tmp_path / f"{name}.gguf"
    write_gguf(model, path)
    check_decoder(tmp_path, path, model)
    if name in LLAMA_CPP_DIFFERS:
        return
    llama_cpp = pytest.importorskip("llama_cpp")
    llm = llama_cpp.Llama(model_path=str(path), n_ctx=64, n_batch=64,
                          n_threads=2, logits_all=True, verbose=False)
    llm.eval(PROMPT)
    theirs = np.array(llm.scores[:len(PROMPT)], dtype=np.float32)
    with torch.no_grad():
        ref = model(torch.tensor([PROMPT])).logits.numpy()[0]
    assert scale_err(theirs, ref) < 2e-2, "llama.cpp reads another model"


def test_gguf_bert(tmp_path):
    """A BERT GGUF (llama.cpp's bert architecture) against BertModel."""
    _, model = make(tmp_path, "bert")
    path = tmp_path / "bert.gguf"
    write_gguf(model, path)
    check_encoder(tmp_path, path, model, [2, 7, 55, 23, 3])


def test_gguf_gemma_norm_not_f32(tmp_path):
    """Gemma's norms are stored as 1 + w in f32; another type is refused."""
    _, model = make(tmp_path, "gemma2")
    path = tmp_path / "g.gguf"
    write_gguf(model, path)
    import gguf
    reader = gguf.GGUFReader(path)
    name = "blk.0.attn_norm.weight"
    norm = next(t for t in reader.tensors if t.name == name)
    rewrite_gguf(path, tmp_path / "bad.gguf", drop=(name,),
                 add_tensors={name: np.array(norm.data).astype(np.float16)})
    proc = rlx(tmp_path / "bad.gguf", [1, 2, 3], "--max-new-tokens", "1")
    assert proc.returncode != 0
    assert "tensor 'blk.0.attn_norm.weight': a Gemma norm stored as f16" \
        in proc.stderr, proc.stderr


GGUF_REFUSED = [
    # Errors name the GGUF tensor.
    ("qwen2", {}, dict(drop=("blk.1.ffn_down.weight",)),
     "missing weight 'blk.1.ffn_down.weight'"),
    # A llama GGUF that says it has experts.
    ("llama", {}, dict(add_keys=lambda w: w.add_expert_count(8)),
     "'llama.expert_count' = 8 is not supported (mixture-of-experts models)"),
    ("gemma3", GGUF_MODELS["gemma3"][1],
     dict(add_keys=lambda w: w.add_attn_logit_softcapping(50.0)),
     "'gemma3.attn_logit_softcapping' = 50 is not supported (Gemma 3 does "
     "not apply it)"),
    # The encoder pools by the mean, not the first token.
    ("bert", {}, dict(drop_keys=("bert.pooling_type",),
                      add_keys=lambda w: w.add_uint32("bert.pooling_type", 2)),
     "'bert.pooling_type' = 2 is not supported (0: none, 1: mean; RLX's BERT "
     "encoder pools by the mean)"),
    # An attention factor without LongRoPE factors would scale nothing.
    ("phi3", {}, dict(add_keys=lambda w: w.add_rope_scaling_attn_factors(1.25)),
     "'phi3.rope.scaling.attn_factor' = 1.25 is not supported without "
     "LongRoPE factors (rope_factors_short.weight)"),
]


@pytest.mark.parametrize("kind,overrides,edit,message", GGUF_REFUSED,
                         ids=["missing-tensor", "experts", "gemma3-softcap",
                              "bert-cls-pooling", "phi3-attn-factor"])
def test_gguf_refused(tmp_path, kind, overrides, edit, message):
    _, model = make(tmp_path, kind, **overrides)
    path = tmp_path / "m.gguf"
    write_gguf(model, path)
    rewrite_gguf(path, tmp_path / "bad.gguf", **edit)
    proc = rlx(tmp_path / "bad.gguf", [1, 2, 3], "--max-new-tokens", "1")
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr
