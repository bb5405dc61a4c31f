//===- JSON.h - JSON parsing with a nesting limit ---------------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// llvm::json::parse recurses once per nesting level (and so does the
// destructor of the value it builds), so a file of a few hundred kilobytes of
// '[' overflows the stack. Every JSON file RLX reads from outside (safetensors
// headers, shard indexes, HF config.json, AOT manifests) goes through
// parseJSON, which refuses deep nesting before parsing.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_WEIGHTS_JSON_H
#define RLX_WEIGHTS_JSON_H

#include "llvm/Support/JSON.h"

namespace rlx {

/// The deepest nesting of arrays and objects parseJSON accepts. The files RLX
/// reads nest 3 to 5 levels deep.
constexpr unsigned kMaxJSONDepth = 64;

/// The deepest nesting of arrays and objects in `text` (strings skipped);
/// stops counting past `limit`. Errors are left to the parser.
unsigned jsonNestingDepth(llvm::StringRef text, unsigned limit = kMaxJSONDepth);

/// llvm::json::parse, after checking that `text` nests at most kMaxJSONDepth
/// levels; the error says "JSON nested deeper than 64 levels at byte N".
llvm::Expected<llvm::json::Value> parseJSON(llvm::StringRef text);

/// The kind of a JSON value for messages: "null", "a boolean", "a number",
/// "a string", "an array", "an object".
llvm::StringRef jsonKind(const llvm::json::Value &v);

} // namespace rlx

#endif // RLX_WEIGHTS_JSON_H
