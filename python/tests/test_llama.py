# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""A tiny LLaMA checkpoint made by transformers (scripts/make_tiny_models.py)
built with the Llama32Flow recipe from Python, against the transformers
reference: prompt logits, greedy and seeded generation, GGUF weights, recipe
hooks. Tolerance: 1e-4 relative to the logits' scale."""

import numpy as np
import pytest

import rlx
from conftest import scale_err

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

PROMPT = [1, 5, 9, 13, 21, 34, 55]


def hf_model(path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(
        path, attn_implementation="eager"
    ).eval()


def prompt_logits(recipe, weights, prompt=PROMPT):
    built = recipe.for_prefill().build(weights)
    t = len(prompt)
    model = rlx.Session().compile(
        built, input_shapes={"tokens": [1, t], "positions": [1, t]}
    )
    model.load_params(weights)  # the synthesized RoPE params come along
    return model.run(
        {
            "tokens": np.array([prompt], np.int32),
            "positions": np.arange(t, dtype=np.int32)[None],
        }
    )["logits"]


@pytest.fixture(scope="module")
def llama(tiny_models):
    return tiny_models / "llama"


@pytest.fixture(scope="module")
def reference(llama):
    m = hf_model(llama)
    with torch.no_grad():
        return m(torch.tensor([PROMPT])).logits.numpy()


def test_logits_match_transformers(llama, reference):
    recipe = rlx.Llama32Flow.from_model_dir(llama)
    assert recipe.config.model_type == "llama" and recipe.graph == "prefill"
    logits = prompt_logits(recipe, rlx.load_weights(llama))
    assert logits.shape == reference.shape
    assert scale_err(logits, reference) < 1e-4


def test_gguf_weights_match(tiny_models, reference):
    gguf = tiny_models / "llama.gguf"
    recipe = rlx.Llama32Flow.from_model_dir(gguf)
    logits = prompt_logits(recipe, rlx.load_weights(gguf))
    assert scale_err(logits, reference) < 1e-4


def test_hooks(llama, reference):
    weights = rlx.load_weights(llama)
    seen = []

    def hook(ctx):
        seen.append(ctx.index)
        if ctx.index == 0:
            return rlx.llama_prefill_layer_composed(ctx.index, ctx.spec)
        return ctx.default_stage()

    recipe = rlx.decoder_flow_for(rlx.load_config(llama)).layer(hook)
    assert scale_err(prompt_logits(recipe, weights), reference) < 1e-4
    assert seen == [0, 1]

    patched = []
    recipe = rlx.Llama32Flow.from_model_dir(llama).patch_flow(
        lambda flow: patched.append(flow.profile("llama32_decode"))
    )
    built = recipe.build(weights)
    assert patched and built.profile.fusion.policy == "fusable"

    def broken(ctx):
        raise ValueError(f"layer {ctx.index} is broken")

    with pytest.raises(ValueError, match="layer 0 is broken"):
        rlx.Llama32Flow.from_model_dir(llama).layer(broken).build(weights)


def test_profile_per_graph(llama):
    # A profile text read over each graph's preset keeps what it does not
    # set: the decode graph stays fusable.
    text = "[backend.cpu]\nthreads = 1\n"
    prefill = rlx.CompileProfile.from_toml(
        text, base=rlx.CompileProfile.preset("llama32_prefill"))
    decode = rlx.CompileProfile.from_toml(
        text, base=rlx.CompileProfile.preset("llama32_decode"))
    assert decode.fusion.policy == "fusable"
    assert decode.backend.cpu.threads == prefill.backend.cpu.threads == 1
    assert rlx.CompileProfile.from_toml(text).fusion.policy == "direct"
    cfg = rlx.load_config(llama)
    recipe = rlx.decoder_flow_for(cfg).profile(prefill, decode=decode)
    assert recipe.flow().compile_profile == prefill
    assert recipe.for_decode().flow().compile_profile == decode
    # One profile is both graphs'.
    recipe = rlx.decoder_flow_for(cfg).profile(prefill)
    assert recipe.for_decode().flow().compile_profile == prefill


def test_recipe_errors(llama, tmp_path):
    with pytest.raises(rlx.RLXError, match="config.json"):
        rlx.Llama32Flow.from_model_dir(tmp_path)
    with pytest.raises(rlx.RLXError, match="is not one this recipe builds"):
        rlx.Qwen3Flow.from_model_dir(llama)
    with pytest.raises(rlx.RLXError, match="missing weight .model.embed_tokens.weight."):
        rlx.Llama32Flow.from_model_dir(llama).build({})


def test_weight_precision(llama, reference):
    """recipe.weight_precision('q8_0'): the matrices are kept as q8_0 blocks
    (converted at load) and the logits stay within the q8_0 rounding of the
    f32 model's."""
    weights = rlx.load_weights(llama)
    recipe = rlx.Llama32Flow.from_model_dir(llama).weight_precision("q8_0")
    built = recipe.for_prefill().build(weights)
    t = len(PROMPT)
    model = rlx.Session().compile(
        built, input_shapes={"tokens": [1, t], "positions": [1, t]}
    )
    dtypes = {e["dtype"] for e in model.manifest if e["kind"] == "param"}
    assert "q8_0" in dtypes
    model.load_params(weights)
    logits = model.run(
        {
            "tokens": np.array([PROMPT], np.int32),
            "positions": np.arange(t, dtype=np.int32)[None],
        }
    )["logits"]
    assert 1e-6 < scale_err(logits, reference) < 5e-2
    with pytest.raises(ValueError, match="expected one of: stored, f32, bf16"):
        recipe.weight_precision("q3")


def test_greedy_generation_matches_transformers(llama):
    result = rlx.generate(llama, PROMPT, 10)
    m = hf_model(llama)
    with torch.no_grad():
        hf = m.generate(torch.tensor([PROMPT]), max_new_tokens=10, do_sample=False)
    assert result.tokens == hf[0, len(PROMPT) :].tolist()
    assert result.stats.new_tokens == 10 and result.stats.prompt_tokens == len(PROMPT)
    assert result.stats.graphs_compiled >= 1


def test_kv_cache_stays_in_place(llama):
    """Decode graphs keep the past keys and values in their arenas: each
    step copies only the rows a graph has not seen. Two generations on one
    generator (the second must not see the first's cache) against
    transformers, across the 16-, 32- and 64-slot buckets."""
    weights = rlx.load_weights(llama)
    gen = rlx.Generator(
        rlx.Session(), rlx.Llama32Flow.from_model_dir(llama), weights, max_context=64
    )
    m = hf_model(llama)
    cfg = gen.config
    row_bytes = cfg.num_kv_heads * cfg.head_dim * 4 * 2 * cfg.num_layers
    for prompt in (PROMPT, [3, 1, 4, 1, 5]):
        tokens = gen.generate(prompt, 40)
        with torch.no_grad():
            hf = m.generate(torch.tensor([prompt]), max_new_tokens=40, do_sample=False)
        assert tokens == hf[0, len(prompt) :].tolist()
        # Decode steps start at len(prompt), ..., len(prompt) + 38; a graph
        # (one per bucket) copies the rows since its last step.
        held, rows = {}, 0
        for start in range(len(prompt), len(prompt) + 39):
            bucket = max(16, 1 << (start - 1).bit_length())
            rows += start - held.get(bucket, 0)
            held[bucket] = start
        assert gen.stats.past_bytes_copied == rows * row_bytes


def test_seeded_sampling(llama):
    def sample(seed):
        return rlx.generate(
            llama, [2, 3], 12, temperature=0.9, top_k=40, top_p=0.95, seed=seed
        ).tokens

    assert sample(7) == sample(7)
    assert sample(7) != sample(8) or sample(7) != sample(9)


def test_generator(llama):
    weights = rlx.load_weights(llama)
    session = rlx.Session()
    gen = rlx.Generator(
        session, rlx.Llama32Flow.from_model_dir(llama), weights, max_context=64
    )
    seen = []
    tokens, logits = gen.generate(PROMPT, 6, on_token=seen.append, return_logits=True)
    assert seen == tokens and len(tokens) == 6
    assert logits.shape == (6, gen.config.vocab_size)
    assert tokens == [int(t) for t in logits.argmax(-1)]
    assert gen.stats.decode_steps == 5

    again = gen.generate(PROMPT, 6, sampling=rlx.SamplingOptions(temperature=0.0))
    assert again == tokens

    # Stops after the first stop token, which is returned.
    first = tokens.index(tokens[2])
    assert gen.generate(PROMPT, 6, stop_tokens=[tokens[2]]) == tokens[: first + 1]
    assert gen.generate(PROMPT, 6, stop_tokens=[]) == tokens
    with pytest.raises(rlx.RLXError, match=r"stop_tokens\[0\]"):
        gen.generate(PROMPT, 6, stop_tokens=[-1])

    def stop(token):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        gen.generate(PROMPT, 3, on_token=stop)
    with pytest.raises(rlx.RLXError, match="outside the vocabulary"):
        gen.generate([10**6], 1)
    with pytest.raises(rlx.RLXError, match="exceeds the maximum of 64"):
        gen.generate(PROMPT, 100)


def test_kv_cache_precision(llama):
    """recipe.kv_cache_precision('f16'/'bf16'): the decode graphs keep keys
    and values in that type (half the bytes copied), and every step's logits
    stay within that type's rounding of the f32 cache's."""
    weights = rlx.load_weights(llama)

    def run(precision):
        recipe = rlx.Llama32Flow.from_model_dir(llama)
        if precision:
            recipe.kv_cache_precision(precision)
        gen = rlx.Generator(rlx.Session(), recipe, weights, max_context=64)
        tokens, logits = gen.generate(PROMPT, 8, return_logits=True)
        return gen, logits

    f32, want = run(None)
    for precision, tol in (("f16", 5e-3), ("bf16", 5e-2)):
        gen, got = run(precision)
        assert 0 < scale_err(got, want) < tol, precision
        assert gen.stats.past_bytes_copied * 2 == f32.stats.past_bytes_copied
    with pytest.raises(ValueError, match="expected one of: f32, f16, bf16"):
        rlx.Llama32Flow.from_model_dir(llama).kv_cache_precision("q8_0")


def test_compute_precision(llama):
    """recipe.compute_precision('f16'/'bf16'): the activations between ops
    are rounded to that type (prompt and decode graphs), so every step's
    logits move off the f32 run's, by about that type's rounding."""
    weights = rlx.load_weights(llama)

    def run(precision):
        recipe = rlx.Llama32Flow.from_model_dir(llama)
        if precision:
            recipe.compute_precision(precision)
        gen = rlx.Generator(rlx.Session(), recipe, weights, max_context=64)
        return gen.generate(PROMPT, 8, return_logits=True)[1]

    want = run(None)
    errs = {p: scale_err(run(p), want) for p in ("f16", "bf16")}
    assert 0 < errs["f16"] < 5e-3, errs
    # bf16 keeps 8 bits of mantissa to f16's 11: about 8x the rounding.
    assert 2 * errs["f16"] < errs["bf16"] < 5e-2, errs
    with pytest.raises(ValueError, match="expected one of: f32, f16, bf16"):
        rlx.Llama32Flow.from_model_dir(llama).compute_precision("f64")
