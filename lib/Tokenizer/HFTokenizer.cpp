//===- HFTokenizer.cpp - Reading Hugging Face tokenizer.json --------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// tokenizer.json as the `tokenizers` library writes it. Each component is
// checked key by key: a type or option that is not implemented is an error
// naming it and the file.
//
//===----------------------------------------------------------------------===//

#include "RLX/Tokenizer/Unicode.h"
#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/JSON.h"
#include "TokenizerImpl.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace rlx;
using namespace rlx::tok;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;
namespace json = llvm::json;

namespace {
/// Builds errors that name the file.
struct Loader {
  std::string file;
  Tokenizer::Impl &t;

  Error fail(const llvm::Twine &msg) const {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   file + ": " + msg);
  }
  Error unsupported(StringRef what, StringRef type) const {
    return fail(what + " '" + type + "' is not supported");
  }

  /// Refuses keys of `o` outside `known` (besides "type").
  Error checkKeys(const json::Object &o, StringRef what, StringRef type,
                  std::initializer_list<StringRef> known) const {
    for (const auto &kv : o) {
      StringRef key = kv.first;
      if (key == "type" || llvm::is_contained(known, key))
        continue;
      return fail("option '" + key + "' of " + what + " '" + type +
                  "' is not supported");
    }
    return Error::success();
  }

  Expected<StringRef> typeOf(const json::Object &o, StringRef what) const {
    std::optional<StringRef> type = o.getString("type");
    if (!type)
      return fail(what + " without a \"type\"");
    return *type;
  }

  bool flag(const json::Object &o, StringRef key, bool fallback) const {
    return o.getBoolean(key).value_or(fallback);
  }

  /// {"String": s} patterns; Regex ones are refused unless `regexOk`.
  Expected<std::pair<std::string, bool>>
  pattern(const json::Object &o, StringRef what, StringRef type) const {
    const json::Object *p = o.getObject("pattern");
    if (!p)
      return fail(what + " '" + type + "' without a pattern");
    if (std::optional<StringRef> s = p->getString("String"))
      return std::make_pair(s->str(), false);
    if (std::optional<StringRef> r = p->getString("Regex"))
      return std::make_pair(r->str(), true);
    return fail(what + " '" + type +
                "' has a pattern that is neither "
                "String nor Regex");
  }

  Error normalizer(const json::Value &v);
  Error preTokenizer(const json::Value &v);
  Error model(const json::Object &o);
  Error postProcessor(const json::Value &v);
  Error decoder(const json::Value &v);
  Error truncation(const json::Value &v);
  Error padding(const json::Value &v);
  Error addedTokens(const json::Array &a);
};
} // namespace

static Expected<Behavior> behaviorOf(const Loader &l, const json::Object &o,
                                     StringRef type) {
  StringRef b = o.getString("behavior").value_or("Isolated");
  if (b == "Removed")
    return Behavior::Removed;
  if (b == "Isolated")
    return Behavior::Isolated;
  if (b == "MergedWithPrevious")
    return Behavior::MergedWithPrevious;
  if (b == "MergedWithNext")
    return Behavior::MergedWithNext;
  if (b == "Contiguous")
    return Behavior::Contiguous;
  return l.fail("behavior '" + b + "' of pre-tokenizer '" + type +
                "' is not supported");
}

