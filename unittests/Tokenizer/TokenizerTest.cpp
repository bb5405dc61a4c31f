//===- TokenizerTest.cpp - Tokenizer unit tests ---------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Tokenizer/Tokenizer.h"
#include "RLX/Tokenizer/Split.h"
#include "RLX/Tokenizer/Unicode.h"
#include "RLX/Weights/GGUF.h"

#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace rlx;

namespace {

std::vector<std::string> split(SplitRegex regex, llvm::StringRef text) {
  std::vector<uint32_t> cps = *unicode::decodeUTF8(text);
  std::vector<std::string> out;
  for (auto [b, e] : findSplitRegex(regex, cps))
    out.push_back(
        unicode::encodeUTF8(llvm::ArrayRef<uint32_t>(cps).slice(b, e - b)));
  return out;
}

using Pieces = std::vector<std::string>;

TEST(SplitRegexTest, GPT2) {
  EXPECT_EQ(split(SplitRegex::GPT2, "Hello world's 123 end!!"),
            (Pieces{"Hello", " world", "'s", " 123", " end", "!!"}));
  // \s+(?!\S) leaves the last space to the word after it.
  EXPECT_EQ(split(SplitRegex::GPT2, "a   b"), (Pieces{"a", "  ", " b"}));
  EXPECT_EQ(split(SplitRegex::GPT2, "a  \n"), (Pieces{"a", "  \n"}));
  // Contractions are case-sensitive in GPT-2's regex.
  EXPECT_EQ(split(SplitRegex::GPT2, "I'M"), (Pieces{"I", "'", "M"}));
  EXPECT_EQ(split(SplitRegex::GPT2, "Grüße 日本"), (Pieces{"Grüße", " 日本"}));
}

TEST(SplitRegexTest, Llama3) {
  EXPECT_EQ(split(SplitRegex::Llama3, "I'M 12345 x"),
            (Pieces{"I", "'M", " ", "123", "45", " x"}));
  EXPECT_EQ(split(SplitRegex::Llama3, "foo();\n\n  bar"),
            (Pieces{"foo", "();\n\n", " ", " bar"}));
  EXPECT_EQ(split(SplitRegex::Llama3, "a \n\n b"),
            (Pieces{"a", " \n\n", " b"}));
  EXPECT_EQ(split(SplitRegex::Qwen2, "x 123"),
            (Pieces{"x", " ", "1", "2", "3"}));
  // [^\r\n\p{L}\p{N}]?\p{L}+ takes one leading symbol.
  EXPECT_EQ(split(SplitRegex::Llama3, "$abc"), (Pieces{"$abc"}));
}

TEST(SplitRegexTest, RecognizesPatterns) {
  for (SplitRegex r : {SplitRegex::GPT2, SplitRegex::Llama3, SplitRegex::Qwen2})
    EXPECT_EQ(splitRegexFor(splitRegexPattern(r)), r);
  EXPECT_FALSE(splitRegexFor("\\w+"));
}

TEST(ByteLevelTest, RoundTrips) {
  EXPECT_EQ(byteToUnicode('A'), uint32_t('A'));
  EXPECT_EQ(byteToUnicode(' '), 0x120u);  // 'Ġ'
  EXPECT_EQ(byteToUnicode('\n'), 0x10Au); // 'Ċ'
  for (unsigned b = 0; b < 256; ++b)
    EXPECT_EQ(unicodeToByte(byteToUnicode(b)), b);
  EXPECT_FALSE(unicodeToByte(0x4E00));
}

TEST(UnicodeTest, Classes) {
  EXPECT_TRUE(unicode::isLetter(0x00FC)); // ü
  EXPECT_TRUE(unicode::isLetter(0x65E5)); // 日
  EXPECT_TRUE(unicode::isNumber(0x0967)); // Devanagari 1
  EXPECT_TRUE(unicode::isWhitespace(0x3000));
  EXPECT_FALSE(unicode::isWhitespace(0x200B));
  EXPECT_TRUE(unicode::isPunctuation(0x3002)); // 。
  EXPECT_TRUE(unicode::isNonspacingMark(0x0301));
  EXPECT_FALSE(unicode::isLetter(0x1F600)); // emoji
}

TEST(UnicodeTest, Normalization) {
  std::vector<uint32_t> e = {'e', 0x301};
  EXPECT_EQ(unicode::normalize(e, unicode::NormalForm::NFC),
            std::vector<uint32_t>{0xE9});
  EXPECT_EQ(unicode::normalize({0xE9}, unicode::NormalForm::NFD), e);
  // Hangul composes algorithmically; the ligature ﬁ only under NFKC.
  EXPECT_EQ(unicode::normalize({0x1100, 0x1161}, unicode::NormalForm::NFC),
            std::vector<uint32_t>{0xAC00});
  EXPECT_EQ(unicode::normalize({0xFB01}, unicode::NormalForm::NFC),
            std::vector<uint32_t>{0xFB01});
  EXPECT_EQ(unicode::normalize({0xFB01}, unicode::NormalForm::NFKC),
            (std::vector<uint32_t>{'f', 'i'}));
  std::vector<uint32_t> lower;
  unicode::appendLowercase(lower, 0x130); // İ -> i + combining dot
  EXPECT_EQ(lower, (std::vector<uint32_t>{'i', 0x307}));
}

TEST(UnicodeTest, UTF8) {
  size_t bad = 0;
  EXPECT_FALSE(unicode::decodeUTF8("ab\xC3", &bad));
  EXPECT_EQ(bad, 2u);
  EXPECT_FALSE(unicode::decodeUTF8("\xED\xA0\x80")); // a surrogate
  EXPECT_EQ(unicode::sanitizeUTF8("a\xE4\xB8z"), "a\xEF\xBF\xBDz");
  EXPECT_EQ(unicode::sanitizeUTF8("\xFF\xFE"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(unicode::encodeUTF8({0x1F600}), "\xF0\x9F\x98\x80");
}

/// A byte-level BPE over "ab" with merges a+b and ab+c, and <eos> added.
const char *kTinyBPE = R"({
  "version": "1.0",
  "added_tokens": [{"id": 5, "content": "<eos>", "special": true,
                    "single_word": false, "lstrip": false, "rstrip": false,
                    "normalized": false}],
  "normalizer": null,
  "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false,
                    "trim_offsets": true, "use_regex": true},
  "post_processor": null,
  "decoder": {"type": "ByteLevel", "add_prefix_space": true,
              "trim_offsets": true, "use_regex": true},
  "model": {"type": "BPE", "dropout": null, "unk_token": null,
            "continuing_subword_prefix": null, "end_of_word_suffix": null,
            "fuse_unk": false, "byte_fallback": false,
            "vocab": {"a": 0, "b": 1, "c": 2, "ab": 3, "abc": 4},
            "merges": ["a b", ["ab", "c"]]}
})";

