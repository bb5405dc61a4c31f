# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""rlx.Tokenizer and text in, text out rlx.generate on a tiny random LLaMA
(scripts/make_tiny_models.py) whose vocabulary is a LLaMA 3-style byte-level
BPE trained here, offline, with Hugging Face `tokenizers` (BOS 1, EOS 2):
ids and text against `tokenizers` and transformers' greedy generate, the
streamed pieces, EOS stops, chat templates and bad inputs."""

import json
import re
import shutil
import subprocess
import sys

import pytest

import rlx
from conftest import ROOT

tokenizers = pytest.importorskip("tokenizers")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

LLAMA3_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
    r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

MULTILINGUAL = [
    "Hello world! The quick brown fox jumps over the lazy dog.",
    "Grüße aus Köln: Äpfel, Öl und Übermut sind schön. Straße!",
    "Привет, мир! Съешь же ещё этих мягких французских булок.",
    "你好，世界！我爱自然语言处理。こんにちは世界。",
    "مرحبا بالعالم! नमस्ते दुनिया! Emoji: 😀🎉👍🏽 🇩🇪",
    "def foo(x):\n    return x  +  1\n\n\tif  x:\n\t\tpass    \n",
    "<|begin_of_text|>special<|end_of_text|> 1234567890 ᚠᛇᚻ",
]

TRAIN = (
    MULTILINGUAL * 3
    + [
        "The cat sat on the mat. The dog sat on the log. Hello again, world.",
        "Der schnelle braune Fuchs springt über den faulen Hund.",
        "Быстрая коричневая лиса прыгает через ленивую собаку.",
        "敏捷的棕色狐狸跳过了懒狗。世界你好。",
    ]
) * 5

CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>\n"
    "{{ m['content'] }}{{ eos_token }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """The tiny LLaMA with tokenizer.json and tokenizer_config.json, saved by
    transformers' PreTrainedTokenizerFast."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from tokenizers import processors, trainers

    out = tmp_path_factory.mktemp("generate")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|pad|>", "<|begin_of_text|>", "<|end_of_text|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(TRAIN, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A",
        special_tokens=[("<|begin_of_text|>", 1)],
    )
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "make_tiny_models.py"),
            str(out),
            "--kind",
            "llama",
            "--name",
            "llama",
            "--seed",
            "3",
            "--vocab",
            str(tok.get_vocab_size()),
        ],
        check=True,
        capture_output=True,
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|begin_of_text|>",
        eos_token="<|end_of_text|>",
        clean_up_tokenization_spaces=False,
    )
    fast.save_pretrained(out / "llama")
    return out / "llama"


@pytest.fixture(scope="module")
def hf_tokenizer(model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_dir)


@pytest.fixture(scope="module")
def hf_model(model_dir):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(
        model_dir, attn_implementation="eager"
    ).eval()


def greedy(model, ids, n):
    """n greedy tokens after `ids`, never stopping at EOS."""
    ids = list(ids)
    out = []
    with torch.no_grad():
        for _ in range(n):
            token = int(model(torch.tensor([ids + out])).logits[0, -1].argmax())
            out.append(token)
    return out


def hf_generate(model, ids, n):
    """transformers' greedy generate (stops at generation_config's EOS)."""
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), max_new_tokens=n, do_sample=False)
    return out[0, len(ids) :].tolist()


def with_eos(model_dir, tmp_path, eos):
    """A copy of the model whose generation_config.json ends on `eos`."""
    d = tmp_path / "model"
    shutil.copytree(model_dir, d)
    cfg = json.loads((d / "generation_config.json").read_text())
    cfg["eos_token_id"] = eos
    (d / "generation_config.json").write_text(json.dumps(cfg))
    return d


#===------------------------------------------------------------------------===#
# Tokenizer
#===------------------------------------------------------------------------===#


