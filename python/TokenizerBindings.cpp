//===- TokenizerBindings.cpp - Tokenizers and text generation -------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `rlx.Tokenizer` (tokenizer.json or a GGUF vocabulary: encode, decode,
// streaming decode, chat templates) and `rlx._generate`, the native part of
// `rlx.generate`: a model path and a text (or token id) prompt in, the
// generated text out, as `rlx-run --model --prompt` does (config and weights
// through recipeWeights, the model's tokenizer, EOS stop tokens, streamed
// text).
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"
#include "RLX/Compiler/Session.h"
#include "RLX/Flow/Generate.h"
#include "RLX/Flow/Recipes.h"
#include "RLX/Tokenizer/ChatTemplate.h"
#include "RLX/Tokenizer/Tokenizer.h"
#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/SafeTensors.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

using namespace rlx;
using namespace rlx::python;
using namespace nb::literals;

//===----------------------------------------------------------------------===//
// Tokenizer
//===----------------------------------------------------------------------===//

/// The tokenizer of a model directory or .gguf file. A directory without a
/// tokenizer.json is refused here with a message that fits Python (the
/// library's names rlx-run's --prompt-ids).
static Tokenizer tokenizerForModel(const std::string &path) {
  if (!llvm::StringRef(path).ends_with(".gguf")) {
    if (!llvm::sys::fs::exists(path))
      throw RLXError(path + ": no such file or directory");
    llvm::SmallString<128> json(path);
    llvm::sys::path::append(json, "tokenizer.json");
    if (llvm::sys::fs::is_directory(path) && !llvm::sys::fs::exists(json))
      throw RLXError(path + ": no tokenizer: looked for " + json.str().str() +
                     " (a Hugging Face tokenizer.json)");
  }
  return unwrap(Tokenizer::forModel(path));
}

/// Token ids of a Python sequence of ints, each in [0, INT32_MAX].
static std::vector<int32_t> tokenIds(nb::handle ids, llvm::StringRef what) {
  if (nb::isinstance<nb::str>(ids) || nb::isinstance<nb::bytes>(ids))
    throw nb::type_error(
        (what + ": expected a sequence of token ids").str().c_str());
  std::vector<int32_t> out;
  for (nb::handle t : nb::iter(ids))
    out.push_back(static_cast<int32_t>(intInRange(
        t, what + "[" + llvm::Twine(out.size()) + "]", 0, INT32_MAX)));
  return out;
}

static std::string tokenString(const Tokenizer &tok,
                               std::optional<int32_t> id) {
  return id ? tok.idToToken(*id) : std::string();
}

/// The chat template of `tok` rendered over `messages` (a sequence of
/// mappings with "role" and "content").
static std::string applyChatTemplate(const Tokenizer &tok, nb::handle messages,
                                     bool addGenerationPrompt) {
  std::optional<llvm::StringRef> source = tok.chatTemplate();
  if (!source)
    throw RLXError(tok.description().str() +
                   " has no chat template (tokenizer_config.json "
                   "chat_template or tokenizer.chat_template)");
  ChatTemplateInputs in;
  in.addGenerationPrompt = addGenerationPrompt;
  in.bosToken = tokenString(tok, tok.bosId());
  if (!tok.eosIds().empty())
    in.eosToken = tok.idToToken(tok.eosIds().front());
  for (nb::handle m : nb::iter(messages)) {
    std::string where = "messages[" + std::to_string(in.messages.size()) + "]";
    if (!nb::hasattr(m, "__getitem__") || nb::isinstance<nb::str>(m))
      throw RLXError(where +
                     ": expected a mapping with 'role' and 'content', "
                     "got " +
                     pyStr(nb::repr(m)));
    ChatMessage msg;
    for (auto [key, field] :
         {std::pair{"role", &msg.role}, std::pair{"content", &msg.content}}) {
      nb::object value;
      try {
        value = m[key];
      } catch (nb::python_error &) {
        throw RLXError(where + ": no '" + key + "'");
      }
      if (!nb::isinstance<nb::str>(value))
        throw RLXError(where + "['" + key + "']: expected str, got " +
                       pyStr(nb::repr(value)));
      *field = nb::cast<std::string>(value);
    }
    in.messages.push_back(std::move(msg));
  }
  llvm::Expected<std::string> text = renderChatTemplate(*source, in);
  if (!text)
    throw RLXError("chat template of " + tok.description().str() + ": " +
                   llvm::toString(text.takeError()));
  return std::move(*text);
}

