//===- JSON.cpp - JSON parsing with a nesting limit -----------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Weights/JSON.h"

using namespace llvm;

namespace rlx {

/// Scans `text` and returns the depth reached, stopping at the first byte
/// that goes past `limit` (its offset in `where`).
static unsigned scanDepth(StringRef text, unsigned limit, size_t &where) {
  unsigned depth = 0, deepest = 0;
  for (size_t i = 0, e = text.size(); i < e; ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < e && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      continue;
    }
    if (c == '[' || c == '{') {
      if (++depth > deepest)
        deepest = depth;
      if (depth > limit) {
        where = i;
        return depth;
      }
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

unsigned jsonNestingDepth(StringRef text, unsigned limit) {
  size_t where = 0;
  return scanDepth(text, limit, where);
}

Expected<json::Value> parseJSON(StringRef text) {
  size_t where = 0;
  if (scanDepth(text, kMaxJSONDepth, where) > kMaxJSONDepth)
    return createStringError("JSON nested deeper than " + Twine(kMaxJSONDepth) +
                             " levels at byte " + Twine(where));
  return json::parse(text);
}

StringRef jsonKind(const json::Value &v) {
  switch (v.kind()) {
  case json::Value::Null:
    return "null";
  case json::Value::Boolean:
    return "a boolean";
  case json::Value::Number:
    return "a number";
  case json::Value::String:
    return "a string";
  case json::Value::Array:
    return "an array";
  case json::Value::Object:
    return "an object";
  }
  llvm_unreachable("unknown JSON kind");
}

} // namespace rlx