def test_tokenizer_matches_tokenizers(model_dir, hf_tokenizer):
    from tokenizers import Tokenizer as HFTokenizer

    hf = HFTokenizer.from_file(str(model_dir / "tokenizer.json"))
    for tok in (
        rlx.Tokenizer.for_model(model_dir),
        rlx.Tokenizer.from_file(model_dir / "tokenizer.json"),
    ):
        assert tok.bos_id == 1 and 2 in tok.eos_ids
        assert tok.vocab_size == hf.get_vocab_size(with_added_tokens=True)
        assert tok.token_to_id("<|end_of_text|>") == 2
        assert tok.id_to_token(2) == "<|end_of_text|>" and tok.is_special(2)
        for text in MULTILINGUAL + ["", " ", "Ünïcödé 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🦀"]:
            for special in (True, False):
                ids = tok.encode(text, add_special_tokens=special)
                assert ids == hf.encode(text, add_special_tokens=special).ids, text
                assert tok.decode(ids) == hf.decode(ids, skip_special_tokens=False)
                assert tok.decode(ids, skip_special_tokens=True) == hf.decode(ids)
            # Round trip (the text has no special tokens of its own).
            if "<|" not in text:
                assert tok.decode(tok.encode(text, add_special_tokens=False)) == text
            assert ids == hf_tokenizer(text, add_special_tokens=False).input_ids
            stream = tok.stream()
            pieces = [stream.step(i) for i in ids] + [stream.finish()]
            assert "".join(pieces) == tok.decode(ids)
    assert "BPE" in tok.description and "rlx.Tokenizer" in repr(tok)


TRUNCATION_PADDING = [
    (dict(max_length=5), None),
    (dict(max_length=7, direction="left", strategy="only_first", stride=2), None),
    (None, dict(length=24, pad_id=0, direction="right")),
    (None, dict(pad_to_multiple_of=8, pad_id=3, direction="left")),
    (dict(max_length=6), dict(length=9, pad_id=0, pad_to_multiple_of=4)),
    (None, dict(pad_id=0)),  # BatchLongest: one sequence stays as is
]


@pytest.mark.parametrize("truncation,padding", TRUNCATION_PADDING)
def test_truncation_and_padding_as_tokenizers(model_dir, tmp_path, truncation,
                                              padding):
    """tokenizer.json's truncation and padding, applied on request, give
    tokenizers' ids; by default (as transformers' calls) they are not."""
    from tokenizers import Tokenizer as HFTokenizer

    hf = HFTokenizer.from_file(str(model_dir / "tokenizer.json"))
    if truncation:
        hf.enable_truncation(**truncation)
    if padding:
        hf.enable_padding(**padding)
    path = tmp_path / "tokenizer.json"
    hf.save(str(path))
    tok = rlx.Tokenizer.from_file(path)
    plain = HFTokenizer.from_file(str(model_dir / "tokenizer.json"))
    for text in MULTILINGUAL + ["", "a"]:
        for special in (True, False):
            want = hf.encode(text, add_special_tokens=special).ids
            got = tok.encode(text, add_special_tokens=special, truncate=True,
                             pad=True)
            assert got == want, (text, special)
            assert tok.encode(text, add_special_tokens=special) == \
                plain.encode(text, add_special_tokens=special).ids


@pytest.mark.parametrize("edit,message", [
    (lambda j: j["truncation"].update(strategy="OnlySecond"),
     "truncation strategy 'OnlySecond' is not supported"),
    (lambda j: j["truncation"].update(max_length=-1),
     "truncation 'max_length' must be an integer in [0, 2^31)"),
    (lambda j: j["truncation"].update(extra=1),
     "truncation option 'extra' is not supported"),
    (lambda j: j.update(padding={"strategy": "Longest"}),
     "padding strategy must be \"BatchLongest\" or {\"Fixed\": n}"),
    (lambda j: j.update(padding={"direction": "Up"}),
     "padding direction 'Up' is not supported (Left, Right)"),
])
def test_truncation_and_padding_refused(model_dir, tmp_path, edit, message):
    data = json.loads((model_dir / "tokenizer.json").read_text())
    data["truncation"] = {"direction": "Right", "max_length": 8,
                          "strategy": "LongestFirst", "stride": 0}
    edit(data)
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data))
    with pytest.raises(rlx.RLXError, match=re.escape(message)):
        rlx.Tokenizer.from_file(path)


