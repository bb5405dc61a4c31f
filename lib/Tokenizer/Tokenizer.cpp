//===- Tokenizer.cpp - Encoding and decoding ------------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The encode/decode pipeline, following the Hugging Face `tokenizers`
// library (tokenizer/added_vocabulary.rs, normalizers/, pre_tokenizers/,
// models/, decoders/) and, for GGUF SentencePiece vocabularies, llama.cpp's
// llm_tokenizer_spm.
//
//===----------------------------------------------------------------------===//

#include "RLX/Tokenizer/Unicode.h"
#include "TokenizerImpl.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"

#include <algorithm>
#include <queue>

using namespace rlx;
using namespace rlx::tok;
using llvm::ArrayRef;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

static Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

static std::vector<uint32_t> codePoints(StringRef s) {
  // Internal strings are valid UTF-8 (checked at the API edge).
  std::optional<std::vector<uint32_t>> cps = unicode::decodeUTF8(s);
  return cps ? std::move(*cps) : std::vector<uint32_t>();
}

/// Rust's char::is_whitespace is the White_Space property.
static bool isSpace(uint32_t c) { return unicode::isWhitespace(c); }

/// BERT's punctuation: ASCII punctuation or \p{P}.
static bool isBertPunctuation(uint32_t c) {
  if (c < 0x80)
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) ||
           (c >= 91 && c <= 96) || (c >= 123 && c <= 126);
  return unicode::isPunctuation(c);
}

/// aho-corasick's / tokenizers' word character: alphanumeric or '_'.
static bool isWordChar(uint32_t c) {
  return c == '_' || unicode::isLetter(c) || unicode::isNumber(c);
}

void Tokenizer::Impl::indexAddedTokens() {
  addedById.clear();
  for (auto &list : addedByFirstByte)
    list.clear();
  for (auto [i, t] : llvm::enumerate(added)) {
    addedById[t.id] = i;
    if (!t.content.empty())
      addedByFirstByte[static_cast<uint8_t>(t.content[0])].push_back(i);
  }
  for (auto &list : addedByFirstByte)
    llvm::stable_sort(list, [&](size_t a, size_t b) {
      return added[a].content.size() > added[b].content.size();
    });
}

const std::string *Tokenizer::Impl::token(int32_t id) const {
  auto it = addedById.find(id);
  if (it != addedById.end())
    return &added[it->second].content;
  if (id >= 0 && static_cast<size_t>(id) < model.vocab.size() &&
      !model.vocab[id].empty())
    return &model.vocab[id];
  return nullptr;
}

//===----------------------------------------------------------------------===//
// Added tokens
//===----------------------------------------------------------------------===//

namespace {
/// A span of the input: text for the pipeline, or an added token.
struct Segment {
  std::string text;
  std::optional<int32_t> id;
  /// Starts at offset 0 of the original text.
  bool atStart = false;
  /// The normalizer has run on it.
  bool normalized = false;
};
} // namespace

/// Splits `s` around the added tokens whose `normalized` flag equals
/// `normalizedTokens` (HF AddedVocabulary::find_matches: leftmost-longest,
/// single_word, lstrip, rstrip).
static void splitAdded(const Tokenizer::Impl &t, const Segment &seg,
                       bool normalizedTokens, std::vector<Segment> &out) {
  StringRef s = seg.text;
  size_t startOffset = 0;
  auto emitText = [&](size_t b, size_t e) {
    if (b >= e)
      return;
    Segment piece;
    piece.text = s.substr(b, e - b).str();
    piece.atStart = seg.atStart && b == 0;
    piece.normalized = seg.normalized;
    out.push_back(std::move(piece));
  };
  for (size_t i = 0; i < s.size();) {
    const AddedToken *match = nullptr;
    for (size_t idx : t.addedByFirstByte[static_cast<uint8_t>(s[i])]) {
      const AddedToken &a = t.added[idx];
      if (a.normalized == normalizedTokens &&
          s.substr(i).starts_with(a.content)) {
        match = &a;
        break;
      }
    }
    if (!match) {
      ++i;
      continue;
    }
    size_t start = i, stop = i + match->content.size();
    i = stop;
    if (match->singleWord) {
      auto before = codePoints(s.substr(0, start));
      auto after = codePoints(s.substr(stop));
      bool startOk = before.empty() || !isWordChar(before.back());
      bool stopOk = after.empty() || !isWordChar(after.front());
      if (!startOk || !stopOk)
        continue;
    }
    if (match->lstrip) {
      auto before = codePoints(s.substr(startOffset, start - startOffset));
      size_t k = before.size();
      size_t newStart = start;
      while (k > 0 && isSpace(before[k - 1])) {
        std::string ch;
        unicode::appendUTF8(ch, before[--k]);
        newStart -= ch.size();
      }
      start = std::max(newStart, startOffset);
    }
    if (match->rstrip) {
      auto after = codePoints(s.substr(stop));
      for (uint32_t c : after) {
        if (!isSpace(c))
          break;
        std::string ch;
        unicode::appendUTF8(ch, c);
        stop += ch.size();
      }
      i = stop;
    }
    emitText(startOffset, start);
    Segment tok;
    tok.id = match->id;
    out.push_back(std::move(tok));
    startOffset = stop;
  }
  emitText(startOffset, s.size());
}