Error Loader::normalizer(const json::Value &v) {
  if (v.kind() == json::Value::Null)
    return Error::success();
  const json::Object *o = v.getAsObject();
  if (!o)
    return fail("a normalizer is not an object");
  Expected<StringRef> type = typeOf(*o, "normalizer");
  if (!type)
    return type.takeError();
  Normalizer n{Normalizer::NFC, {}, {}};
  if (*type == "Sequence") {
    if (Error err = checkKeys(*o, "normalizer", *type, {"normalizers"}))
      return err;
    const json::Array *list = o->getArray("normalizers");
    if (!list)
      return fail("normalizer 'Sequence' without \"normalizers\"");
    for (const json::Value &e : *list)
      if (Error err = normalizer(e))
        return err;
    return Error::success();
  }
  if (*type == "NFC" || *type == "NFD" || *type == "NFKC" || *type == "NFKD" ||
      *type == "Lowercase" || *type == "StripAccents" || *type == "ByteLevel") {
    if (Error err = checkKeys(*o, "normalizer", *type, {}))
      return err;
    n.kind = *type == "NFC"            ? Normalizer::NFC
             : *type == "NFD"          ? Normalizer::NFD
             : *type == "NFKC"         ? Normalizer::NFKC
             : *type == "NFKD"         ? Normalizer::NFKD
             : *type == "Lowercase"    ? Normalizer::Lowercase
             : *type == "StripAccents" ? Normalizer::StripAccents
                                       : Normalizer::ByteLevel;
  } else if (*type == "Strip") {
    if (Error err =
            checkKeys(*o, "normalizer", *type, {"strip_left", "strip_right"}))
      return err;
    n.kind = Normalizer::Strip;
    n.left = flag(*o, "strip_left", true);
    n.right = flag(*o, "strip_right", true);
  } else if (*type == "Replace") {
    if (Error err = checkKeys(*o, "normalizer", *type, {"pattern", "content"}))
      return err;
    auto p = pattern(*o, "normalizer", *type);
    if (!p)
      return p.takeError();
    if (p->second)
      return fail("normalizer 'Replace' with the regex '" + p->first +
                  "' is not supported (only String patterns)");
    n.kind = Normalizer::Replace;
    n.pattern = p->first;
    n.content = o->getString("content").value_or("").str();
  } else if (*type == "Prepend") {
    if (Error err = checkKeys(*o, "normalizer", *type, {"prepend"}))
      return err;
    n.kind = Normalizer::Prepend;
    n.content = o->getString("prepend").value_or("").str();
  } else if (*type == "BertNormalizer") {
    if (Error err = checkKeys(*o, "normalizer", *type,
                              {"clean_text", "handle_chinese_chars",
                               "strip_accents", "lowercase"}))
      return err;
    n.kind = Normalizer::Bert;
    n.cleanText = flag(*o, "clean_text", true);
    n.chineseChars = flag(*o, "handle_chinese_chars", true);
    n.lowercase = flag(*o, "lowercase", true);
    n.stripAccents = flag(*o, "strip_accents", n.lowercase);
  } else {
    return unsupported("normalizer", *type);
  }
  t.normalizers.push_back(std::move(n));
  return Error::success();
}

Error Loader::preTokenizer(const json::Value &v) {
  if (v.kind() == json::Value::Null)
    return Error::success();
  const json::Object *o = v.getAsObject();
  if (!o)
    return fail("a pre-tokenizer is not an object");
  Expected<StringRef> type = typeOf(*o, "pre-tokenizer");
  if (!type)
    return type.takeError();
  StringRef what = "pre-tokenizer";
  PreTokenizer p{PreTokenizer::ByteLevel};
  if (*type == "Sequence") {
    if (Error err = checkKeys(*o, what, *type, {"pretokenizers"}))
      return err;
    const json::Array *list = o->getArray("pretokenizers");
    if (!list)
      return fail("pre-tokenizer 'Sequence' without \"pretokenizers\"");
    for (const json::Value &e : *list)
      if (Error err = preTokenizer(e))
        return err;
    return Error::success();
  }
  if (*type == "ByteLevel") {
    if (Error err = checkKeys(
            *o, what, *type, {"add_prefix_space", "trim_offsets", "use_regex"}))
      return err;
    p.kind = PreTokenizer::ByteLevel;
    p.addPrefixSpace = flag(*o, "add_prefix_space", true);
    p.useRegex = flag(*o, "use_regex", true);
  } else if (*type == "Split") {
    if (Error err =
            checkKeys(*o, what, *type, {"pattern", "behavior", "invert"}))
      return err;
    auto pat = pattern(*o, what, *type);
    if (!pat)
      return pat.takeError();
    Expected<Behavior> b = behaviorOf(*this, *o, *type);
    if (!b)
      return b.takeError();
    p.behavior = *b;
    p.invert = flag(*o, "invert", false);
    if (pat->second) {
      std::optional<rlx::SplitRegex> r = splitRegexFor(pat->first);
      if (!r)
        return fail("pre-tokenizer 'Split' with the regex '" + pat->first +
                    "' is not supported (known: the GPT-2, LLaMA 3 and "
                    "Qwen2 regexes)");
      p.kind = PreTokenizer::SplitRegex;
      p.regex = *r;
    } else {
      p.kind = PreTokenizer::SplitString;
      p.literal = pat->first;
    }
  } else if (*type == "Metaspace") {
    if (Error err = checkKeys(*o, what, *type,
                              {"replacement", "prepend_scheme", "split",
                               "add_prefix_space", "str_rep"}))
      return err;
    p.kind = PreTokenizer::Metaspace;
    p.replacement = o->getString("replacement").value_or("\xE2\x96\x81").str();
    if (unicode::decodeUTF8(p.replacement)
            .value_or(std::vector<uint32_t>())
            .size() != 1)
      return fail("pre-tokenizer 'Metaspace' with a replacement that is not "
                  "one character");
    p.split = flag(*o, "split", true);
    StringRef scheme = o->getString("prepend_scheme").value_or("");
    if (scheme.empty())
      p.prepend = flag(*o, "add_prefix_space", true) ? PreTokenizer::Always
                                                     : PreTokenizer::Never;
    else if (scheme == "always")
      p.prepend = PreTokenizer::Always;
    else if (scheme == "first")
      p.prepend = PreTokenizer::First;
    else if (scheme == "never")
      p.prepend = PreTokenizer::Never;
    else
      return fail("prepend_scheme '" + scheme +
                  "' of pre-tokenizer 'Metaspace' is not supported");
  } else if (*type == "BertPreTokenizer" || *type == "Whitespace" ||
             *type == "WhitespaceSplit") {
    if (Error err = checkKeys(*o, what, *type, {}))
      return err;
    p.kind = *type == "BertPreTokenizer" ? PreTokenizer::Bert
             : *type == "Whitespace"     ? PreTokenizer::Whitespace
                                         : PreTokenizer::WhitespaceSplit;
  } else if (*type == "Digits") {
    if (Error err = checkKeys(*o, what, *type, {"individual_digits"}))
      return err;
    p.kind = PreTokenizer::Digits;
    p.individualDigits = flag(*o, "individual_digits", false);
  } else if (*type == "Punctuation") {
    if (Error err = checkKeys(*o, what, *type, {"behavior"}))
      return err;
    Expected<Behavior> b = behaviorOf(*this, *o, *type);
    if (!b)
      return b.takeError();
    p.kind = PreTokenizer::Punctuation;
    p.behavior = *b;
  } else if (*type == "CharDelimiterSplit") {
    if (Error err = checkKeys(*o, what, *type, {"delimiter"}))
      return err;
    auto d = unicode::decodeUTF8(o->getString("delimiter").value_or(""));
    if (!d || d->size() != 1)
      return fail("pre-tokenizer 'CharDelimiterSplit' needs a one-character "
                  "delimiter");
    p.kind = PreTokenizer::CharDelimiter;
    p.delimiter = d->front();
  } else {
    return unsupported(what, *type);
  }
  t.preTokenizers.push_back(std::move(p));
  return Error::success();
}

