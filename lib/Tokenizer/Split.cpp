//===- Split.cpp - Pre-tokenizer regexes and the byte-level map -----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Tokenizer/Split.h"
#include "RLX/Tokenizer/Unicode.h"

#include <array>

using namespace rlx;
using llvm::ArrayRef;

static const char *const kGPT2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
static const char *const kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
static const char *const kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

llvm::StringRef rlx::splitRegexPattern(SplitRegex regex) {
  switch (regex) {
  case SplitRegex::GPT2:
    return kGPT2Pattern;
  case SplitRegex::Llama3:
    return kLlama3Pattern;
  case SplitRegex::Qwen2:
    return kQwen2Pattern;
  }
  return "";
}

llvm::StringRef rlx::splitRegexName(SplitRegex regex) {
  switch (regex) {
  case SplitRegex::GPT2:
    return "GPT-2";
  case SplitRegex::Llama3:
    return "LLaMA 3";
  case SplitRegex::Qwen2:
    return "Qwen2";
  }
  return "";
}

std::optional<SplitRegex> rlx::splitRegexFor(llvm::StringRef pattern) {
  for (SplitRegex r : {SplitRegex::GPT2, SplitRegex::Llama3, SplitRegex::Qwen2})
    if (pattern == splitRegexPattern(r))
      return r;
  return std::nullopt;
}

namespace {
/// Matching state over a code point array.
struct Matcher {
  ArrayRef<uint32_t> s;
  size_t n;

  bool at(size_t i, bool (*pred)(uint32_t)) const {
    return i < n && pred(s[i]);
  }
  static bool letter(uint32_t c) { return unicode::isLetter(c); }
  static bool number(uint32_t c) { return unicode::isNumber(c); }
  static bool space(uint32_t c) { return unicode::isWhitespace(c); }
  static bool newline(uint32_t c) { return c == '\r' || c == '\n'; }
  /// [^\s\p{L}\p{N}]
  static bool other(uint32_t c) {
    return !unicode::isWhitespace(c) && !unicode::isLetter(c) &&
           !unicode::isNumber(c);
  }
  /// [^\r\n\p{L}\p{N}]
  static bool notNewlineLetterNumber(uint32_t c) {
    return !newline(c) && !unicode::isLetter(c) && !unicode::isNumber(c);
  }
  size_t run(size_t i, bool (*pred)(uint32_t)) const {
    while (i < n && pred(s[i]))
      ++i;
    return i;
  }

  /// 's|'t|'re|'ve|'m|'ll|'d, optionally case-insensitive (Oniguruma folds
  /// U+017F LATIN SMALL LETTER LONG S to s as well).
  size_t contraction(size_t i, bool ignoreCase) const {
    if (i >= n || s[i] != '\'' || i + 1 >= n)
      return i;
    auto is = [&](size_t k, char c) {
      if (k >= n)
        return false;
      uint32_t x = s[k];
      if (x == static_cast<uint32_t>(c))
        return true;
      if (!ignoreCase)
        return false;
      if (x == 0x17F && c == 's')
        return true;
      return x < 0x80 && x >= 'A' && x <= 'Z' &&
             x + 32 == static_cast<uint32_t>(c);
    };
    if (is(i + 1, 's') || is(i + 1, 't') || is(i + 1, 'm') || is(i + 1, 'd'))
      return i + 2;
    if ((is(i + 1, 'r') || is(i + 1, 'v')) && is(i + 2, 'e'))
      return i + 3;
    if (is(i + 1, 'l') && is(i + 2, 'l'))
      return i + 3;
    return i;
  }

  /// ` ?X+`
  size_t optSpaceRun(size_t i, bool (*pred)(uint32_t)) const {
    if (i < n && s[i] == ' ' && at(i + 1, pred))
      return run(i + 1, pred);
    if (at(i, pred))
      return run(i, pred);
    return i;
  }

  /// \s+(?!\S)
  size_t spacesNotBeforeNonSpace(size_t i) const {
    size_t end = run(i, space);
    if (end == i)
      return i;
    if (end == n)
      return end;
    // Backtrack one so that a space follows.
    return end - 1 > i ? end - 1 : i;
  }

  size_t gpt2(size_t i) const {
    size_t e;
    if ((e = contraction(i, false)) != i)
      return e;
    if ((e = optSpaceRun(i, letter)) != i)
      return e;
    if ((e = optSpaceRun(i, number)) != i)
      return e;
    if ((e = optSpaceRun(i, other)) != i)
      return e;
    if ((e = spacesNotBeforeNonSpace(i)) != i)
      return e;
    return run(i, space);
  }

  size_t llama3(size_t i, unsigned maxDigits) const {
    size_t e;
    if ((e = contraction(i, true)) != i)
      return e;
    // [^\r\n\p{L}\p{N}]?\p{L}+
    if (at(i, notNewlineLetterNumber) && at(i + 1, letter))
      return run(i + 1, letter);
    if (at(i, letter))
      return run(i, letter);
    // \p{N}{1,maxDigits}
    if (at(i, number)) {
      e = i;
      while (e < n && e - i < maxDigits && number(s[e]))
        ++e;
      return e;
    }
    // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
    if ((e = optSpaceRun(i, other)) != i)
      return run(e, newline);
    // \s*[\r\n]+: the whitespace run up to its last newline.
    size_t end = run(i, space);
    for (size_t k = end; k > i; --k)
      if (newline(s[k - 1]))
        return k;
    if ((e = spacesNotBeforeNonSpace(i)) != i)
      return e;
    return run(i, space);
  }
};
} // namespace

size_t rlx::matchSplitRegex(SplitRegex regex, ArrayRef<uint32_t> cps,
                            size_t pos) {
  Matcher m{cps, cps.size()};
  if (pos >= cps.size())
    return pos;
  switch (regex) {
  case SplitRegex::GPT2:
    return m.gpt2(pos);
  case SplitRegex::Llama3:
    return m.llama3(pos, 3);
  case SplitRegex::Qwen2:
    return m.llama3(pos, 1);
  }
  return pos;
}

std::vector<std::pair<size_t, size_t>>
rlx::findSplitRegex(SplitRegex regex, ArrayRef<uint32_t> cps) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t i = 0; i < cps.size();) {
    size_t e = matchSplitRegex(regex, cps, i);
    if (e == i) {
      ++i;
      continue;
    }
    out.emplace_back(i, e);
    i = e;
  }
  return out;
}

namespace {
struct ByteTables {
  std::array<uint32_t, 256> toUnicode;
  std::array<int16_t, 324> toByte;
  ByteTables() {
    toByte.fill(-1);
    uint32_t next = 256;
    for (unsigned b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      toUnicode[b] = printable ? b : next++;
      toByte[toUnicode[b]] = static_cast<int16_t>(b);
    }
  }
};
} // namespace

static const ByteTables &byteTables() {
  static const ByteTables tables;
  return tables;
}

uint32_t rlx::byteToUnicode(uint8_t byte) {
  return byteTables().toUnicode[byte];
}

std::optional<uint8_t> rlx::unicodeToByte(uint32_t cp) {
  if (cp >= byteTables().toByte.size() || byteTables().toByte[cp] < 0)
    return std::nullopt;
  return static_cast<uint8_t>(byteTables().toByte[cp]);
}