TEST(TokenizerTest, TinyBPE) {
  llvm::Expected<Tokenizer> tok = Tokenizer::fromJSON(kTinyBPE, "tiny.json");
  ASSERT_TRUE(bool(tok)) << llvm::toString(tok.takeError());
  llvm::Expected<std::vector<int32_t>> ids = tok->encode("abcab<eos>c");
  ASSERT_TRUE(bool(ids)) << llvm::toString(ids.takeError());
  EXPECT_EQ(*ids, (std::vector<int32_t>{4, 3, 5, 2}));
  EXPECT_EQ(tok->decode(*ids), "abcab<eos>c");
  EXPECT_EQ(tok->decode(*ids, /*skipSpecial=*/true), "abcabc");
  EXPECT_TRUE(tok->isSpecial(5));
  llvm::Expected<std::vector<int32_t>> bad = tok->encode("a\xFF");
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "the text to encode is not valid UTF-8 (byte 1)");
}

std::string loadError(llvm::StringRef json) {
  llvm::Expected<Tokenizer> tok = Tokenizer::fromJSON(json, "t.json");
  if (tok)
    return "";
  return llvm::toString(tok.takeError());
}

std::string withReplaced(llvm::StringRef from, llvm::StringRef to) {
  std::string s = kTinyBPE;
  size_t at = s.find(from.str());
  EXPECT_NE(at, std::string::npos) << from.str();
  return s.replace(at, from.size(), to.str());
}

TEST(TokenizerTest, RefusesByName) {
  EXPECT_EQ(loadError(withReplaced("\"normalizer\": null",
                                   "\"normalizer\": {\"type\": "
                                   "\"Precompiled\", \"precompiled_charsmap\": "
                                   "\"\"}")),
            "t.json: normalizer 'Precompiled' is not supported");
  EXPECT_EQ(loadError(withReplaced("\"use_regex\": true}",
                                   "\"use_regex\": true, \"fancy\": 1}")),
            "t.json: option 'fancy' of pre-tokenizer 'ByteLevel' is not "
            "supported");
  EXPECT_EQ(loadError(withReplaced("\"dropout\": null", "\"dropout\": 0.1")),
            "t.json: option 'dropout' of model 'BPE' is not supported");
  EXPECT_EQ(
      loadError(withReplaced(
          "\"pre_tokenizer\": {\"type\": \"ByteLevel\"",
          "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": "
          "\"\\\\w+\"}, \"behavior\": \"Isolated\", \"invert\": false}, "
          "\"x\": {\"type\": \"ByteLevel\"")),
      "t.json: top-level key 'x' is not supported");
  EXPECT_EQ(loadError(withReplaced("\"post_processor\": null",
                                   "\"post_processor\": {\"type\": "
                                   "\"Splicer\"}")),
            "t.json: post-processor 'Splicer' is not supported");
  EXPECT_EQ(loadError(withReplaced("\"type\": \"BPE\"", "\"type\": \"Fancy\"")),
            "t.json: model 'Fancy' is not supported");
  EXPECT_EQ(loadError(withReplaced("[\"ab\", \"c\"]", "[\"ab\", \"d\"]")),
            "t.json: model 'BPE': merge 1 ('ab', 'd') uses a token missing "
            "from the vocabulary");
}