Error Loader::model(const json::Object &o) {
  Model &m = t.model;
  std::optional<StringRef> type = o.getString("type");
  // Files written by old versions of `tokenizers` leave BPE's type out.
  StringRef kind = type ? *type : (o.get("merges") ? "BPE" : "");
  if (kind.empty())
    return fail("model without a \"type\"");
  auto setUnk = [&](StringRef key) -> Error {
    const json::Value *u = o.get(key);
    if (!u || u->kind() == json::Value::Null)
      return Error::success();
    std::optional<StringRef> s = u->getAsString();
    if (!s)
      return fail("model '" + kind + "': \"" + key + "\" is not a string");
    auto it = m.ids.find(*s);
    if (it == m.ids.end())
      return fail("model '" + kind + "': the unknown token '" + *s +
                  "' is not in the vocabulary");
    m.unk = it->second;
    return Error::success();
  };
  auto readVocabObject = [&]() -> Error {
    const json::Object *vocab = o.getObject("vocab");
    if (!vocab)
      return fail("model '" + kind + "' without a \"vocab\" object");
    for (const auto &kv : *vocab) {
      std::optional<int64_t> id = kv.second.getAsInteger();
      if (!id || *id < 0 || *id > INT32_MAX)
        return fail("model '" + kind + "': token '" + StringRef(kv.first) +
                    "' has no valid id");
      if (static_cast<size_t>(*id) >= m.vocab.size())
        m.vocab.resize(*id + 1);
      m.vocab[*id] = kv.first.str();
      m.ids[kv.first.str()] = static_cast<int32_t>(*id);
    }
    return Error::success();
  };
  if (kind == "BPE") {
    if (Error err =
            checkKeys(o, "model", kind,
                      {"dropout", "unk_token", "continuing_subword_prefix",
                       "end_of_word_suffix", "fuse_unk", "byte_fallback",
                       "ignore_merges", "vocab", "merges"}))
      return err;
    for (StringRef key :
         {"dropout", "continuing_subword_prefix", "end_of_word_suffix"}) {
      const json::Value *v = o.get(key);
      if (v && v->kind() != json::Value::Null &&
          !(v->getAsString() && v->getAsString()->empty()))
        return fail("option '" + key + "' of model 'BPE' is not supported");
    }
    m.kind = Model::BPE;
    if (Error err = readVocabObject())
      return err;
    if (Error err = setUnk("unk_token"))
      return err;
    m.fuseUnk = flag(o, "fuse_unk", false);
    m.byteFallback = flag(o, "byte_fallback", false);
    m.ignoreMerges = flag(o, "ignore_merges", false);
    const json::Array *merges = o.getArray("merges");
    if (!merges)
      return fail("model 'BPE' without \"merges\"");
    uint32_t rank = 0;
    for (const json::Value &e : *merges) {
      std::string a, b;
      if (std::optional<StringRef> s = e.getAsString()) {
        auto [x, y] = s->split(' ');
        a = x.str();
        b = y.str();
      } else if (const json::Array *pair = e.getAsArray();
                 pair && pair->size() == 2 && (*pair)[0].getAsString() &&
                 (*pair)[1].getAsString()) {
        a = (*pair)[0].getAsString()->str();
        b = (*pair)[1].getAsString()->str();
      } else {
        return fail("model 'BPE': merge " + llvm::Twine(rank) +
                    " is neither \"a b\" nor [\"a\", \"b\"]");
      }
      auto ia = m.ids.find(a), ib = m.ids.find(b), im = m.ids.find(a + b);
      if (ia == m.ids.end() || ib == m.ids.end() || im == m.ids.end())
        return fail("model 'BPE': merge " + llvm::Twine(rank) + " ('" + a +
                    "', '" + b + "') uses a token missing from the vocabulary");
      m.merges.try_emplace({ia->second, ib->second}, rank, im->second);
      ++rank;
    }
  } else if (kind == "WordPiece") {
    if (Error err = checkKeys(o, "model", kind,
                              {"unk_token", "continuing_subword_prefix",
                               "max_input_chars_per_word", "vocab"}))
      return err;
    m.kind = Model::WordPiece;
    if (Error err = readVocabObject())
      return err;
    if (Error err = setUnk("unk_token"))
      return err;
    if (!m.unk)
      return fail("model 'WordPiece' without an unknown token");
    m.prefix = o.getString("continuing_subword_prefix").value_or("##").str();
    m.maxInputChars = o.getInteger("max_input_chars_per_word").value_or(100);
  } else if (kind == "WordLevel") {
    if (Error err = checkKeys(o, "model", kind, {"unk_token", "vocab"}))
      return err;
    m.kind = Model::WordLevel;
    if (Error err = readVocabObject())
      return err;
    if (Error err = setUnk("unk_token"))
      return err;
  } else if (kind == "Unigram") {
    if (Error err =
            checkKeys(o, "model", kind, {"unk_id", "vocab", "byte_fallback"}))
      return err;
    m.kind = Model::Unigram;
    const json::Array *vocab = o.getArray("vocab");
    if (!vocab)
      return fail("model 'Unigram' without a \"vocab\" list");
    m.minScore = 0;
    bool first = true;
    for (const json::Value &e : *vocab) {
      const json::Array *pair = e.getAsArray();
      if (!pair || pair->size() != 2 || !(*pair)[0].getAsString() ||
          !(*pair)[1].getAsNumber())
        return fail("model 'Unigram': vocabulary entry " +
                    llvm::Twine(m.vocab.size()) + " is not [piece, score]");
      std::string piece = (*pair)[0].getAsString()->str();
      double score = *(*pair)[1].getAsNumber();
      m.ids.try_emplace(piece, static_cast<int32_t>(m.vocab.size()));
      m.maxTokenBytes = std::max(m.maxTokenBytes, piece.size());
      m.vocab.push_back(std::move(piece));
      m.scores.push_back(score);
      m.minScore = first ? score : std::min(m.minScore, score);
      first = false;
    }
    if (std::optional<int64_t> unk = o.getInteger("unk_id")) {
      if (*unk < 0 || static_cast<size_t>(*unk) >= m.vocab.size())
        return fail("model 'Unigram': unk_id " + llvm::Twine(*unk) +
                    " is outside the vocabulary");
      m.unk = static_cast<int32_t>(*unk);
    }
    m.byteFallback = flag(o, "byte_fallback", false);
  } else {
    return unsupported("model", kind);
  }
  m.byteIds.fill(-1);
  for (unsigned b = 0; b < 256; ++b) {
    char name[8];
    snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = m.ids.find(name);
    if (it != m.ids.end())
      m.byteIds[b] = it->second;
  }
  return Error::success();
}