//===----------------------------------------------------------------------===//
// Normalizers
//===----------------------------------------------------------------------===//

static std::string normalize(const Tokenizer::Impl &t, std::string s) {
  for (const Normalizer &n : t.normalizers) {
    switch (n.kind) {
    case Normalizer::NFC:
    case Normalizer::NFD:
    case Normalizer::NFKC:
    case Normalizer::NFKD: {
      unicode::NormalForm form =
          n.kind == Normalizer::NFC    ? unicode::NormalForm::NFC
          : n.kind == Normalizer::NFD  ? unicode::NormalForm::NFD
          : n.kind == Normalizer::NFKC ? unicode::NormalForm::NFKC
                                       : unicode::NormalForm::NFKD;
      s = unicode::encodeUTF8(unicode::normalize(codePoints(s), form));
      break;
    }
    case Normalizer::Lowercase: {
      std::vector<uint32_t> out;
      for (uint32_t c : codePoints(s))
        unicode::appendLowercase(out, c);
      s = unicode::encodeUTF8(out);
      break;
    }
    case Normalizer::Strip: {
      auto cps = codePoints(s);
      size_t b = 0, e = cps.size();
      if (n.left)
        while (b < e && isSpace(cps[b]))
          ++b;
      if (n.right)
        while (e > b && isSpace(cps[e - 1]))
          --e;
      s = unicode::encodeUTF8(ArrayRef<uint32_t>(cps).slice(b, e - b));
      break;
    }
    case Normalizer::StripAccents: {
      std::vector<uint32_t> out;
      for (uint32_t c : codePoints(s))
        if (!unicode::isMark(c))
          out.push_back(c);
      s = unicode::encodeUTF8(out);
      break;
    }
    case Normalizer::Replace: {
      if (n.pattern.empty())
        break;
      std::string out;
      StringRef rest = s;
      for (size_t k; (k = rest.find(n.pattern)) != StringRef::npos;) {
        out += rest.substr(0, k);
        out += n.content;
        rest = rest.substr(k + n.pattern.size());
      }
      out += rest;
      s = std::move(out);
      break;
    }
    case Normalizer::Prepend:
      if (!s.empty())
        s = n.content + s;
      break;
    case Normalizer::ByteLevel: {
      std::string out;
      for (char c : s)
        unicode::appendUTF8(out, byteToUnicode(static_cast<uint8_t>(c)));
      s = std::move(out);
      break;
    }
    case Normalizer::Bert: {
      std::vector<uint32_t> cps = codePoints(s), out;
      if (n.cleanText) {
        for (uint32_t c : cps) {
          if (c == 0 || c == 0xFFFD ||
              (c != '\t' && c != '\n' && c != '\r' && unicode::isOther(c)))
            continue;
          out.push_back(c == '\t' || c == '\n' || c == '\r' || isSpace(c) ? ' '
                                                                          : c);
        }
        cps.swap(out);
        out.clear();
      }
      if (n.chineseChars) {
        for (uint32_t c : cps) {
          if (unicode::isCJKIdeograph(c)) {
            out.push_back(' ');
            out.push_back(c);
            out.push_back(' ');
          } else {
            out.push_back(c);
          }
        }
        cps.swap(out);
        out.clear();
      }
      if (n.stripAccents) {
        for (uint32_t c : unicode::normalize(cps, unicode::NormalForm::NFD))
          if (!unicode::isNonspacingMark(c))
            out.push_back(c);
        cps.swap(out);
        out.clear();
      }
      if (n.lowercase) {
        for (uint32_t c : cps)
          unicode::appendLowercase(out, c);
        cps.swap(out);
      }
      s = unicode::encodeUTF8(cps);
      break;
    }
    }
  }
  return s;
}

//===----------------------------------------------------------------------===//
// Pre-tokenizers
//===----------------------------------------------------------------------===//

