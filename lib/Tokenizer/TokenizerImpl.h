//===- TokenizerImpl.h - The parts of a tokenizer ---------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The pipeline a Tokenizer runs, as plain data filled by the tokenizer.json
// and GGUF loaders. Private to lib/Tokenizer.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_TOKENIZER_TOKENIZERIMPL_H
#define RLX_LIB_TOKENIZER_TOKENIZERIMPL_H

#include "RLX/Tokenizer/Split.h"
#include "RLX/Tokenizer/Tokenizer.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <array>

namespace rlx::tok {

struct Normalizer {
  enum Kind {
    NFC,
    NFD,
    NFKC,
    NFKD,
    Lowercase,
    Strip,
    StripAccents,
    Replace,
    Prepend,
    Bert,
    ByteLevel,
  } kind;
  /// Replace: pattern -> content; Prepend: content.
  std::string pattern, content;
  /// Strip.
  bool left = false, right = false;
  /// BertNormalizer.
  bool cleanText = false, chineseChars = false, stripAccents = false,
       lowercase = false;
};

/// SplitDelimiterBehavior.
enum class Behavior {
  Removed,
  Isolated,
  MergedWithPrevious,
  MergedWithNext,
  Contiguous
};

struct PreTokenizer {
  enum Kind {
    ByteLevel,
    SplitRegex,
    SplitString,
    Metaspace,
    Bert,
    Whitespace,
    WhitespaceSplit,
    Digits,
    Punctuation,
    CharDelimiter,
  } kind;
  /// ByteLevel.
  bool addPrefixSpace = false, useRegex = true;
  /// Split.
  rlx::SplitRegex regex = rlx::SplitRegex::GPT2;
  std::string literal;
  Behavior behavior = Behavior::Isolated;
  bool invert = false;
  /// Metaspace: the replacement character, prepend scheme and split.
  std::string replacement = "\xE2\x96\x81";
  enum Prepend { Always, First, Never } prepend = Always;
  bool split = true;
  /// Digits.
  bool individualDigits = false;
  /// CharDelimiterSplit.
  uint32_t delimiter = ' ';
};

struct Model {
  enum Kind { BPE, WordPiece, WordLevel, Unigram, SPM } kind = BPE;
  /// id -> token ("" where a model vocabulary has no such id).
  std::vector<std::string> vocab;
  llvm::StringMap<int32_t> ids;
  /// BPE: (left, right) -> (rank, merged id).
  llvm::DenseMap<std::pair<int32_t, int32_t>, std::pair<uint32_t, int32_t>>
      merges;
  std::optional<int32_t> unk;
  bool byteFallback = false, fuseUnk = false, ignoreMerges = false;
  /// The ids of <0x00>..<0xFF> (-1 where missing).
  std::array<int32_t, 256> byteIds;
  /// WordPiece.
  std::string prefix = "##";
  size_t maxInputChars = 100;
  /// Unigram and SPM: per-id scores.
  std::vector<double> scores;
  double minScore = 0;
  size_t maxTokenBytes = 0;
};

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false, lstrip = false, rstrip = false, normalized = false,
       singleWord = false;
};

struct Decoder {
  enum Kind {
    ByteLevel,
    WordPiece,
    Metaspace,
    Replace,
    ByteFallback,
    Fuse,
    Strip,
  } kind;
  std::string pattern, content;
  bool cleanup = true;
  bool prependFirst = true;
  unsigned start = 0, stop = 0;
};

} // namespace rlx::tok

struct rlx::Tokenizer::Impl {
  std::string description;
  std::vector<tok::Normalizer> normalizers;
  std::vector<tok::PreTokenizer> preTokenizers;
  tok::Model model;
  /// The post-processor's single-sequence template: prefix + ids + suffix.
  std::vector<int32_t> prefix, suffix;
  /// Decoder chain; none: tokens joined with spaces.
  std::vector<tok::Decoder> decoders;
  bool hasDecoder = false;
  std::vector<tok::AddedToken> added;
  llvm::DenseMap<int32_t, size_t> addedById;
  /// Per first byte, the added tokens starting with it, longest first.
  std::array<std::vector<size_t>, 256> addedByFirstByte;
  std::optional<int32_t> bos;
  std::vector<int32_t> eos;
  std::optional<std::string> chatTemplate;
  /// tokenizer.json's `truncation` (tokenizers' encode applies it;
  /// transformers' tokenizer calls only when asked): the most ids, counting
  /// the post-processor's, kept from the start (or the end, `Left`).
  struct Truncation {
    size_t maxLength = 0;
    bool left = false;
  };
  std::optional<Truncation> truncation;
  /// tokenizer.json's `padding`: to a fixed length (`{"Fixed": n}`; a
  /// single sequence is its own longest), rounded up to a multiple, with
  /// `padId` on the right (or the left).
  struct Padding {
    size_t fixed = 0, multipleOf = 0;
    bool left = false;
    int32_t padId = 0;
  };
  std::optional<Padding> padding;
  /// transformers' clean_up_tokenization_spaces (tokenizer_config.json):
  /// decode removes the space before punctuation and contractions.
  bool cleanUpSpaces = false;

  /// Fills addedById and addedByFirstByte from `added`.
  void indexAddedTokens();
  /// The token string of `id` (added tokens first), if any.
  const std::string *token(int32_t id) const;
};

#endif // RLX_LIB_TOKENIZER_TOKENIZERIMPL_H