def test_chat_template_matches_transformers(model_dir, hf_tokenizer, tmp_path):
    d = tmp_path / "chat"
    shutil.copytree(model_dir, d)
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    cfg["chat_template"] = CHAT_TEMPLATE
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    tok = rlx.Tokenizer.for_model(d)
    assert tok.chat_template == CHAT_TEMPLATE
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Grüße, 世界!"},
    ]
    for prompt in (True, False):
        want = hf_tokenizer.apply_chat_template(
            messages,
            chat_template=CHAT_TEMPLATE,
            tokenize=False,
            add_generation_prompt=prompt,
        )
        assert tok.apply_chat_template(messages, add_generation_prompt=prompt) == want
    # generate(chat=True) runs the rendered text, its special tokens its own.
    rendered = tok.apply_chat_template(messages[1:])
    ids = tok.encode(rendered, add_special_tokens=False)
    assert ids[0] == 1
    result = rlx.generate(d, ids, 4, ignore_eos=True)
    assert rlx.generate(d, "Grüße, 世界!", 4, ignore_eos=True, chat=True) == result.text

    with pytest.raises(rlx.RLXError, match="no chat template"):
        rlx.Tokenizer.for_model(model_dir).apply_chat_template(messages)
    with pytest.raises(rlx.RLXError, match="no chat template"):
        rlx.generate(model_dir, "Hi", 2, chat=True)
    with pytest.raises(rlx.RLXError, match=r"messages\[0\]: no 'content'"):
        tok.apply_chat_template([{"role": "user"}])
    with pytest.raises(rlx.RLXError, match="needs a text prompt"):
        rlx.generate(d, [1, 2], 2, chat=True)


#===------------------------------------------------------------------------===#
# generate
#===------------------------------------------------------------------------===#


def test_generate_text_matches_transformers(model_dir, hf_tokenizer, hf_model):
    ids = hf_tokenizer("Hello world").input_ids
    want = greedy(hf_model, ids, 8)
    text = rlx.generate(model_dir, "Hello world", max_new_tokens=8, ignore_eos=True)
    assert isinstance(text, str)
    assert text == hf_tokenizer.decode(want)

    # Token ids in: the tokens, the stats and the same text.
    result = rlx.generate(model_dir, ids, 8, ignore_eos=True)
    assert result.tokens == want and result.text == text
    tokens, stats = result
    assert stats.prompt_tokens == len(ids) and stats.new_tokens == 8


def test_on_text_pieces(model_dir, hf_tokenizer, hf_model):
    prompt = "Grüße, 世界! 😀\n  def f():"
    pieces = []
    text = rlx.generate(model_dir, prompt, 12, ignore_eos=True, on_text=pieces.append)
    assert "".join(pieces) == text and len(pieces) > 1
    assert all(isinstance(p, str) and p for p in pieces)
    ids = hf_tokenizer(prompt).input_ids
    assert text == hf_tokenizer.decode(greedy(hf_model, ids, 12))

    def stop(piece):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        rlx.generate(model_dir, prompt, 4, on_text=stop)


def test_generate_stops_at_eos(model_dir, hf_tokenizer, hf_model, tmp_path):
    """With the 4th greedy token made an EOS token (generation_config.json's
    eos_token_id as a list), RLX stops where transformers does; the EOS
    token ends `tokens` but not the text. ignore_eos goes on."""
    from transformers import AutoModelForCausalLM

    ids = hf_tokenizer("Hello world").input_ids
    free = greedy(hf_model, ids, 8)
    stop = free[3]
    d = with_eos(model_dir, tmp_path, [2, stop])
    m = AutoModelForCausalLM.from_pretrained(d, attn_implementation="eager").eval()
    gen = hf_generate(m, ids, 8)
    assert gen[-1] == stop and len(gen) <= 4

    pieces = []
    text = rlx.generate(d, "Hello world", 8, on_text=pieces.append)
    assert text == hf_tokenizer.decode(gen[:-1]) == "".join(pieces)
    result = rlx.generate(d, ids, 8)
    assert result.tokens == gen and result.text == text
    assert result.stats.new_tokens == len(gen)
    assert rlx.generate(d, "Hello world", 8, ignore_eos=True) == hf_tokenizer.decode(
        free
    )
    assert rlx.generate(d, ids, 8, ignore_eos=True).tokens == free


