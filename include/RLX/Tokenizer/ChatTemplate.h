//===- ChatTemplate.h - A Jinja subset for chat templates -------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Renders the chat templates of tokenizer_config.json / GGUF
// tokenizer.chat_template the way transformers does (Jinja with trim_blocks
// and lstrip_blocks), for the subset chat templates use: text, {{ expr }},
// {% for x in xs %}, {% if %}/{% elif %}/{% else %}, {% set %} (also
// namespace() attributes), whitespace control with '-', comments; string
// and integer literals, variables, attribute and item access, slices,
// + - * / % ~, comparisons, in, and/or/not, inline if/else, loop.index0 /
// index / first / last / length, the tests defined / undefined / none /
// string, a few filters (trim, length, upper, lower, tojson) and string
// methods (strip, lstrip, rstrip, upper, lower, startswith, endswith), and
// raise_exception(). Anything else is an error naming it.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_TOKENIZER_CHATTEMPLATE_H
#define RLX_TOKENIZER_CHATTEMPLATE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace rlx {

struct ChatMessage {
  std::string role, content;
};

struct ChatTemplateInputs {
  std::vector<ChatMessage> messages;
  bool addGenerationPrompt = true;
  std::string bosToken, eosToken;
};

/// Renders `source` (a Jinja chat template) over `inputs`.
llvm::Expected<std::string>
renderChatTemplate(llvm::StringRef source, const ChatTemplateInputs &inputs);

} // namespace rlx

#endif // RLX_TOKENIZER_CHATTEMPLATE_H