Error Loader::postProcessor(const json::Value &v) {
  if (v.kind() == json::Value::Null)
    return Error::success();
  const json::Object *o = v.getAsObject();
  if (!o)
    return fail("the post-processor is not an object");
  Expected<StringRef> type = typeOf(*o, "post-processor");
  if (!type)
    return type.takeError();
  StringRef what = "post-processor";
  std::vector<int32_t> prefix, suffix;
  auto named = [&](StringRef key) -> Expected<int32_t> {
    const json::Array *a = o->getArray(key);
    if (!a || a->size() != 2 || !(*a)[1].getAsInteger())
      return fail("post-processor '" + *type + "': \"" + key +
                  "\" is not [token, id]");
    return static_cast<int32_t>(*(*a)[1].getAsInteger());
  };
  if (*type == "Sequence") {
    if (Error err = checkKeys(*o, what, *type, {"processors"}))
      return err;
    const json::Array *list = o->getArray("processors");
    if (!list)
      return fail("post-processor 'Sequence' without \"processors\"");
    for (const json::Value &e : *list)
      if (Error err = postProcessor(e))
        return err;
    return Error::success();
  }
  if (*type == "ByteLevel") {
    // Only offsets change.
    return checkKeys(*o, what, *type,
                     {"add_prefix_space", "trim_offsets", "use_regex"});
  }
  if (*type == "BertProcessing" || *type == "RobertaProcessing") {
    if (Error err =
            checkKeys(*o, what, *type,
                      {"sep", "cls", "trim_offsets", "add_prefix_space"}))
      return err;
    Expected<int32_t> cls = named("cls");
    if (!cls)
      return cls.takeError();
    Expected<int32_t> sep = named("sep");
    if (!sep)
      return sep.takeError();
    prefix = {*cls};
    suffix = {*sep};
  } else if (*type == "TemplateProcessing") {
    if (Error err =
            checkKeys(*o, what, *type, {"single", "pair", "special_tokens"}))
      return err;
    const json::Array *single = o->getArray("single");
    const json::Object *specials = o->getObject("special_tokens");
    if (!single)
      return fail("post-processor 'TemplateProcessing' without \"single\"");
    bool seenSequence = false;
    for (const json::Value &e : *single) {
      const json::Object *item = e.getAsObject();
      if (!item)
        return fail("post-processor 'TemplateProcessing': a template piece "
                    "is not an object");
      if (const json::Object *seq = item->getObject("Sequence")) {
        if (seenSequence || seq->getString("id").value_or("A") != "A")
          return fail("post-processor 'TemplateProcessing': the single "
                      "template must hold the sequence $A once");
        seenSequence = true;
        continue;
      }
      const json::Object *sp = item->getObject("SpecialToken");
      std::optional<StringRef> id = sp ? sp->getString("id") : std::nullopt;
      if (!id)
        return fail("post-processor 'TemplateProcessing': a template piece "
                    "is neither Sequence nor SpecialToken");
      const json::Object *entry = specials ? specials->getObject(*id) : nullptr;
      const json::Array *ids = entry ? entry->getArray("ids") : nullptr;
      if (!ids)
        return fail("post-processor 'TemplateProcessing': special token '" +
                    *id + "' has no ids");
      for (const json::Value &x : *ids) {
        std::optional<int64_t> n = x.getAsInteger();
        if (!n)
          return fail("post-processor 'TemplateProcessing': special token '" +
                      *id + "' has a non-integer id");
        (seenSequence ? suffix : prefix).push_back(static_cast<int32_t>(*n));
      }
    }
    if (!seenSequence)
      return fail("post-processor 'TemplateProcessing': the single template "
                  "has no $A");
  } else {
    return unsupported(what, *type);
  }
  // Later processors wrap the result of earlier ones.
  prefix.insert(prefix.end(), t.prefix.begin(), t.prefix.end());
  t.prefix = std::move(prefix);
  t.suffix.insert(t.suffix.end(), suffix.begin(), suffix.end());
  return Error::success();
}

