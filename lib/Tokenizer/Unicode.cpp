//===- Unicode.cpp - UTF-8, character classes and normalization -----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Tokenizer/Unicode.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>
#include <iterator>

using namespace rlx;
using namespace rlx::unicode;

namespace {
struct CodePointRange {
  uint32_t lo, hi;
};
struct SequenceMapping {
  uint32_t cp;
  uint8_t compat;
  uint8_t length;
  uint32_t offset;
};
struct CombiningClassRange {
  uint32_t lo, hi;
  uint8_t ccc;
};
struct Composition {
  uint32_t first, second, composite;
};
} // namespace

#include "UnicodeTables.inc"

llvm::StringRef unicode::tableVersion() { return RLX_UNICODE_VERSION; }

template <size_t N>
static bool inRanges(const CodePointRange (&ranges)[N], uint32_t cp) {
  const CodePointRange *it = std::upper_bound(
      std::begin(ranges), std::end(ranges), cp,
      [](uint32_t v, const CodePointRange &r) { return v < r.lo; });
  if (it == std::begin(ranges))
    return false;
  --it;
  return cp <= it->hi;
}

template <size_t N>
static const SequenceMapping *findMapping(const SequenceMapping (&table)[N],
                                          uint32_t cp) {
  const SequenceMapping *it = std::lower_bound(
      std::begin(table), std::end(table), cp,
      [](const SequenceMapping &m, uint32_t v) { return m.cp < v; });
  if (it == std::end(table) || it->cp != cp)
    return nullptr;
  return it;
}

bool unicode::isLetter(uint32_t cp) {
  if (cp < 0x80)
    return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
  return inRanges(kLetterRanges, cp);
}
bool unicode::isNumber(uint32_t cp) {
  if (cp < 0x80)
    return cp >= '0' && cp <= '9';
  return inRanges(kNumberRanges, cp);
}
bool unicode::isWhitespace(uint32_t cp) {
  return inRanges(kWhitespaceRanges, cp);
}
bool unicode::isPunctuation(uint32_t cp) {
  return inRanges(kPunctuationRanges, cp);
}
bool unicode::isOther(uint32_t cp) { return inRanges(kOtherRanges, cp); }
bool unicode::isNonspacingMark(uint32_t cp) {
  return inRanges(kNonspacingMarkRanges, cp);
}
bool unicode::isMark(uint32_t cp) { return inRanges(kMarkRanges, cp); }
bool unicode::isSymbol(uint32_t cp) { return inRanges(kSymbolRanges, cp); }

bool unicode::isCJKIdeograph(uint32_t cp) {
  // The blocks of BERT's _is_chinese_char.
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

unsigned unicode::combiningClass(uint32_t cp) {
  if (cp < 0x300)
    return 0;
  const CombiningClassRange *it = std::upper_bound(
      std::begin(kCombiningClasses), std::end(kCombiningClasses), cp,
      [](uint32_t v, const CombiningClassRange &r) { return v < r.lo; });
  if (it == std::begin(kCombiningClasses))
    return 0;
  --it;
  return cp <= it->hi ? it->ccc : 0;
}

void unicode::appendLowercase(std::vector<uint32_t> &out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp);
    return;
  }
  const SequenceMapping *m = findMapping(kLowercase, cp);
  if (!m) {
    out.push_back(cp);
    return;
  }
  out.insert(out.end(), kLowercasePool + m->offset,
             kLowercasePool + m->offset + m->length);
}

//===----------------------------------------------------------------------===//
// UTF-8
//===----------------------------------------------------------------------===//

