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

Text in, text out, with the model's tokenizer (rlx.Tokenizer):

    rlx.generate("tiny-llama", "Hello world", 16)        # -> str

Errors from the C++ side (parsing, verification, shapes, weights, profiles)
raise `rlx.RLXError` with the compiler's message.
"""

from __future__ import annotations

import os
from typing import Callable, NamedTuple, Sequence, Union

from ._rlx import (
    DYNAMIC,
    AttentionSpec,
    BertFlow,
    VisionFlow,
    FluxFlow,
    FluxConfig,
    Qwen3NextFlow,
    Qwen3NextGenerator,
    BertLayerSpec,
    BuiltModel,
    CompiledModel,
    CompileProfile,
    CompileStats,
    DecoderFlow,
    DecoderLayerSpec,
    Emitter,
    FlowValue,
    GemmaFlow,
    GenerationStats,
    Generator,
    LayerCtx,
    LayerStack,
    Llama3RopeScaling,
    Llama32Flow,
    ModelFlow,
    MoeSpec,
    Qwen3Flow,
    RLXError,
    SamplingOptions,
    Session,
    Stage,
    TextStream,
    Tokenizer,
    TransformerConfig,
    Weights,
    bert_encoder_layer,
    check_same_on_all_ranks,
    collective_rank,
    collective_size,
    decode_layer,
    decoder_flow_for,
    known_fusion_patterns,
    llama_prefill_layer_composed,
    llama_prefill_layer_fused,
    plugins,
    register_plugin,
    set_communicator,
    unregister_plugin,
    _generate,
    load_config,
    load_weights,
)

__version__ = "0.1.0"


class _GenerationFields(NamedTuple):
    tokens: list[int]
    stats: GenerationStats


class GenerationResult(_GenerationFields):
    """What `rlx.generate` returns for a prompt of token ids: a
    (tokens, stats) pair with the text besides."""

    tokens: list[int]
    """The new tokens (the prompt excluded; a final EOS token included)."""
    stats: GenerationStats
    """Prefill and decode timings, graphs compiled."""

    def __new__(cls, tokens, stats, text=None):
        self = super().__new__(cls, tokens, stats)
        self._text = text
        return self

    @property
    def text(self) -> str | None:
        """The text of the new tokens (a final EOS token left out), or None
        when the model has no tokenizer."""
        return getattr(self, "_text", None)


def generate(
    model: Union[str, os.PathLike],
    prompt: Union[str, Sequence[int]],
    max_new_tokens: int = 32,
    *,
    temperature: float = 0.0,
    top_k: int = 0,
    top_p: float = 1.0,
    seed: int = 0,
    ignore_eos: bool = False,
    chat: bool = False,
    max_context: int | None = None,
    on_text: Callable[[str], object] | None = None,
    device: str = "cpu",
) -> Union[str, GenerationResult]:
    """Generates up to `max_new_tokens` tokens after `prompt` with the decoder
    in `model`, as `rlx-run --model` does, and returns the new text.

        rlx.generate("tiny-llama", "Hello world", 16)   # -> str

    model: a Hugging Face model directory (config.json, safetensors and,
    for text, tokenizer.json) or a GGUF file; the weights are read as the
    model's recipe reads them (Phi-3's fused matrices split), the tokenizer
    is `rlx.Tokenizer.for_model(model)`, and the graphs compile with the
    recipe's default profiles.

    prompt: a str is encoded with the model's tokenizer (its special tokens
    added, e.g. BOS) and the new text is returned as a str. A sequence of
    token ids is run as is and returns a `GenerationResult` (tokens, stats)
    whose `.text` is the new text (None when the model has no tokenizer).

    Generation stops after an EOS token of the tokenizer (tokenizer_config,
    generation_config.json's eos_token_id, or the GGUF's) unless
    `ignore_eos`; that token is in `tokens` but not in the text. Without a
    tokenizer (token ids only) it never stops early.

    temperature 0 is greedy; otherwise tokens are sampled (top_k 0 and
    top_p 1 keep all tokens) from a generator seeded with `seed`.
    chat: render the prompt as one user message through the tokenizer's
    chat template (with the generation prompt) before encoding it.
    max_context: the most tokens (prompt and new ones) the KV cache holds;
    by default len(prompt) + max_new_tokens, at most the model's positions.
    on_text(piece) is called with the text as it is generated, one complete
    UTF-8 piece at a time; the pieces concatenate to the returned text. An
    exception it raises ends the call once generation returns.
    device: "cpu" or "vulkan".

    Bad inputs (no tokenizer for a text prompt, negative temperature, top_p
    outside (0, 1], a prompt too long for the context, ids outside the
    vocabulary) raise `rlx.RLXError` naming them.
    """
    text, tokens, stats = _generate(
        model,
        prompt,
        max_new_tokens,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        seed=seed,
        ignore_eos=ignore_eos,
        chat=chat,
        max_context=max_context,
        on_text=on_text,
        device=device,
    )
    if isinstance(prompt, str):
        return text
    return GenerationResult(tokens, stats, text)


__all__ = [
    "DYNAMIC",
    "AttentionSpec",
    "BertFlow",
    "VisionFlow",
    "FluxFlow",
    "FluxConfig",
    "Qwen3NextFlow",
    "Qwen3NextGenerator",
    "BertLayerSpec",
    "BuiltModel",
    "CompiledModel",
    "CompileProfile",
    "CompileStats",
    "DecoderFlow",
    "DecoderLayerSpec",
    "Emitter",
    "FlowValue",
    "GemmaFlow",
    "GenerationResult",
    "GenerationStats",
    "Generator",
    "LayerCtx",
    "LayerStack",
    "Llama3RopeScaling",
    "Llama32Flow",
    "ModelFlow",
    "MoeSpec",
    "Qwen3Flow",
    "RLXError",
    "SamplingOptions",
    "Session",
    "Stage",
    "TextStream",
    "Tokenizer",
    "TransformerConfig",
    "Weights",
    "bert_encoder_layer",
    "check_same_on_all_ranks",
    "collective_rank",
    "collective_size",
    "decode_layer",
    "decoder_flow_for",
    "generate",
    "known_fusion_patterns",
    "llama_prefill_layer_composed",
    "llama_prefill_layer_fused",
    "plugins",
    "register_plugin",
    "set_communicator",
    "unregister_plugin",
    "load_config",
    "load_weights",
]