Error Loader::decoder(const json::Value &v) {
  if (v.kind() == json::Value::Null)
    return Error::success();
  const json::Object *o = v.getAsObject();
  if (!o)
    return fail("the decoder is not an object");
  Expected<StringRef> type = typeOf(*o, "decoder");
  if (!type)
    return type.takeError();
  StringRef what = "decoder";
  t.hasDecoder = true;
  Decoder d{Decoder::Fuse};
  if (*type == "Sequence") {
    if (Error err = checkKeys(*o, what, *type, {"decoders"}))
      return err;
    const json::Array *list = o->getArray("decoders");
    if (!list)
      return fail("decoder 'Sequence' without \"decoders\"");
    for (const json::Value &e : *list)
      if (Error err = decoder(e))
        return err;
    return Error::success();
  }
  if (*type == "ByteLevel") {
    if (Error err = checkKeys(
            *o, what, *type, {"add_prefix_space", "trim_offsets", "use_regex"}))
      return err;
    d.kind = Decoder::ByteLevel;
  } else if (*type == "WordPiece") {
    if (Error err = checkKeys(*o, what, *type, {"prefix", "cleanup"}))
      return err;
    d.kind = Decoder::WordPiece;
    d.pattern = o->getString("prefix").value_or("##").str();
    d.cleanup = flag(*o, "cleanup", true);
  } else if (*type == "Metaspace") {
    if (Error err = checkKeys(*o, what, *type,
                              {"replacement", "prepend_scheme", "split",
                               "add_prefix_space", "str_rep"}))
      return err;
    d.kind = Decoder::Metaspace;
    d.pattern = o->getString("replacement").value_or("\xE2\x96\x81").str();
    StringRef scheme = o->getString("prepend_scheme").value_or("");
    d.prependFirst =
        scheme.empty() ? flag(*o, "add_prefix_space", true) : scheme != "never";
  } else if (*type == "Replace") {
    if (Error err = checkKeys(*o, what, *type, {"pattern", "content"}))
      return err;
    auto p = pattern(*o, what, *type);
    if (!p)
      return p.takeError();
    if (p->second)
      return fail("decoder 'Replace' with the regex '" + p->first +
                  "' is not supported (only String patterns)");
    d.kind = Decoder::Replace;
    d.pattern = p->first;
    d.content = o->getString("content").value_or("").str();
  } else if (*type == "ByteFallback" || *type == "Fuse") {
    if (Error err = checkKeys(*o, what, *type, {}))
      return err;
    d.kind = *type == "Fuse" ? Decoder::Fuse : Decoder::ByteFallback;
  } else if (*type == "Strip") {
    if (Error err = checkKeys(*o, what, *type, {"content", "start", "stop"}))
      return err;
    d.kind = Decoder::Strip;
    d.content = o->getString("content").value_or(" ").str();
    if (unicode::decodeUTF8(d.content)
            .value_or(std::vector<uint32_t>())
            .size() != 1)
      return fail("decoder 'Strip' with content that is not one character");
    d.start = o->getInteger("start").value_or(0);
    d.stop = o->getInteger("stop").value_or(0);
  } else {
    return unsupported(what, *type);
  }
  t.decoders.push_back(std::move(d));
  return Error::success();
}

