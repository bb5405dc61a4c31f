//===- Tokenizer.h - Text to token ids and back -----------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Tokenizers read from a Hugging Face tokenizer.json (with the model
// directory's tokenizer_config.json and generation_config.json for BOS/EOS)
// or from a GGUF file's vocabulary, encoding exactly as the `tokenizers`
// library (and llama.cpp, for GGUF SentencePiece vocabularies) does:
//
//   text -> added/special tokens split out -> normalizer -> pre-tokenizer
//        -> model (BPE, WordPiece, Unigram, WordLevel) -> post-processor
//
// Every component or option of a tokenizer.json that is not implemented is
// an error naming it and the file; nothing is skipped silently.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_TOKENIZER_TOKENIZER_H
#define RLX_TOKENIZER_TOKENIZER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rlx {

class GGUFFile;

class Tokenizer {
public:
  /// Reads a Hugging Face tokenizer.json. BOS/EOS come from the
  /// tokenizer_config.json and generation_config.json (then config.json)
  /// beside it, where present.
  static llvm::Expected<Tokenizer> fromFile(llvm::StringRef path);
  /// Parses tokenizer.json text; `description` names it in messages.
  static llvm::Expected<Tokenizer> fromJSON(llvm::StringRef json,
                                            llvm::StringRef description);
  /// The vocabulary of a GGUF file (tokenizer.ggml.*): "gpt2" (byte-level
  /// BPE) and "llama" (SentencePiece, llama.cpp's algorithm).
  static llvm::Expected<Tokenizer> fromGGUF(const GGUFFile &file);
  /// The tokenizer of a model: a directory's tokenizer.json or a .gguf
  /// file's vocabulary. The error names what was looked for.
  static llvm::Expected<Tokenizer> forModel(llvm::StringRef path);

  /// Token ids of `text` (valid UTF-8). `addSpecial` applies the
  /// post-processor (BOS, [CLS]/[SEP], ...). `truncate` applies
  /// tokenizer.json's `truncation` as the `tokenizers` library does (the
  /// ids cut to max_length, the post-processor's included); transformers'
  /// tokenizer calls, and this by default, do not.
  llvm::Expected<std::vector<int32_t>> encode(llvm::StringRef text,
                                              bool addSpecial = true,
                                              bool truncate = false) const;
  /// `ids` padded as tokenizer.json's `padding` says (`tokenizers`' encode
  /// of one sequence); without padding, as they are.
  std::vector<int32_t> pad(std::vector<int32_t> ids) const;
  /// tokenizer.json's truncation max_length, if it has one.
  std::optional<size_t> truncationLength() const;
  /// The text of `ids` (ids outside the vocabulary are left out). Invalid
  /// UTF-8 the tokens spell becomes U+FFFD.
  std::string decode(llvm::ArrayRef<int32_t> ids,
                     bool skipSpecial = false) const;

  /// Turns ids arriving one at a time into text, returning only complete
  /// UTF-8 characters; the concatenation of step() results and finish()
  /// equals decode() of all the ids.
  class StreamDecoder {
  public:
    explicit StreamDecoder(const Tokenizer &tokenizer, bool skipSpecial = false)
        : tokenizer(&tokenizer), skipSpecial(skipSpecial) {}
    /// The new text `id` completes (possibly empty).
    std::string step(int32_t id);
    /// Whatever is left (incomplete characters as U+FFFD).
    std::string finish();

  private:
    const Tokenizer *tokenizer;
    bool skipSpecial;
    /// Context tokens (already printed) then pending ones.
    std::vector<int32_t> ids;
    size_t contextSize = 0;
    std::string contextText;
  };

  std::optional<int32_t> bosId() const;
  /// Tokens that end generation (EOS, end of turn...).
  llvm::ArrayRef<int32_t> eosIds() const;
  /// One past the largest id (model vocabulary and added tokens).
  size_t vocabSize() const;
  std::optional<int32_t> tokenToId(llvm::StringRef token) const;
  /// The token's string as the vocabulary stores it (empty if unknown).
  std::string idToToken(int32_t id) const;
  bool isSpecial(int32_t id) const;
  /// "tokenizer.json (BPE)", "x.gguf (llama)": what was loaded.
  llvm::StringRef description() const;
  /// A chat template found beside the tokenizer, if any.
  std::optional<llvm::StringRef> chatTemplate() const;

  struct Impl;

private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl)
      : impl(std::move(impl)) {}
  std::shared_ptr<const Impl> impl;
};

} // namespace rlx

#endif // RLX_TOKENIZER_TOKENIZER_H