namespace {
struct Piece {
  std::string text;
  bool atStart = false;
};
/// A span of code points and whether it is a match of the pattern.
using Span = std::pair<std::pair<size_t, size_t>, bool>;
} // namespace

/// Spans covering all of `n` code points, alternating gaps and `matches`.
static std::vector<Span> withGaps(size_t n,
                                  ArrayRef<std::pair<size_t, size_t>> matches) {
  std::vector<Span> out;
  size_t last = 0;
  for (auto [b, e] : matches) {
    if (last < b)
      out.push_back({{last, b}, false});
    out.push_back({{b, e}, true});
    last = e;
  }
  if (last < n)
    out.push_back({{last, n}, false});
  return out;
}

/// Each character satisfying `pred` is a match.
template <typename Pred>
static std::vector<Span> charMatches(ArrayRef<uint32_t> cps, Pred pred) {
  std::vector<std::pair<size_t, size_t>> m;
  for (size_t i = 0; i < cps.size(); ++i)
    if (pred(cps[i]))
      m.emplace_back(i, i + 1);
  return withGaps(cps.size(), m);
}

/// NormalizedString::split with `behavior` (normalizer.rs).
static void splitSpans(const Piece &p, ArrayRef<uint32_t> cps,
                       std::vector<Span> spans, Behavior behavior, bool invert,
                       std::vector<Piece> &out) {
  if (invert)
    for (Span &s : spans)
      s.second = !s.second;
  // (span, remove)
  std::vector<Span> res;
  bool previous = false;
  switch (behavior) {
  case Behavior::Isolated:
    for (Span &s : spans)
      res.push_back({s.first, false});
    break;
  case Behavior::Removed:
    res = spans;
    break;
  case Behavior::Contiguous:
    for (Span &s : spans) {
      if (s.second == previous && !res.empty())
        res.back().first.second = s.first.second;
      else
        res.push_back({s.first, false});
      previous = s.second;
    }
    break;
  case Behavior::MergedWithPrevious:
    for (Span &s : spans) {
      if (s.second && !previous && !res.empty())
        res.back().first.second = s.first.second;
      else
        res.push_back({s.first, false});
      previous = s.second;
    }
    break;
  case Behavior::MergedWithNext:
    for (Span &s : llvm::reverse(spans)) {
      if (s.second && !previous && !res.empty())
        res.back().first.first = s.first.first;
      else
        res.push_back({s.first, false});
      previous = s.second;
    }
    std::reverse(res.begin(), res.end());
    break;
  }
  for (Span &s : res) {
    auto [b, e] = s.first;
    if (s.second || b >= e)
      continue;
    Piece piece;
    piece.text = unicode::encodeUTF8(cps.slice(b, e - b));
    piece.atStart = p.atStart && b == 0;
    out.push_back(std::move(piece));
  }
}