Error Loader::addedTokens(const json::Array &a) {
  for (const json::Value &e : a) {
    const json::Object *o = e.getAsObject();
    if (!o)
      return fail("an added token is not an object");
    if (Error err = checkKeys(*o, "added token", "",
                              {"id", "content", "single_word", "lstrip",
                               "rstrip", "normalized", "special"}))
      return err;
    AddedToken tok;
    std::optional<int64_t> id = o->getInteger("id");
    std::optional<StringRef> content = o->getString("content");
    if (!id || !content || *id < 0 || *id > INT32_MAX)
      return fail("an added token without a valid id and content");
    tok.id = static_cast<int32_t>(*id);
    tok.content = content->str();
    tok.special = flag(*o, "special", false);
    tok.lstrip = flag(*o, "lstrip", false);
    tok.rstrip = flag(*o, "rstrip", false);
    tok.singleWord = flag(*o, "single_word", false);
    tok.normalized = flag(*o, "normalized", !tok.special);
    t.added.push_back(std::move(tok));
  }
  return Error::success();
}

/// A "Left" / "Right" direction.
static Expected<bool> leftOf(const Loader &l, const json::Object &o,
                             StringRef what) {
  StringRef d = o.getString("direction").value_or("Right");
  if (d != "Left" && d != "Right")
    return l.fail(what + " direction '" + d +
                  "' is not supported (Left, Right)");
  return d == "Left";
}

/// A count field of `o`: an integer >= 0 (or null, when `nullable`).
static Expected<size_t> countOf(const Loader &l, const json::Object &o,
                                StringRef what, StringRef key,
                                bool nullable = false) {
  const json::Value *v = o.get(key);
  if (!v || (nullable && v->kind() == json::Value::Null))
    return 0;
  std::optional<int64_t> n = v->getAsInteger();
  if (!n || *n < 0 || *n > INT32_MAX)
    return l.fail(what + " '" + key + "' must be an integer in [0, 2^31)");
  return static_cast<size_t>(*n);
}

Error Loader::truncation(const json::Value &v) {
  if (v.kind() == json::Value::Null)
    return Error::success();
  const json::Object *o = v.getAsObject();
  if (!o)
    return fail("truncation is not an object");
  for (const auto &kv : *o)
    if (!llvm::is_contained({"direction", "max_length", "strategy", "stride"},
                            StringRef(kv.first)))
      return fail("truncation option '" + StringRef(kv.first) +
                  "' is not supported");
  Tokenizer::Impl::Truncation cut;
  Expected<bool> left = leftOf(*this, *o, "truncation");
  if (!left)
    return left.takeError();
  cut.left = *left;
  if (!o->get("max_length"))
    return fail("truncation without \"max_length\"");
  Expected<size_t> max = countOf(*this, *o, "truncation", "max_length");
  if (!max)
    return max.takeError();
  cut.maxLength = *max;
  // The stride shapes only the overflowing pieces tokenizers returns beside
  // the ids, which one encode does not produce: checked, not used.
  if (Expected<size_t> stride = countOf(*this, *o, "truncation", "stride");
      !stride)
    return stride.takeError();
  // One sequence: LongestFirst and OnlyFirst cut it alike.
  StringRef strategy = o->getString("strategy").value_or("LongestFirst");
  if (strategy != "LongestFirst" && strategy != "OnlyFirst")
    return fail("truncation strategy '" + strategy +
                "' is not supported (LongestFirst, OnlyFirst: RLX encodes "
                "one sequence)");
  t.truncation = cut;
  return Error::success();
}

