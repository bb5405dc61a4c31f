//===- rlx-tokenize.cpp - Encode and decode with a model's tokenizer ------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// rlx-tokenize loads a tokenizer (a tokenizer.json, a model directory holding
// one, or a .gguf file's vocabulary) and encodes text to ids or decodes ids
// to text. --batch runs many texts through encode, decode and the streaming
// decoder at once, in JSON (what the integration tests use).
//
//===----------------------------------------------------------------------===//

#include "RLX/Support/Version.h"
#include "RLX/Tokenizer/ChatTemplate.h"
#include "RLX/Tokenizer/Tokenizer.h"
#include "RLX/Weights/GGUF.h"
#include "RLX/Weights/JSON.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace rlx;
namespace cl = llvm::cl;

static cl::OptionCategory category("rlx-tokenize options");
static cl::opt<std::string>
    source(cl::Positional,
           cl::desc("<tokenizer.json | model directory | model.gguf>"),
           cl::Required, cl::cat(category));
static cl::opt<std::string> text("text",
                                 cl::desc("Encode this text; print the ids"),
                                 cl::cat(category));
static cl::opt<std::string>
    decodeIds("decode",
              cl::desc("Decode these comma-separated ids; print the "
                       "text"),
              cl::cat(category));
static cl::opt<std::string> batch(
    "batch",
    cl::desc("Read a JSON array of strings from this file and print a JSON "
             "array of {\"ids\", \"decoded\", \"streamed\"} (encode, decode "
             "of the ids, and the streaming decoder's output)"),
    cl::cat(category));
static cl::opt<bool> noSpecial(
    "no-special",
    cl::desc("Encode without the post-processor's special tokens (BOS, "
             "[CLS]/[SEP]); decode leaving special tokens out"),
    cl::cat(category));
static cl::opt<std::string> chat(
    "chat",
    cl::desc("Render a chat template: read {\"template\" (default: the "
             "tokenizer's), \"messages\": [{\"role\", \"content\"}], "
             "\"add_generation_prompt\"} from this JSON file and print the "
             "text (BOS/EOS token strings from the tokenizer)"),
    cl::cat(category));
static cl::opt<bool> info("info",
                          cl::desc("Print what was loaded, BOS and EOS ids"),
                          cl::cat(category));

static int fail(llvm::Error err) {
  llvm::WithColor::error(llvm::errs(), "rlx-tokenize")
      << llvm::toString(std::move(err)) << "\n";
  return 1;
}

static int fail(const llvm::Twine &msg) {
  return fail(llvm::createStringError(llvm::inconvertibleErrorCode(), msg));
}