static std::vector<Piece> preTokenize(const Tokenizer::Impl &t,
                                      std::vector<Piece> pieces) {
  for (const PreTokenizer &pt : t.preTokenizers) {
    std::vector<Piece> next;
    for (Piece &p : pieces) {
      switch (pt.kind) {
      case PreTokenizer::ByteLevel: {
        if (pt.addPrefixSpace && !StringRef(p.text).starts_with(" "))
          p.text = " " + p.text;
        std::vector<Piece> split;
        if (pt.useRegex) {
          auto cps = codePoints(p.text);
          splitSpans(
              p, cps,
              withGaps(cps.size(), findSplitRegex(rlx::SplitRegex::GPT2, cps)),
              Behavior::Isolated, false, split);
        } else {
          split.push_back(p);
        }
        for (Piece &q : split) {
          std::string mapped;
          for (char c : q.text)
            unicode::appendUTF8(mapped, byteToUnicode(static_cast<uint8_t>(c)));
          q.text = std::move(mapped);
          next.push_back(std::move(q));
        }
        break;
      }
      case PreTokenizer::SplitRegex: {
        auto cps = codePoints(p.text);
        splitSpans(p, cps, withGaps(cps.size(), findSplitRegex(pt.regex, cps)),
                   pt.behavior, pt.invert, next);
        break;
      }
      case PreTokenizer::SplitString: {
        auto cps = codePoints(p.text);
        auto pat = codePoints(pt.literal);
        std::vector<std::pair<size_t, size_t>> m;
        for (size_t i = 0; !pat.empty() && i + pat.size() <= cps.size();) {
          if (std::equal(pat.begin(), pat.end(), cps.begin() + i)) {
            m.emplace_back(i, i + pat.size());
            i += pat.size();
          } else {
            ++i;
          }
        }
        splitSpans(p, cps, withGaps(cps.size(), m), pt.behavior, pt.invert,
                   next);
        break;
      }
      case PreTokenizer::Metaspace: {
        std::string s;
        for (char c : p.text) {
          if (c == ' ')
            s += pt.replacement;
          else
            s.push_back(c);
        }
        bool starts = StringRef(s).starts_with(pt.replacement);
        if (!starts && (pt.prepend == PreTokenizer::Always ||
                        (pt.prepend == PreTokenizer::First && p.atStart)))
          s = pt.replacement + s;
        Piece q{std::move(s), p.atStart};
        if (!pt.split) {
          next.push_back(std::move(q));
          break;
        }
        auto cps = codePoints(q.text);
        uint32_t rep = codePoints(pt.replacement).front();
        splitSpans(q, cps,
                   charMatches(cps, [&](uint32_t c) { return c == rep; }),
                   Behavior::MergedWithNext, false, next);
        break;
      }
      case PreTokenizer::Bert: {
        auto cps = codePoints(p.text);
        std::vector<Piece> words;
        splitSpans(p, cps, charMatches(cps, isSpace), Behavior::Removed, false,
                   words);
        for (Piece &w : words) {
          auto wc = codePoints(w.text);
          splitSpans(w, wc, charMatches(wc, isBertPunctuation),
                     Behavior::Isolated, false, next);
        }
        break;
      }
      case PreTokenizer::Whitespace: {
        // \w+|[^\w\s]+, the matches kept.
        auto cps = codePoints(p.text);
        auto word = [](uint32_t c) {
          return unicode::isLetter(c) || unicode::isMark(c) ||
                 unicode::isNumber(c) || c == '_' || c == 0x200C || c == 0x200D;
        };
        std::vector<std::pair<size_t, size_t>> m;
        for (size_t i = 0; i < cps.size();) {
          size_t e = i;
          if (word(cps[i])) {
            while (e < cps.size() && word(cps[e]))
              ++e;
          } else if (!isSpace(cps[i])) {
            while (e < cps.size() && !word(cps[e]) && !isSpace(cps[e]))
              ++e;
          } else {
            ++i;
            continue;
          }
          m.emplace_back(i, e);
          i = e;
        }
        splitSpans(p, cps, withGaps(cps.size(), m), Behavior::Removed, true,
                   next);
        break;
      }
      case PreTokenizer::WhitespaceSplit: {
        auto cps = codePoints(p.text);
        splitSpans(p, cps, charMatches(cps, isSpace), Behavior::Removed, false,
                   next);
        break;
      }
      case PreTokenizer::Digits: {
        auto cps = codePoints(p.text);
        splitSpans(p, cps, charMatches(cps, unicode::isNumber),
                   pt.individualDigits ? Behavior::Isolated
                                       : Behavior::Contiguous,
                   false, next);
        break;
      }
      case PreTokenizer::Punctuation: {
        auto cps = codePoints(p.text);
        splitSpans(p, cps, charMatches(cps, isBertPunctuation), pt.behavior,
                   false, next);
        break;
      }
      case PreTokenizer::CharDelimiter: {
        auto cps = codePoints(p.text);
        uint32_t d = pt.delimiter;
        splitSpans(p, cps, charMatches(cps, [d](uint32_t c) { return c == d; }),
                   Behavior::Removed, false, next);
        break;
      }
      }
    }
    pieces = std::move(next);
  }
  return pieces;
}

//===----------------------------------------------------------------------===//
// Models
//===----------------------------------------------------------------------===//

/// The ids of `s`'s bytes as <0xXX> tokens, or std::nullopt if one is
/// missing.
static std::optional<std::vector<int32_t>> byteTokens(const Model &m,
                                                      StringRef s) {
  std::vector<int32_t> out;
  for (char c : s) {
    int32_t id = m.byteIds[static_cast<uint8_t>(c)];
    if (id < 0)
      return std::nullopt;
    out.push_back(id);
  }
  return out;
}