Error Loader::padding(const json::Value &v) {
  if (v.kind() == json::Value::Null)
    return Error::success();
  const json::Object *o = v.getAsObject();
  if (!o)
    return fail("padding is not an object");
  for (const auto &kv : *o)
    if (!llvm::is_contained({"strategy", "direction", "pad_to_multiple_of",
                             "pad_id", "pad_type_id", "pad_token"},
                            StringRef(kv.first)))
      return fail("padding option '" + StringRef(kv.first) +
                  "' is not supported");
  Tokenizer::Impl::Padding p;
  Expected<bool> left = leftOf(*this, *o, "padding");
  if (!left)
    return left.takeError();
  p.left = *left;
  Expected<size_t> multiple =
      countOf(*this, *o, "padding", "pad_to_multiple_of", /*nullable=*/true);
  if (!multiple)
    return multiple.takeError();
  p.multipleOf = *multiple;
  // pad_id is what pads; pad_token names it and pad_type_id pads the type
  // ids, which encode does not return.
  Expected<size_t> id = countOf(*this, *o, "padding", "pad_id");
  if (!id)
    return id.takeError();
  p.padId = static_cast<int32_t>(*id);
  // "BatchLongest" pads a batch to its longest: one sequence stays as is.
  const json::Value *strategy = o->get("strategy");
  if (strategy && strategy->getAsString() != StringRef("BatchLongest")) {
    const json::Object *fixed = strategy->getAsObject();
    if (!fixed || fixed->size() != 1 || !fixed->get("Fixed"))
      return fail("padding strategy must be \"BatchLongest\" or "
                  "{\"Fixed\": n}");
    Expected<size_t> n = countOf(*this, *fixed, "padding", "Fixed");
    if (!n)
      return n.takeError();
    p.fixed = *n;
  }
  t.padding = p;
  return Error::success();
}

Expected<Tokenizer> Tokenizer::fromJSON(StringRef text, StringRef description) {
  auto impl = std::make_shared<Impl>();
  Loader l{description.str(), *impl};
  Expected<json::Value> parsed = parseJSON(text);
  if (!parsed)
    return l.fail(llvm::toString(parsed.takeError()));
  const json::Object *root = parsed->getAsObject();
  if (!root)
    return l.fail("not a JSON object");
  for (const auto &kv : *root) {
    StringRef key = kv.first;
    if (key == "version" || key == "added_tokens" || key == "normalizer" ||
        key == "pre_tokenizer" || key == "model" || key == "post_processor" ||
        key == "decoder")
      continue;
    if (key != "truncation" && key != "padding")
      return l.fail("top-level key '" + key + "' is not supported");
  }
  const json::Object *model = root->getObject("model");
  if (!model)
    return l.fail("no \"model\"");
  if (Error err = l.model(*model))
    return std::move(err);
  if (const json::Value *v = root->get("normalizer"))
    if (Error err = l.normalizer(*v))
      return std::move(err);
  if (const json::Value *v = root->get("pre_tokenizer"))
    if (Error err = l.preTokenizer(*v))
      return std::move(err);
  if (const json::Value *v = root->get("post_processor"))
    if (Error err = l.postProcessor(*v))
      return std::move(err);
  if (const json::Value *v = root->get("decoder"))
    if (Error err = l.decoder(*v))
      return std::move(err);
  // Read and checked; applied on request (Tokenizer::encode's truncate,
  // Tokenizer::pad), as transformers' tokenizer calls do.
  if (const json::Value *v = root->get("truncation"))
    if (Error err = l.truncation(*v))
      return std::move(err);
  if (const json::Value *v = root->get("padding"))
    if (Error err = l.padding(*v))
      return std::move(err);
  if (const json::Array *a = root->getArray("added_tokens"))
    if (Error err = l.addedTokens(*a))
      return std::move(err);
  impl->indexAddedTokens();
  const char *kinds[] = {"BPE", "WordPiece", "WordLevel", "Unigram", "SPM"};
  impl->description = description.str() + " (" + kinds[impl->model.kind] + ")";
  return Tokenizer(std::move(impl));
}