def test_generate_gguf(tiny_models):
    """A LLaMA GGUF (its SentencePiece vocabulary the tokenizer) generates
    the tokens of the checkpoint it was written from."""
    prompt = [1, 5, 9, 13, 21]
    gguf = tiny_models / "llama.gguf"
    want = rlx.generate(tiny_models / "llama", prompt, 6, ignore_eos=True)
    assert want.text is None  # the checkpoint has no tokenizer.json
    got = rlx.generate(gguf, prompt, 6, ignore_eos=True)
    assert got.tokens == want.tokens
    tok = rlx.Tokenizer.for_model(gguf)
    assert got.text == tok.decode(got.tokens) and "llama" in tok.description
    assert tok.vocab_size == 256 and tok.id_to_token(5) == "<t5>"


def test_sampling_is_seeded(model_dir):
    def sample(seed):
        return rlx.generate(
            model_dir, "Hello", 12, temperature=0.9, top_k=40, seed=seed,
            ignore_eos=True,
        )

    assert sample(7) == sample(7)
    assert len({sample(7), sample(8), sample(9)}) > 1


def test_bad_inputs(model_dir, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(model_dir, bare)
    (bare / "tokenizer.json").unlink()
    with pytest.raises(rlx.RLXError, match=r"bare: no tokenizer: looked for .*"
                       r"tokenizer\.json"):
        rlx.generate(bare, "Hello", 2)
    with pytest.raises(rlx.RLXError, match="no tokenizer"):
        rlx.Tokenizer.for_model(bare)
    with pytest.raises(rlx.RLXError, match="no tokenizer"):
        rlx.generate(bare, [1, 5], 2, on_text=print)
    # Token ids need no tokenizer; there is no text then.
    result = rlx.generate(bare, [1, 5, 9], 3)
    assert len(result.tokens) == 3 and result.text is None

    missing = tmp_path / "nothing"
    with pytest.raises(rlx.RLXError, match="nothing: no such file or directory"):
        rlx.generate(missing, "Hello", 2)
    with pytest.raises(rlx.RLXError, match="nothing.json"):
        rlx.Tokenizer.from_file(tmp_path / "nothing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(rlx.RLXError, match="broken.json"):
        rlx.Tokenizer.from_file(broken)

    with pytest.raises(rlx.RLXError, match="temperature is -1"):
        rlx.generate(model_dir, "Hello", 2, temperature=-1)
    with pytest.raises(rlx.RLXError, match="top-p is 1.5"):
        rlx.generate(model_dir, "Hello", 2, top_p=1.5)
    with pytest.raises(rlx.RLXError, match="max_context is 0"):
        rlx.generate(model_dir, "Hello", 2, max_context=0)
    with pytest.raises(rlx.RLXError, match="exceeds"):
        rlx.generate(model_dir, "Hello", 300)
    with pytest.raises(rlx.RLXError, match="outside the vocabulary"):
        rlx.generate(model_dir, [1, 10**6], 2)
    with pytest.raises(rlx.RLXError, match=r"prompt\[1\]: -3 is not an integer"):
        rlx.generate(model_dir, [1, -3], 2)
    with pytest.raises(rlx.RLXError, match="prompt: no token ids"):
        rlx.generate(model_dir, [], 2)
    with pytest.raises(TypeError):
        rlx.Tokenizer.for_model(model_dir).decode("abc")