namespace {
/// `rlx.TextStream`: a StreamDecoder with the tokenizer it reads.
struct PyTextStream {
  PyTextStream(const Tokenizer &tok, bool skipSpecial)
      : tokenizer(std::make_unique<Tokenizer>(tok)),
        decoder(*tokenizer, skipSpecial) {}
  std::unique_ptr<Tokenizer> tokenizer;
  Tokenizer::StreamDecoder decoder;
};
} // namespace

static void registerTokenizerClass(nb::module_ &m) {
  nb::class_<PyTextStream>(
      m, "TextStream",
      "Turns token ids arriving one at a time into text: step(id) returns\n"
      "the characters `id` completes, finish() what is left; together they\n"
      "equal Tokenizer.decode of all the ids.")
      .def(
          "step",
          [](PyTextStream &s, nb::handle id) {
            return s.decoder.step(
                static_cast<int32_t>(intInRange(id, "id", 0, INT32_MAX)));
          },
          "id"_a, nb::sig("def step(self, id: int) -> str"),
          "The new text `id` completes (possibly empty).")
      .def(
          "finish", [](PyTextStream &s) { return s.decoder.finish(); },
          "Whatever is left (incomplete characters as U+FFFD).");

  nb::class_<Tokenizer>(
      m, "Tokenizer",
      "Text to token ids and back, as Hugging Face `tokenizers` does: a\n"
      "tokenizer.json (BPE, WordPiece, Unigram, WordLevel; BOS/EOS from the\n"
      "tokenizer_config.json and generation_config.json beside it) or the\n"
      "vocabulary of a GGUF file. A component it does not implement is an\n"
      "error naming it.")
      .def_static(
          "from_file",
          [](nb::handle path) {
            return unwrap(Tokenizer::fromFile(pathString(path)));
          },
          "path"_a,
          nb::sig("def from_file(path: str | os.PathLike[str]) -> Tokenizer"),
          "Reads a Hugging Face tokenizer.json.")
      .def_static(
          "for_model",
          [](nb::handle path) { return tokenizerForModel(pathString(path)); },
          "path"_a,
          nb::sig("def for_model(path: str | os.PathLike[str]) -> Tokenizer"),
          "The tokenizer of a model: a directory's tokenizer.json or a .gguf\n"
          "file's vocabulary.")
      .def(
          "encode",
          [](const Tokenizer &t, const std::string &text, bool addSpecial,
             bool truncate, bool pad) {
            std::vector<int32_t> ids =
                unwrap(t.encode(text, addSpecial, truncate));
            return pad ? t.pad(std::move(ids)) : ids;
          },
          "text"_a, "add_special_tokens"_a = true, "truncate"_a = false,
          "pad"_a = false,
          "Token ids of `text`; add_special_tokens applies the\n"
          "post-processor (BOS, [CLS]/[SEP], ...). truncate and pad apply\n"
          "tokenizer.json's truncation and padding, as the tokenizers\n"
          "library's encode does (transformers' tokenizer calls do not\n"
          "unless asked).")
      .def(
          "decode",
          [](const Tokenizer &t, nb::handle ids, bool skipSpecial) {
            return t.decode(tokenIds(ids, "ids"), skipSpecial);
          },
          "ids"_a, "skip_special_tokens"_a = false,
          nb::sig("def decode(self, ids: typing.Sequence[int], "
                  "skip_special_tokens: bool = False) -> str"),
          "The text of `ids` (ids outside the vocabulary are left out;\n"
          "invalid UTF-8 becomes U+FFFD).")
      .def(
          "stream",
          [](const Tokenizer &t, bool skipSpecial) {
            return new PyTextStream(t, skipSpecial);
          },
          "skip_special_tokens"_a = false,
          "A TextStream decoding ids one at a time.")
      .def(
          "apply_chat_template",
          [](const Tokenizer &t, nb::handle messages, bool addPrompt) {
            return applyChatTemplate(t, messages, addPrompt);
          },
          "messages"_a, "add_generation_prompt"_a = true,
          nb::sig("def apply_chat_template(self, messages: "
                  "typing.Sequence[typing.Mapping[str, str]], "
                  "add_generation_prompt: bool = True) -> str"),
          "Renders the model's chat template over `messages` ({'role': ...,\n"
          "'content': ...}) as transformers does (not tokenized; encode it\n"
          "with add_special_tokens=False).")
      .def(
          "token_to_id",
          [](const Tokenizer &t, const std::string &token) {
            return t.tokenToId(token);
          },
          "token"_a, "The id of `token`, or None.")
      .def("id_to_token", &Tokenizer::idToToken, "id"_a,
           "The token's string as the vocabulary stores it ('' if unknown).")
      .def("is_special", &Tokenizer::isSpecial, "id"_a,
           "Whether `id` is a special (added, control) token.")
      .def_prop_ro(
          "eos_ids",
          [](const Tokenizer &t) {
            return std::vector<int32_t>(t.eosIds().begin(), t.eosIds().end());
          },
          "Tokens that end generation (EOS, end of turn...).")
      .def_prop_ro("bos_id", &Tokenizer::bosId,
                   "The token the post-processor starts a text with, or "
                   "None.")
      .def_prop_ro("vocab_size", &Tokenizer::vocabSize,
                   "One past the largest id (model vocabulary and added "
                   "tokens).")
      .def_prop_ro(
          "chat_template",
          [](const Tokenizer &t) -> std::optional<std::string> {
            if (std::optional<llvm::StringRef> s = t.chatTemplate())
              return s->str();
            return std::nullopt;
          },
          "The chat template found beside the tokenizer, or None.")
      .def_prop_ro(
          "description",
          [](const Tokenizer &t) { return t.description().str(); },
          "What was loaded: \"tokenizer.json (BPE)\", \"x.gguf (llama)\".")
      .def("__repr__", [](const Tokenizer &t) {
        return "<rlx.Tokenizer " + t.description().str() + ", " +
               std::to_string(t.vocabSize()) + " tokens>";
      });
}

