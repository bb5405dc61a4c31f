//===- Split.h - Pre-tokenizer regexes and the byte-level map ---*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The splitting regexes of byte-level BPE tokenizers, as hand-written
// matchers over code points (no regex engine): GPT-2's (also the ByteLevel
// pre-tokenizer's), LLaMA 3's and Qwen2's. Each is matched leftmost-first
// over its alternatives, with the backtracking the regex implies, as
// Oniguruma (Hugging Face tokenizers) and llama.cpp do. Also GPT-2's map of
// bytes to printable characters.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_TOKENIZER_SPLIT_H
#define RLX_TOKENIZER_SPLIT_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace rlx {

enum class SplitRegex {
  /// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  GPT2,
  /// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
  ///  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  Llama3,
  /// LLaMA 3's with \p{N} instead of \p{N}{1,3}.
  Qwen2,
};

/// The regex text of `regex`, exactly as tokenizer.json files spell it.
llvm::StringRef splitRegexPattern(SplitRegex regex);
/// "GPT-2", "LLaMA 3", "Qwen2".
llvm::StringRef splitRegexName(SplitRegex regex);
/// The matcher for a regex given as text, if it is one of the above.
std::optional<SplitRegex> splitRegexFor(llvm::StringRef pattern);

/// The end of the match of `regex` at `pos` in `cps` (an index into cps),
/// or `pos` when nothing matches there.
size_t matchSplitRegex(SplitRegex regex, llvm::ArrayRef<uint32_t> cps,
                       size_t pos);

/// Every match of `regex` in `cps` from left to right, as [begin, end)
/// code point spans (like Python's re.finditer).
std::vector<std::pair<size_t, size_t>>
findSplitRegex(SplitRegex regex, llvm::ArrayRef<uint32_t> cps);

/// GPT-2's bytes_to_unicode(): printable bytes map to themselves, the others
/// to U+0100 and up.
uint32_t byteToUnicode(uint8_t byte);
/// The inverse of byteToUnicode.
std::optional<uint8_t> unicodeToByte(uint32_t cp);

} // namespace rlx

#endif // RLX_TOKENIZER_SPLIT_H