TEST(TokenizerTest, RefusesUnknownSplitRegex) {
  std::string json = withReplaced(
      "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": "
      "false,\n                    \"trim_offsets\": true, \"use_regex\": "
      "true}",
      "\"pre_tokenizer\": {\"type\": \"Split\", \"pattern\": {\"Regex\": "
      "\"\\\\w+\"}, \"behavior\": \"Isolated\", \"invert\": false}");
  EXPECT_EQ(loadError(json),
            "t.json: pre-tokenizer 'Split' with the regex '\\w+' is not "
            "supported (known: the GPT-2, LLaMA 3 and Qwen2 regexes)");
}

TEST(TokenizerTest, StreamingDecodeHoldsPartialCharacters) {
  // Byte-level tokens for the three bytes of 日 (E6 97 A5), one per token.
  std::string json = R"({"model": {"type": "BPE", "vocab": {)";
  for (unsigned b = 0; b < 256; ++b) {
    std::string key;
    unicode::appendUTF8(key, byteToUnicode(b));
    std::string escaped;
    for (char c : key)
      escaped +=
          (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    json += (b ? ", \"" : "\"") + escaped + "\": " + std::to_string(b);
  }
  json += R"(}, "merges": []}, "decoder": {"type": "ByteLevel"}})";
  llvm::Expected<Tokenizer> tok = Tokenizer::fromJSON(json, "bytes.json");
  ASSERT_TRUE(bool(tok)) << llvm::toString(tok.takeError());
  Tokenizer::StreamDecoder stream(*tok);
  EXPECT_EQ(stream.step('a'), "a");
  EXPECT_EQ(stream.step(0xE6), "");
  EXPECT_EQ(stream.step(0x97), "");
  EXPECT_EQ(stream.step(0xA5), "\xE6\x97\xA5");
  EXPECT_EQ(stream.step(0xE6), "");
  // An unfinished character comes out as U+FFFD at the end.
  EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD");
}

TEST(TokenizerTest, WordPieceWithBertPieces) {
  const char *json = R"({
    "normalizer": {"type": "BertNormalizer", "clean_text": true,
                   "handle_chinese_chars": true, "strip_accents": null,
                   "lowercase": true},
    "pre_tokenizer": {"type": "BertPreTokenizer"},
    "post_processor": {"type": "BertProcessing", "sep": ["[SEP]", 1],
                       "cls": ["[CLS]", 0]},
    "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
    "model": {"type": "WordPiece", "unk_token": "[UNK]",
              "continuing_subword_prefix": "##",
              "max_input_chars_per_word": 100,
              "vocab": {"[CLS]": 0, "[SEP]": 1, "[UNK]": 2, "un": 3,
                        "##aff": 4, "##able": 5, "!": 6, "cafe": 7, "日": 8}}
  })";
  llvm::Expected<Tokenizer> tok = Tokenizer::fromJSON(json, "wp.json");
  ASSERT_TRUE(bool(tok)) << llvm::toString(tok.takeError());
  // Lowercased, accents stripped, CJK isolated, punctuation split.
  llvm::Expected<std::vector<int32_t>> ids =
      tok->encode("UNAFFABLE! Café日 xyz");
  ASSERT_TRUE(bool(ids)) << llvm::toString(ids.takeError());
  EXPECT_EQ(*ids, (std::vector<int32_t>{0, 3, 4, 5, 6, 7, 8, 2, 1}));
  EXPECT_EQ(tok->decode(*ids, /*skipSpecial=*/false),
            "[CLS] unaffable! cafe 日 [UNK] [SEP]");
}