static void bpe(const Model &m, StringRef word, std::vector<int32_t> &out) {
  if (m.ignoreMerges) {
    auto it = m.ids.find(word);
    if (it != m.ids.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<int32_t> symbols;
  std::optional<int32_t> pendingUnk;
  for (size_t i = 0; i < word.size();) {
    size_t len = std::min<size_t>(
        unicode::utf8Length(static_cast<uint8_t>(word[i])), word.size() - i);
    StringRef ch = word.substr(i, len);
    i += len;
    auto it = m.ids.find(ch);
    if (it != m.ids.end()) {
      if (pendingUnk)
        symbols.push_back(*pendingUnk);
      pendingUnk.reset();
      symbols.push_back(it->second);
      continue;
    }
    if (m.byteFallback)
      if (std::optional<std::vector<int32_t>> bytes = byteTokens(m, ch)) {
        if (pendingUnk)
          symbols.push_back(*pendingUnk);
        pendingUnk.reset();
        symbols.insert(symbols.end(), bytes->begin(), bytes->end());
        continue;
      }
    if (m.unk) {
      if (pendingUnk && !m.fuseUnk)
        symbols.push_back(*pendingUnk);
      pendingUnk = *m.unk;
    }
  }
  if (pendingUnk)
    symbols.push_back(*pendingUnk);
  // Merge the lowest-ranked pair (leftmost on ties) until none is left.
  while (symbols.size() > 1) {
    uint32_t bestRank = UINT32_MAX;
    size_t best = 0;
    int32_t merged = -1;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      auto it = m.merges.find({symbols[i], symbols[i + 1]});
      if (it != m.merges.end() && it->second.first < bestRank) {
        bestRank = it->second.first;
        merged = it->second.second;
        best = i;
      }
    }
    if (merged < 0)
      break;
    symbols[best] = merged;
    symbols.erase(symbols.begin() + best + 1);
  }
  out.insert(out.end(), symbols.begin(), symbols.end());
}

static void wordPiece(const Model &m, StringRef word,
                      std::vector<int32_t> &out) {
  size_t chars = codePoints(word).size();
  if (chars > m.maxInputChars) {
    out.push_back(*m.unk);
    return;
  }
  std::vector<int32_t> sub;
  for (size_t start = 0; start < word.size();) {
    size_t end = word.size();
    std::optional<int32_t> found;
    while (start < end) {
      std::string candidate = (start > 0 ? m.prefix : std::string()) +
                              word.substr(start, end - start).str();
      auto it = m.ids.find(candidate);
      if (it != m.ids.end()) {
        found = it->second;
        break;
      }
      // Back off one character.
      do
        --end;
      while (end > start && (static_cast<uint8_t>(word[end]) & 0xC0) == 0x80);
    }
    if (!found) {
      out.push_back(*m.unk);
      return;
    }
    sub.push_back(*found);
    start = end;
  }
  out.insert(out.end(), sub.begin(), sub.end());
}

/// Unigram::encode_optimized: the best-scoring segmentation, unknown
/// characters fused into one <unk>.
static void unigram(const Model &m, StringRef s, std::vector<int32_t> &out) {
  if (s.empty())
    return;
  struct Node {
    double score = 0;
    std::optional<size_t> start;
    int32_t id = -1;
  };
  std::vector<Node> best(s.size() + 1);
  best[0].start = 0;
  double unkScore = m.minScore - 10.0;
  for (size_t at = 0; at < s.size();) {
    size_t charLen = std::min<size_t>(
        unicode::utf8Length(static_cast<uint8_t>(s[at])), s.size() - at);
    double here = best[at].score;
    bool single = false;
    size_t limit = std::min(s.size() - at, m.maxTokenBytes);
    for (size_t len = 1; len <= limit; ++len) {
      auto it = m.ids.find(s.substr(at, len));
      if (it == m.ids.end())
        continue;
      double cand = here + m.scores[it->second];
      Node &target = best[at + len];
      if (!target.start || cand > target.score) {
        target.score = cand;
        target.start = at;
        target.id = it->second;
      }
      if (len == charLen)
        single = true;
    }
    if (!single) {
      Node &target = best[at + charLen];
      double cand = here + unkScore;
      if (!target.start || cand > target.score) {
        target.score = cand;
        target.start = at;
        target.id = m.unk ? *m.unk : -1;
      }
    }
    at += charLen;
  }
  // Backtrack; consecutive unknown pieces fuse.
  std::vector<std::string> pieces;
  std::string unk;
  for (size_t end = s.size(); end > 0;) {
    const Node &n = best[end];
    size_t start = *n.start;
    std::string piece = s.substr(start, end - start).str();
    if (m.unk && n.id == *m.unk) {
      unk = piece + unk;
    } else {
      if (!unk.empty())
        pieces.push_back(std::move(unk));
      unk.clear();
      pieces.push_back(std::move(piece));
    }
    end = start;
  }
  if (!unk.empty())
    pieces.push_back(std::move(unk));
  for (const std::string &p : llvm::reverse(pieces)) {
    auto it = m.ids.find(p);
    if (it != m.ids.end()) {
      out.push_back(it->second);
      continue;
    }
    if (m.byteFallback)
      if (std::optional<std::vector<int32_t>> bytes = byteTokens(m, p)) {
        out.insert(out.end(), bytes->begin(), bytes->end());
        continue;
      }
    if (m.unk)
      out.push_back(*m.unk);
  }
}

/// llama.cpp's llm_tokenizer_spm_session::tokenize: merge the adjacent pair
/// whose concatenation is the highest-scoring token (leftmost on ties),
/// then bytes for what is left unknown.
static void spm(const Model &m, StringRef s, std::vector<int32_t> &out) {
  struct Symbol {
    int prev, next;
    size_t begin, len;
  };
  std::vector<Symbol> sym;
  for (size_t i = 0; i < s.size();) {
    size_t len = std::min<size_t>(
        unicode::utf8Length(static_cast<uint8_t>(s[i])), s.size() - i);
    int idx = static_cast<int>(sym.size());
    sym.push_back({idx - 1,
                   static_cast<int>(s.size() - i == len ? -1 : idx + 1), i,
                   len});
    i += len;
  }
  struct Bigram {
    int left, right;
    double score;
    size_t size;
  };
  auto worse = [](const Bigram &a, const Bigram &b) {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Bigram, std::vector<Bigram>, decltype(worse)> queue(
      worse);
  auto tryAdd = [&](int left, int right) {
    if (left == -1 || right == -1)
      return;
    StringRef text = s.substr(sym[left].begin, sym[left].len + sym[right].len);
    auto it = m.ids.find(text);
    if (it == m.ids.end())
      return;
    queue.push({left, right, m.scores[it->second], text.size()});
  };
  for (size_t i = 1; i < sym.size(); ++i)
    tryAdd(static_cast<int>(i - 1), static_cast<int>(i));
  while (!queue.empty()) {
    Bigram b = queue.top();
    queue.pop();
    Symbol &l = sym[b.left], &r = sym[b.right];
    if (l.len == 0 || r.len == 0 || l.len + r.len != b.size)
      continue;
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (r.next >= 0)
      sym[r.next].prev = b.left;
    tryAdd(l.prev, b.left);
    tryAdd(b.left, l.next);
  }
  for (int i = sym.empty() ? -1 : 0; i != -1; i = sym[i].next) {
    StringRef text = s.substr(sym[i].begin, sym[i].len);
    auto it = m.ids.find(text);
    if (it != m.ids.end()) {
      out.push_back(it->second);
      continue;
    }
    for (char c : text) {
      int32_t id = m.byteIds[static_cast<uint8_t>(c)];
      if (id >= 0)
        out.push_back(id);
      else if (m.unk)
        out.push_back(*m.unk);
    }
  }
}

static void runModel(const Model &m, StringRef piece,
                     std::vector<int32_t> &out) {
  switch (m.kind) {
  case Model::BPE:
    return bpe(m, piece, out);
  case Model::WordPiece:
    return wordPiece(m, piece, out);
  case Model::WordLevel: {
    auto it = m.ids.find(piece);
    if (it != m.ids.end())
      out.push_back(it->second);
    else if (m.unk)
      out.push_back(*m.unk);
    return;
  }
  case Model::Unigram:
    return unigram(m, piece, out);
  case Model::SPM:
    return spm(m, piece, out);
  }
}

//===----------------------------------------------------------------------===//
// Tokenizer
//===----------------------------------------------------------------------===//

Expected<std::vector<int32_t>>
Tokenizer::encode(StringRef text, bool addSpecial, bool truncate) const {
  size_t bad = 0;
  if (!unicode::decodeUTF8(text, &bad))
    return fail("the text to encode is not valid UTF-8 (byte " +
                llvm::Twine(bad) + ")");
  const Impl &t = *impl;
  Segment whole;
  whole.text = text.str();
  whole.atStart = true;
  std::vector<Segment> raw, segments;
  splitAdded(t, whole, /*normalizedTokens=*/false, raw);
  for (Segment &seg : raw) {
    if (seg.id) {
      segments.push_back(std::move(seg));
      continue;
    }
    seg.text = normalize(t, std::move(seg.text));
    seg.normalized = true;
    splitAdded(t, seg, /*normalizedTokens=*/true, segments);
  }
  std::vector<int32_t> ids;
  for (const Segment &seg : segments) {
    if (seg.id) {
      ids.push_back(*seg.id);
      continue;
    }
    std::vector<Piece> pieces = preTokenize(t, {Piece{seg.text, seg.atStart}});
    for (const Piece &p : pieces)
      runModel(t.model, p.text, ids);
  }
  if (truncate && t.truncation) {
    // tokenizers: the sequence is cut so that it and the post-processor's
    // tokens fit max_length.
    size_t specials = addSpecial ? t.prefix.size() + t.suffix.size() : 0;
    if (t.truncation->maxLength < specials)
      return fail("truncation max_length " +
                  llvm::Twine(t.truncation->maxLength) +
                  " is shorter than the post-processor's " +
                  llvm::Twine(specials) + " special tokens");
    size_t keep = t.truncation->maxLength - specials;
    if (ids.size() > keep) {
      if (t.truncation->left)
        ids.erase(ids.begin(), ids.end() - keep);
      else
        ids.resize(keep);
    }
  }
  if (addSpecial) {
    ids.insert(ids.begin(), t.prefix.begin(), t.prefix.end());
    ids.insert(ids.end(), t.suffix.begin(), t.suffix.end());
  }
  return ids;
}

std::vector<int32_t> Tokenizer::pad(std::vector<int32_t> ids) const {
  const std::optional<Impl::Padding> &p = impl->padding;
  if (!p)
    return ids;
  size_t target = std::max(p->fixed, ids.size());
  if (p->multipleOf && target % p->multipleOf)
    target += p->multipleOf - target % p->multipleOf;
  size_t n = target - ids.size();
  ids.insert(p->left ? ids.begin() : ids.end(), n, p->padId);
  return ids;
}

std::optional<size_t> Tokenizer::truncationLength() const {
  if (!impl->truncation)
    return std::nullopt;
  return impl->truncation->maxLength;
}

static std::string replaceAll(StringRef s, StringRef from, StringRef to) {
  std::string out;
  for (size_t k; (k = s.find(from)) != StringRef::npos;) {
    out += s.substr(0, k);
    out += to;
    s = s.substr(k + from.size());
  }
  out += s;
  return out;
}

/// tokenizers' WordPiece decoder cleanup.
static std::string cleanup(std::string s) {
  static const std::pair<const char *, const char *> kRules[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
      {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
      {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (auto [from, to] : kRules) {
    std::string out;
    StringRef rest = s;
    StringRef f(from);
    for (size_t k; (k = rest.find(f)) != StringRef::npos;) {
      out += rest.substr(0, k);
      out += to;
      rest = rest.substr(k + f.size());
    }
    out += rest;
    s = std::move(out);
  }
  return s;
}

/// transformers' clean_up_tokenization.
static std::string cleanUpTokenization(std::string s) {
  static const std::pair<const char *, const char *> kRules[] = {
      {" .", "."},     {" ?", "?"},     {" !", "!"},   {" ,", ","},
      {" ' ", "'"},    {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"},
      {" 've", "'ve"}, {" 're", "'re"}};
  for (auto [from, to] : kRules)
    s = replaceAll(s, from, to);
  return s;
}

static std::vector<std::string> decodeChain(const Decoder &d,
                                            std::vector<std::string> tokens) {
  std::vector<std::string> out;
  switch (d.kind) {
  case Decoder::ByteLevel: {
    std::string bytes;
    for (const std::string &t : tokens) {
      std::string mapped;
      bool ok = true;
      for (uint32_t c : codePoints(t)) {
        std::optional<uint8_t> b = unicodeToByte(c);
        if (!b) {
          ok = false;
          break;
        }
        mapped.push_back(static_cast<char>(*b));
      }
      bytes += ok ? mapped : t;
    }
    out.push_back(unicode::sanitizeUTF8(bytes));
    return out;
  }
  case Decoder::WordPiece:
    for (auto [i, t] : llvm::enumerate(tokens)) {
      std::string s = t;
      if (i != 0) {
        if (StringRef(s).starts_with(d.pattern))
          s = s.substr(d.pattern.size());
        else
          s = " " + s;
      }
      out.push_back(d.cleanup ? cleanup(std::move(s)) : std::move(s));
    }
    return out;
  case Decoder::Metaspace:
    for (auto [i, t] : llvm::enumerate(tokens)) {
      std::string s;
      StringRef rest = t;
      while (!rest.empty()) {
        if (rest.starts_with(d.pattern)) {
          if (!(i == 0 && d.prependFirst))
            s.push_back(' ');
          rest = rest.substr(d.pattern.size());
        } else {
          s.push_back(rest.front());
          rest = rest.drop_front();
        }
      }
      out.push_back(std::move(s));
    }
    return out;
  case Decoder::Replace:
    for (const std::string &t : tokens) {
      std::string s;
      StringRef rest = t;
      for (size_t k; !d.pattern.empty() &&
                     (k = rest.find(d.pattern)) != StringRef::npos;) {
        s += rest.substr(0, k);
        s += d.content;
        rest = rest.substr(k + d.pattern.size());
      }
      s += rest;
      out.push_back(std::move(s));
    }
    return out;
  case Decoder::ByteFallback: {
    std::string bytes;
    size_t count = 0;
    auto flush = [&] {
      if (count == 0)
        return;
      if (unicode::decodeUTF8(bytes))
        out.push_back(bytes);
      else
        for (size_t k = 0; k < count; ++k)
          out.push_back("\xEF\xBF\xBD");
      bytes.clear();
      count = 0;
    };
    for (const std::string &t : tokens) {
      unsigned v;
      StringRef s(t);
      if (s.size() == 6 && s.starts_with("<0x") && s.ends_with(">") &&
          !s.substr(3, 2).getAsInteger(16, v)) {
        bytes.push_back(static_cast<char>(v));
        ++count;
        continue;
      }
      flush();
      out.push_back(t);
    }
    flush();
    return out;
  }
  case Decoder::Fuse: {
    std::string all;
    for (const std::string &t : tokens)
      all += t;
    out.push_back(std::move(all));
    return out;
  }
  case Decoder::Strip:
    for (const std::string &t : tokens) {
      auto cps = codePoints(t);
      uint32_t c = codePoints(d.content).front();
      size_t b = 0, e = cps.size();
      while (b < e && b < d.start && cps[b] == c)
        ++b;
      while (e > b && cps.size() - e < d.stop && cps[e - 1] == c)
        --e;
      out.push_back(
          unicode::encodeUTF8(ArrayRef<uint32_t>(cps).slice(b, e - b)));
    }
    return out;
  }
  return tokens;
}

std::string Tokenizer::decode(ArrayRef<int32_t> ids, bool skipSpecial) const {
  const Impl &t = *impl;
  std::vector<std::string> tokens;
  for (int32_t id : ids) {
    if (skipSpecial && isSpecial(id))
      continue;
    if (const std::string *s = t.token(id))
      tokens.push_back(*s);
  }
  if (!t.hasDecoder) {
    std::string out = llvm::join(tokens, " ");
    return t.cleanUpSpaces ? cleanUpTokenization(std::move(out)) : out;
  }
  for (const Decoder &d : t.decoders)
    tokens = decodeChain(d, std::move(tokens));
  std::string out;
  for (const std::string &s : tokens)
    out += s;
  if (t.cleanUpSpaces)
    out = cleanUpTokenization(std::move(out));
  return out;
}

std::string Tokenizer::StreamDecoder::step(int32_t id) {
  ids.push_back(id);
  std::string text = tokenizer->decode(ids, skipSpecial);
  if (text.size() <= contextText.size() ||
      StringRef(text).ends_with("\xEF\xBF\xBD") ||
      !StringRef(text).starts_with(contextText))
    return "";
  std::string fresh = text.substr(contextText.size());
  // The tokens just printed become the context of the next ones.
  ids.erase(ids.begin(), ids.begin() + contextSize);
  contextSize = ids.size();
  contextText = tokenizer->decode(ids, skipSpecial);
  return fresh;
}

std::string Tokenizer::StreamDecoder::finish() {
  std::string text = tokenizer->decode(ids, skipSpecial);
  std::string fresh = StringRef(text).starts_with(contextText)
                          ? text.substr(contextText.size())
                          : text;
  ids.clear();
  contextSize = 0;
  contextText.clear();
  return fresh;
}

std::optional<int32_t> Tokenizer::bosId() const { return impl->bos; }
ArrayRef<int32_t> Tokenizer::eosIds() const { return impl->eos; }
size_t Tokenizer::vocabSize() const {
  size_t n = impl->model.vocab.size();
  for (const AddedToken &a : impl->added)
    n = std::max(n, static_cast<size_t>(a.id) + 1);
  return n;
}
std::optional<int32_t> Tokenizer::tokenToId(StringRef token) const {
  for (const AddedToken &a : impl->added)
    if (a.content == token)
      return a.id;
  auto it = impl->model.ids.find(token);
  if (it != impl->model.ids.end())
    return it->second;
  return std::nullopt;
}
std::string Tokenizer::idToToken(int32_t id) const {
  const std::string *s = impl->token(id);
  return s ? *s : std::string();
}
bool Tokenizer::isSpecial(int32_t id) const {
  auto it = impl->addedById.find(id);
  return it != impl->addedById.end() && impl->added[it->second].special;
}
StringRef Tokenizer::description() const { return impl->description; }
std::optional<StringRef> Tokenizer::chatTemplate() const {
  if (!impl->chatTemplate)
    return std::nullopt;
  return StringRef(*impl->chatTemplate);
}