/// A token named in tokenizer_config.json: "text" or {"content": "text"}.
static std::optional<std::string> configToken(const json::Object &o,
                                              StringRef key) {
  const json::Value *v = o.get(key);
  if (!v)
    return std::nullopt;
  if (std::optional<StringRef> s = v->getAsString())
    return s->str();
  if (const json::Object *obj = v->getAsObject())
    if (std::optional<StringRef> s = obj->getString("content"))
      return s->str();
  return std::nullopt;
}

static Expected<std::optional<json::Value>> readJSONFile(StringRef path) {
  if (!llvm::sys::fs::exists(path))
    return std::nullopt;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   path + ": " + buffer.getError().message());
  Expected<json::Value> v = parseJSON((*buffer)->getBuffer());
  if (!v)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + llvm::toString(v.takeError()));
  return std::optional<json::Value>(std::move(*v));
}

Expected<Tokenizer> Tokenizer::fromFile(StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   path + ": " + buffer.getError().message());
  Expected<Tokenizer> tok = fromJSON((*buffer)->getBuffer(), path);
  if (!tok)
    return tok.takeError();
  auto impl = std::make_shared<Impl>(*tok->impl);
  llvm::SmallString<128> dir(path);
  llvm::sys::path::remove_filename(dir);
  auto sibling = [&](StringRef name) {
    llvm::SmallString<128> p(dir);
    llvm::sys::path::append(p, name);
    return std::string(p);
  };
  auto addEos = [&](int64_t id) {
    if (!llvm::is_contained(impl->eos, id))
      impl->eos.push_back(static_cast<int32_t>(id));
  };
  auto eosFrom = [&](const json::Object &o) {
    const json::Value *v = o.get("eos_token_id");
    if (!v)
      return;
    if (std::optional<int64_t> id = v->getAsInteger())
      addEos(*id);
    else if (const json::Array *a = v->getAsArray())
      for (const json::Value &e : *a)
        if (std::optional<int64_t> id = e.getAsInteger())
          addEos(*id);
  };
  Expected<std::optional<json::Value>> config =
      readJSONFile(sibling("tokenizer_config.json"));
  if (!config)
    return config.takeError();
  bool addBos = false, addBosGiven = false;
  if (*config)
    if (const json::Object *o = (*config)->getAsObject()) {
      if (std::optional<std::string> bos = configToken(*o, "bos_token"))
        if (std::optional<int32_t> id = tok->tokenToId(*bos))
          impl->bos = *id;
      if (std::optional<std::string> eos = configToken(*o, "eos_token"))
        if (std::optional<int32_t> id = tok->tokenToId(*eos))
          addEos(*id);
      if (std::optional<bool> b = o->getBoolean("add_bos_token")) {
        addBos = *b;
        addBosGiven = true;
      }
      if (std::optional<StringRef> tmpl = o->getString("chat_template"))
        impl->chatTemplate = tmpl->str();
      // transformers leaves BPE output alone unless forced.
      impl->cleanUpSpaces =
          o->getBoolean("clean_up_tokenization_spaces").value_or(false) &&
          (impl->model.kind != tok::Model::BPE ||
           o->getBoolean("clean_up_tokenization_spaces_for_bpe_even_though_"
                         "it_will_corrupt_output")
               .value_or(false));
    }
  // generation_config.json, else config.json, for the ids generation stops
  // at.
  for (const char *name : {"generation_config.json", "config.json"}) {
    Expected<std::optional<json::Value>> gen = readJSONFile(sibling(name));
    if (!gen)
      return gen.takeError();
    if (!*gen)
      continue;
    if (const json::Object *o = (*gen)->getAsObject()) {
      if (!o->get("eos_token_id"))
        continue;
      eosFrom(*o);
      if (!impl->bos)
        if (std::optional<int64_t> id = o->getInteger("bos_token_id"))
          impl->bos = static_cast<int32_t>(*id);
      break;
    }
  }
  // The slow LLaMA tokenizer adds BOS itself; tokenizer.json's
  // post-processor usually does the same. Add it only when the config asks
  // and the post-processor does not.
  if (addBosGiven && addBos && impl->bos && impl->prefix.empty())
    impl->prefix.push_back(*impl->bos);
  return Tokenizer(std::move(impl));
}

Expected<Tokenizer> Tokenizer::forModel(StringRef path) {
  if (path.ends_with(".gguf")) {
    Expected<std::unique_ptr<GGUFFile>> file = GGUFFile::open(path);
    if (!file)
      return file.takeError();
    return fromGGUF(**file);
  }
  llvm::SmallString<128> p(path);
  llvm::sys::path::append(p, "tokenizer.json");
  if (!llvm::sys::fs::exists(p))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        path + ": no tokenizer: looked for " + p +
            " (a Hugging Face tokenizer.json; or give --prompt-ids)");
  return fromFile(p);
}