TEST(TokenizerTest, UnigramViterbi) {
  const char *json = R"({
    "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581",
                      "prepend_scheme": "always", "split": true},
    "decoder": {"type": "Metaspace", "replacement": "\u2581",
                "prepend_scheme": "always", "split": true},
    "model": {"type": "Unigram", "unk_id": 0, "byte_fallback": false,
              "vocab": [["<unk>", 0.0], ["\u2581", -2.0], ["a", -3.0],
                        ["b", -3.0], ["ab", -4.0], ["\u2581ab", -7.5],
                        ["\u2581a", -3.0]]}
  })";
  llvm::Expected<Tokenizer> tok = Tokenizer::fromJSON(json, "uni.json");
  ASSERT_TRUE(bool(tok)) << llvm::toString(tok.takeError());
  // "▁ab": ▁ + ab and ▁a + b tie at -6 (over ▁ab, -7.5); the path found
  // first wins, as in tokenizers. The unknown "zz" fuses into one <unk>.
  llvm::Expected<std::vector<int32_t>> ids = tok->encode("ab zzab");
  ASSERT_TRUE(bool(ids)) << llvm::toString(ids.takeError());
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 4, 1, 0, 4}));
}

TEST(TokenizerTest, GGUFSentencePiece) {
  GGUFWriter w;
  w.set("general.architecture", GGUFValue::string("llama"));
  w.set("tokenizer.ggml.model", GGUFValue::string("llama"));
  std::vector<std::string> tokens = {"<unk>",         "<s>", "</s>", "<0x21>",
                                     "\xE2\x96\x81",  "h",   "i",    "hi",
                                     "\xE2\x96\x81hi"};
  std::vector<float> scores = {0, 0, 0, 0, -1, -1, -1, -2, -3};
  std::vector<int32_t> types = {2, 3, 3, 6, 1, 1, 1, 1, 1};
  std::vector<GGUFValue> t, s, ty;
  for (size_t i = 0; i < tokens.size(); ++i) {
    t.push_back(GGUFValue::string(tokens[i]));
    s.push_back(GGUFValue::float32(scores[i]));
    ty.push_back(GGUFValue::int32(types[i]));
  }
  w.set("tokenizer.ggml.tokens", GGUFValue::array(GGUFType::String, t));
  w.set("tokenizer.ggml.scores", GGUFValue::array(GGUFType::Float32, s));
  w.set("tokenizer.ggml.token_type", GGUFValue::array(GGUFType::Int32, ty));
  w.set("tokenizer.ggml.bos_token_id", GGUFValue::uint32(1));
  w.set("tokenizer.ggml.eos_token_id", GGUFValue::uint32(2));
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  w.writeTo(os);
  auto file = GGUFFile::fromBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(bytes, "spm.gguf"), "spm.gguf");
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  llvm::Expected<Tokenizer> tok = Tokenizer::fromGGUF(**file);
  ASSERT_TRUE(bool(tok)) << llvm::toString(tok.takeError());
  EXPECT_EQ(tok->bosId(), 1);
  EXPECT_EQ(tok->eosIds(), llvm::ArrayRef<int32_t>{2});
  // BOS, then ▁hi (the space prefix), ! by byte fallback, </s> matched as
  // a control token, ▁ + h + i after it (merged to ▁hi).
  llvm::Expected<std::vector<int32_t>> ids = tok->encode("hi!</s>hi");
  ASSERT_TRUE(bool(ids)) << llvm::toString(ids.takeError());
  EXPECT_EQ(*ids, (std::vector<int32_t>{1, 8, 3, 2, 8}));
  EXPECT_EQ(tok->decode({8, 3, 8}), "hi! hi");
}

TEST(TokenizerTest, GGUFRefusals) {
  GGUFWriter w;
  w.set("general.architecture", GGUFValue::string("llama"));
  w.set("tokenizer.ggml.model", GGUFValue::string("bert"));
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  w.writeTo(os);
  auto file = GGUFFile::fromBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(bytes, "v.gguf"), "v.gguf");
  ASSERT_TRUE(bool(file)) << llvm::toString(file.takeError());
  llvm::Expected<Tokenizer> tok = Tokenizer::fromGGUF(**file);
  ASSERT_FALSE(bool(tok));
  EXPECT_EQ(llvm::toString(tok.takeError()),
            "v.gguf: tokenizer.ggml.model 'bert' is not supported "
            "(supported: gpt2, llama)");
}

TEST(TokenizerTest, MissingTokenizerNamesThePath) {
  llvm::Expected<Tokenizer> tok = Tokenizer::forModel("/nonexistent/model");
  ASSERT_FALSE(bool(tok));
  EXPECT_EQ(llvm::toString(tok.takeError()),
            "/nonexistent/model: no tokenizer: looked for "
            "/nonexistent/model/tokenizer.json (a Hugging Face "
            "tokenizer.json; or give --prompt-ids)");
}

} // namespace
