# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""RLX from Python: build transformer models from blocks or Hugging Face
checkpoints, compile them (HIR -> fused MIR -> planned LIR -> LLVM, JIT) and
run them on NumPy arrays.

    import numpy as np
    import rlx

    recipe = rlx.Llama32Flow.from_model_dir("tiny-llama")
    weights = rlx.load_weights("tiny-llama")
    built = recipe.build(weights)                        # HIR, weights checked
    session = rlx.Session("cpu")
    model = session.compile(built, input_shapes={"tokens": [1, 4],
                                                 "positions": [1, 4]})
    model.load_params(weights)
    out = model.run({"tokens": np.array([[1, 2, 3, 4]], np.int32),
                     "positions": np.arange(4, dtype=np.int32)[None]})
    out["logits"].shape                                  # (1, 4, vocab)

Errors from the C++ side (parsing, verification, shapes, weights, profiles)
raise `rlx.RLXError` with the compiler's message.
"""

from __future__ import annotations

import os
from typing import NamedTuple, Sequence, Union

from ._rlx import (
    DYNAMIC,
    AttentionSpec,
    BertFlow,
    BertLayerSpec,
    BuiltModel,
    CompiledModel,
    CompileProfile,
    CompileStats,
    DecoderFlow,
    DecoderLayerSpec,
    GemmaFlow,
    GenerationStats,
    Generator,
    LayerCtx,
    LayerStack,
    Llama3RopeScaling,
    Llama32Flow,
    ModelFlow,
    Qwen3Flow,
    RLXError,
    SamplingOptions,
    Session,
    Stage,
    TransformerConfig,
    Weights,
    bert_encoder_layer,
    decode_layer,
    decoder_flow_for,
    known_fusion_patterns,
    llama_prefill_layer_composed,
    llama_prefill_layer_fused,
    load_config,
    load_weights,
)

__version__ = "0.1.0"


class GenerationResult(NamedTuple):
    """What `rlx.generate` returns."""

    tokens: list[int]
    """The new tokens (the prompt excluded)."""
    stats: GenerationStats
    """Prefill and decode timings, graphs compiled."""


def generate(
    model: Union[str, os.PathLike],
    prompt_ids: Sequence[int],
    max_new_tokens: int = 32,
    *,
    temperature: float = 0.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int = 0,
    max_context: int | None = None,
    device: str = "cpu",
) -> GenerationResult:
    """Generates up to `max_new_tokens` tokens after `prompt_ids` with the
    decoder in `model` (an HF directory of a LLaMA, Qwen3 or Gemma 2
    checkpoint, or a LLaMA GGUF file), as `rlx-run --model` does.

    temperature 0 is greedy; otherwise tokens are sampled (top_k, top_p) from
    a generator seeded with `seed`. max_context defaults to the model's
    maximum positions, capped at 512.
    """
    config = load_config(model)
    weights = load_weights(model)
    recipe = decoder_flow_for(config)
    if max_context is None:
        max_context = min(config.max_positions, 512)
    generator = Generator(Session(device), recipe, weights, max_context=max_context)
    tokens = generator.generate(
        list(prompt_ids),
        max_new_tokens,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        seed=seed,
    )
    return GenerationResult(tokens, generator.stats)


__all__ = [
    "DYNAMIC",
    "AttentionSpec",
    "BertFlow",
    "BertLayerSpec",
    "BuiltModel",
    "CompiledModel",
    "CompileProfile",
    "CompileStats",
    "DecoderFlow",
    "DecoderLayerSpec",
    "GemmaFlow",
    "GenerationResult",
    "GenerationStats",
    "Generator",
    "LayerCtx",
    "LayerStack",
    "Llama3RopeScaling",
    "Llama32Flow",
    "ModelFlow",
    "Qwen3Flow",
    "RLXError",
    "SamplingOptions",
    "Session",
    "Stage",
    "TransformerConfig",
    "Weights",
    "bert_encoder_layer",
    "decode_layer",
    "decoder_flow_for",
    "generate",
    "known_fusion_patterns",
    "llama_prefill_layer_composed",
    "llama_prefill_layer_fused",
    "load_config",
    "load_weights",
]