void unicode::appendUTF8(std::string &out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string unicode::encodeUTF8(llvm::ArrayRef<uint32_t> cps) {
  std::string out;
  out.reserve(cps.size());
  for (uint32_t cp : cps)
    appendUTF8(out, cp);
  return out;
}

unsigned unicode::utf8Length(uint8_t lead) {
  if (lead < 0x80)
    return 1;
  if (lead >= 0xC2 && lead <= 0xDF)
    return 2;
  if (lead >= 0xE0 && lead <= 0xEF)
    return 3;
  if (lead >= 0xF0 && lead <= 0xF4)
    return 4;
  return 1;
}

/// The length of the valid sequence at `i` and its code point, or 0 when the
/// bytes there are not valid UTF-8; `maximal` receives the length of the
/// maximal invalid subpart (what from_utf8_lossy replaces with one U+FFFD).
static unsigned decodeOne(llvm::StringRef s, size_t i, uint32_t &cp,
                          unsigned &maximal) {
  auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t lead = b(i);
  maximal = 1;
  if (lead < 0x80) {
    cp = lead;
    return 1;
  }
  unsigned n = utf8Length(lead);
  if (n == 1)
    return 0;
  // The allowed range of the second byte (Unicode table 3-7).
  uint8_t lo = 0x80, hi = 0xBF;
  if (lead == 0xE0)
    lo = 0xA0;
  else if (lead == 0xED)
    hi = 0x9F;
  else if (lead == 0xF0)
    lo = 0x90;
  else if (lead == 0xF4)
    hi = 0x8F;
  uint32_t v = lead & (n == 2 ? 0x1F : n == 3 ? 0x0F : 0x07);
  for (unsigned k = 1; k < n; ++k) {
    if (i + k >= s.size())
      return 0;
    uint8_t c = b(i + k);
    if (k == 1 ? (c < lo || c > hi) : (c < 0x80 || c > 0xBF))
      return 0;
    v = (v << 6) | (c & 0x3F);
    maximal = k + 1;
  }
  cp = v;
  return n;
}

std::optional<std::vector<uint32_t>> unicode::decodeUTF8(llvm::StringRef text,
                                                         size_t *badOffset) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp;
    unsigned maximal;
    unsigned n = decodeOne(text, i, cp, maximal);
    if (n == 0) {
      if (badOffset)
        *badOffset = i;
      return std::nullopt;
    }
    out.push_back(cp);
    i += n;
  }
  return out;
}

std::string unicode::sanitizeUTF8(llvm::StringRef text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp;
    unsigned maximal;
    unsigned n = decodeOne(text, i, cp, maximal);
    if (n == 0) {
      appendUTF8(out, 0xFFFD);
      i += maximal;
      continue;
    }
    out.append(text.data() + i, n);
    i += n;
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

static constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161,
                          kTBase = 0x11A7, kLCount = 19, kVCount = 21,
                          kTCount = 28, kNCount = kVCount * kTCount,
                          kSCount = kLCount * kNCount;

static void decompose(uint32_t cp, bool compat, std::vector<uint32_t> &out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount)
      out.push_back(kTBase + s % kTCount);
    return;
  }
  const SequenceMapping *m =
      cp < 0xA0 ? nullptr : findMapping(kDecompositions, cp);
  if (!m || (m->compat && !compat)) {
    out.push_back(cp);
    return;
  }
  for (uint32_t k = 0; k < m->length; ++k)
    decompose(kDecompositionsPool[m->offset + k], compat, out);
}

static std::optional<uint32_t> compose(uint32_t a, uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase &&
      b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 &&
      b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const Composition *it = std::lower_bound(
      std::begin(kCompositions), std::end(kCompositions), std::make_pair(a, b),
      [](const Composition &c, std::pair<uint32_t, uint32_t> v) {
        return std::make_pair(c.first, c.second) < v;
      });
  if (it == std::end(kCompositions) || it->first != a || it->second != b)
    return std::nullopt;
  return it->composite;
}

std::vector<uint32_t> unicode::normalize(llvm::ArrayRef<uint32_t> cps,
                                         NormalForm form) {
  bool compat = form == NormalForm::NFKC || form == NormalForm::NFKD;
  std::vector<uint32_t> d;
  d.reserve(cps.size());
  for (uint32_t cp : cps)
    decompose(cp, compat, d);
  // Canonical ordering: stable sort of each run of non-starters.
  for (size_t i = 0; i < d.size();) {
    if (combiningClass(d[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < d.size() && combiningClass(d[j]) != 0)
      ++j;
    std::stable_sort(d.begin() + i, d.begin() + j, [](uint32_t a, uint32_t b) {
      return combiningClass(a) < combiningClass(b);
    });
    i = j;
  }
  if (form == NormalForm::NFD || form == NormalForm::NFKD)
    return d;
  // Canonical composition.
  std::vector<uint32_t> out;
  out.reserve(d.size());
  std::optional<size_t> starter;
  unsigned lastClass = 0;
  for (uint32_t cp : d) {
    unsigned ccc = combiningClass(cp);
    if (starter) {
      bool blocked =
          out.size() - 1 != *starter && (lastClass == 0 || lastClass >= ccc);
      if (!blocked)
        if (std::optional<uint32_t> c = compose(out[*starter], cp)) {
          out[*starter] = *c;
          continue;
        }
    }
    if (ccc == 0) {
      starter = out.size();
      lastClass = 0;
    } else {
      lastClass = ccc;
    }
    out.push_back(cp);
  }
  return out;
}