static llvm::Expected<Tokenizer> load(llvm::StringRef path) {
  if (llvm::sys::fs::is_directory(path) || path.ends_with(".gguf"))
    return Tokenizer::forModel(path);
  return Tokenizer::fromFile(path);
}

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  rlx::setRLXVersionPrinter();
  cl::ParseCommandLineOptions(
      argc, argv,
      "rlx-tokenize: encode text to token ids and decode ids to text with a "
      "model's tokenizer\n\n"
      "  rlx-tokenize model_dir --text \"Hello world\"     -> 9906 1917\n"
      "  rlx-tokenize model.gguf --decode 9906,1917       -> Hello world\n"
      "  rlx-tokenize tokenizer.json --batch texts.json   -> JSON\n");
  llvm::Expected<Tokenizer> tok = load(source);
  if (!tok)
    return fail(tok.takeError());
  if (info) {
    llvm::outs() << "tokenizer: " << tok->description()
                 << "\nvocab: " << tok->vocabSize() << "\nbos:";
    if (std::optional<int32_t> bos = tok->bosId())
      llvm::outs() << " " << *bos;
    llvm::outs() << "\neos:";
    for (int32_t id : tok->eosIds())
      llvm::outs() << " " << id;
    llvm::outs() << "\n";
  }
  if (text.getNumOccurrences()) {
    llvm::Expected<std::vector<int32_t>> ids = tok->encode(text, !noSpecial);
    if (!ids)
      return fail(ids.takeError());
    llvm::outs() << llvm::join(llvm::map_range(*ids,
                                               [](int32_t id) {
                                                 return std::to_string(id);
                                               }),
                               " ")
                 << "\n";
  }
  if (decodeIds.getNumOccurrences()) {
    std::vector<int32_t> ids;
    for (llvm::StringRef part : llvm::split(llvm::StringRef(decodeIds), ',')) {
      int32_t id;
      if (part.trim().getAsInteger(10, id))
        return fail("--decode: '" + part + "' is not a token id");
      ids.push_back(id);
    }
    llvm::outs() << tok->decode(ids, noSpecial) << "\n";
  }
  if (!chat.empty()) {
    auto buffer = llvm::MemoryBuffer::getFile(chat);
    if (!buffer)
      return fail(chat + ": " + buffer.getError().message());
    llvm::Expected<llvm::json::Value> parsed =
        parseJSON((*buffer)->getBuffer());
    if (!parsed)
      return fail(chat + ": " + llvm::toString(parsed.takeError()));
    const llvm::json::Object *o = parsed->getAsObject();
    if (!o)
      return fail(chat + ": expected a JSON object");
    ChatTemplateInputs in;
    in.addGenerationPrompt =
        o->getBoolean("add_generation_prompt").value_or(true);
    if (const llvm::json::Array *msgs = o->getArray("messages"))
      for (const llvm::json::Value &m : *msgs)
        if (const llvm::json::Object *mo = m.getAsObject())
          in.messages.push_back({mo->getString("role").value_or("").str(),
                                 mo->getString("content").value_or("").str()});
    if (std::optional<int32_t> bos = tok->bosId())
      in.bosToken = tok->idToToken(*bos);
    if (!tok->eosIds().empty())
      in.eosToken = tok->idToToken(tok->eosIds().front());
    std::optional<llvm::StringRef> tmpl = o->getString("template");
    if (!tmpl)
      tmpl = tok->chatTemplate();
    if (!tmpl)
      return fail(tok->description() + " has no chat template");
    llvm::Expected<std::string> text = renderChatTemplate(*tmpl, in);
    if (!text)
      return fail(text.takeError());
    llvm::outs() << *text;
  }
  if (!batch.empty()) {
    auto buffer = llvm::MemoryBuffer::getFile(batch);
    if (!buffer)
      return fail(batch + ": " + buffer.getError().message());
    llvm::Expected<llvm::json::Value> parsed =
        parseJSON((*buffer)->getBuffer());
    if (!parsed)
      return fail(batch + ": " + llvm::toString(parsed.takeError()));
    const llvm::json::Array *texts = parsed->getAsArray();
    if (!texts)
      return fail(batch + ": expected a JSON array of strings");
    llvm::json::Array out;
    for (const llvm::json::Value &v : *texts) {
      std::optional<llvm::StringRef> s = v.getAsString();
      if (!s)
        return fail(batch + ": expected a JSON array of strings");
      llvm::Expected<std::vector<int32_t>> ids = tok->encode(*s, !noSpecial);
      if (!ids)
        return fail(ids.takeError());
      Tokenizer::StreamDecoder stream(*tok, noSpecial);
      std::string streamed;
      for (int32_t id : *ids)
        streamed += stream.step(id);
      streamed += stream.finish();
      llvm::json::Array idList;
      for (int32_t id : *ids)
        idList.push_back(id);
      out.push_back(
          llvm::json::Object{{"ids", std::move(idList)},
                             {"decoded", tok->decode(*ids, noSpecial)},
                             {"streamed", std::move(streamed)}});
    }
    llvm::outs() << llvm::json::Value(std::move(out)) << "\n";
  }
  return 0;
}
