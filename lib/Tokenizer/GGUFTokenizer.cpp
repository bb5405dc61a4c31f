//===- GGUFTokenizer.cpp - Vocabularies stored in GGUF files --------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// tokenizer.ggml.* as llama.cpp's convert_hf_to_gguf.py writes it:
//
//   model "gpt2":  byte-level BPE over tokens + merges, pre-tokenized by the
//                  regex tokenizer.ggml.pre names (llama-bpe/llama3, qwen2,
//                  default/gpt-2)
//   model "llama": SentencePiece, merged by score as llama.cpp's
//                  llm_tokenizer_spm does, with <0xXX> byte fallback and a
//                  leading U+2581 before the text and after each special
//                  token (tokenizer.ggml.add_space_prefix)
//
// Token types (tokenizer.ggml.token_type): 2 unknown, 3 control and 4
// user-defined tokens are matched in the text before the model.
//
//===----------------------------------------------------------------------===//

#include "RLX/Weights/GGUF.h"
#include "TokenizerImpl.h"

#include "llvm/ADT/STLExtras.h"

using namespace rlx;
using namespace rlx::tok;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

namespace {
enum TokenType : int64_t {
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};
} // namespace

Expected<Tokenizer> Tokenizer::fromGGUF(const GGUFFile &file) {
  std::string path = file.description().str();
  auto fail = [&](const llvm::Twine &msg) -> Error {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + msg);
  };
  std::optional<StringRef> kind = file.getString("tokenizer.ggml.model");
  if (!kind)
    return fail("no vocabulary: metadata 'tokenizer.ggml.model' is missing");
  if (*kind != "gpt2" && *kind != "llama")
    return fail("tokenizer.ggml.model '" + *kind +
                "' is not supported (supported: gpt2, llama)");
  std::optional<llvm::ArrayRef<GGUFValue>> tokens =
      file.getArray("tokenizer.ggml.tokens");
  if (!tokens || tokens->empty())
    return fail("metadata 'tokenizer.ggml.tokens' is missing or empty");
  std::optional<llvm::ArrayRef<GGUFValue>> types =
      file.getArray("tokenizer.ggml.token_type");
  if (types && types->size() != tokens->size())
    return fail("tokenizer.ggml.token_type has " + llvm::Twine(types->size()) +
                " entries for " + llvm::Twine(tokens->size()) + " tokens");

  auto impl = std::make_shared<Impl>();
  Model &m = impl->model;
  m.byteIds.fill(-1);
  for (auto [i, v] : llvm::enumerate(*tokens)) {
    std::optional<StringRef> s = v.asString();
    if (!s)
      return fail("tokenizer.ggml.tokens[" + llvm::Twine(i) +
                  "] is not a string");
    int32_t id = static_cast<int32_t>(i);
    m.vocab.push_back(s->str());
    m.ids.try_emplace(*s, id);
    int64_t type = Normal;
    if (types) {
      std::optional<int64_t> t = (*types)[i].asInt();
      if (!t)
        return fail("tokenizer.ggml.token_type[" + llvm::Twine(i) +
                    "] is not an integer");
      type = *t;
    }
    if (type == Unknown || type == Control || type == UserDefined) {
      AddedToken a;
      a.content = s->str();
      a.id = id;
      a.special = type != UserDefined;
      impl->added.push_back(std::move(a));
    }
    if (type == Unknown && !m.unk)
      m.unk = id;
    unsigned b;
    if (s->size() == 6 && s->starts_with("<0x") && s->ends_with(">") &&
        !s->substr(3, 2).getAsInteger(16, b) && (!types || type == Byte))
      m.byteIds[b] = id;
  }
  if (std::optional<uint64_t> unk =
          file.getUInt("tokenizer.ggml.unknown_token_id"))
    if (*unk < m.vocab.size())
      m.unk = static_cast<int32_t>(*unk);

  bool spm = *kind == "llama";
  if (spm) {
    std::optional<llvm::ArrayRef<GGUFValue>> scores =
        file.getArray("tokenizer.ggml.scores");
    if (!scores || scores->size() != tokens->size())
      return fail("tokenizer.ggml.scores is missing or does not have one "
                  "score per token");
    m.kind = Model::SPM;
    for (const GGUFValue &v : *scores) {
      std::optional<double> f = v.asFloat();
      if (!f)
        return fail("tokenizer.ggml.scores holds a non-number");
      m.scores.push_back(*f);
    }
    // SentencePiece maps spaces to U+2581 and (llama.cpp) puts one before
    // the text and after each special token.
    Normalizer replace{Normalizer::Replace, " ", "\xE2\x96\x81"};
    impl->normalizers.push_back(replace);
    bool spacePrefix =
        file.getBool("tokenizer.ggml.add_space_prefix").value_or(true);
    if (spacePrefix)
      impl->normalizers.push_back(
          Normalizer{Normalizer::Prepend, "", "\xE2\x96\x81"});
    impl->hasDecoder = true;
    impl->decoders.push_back(Decoder{Decoder::Replace, "\xE2\x96\x81", " "});
    impl->decoders.push_back(Decoder{Decoder::ByteFallback});
    impl->decoders.push_back(Decoder{Decoder::Fuse});
    if (spacePrefix) {
      Decoder strip{Decoder::Strip, "", " "};
      strip.start = 1;
      impl->decoders.push_back(strip);
    }
  } else {
    m.kind = Model::BPE;
    std::optional<llvm::ArrayRef<GGUFValue>> merges =
        file.getArray("tokenizer.ggml.merges");
    if (!merges)
      return fail("metadata 'tokenizer.ggml.merges' is missing (needed by "
                  "tokenizer.ggml.model 'gpt2')");
    for (auto [rank, v] : llvm::enumerate(*merges)) {
      std::optional<StringRef> s = v.asString();
      if (!s)
        return fail("tokenizer.ggml.merges[" + llvm::Twine(rank) +
                    "] is not a string");
      auto [a, b] = s->split(' ');
      auto ia = m.ids.find(a), ib = m.ids.find(b),
           im = m.ids.find((a + b).str());
      if (ia == m.ids.end() || ib == m.ids.end() || im == m.ids.end())
        return fail("tokenizer.ggml.merges[" + llvm::Twine(rank) + "] '" + *s +
                    "' uses a token missing from the vocabulary");
      m.merges.try_emplace({ia->second, ib->second},
                           static_cast<uint32_t>(rank), im->second);
    }
    StringRef pre = file.getString("tokenizer.ggml.pre").value_or("default");
    PreTokenizer split{PreTokenizer::SplitRegex};
    split.behavior = Behavior::Isolated;
    if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") {
      split.regex = rlx::SplitRegex::Llama3;
      // llama.cpp takes a word found whole in the vocabulary as is.
      m.ignoreMerges = true;
    } else if (pre == "qwen2") {
      split.regex = rlx::SplitRegex::Qwen2;
    } else if (pre == "default" || pre == "gpt-2" || pre == "gpt2") {
      split.regex = rlx::SplitRegex::GPT2;
    } else {
      return fail("tokenizer.ggml.pre '" + pre +
                  "' is not supported (supported: llama-bpe, llama3, qwen2, "
                  "default, gpt-2)");
    }
    impl->preTokenizers.push_back(split);
    PreTokenizer bytes{PreTokenizer::ByteLevel};
    bytes.addPrefixSpace = false;
    bytes.useRegex = false;
    impl->preTokenizers.push_back(bytes);
    impl->hasDecoder = true;
    impl->decoders.push_back(Decoder{Decoder::ByteLevel});
  }
  impl->indexAddedTokens();

  auto tokenId = [&](StringRef key) -> std::optional<int32_t> {
    std::optional<uint64_t> id = file.getUInt(key);
    if (!id || *id >= m.vocab.size())
      return std::nullopt;
    return static_cast<int32_t>(*id);
  };
  impl->bos = tokenId("tokenizer.ggml.bos_token_id");
  for (const char *key :
       {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
        "tokenizer.ggml.eom_token_id"})
    if (std::optional<int32_t> id = tokenId(key))
      if (!llvm::is_contained(impl->eos, *id))
        impl->eos.push_back(*id);
  if (file.getBool("tokenizer.ggml.add_bos_token").value_or(spm) && impl->bos)
    impl->prefix.push_back(*impl->bos);
  if (file.getBool("tokenizer.ggml.add_eos_token").value_or(false) &&
      !impl->eos.empty())
    impl->suffix.push_back(impl->eos.front());
  if (std::optional<StringRef> tmpl = file.getString("tokenizer.chat_template"))
    impl->chatTemplate = tmpl->str();
  impl->description = path + " (" + kind->str() + ")";
  return Tokenizer(std::move(impl));
}