//===----------------------------------------------------------------------===//
// Text generation
//===----------------------------------------------------------------------===//

static Device deviceNamed(const std::string &name) {
  if (name == "cpu")
    return Device::Cpu;
  if (name == "vulkan" || name == "gpu")
    return Device::Vulkan;
  throw nb::value_error(
      ("unknown device '" + name + "' (expected 'cpu' or 'vulkan')").c_str());
}

/// rlx._generate: see rlx.generate (python/rlx/__init__.py). Returns (text
/// or None, new token ids, GenerationStats).
static nb::tuple generateText(nb::handle model, nb::handle prompt,
                              unsigned maxNewTokens, float temperature,
                              int topK, float topP, uint64_t seed,
                              bool ignoreEos, bool chat,
                              std::optional<int64_t> maxContext,
                              nb::handle onText, const std::string &device) {
  std::string path = pathString(model);
  SamplingOptions sampling{temperature, topK, topP, seed};
  check(checkSamplingOptions(sampling));
  if (maxContext && *maxContext <= 0)
    throw RLXError("max_context is " + std::to_string(*maxContext) +
                   "; it must be positive");
  Device dev = deviceNamed(device);

  // A text prompt needs the tokenizer; with token ids it is optional (the
  // text, on_text and EOS stops need it).
  bool textPrompt = nb::isinstance<nb::str>(prompt);
  std::optional<Tokenizer> tokenizer;
  std::vector<int32_t> ids;
  if (textPrompt) {
    tokenizer = tokenizerForModel(path);
    std::string text = nb::cast<std::string>(prompt);
    if (chat) {
      nb::list messages;
      nb::dict user;
      user["role"] = "user";
      user["content"] = prompt;
      messages.append(user);
      text = applyChatTemplate(*tokenizer, messages, true);
    }
    // A rendered chat template carries its own special tokens.
    ids = unwrap(tokenizer->encode(text, /*addSpecial=*/!chat));
    if (ids.empty())
      throw RLXError("prompt: the text encodes to no tokens");
  } else {
    if (chat)
      throw RLXError("chat=True needs a text prompt");
    ids = tokenIds(prompt, "prompt");
    if (ids.empty())
      throw RLXError("prompt: no token ids");
    if (!onText.is_none())
      tokenizer = tokenizerForModel(path);
    else if (llvm::Expected<Tokenizer> tok = Tokenizer::forModel(path))
      tokenizer = std::move(*tok);
    else
      llvm::consumeError(tok.takeError());
  }

  LoadedModel m = unwrap(loadModel(path));
  if (m.config.modelType == "bert")
    throw RLXError(path + ": a BERT encoder generates no text");
  DecoderFlow recipe = unwrap(decoderFlowFor(m.config));
  int64_t context =
      maxContext ? *maxContext
                 : std::min<int64_t>(m.config.maxPositions,
                                     ids.size() + std::max(maxNewTokens, 1u));

  std::vector<int32_t> stop;
  if (tokenizer && !ignoreEos)
    stop.assign(tokenizer->eosIds().begin(), tokenizer->eosIds().end());
  std::optional<Tokenizer::StreamDecoder> stream;
  nb::object fn = nb::borrow(onText);
  if (tokenizer && !fn.is_none())
    stream.emplace(*tokenizer);
  // Once on_text has raised, it is not called again; its exception is
  // raised when generation returns.
  bool failed = false;
  auto emit = [&](const std::string &piece) {
    if (piece.empty() || failed)
      return;
    nb::gil_scoped_acquire gil;
    try {
      fn(piece);
    } catch (...) {
      failed = true;
      setPendingPythonError(std::current_exception());
    }
  };

  Session session(dev);
  std::unique_ptr<Generator> gen;
  std::vector<int32_t> tokens;
  auto run = [&]() -> llvm::Error {
    nb::gil_scoped_release noGil;
    auto created =
        Generator::create(session, std::move(recipe), *m.weights, context);
    if (!created)
      return created.takeError();
    gen = std::move(*created);
    auto out = gen->generate(
        ids, maxNewTokens, sampling,
        [&](int32_t token) {
          // The stop token itself is not part of the text.
          if (stream && !llvm::is_contained(stop, token))
            emit(stream->step(token));
        },
        nullptr, stop);
    if (!out)
      return out.takeError();
    tokens = std::move(*out);
    if (stream)
      emit(stream->finish());
    return llvm::Error::success();
  };
  check(run());

  nb::object text = nb::none();
  if (tokenizer) {
    llvm::ArrayRef<int32_t> textIds(tokens);
    if (!textIds.empty() && llvm::is_contained(stop, textIds.back()))
      textIds = textIds.drop_back();
    std::string decoded = tokenizer->decode(textIds);
    text = nb::str(decoded.data(), decoded.size());
  }
  nb::list newTokens;
  for (int32_t t : tokens)
    newTokens.append(t);
  return nb::make_tuple(text, newTokens, gen->stats());
}

void python::registerTokenizer(nb::module_ &m) {
  registerTokenizerClass(m);
  m.def("_generate", &generateText, "model"_a, "prompt"_a,
        "max_new_tokens"_a = 32, nb::kw_only(), "temperature"_a = 0.0f,
        "top_k"_a = 0, "top_p"_a = 1.0f, "seed"_a = 0, "ignore_eos"_a = false,
        "chat"_a = false, "max_context"_a = nb::none(),
        "on_text"_a = nb::none(), "device"_a = "cpu",
        nb::sig("def _generate(model: str | os.PathLike[str], prompt: str | "
                "typing.Sequence[int], max_new_tokens: int = 32, *, "
                "temperature: float = 0.0, top_k: int = 0, top_p: float = "
                "1.0, seed: int = 0, ignore_eos: bool = False, chat: bool = "
                "False, max_context: int | None = None, on_text: "
                "typing.Callable[[str], object] | None = None, device: str = "
                "'cpu') -> tuple[str | None, list[int], GenerationStats]"),
        "The native part of rlx.generate: returns (the text, or None\n"
        "without a tokenizer; the new token ids; GenerationStats).");
}
