//===- GGUFLlama.cpp - llama GGUF under Hugging Face names ----------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// llama.cpp's convert_hf_to_gguf.py renames the tensors and permutes the
// rows of q_proj and k_proj so that rotary embedding can pair adjacent
// elements instead of the two halves of each head:
//
//   w.reshape(n_head, 2, rows // n_head // 2, *rest).swapaxes(1, 2)
//    .reshape(w.shape)
//
// (with n_head = head_count_kv for k_proj). GGUFLlamaWeights maps the names
// back and applies the inverse permutation on read.
//
//===----------------------------------------------------------------------===//

#include "RLX/Weights/GGUF.h"

#include "llvm/ADT/StringExtras.h"
#include <cstring>

using namespace llvm;

namespace rlx {

//===----------------------------------------------------------------------===//
// LlamaGGUFConfig
//===----------------------------------------------------------------------===//

ArrayRef<StringRef> LlamaGGUFConfig::architectures() {
  static const StringRef archs[] = {"llama",  "qwen2", "qwen3", "gemma2",
                                    "gemma3", "phi3",  "bert"};
  return archs;
}

Expected<LlamaGGUFConfig> LlamaGGUFConfig::fromGGUF(const GGUFFile &file) {
  StringRef path = file.description();
  auto fail = [&](const Twine &message) {
    return createStringError(path + ": " + message);
  };
  Expected<StringRef> arch = file.requireString("general.architecture");
  if (!arch)
    return arch.takeError();
  if (!is_contained(architectures(), *arch))
    return fail(
        "metadata 'general.architecture': \"" + *arch +
        "\" is not supported (supported: " + join(architectures(), ", ") + ")");

  LlamaGGUFConfig cfg;
  cfg.arch = arch->str();
  auto requireUInt = [&](StringRef key, uint64_t &out) -> Error {
    Expected<uint64_t> v = file.requireUInt(key);
    if (!v)
      return v.takeError();
    if (*v == 0)
      return fail("metadata '" + key + "': must be positive");
    out = *v;
    return Error::success();
  };
  auto optionalUInt = [&](StringRef key, uint64_t &out) -> Error {
    if (!file.get(key))
      return Error::success();
    return requireUInt(key, out);
  };
  auto optionalFloat = [&](StringRef key, double &out) -> Error {
    if (!file.get(key))
      return Error::success();
    Expected<double> v = file.requireFloat(key);
    if (!v)
      return v.takeError();
    if (!(*v > 0))
      return fail("metadata '" + key + "': must be positive");
    out = *v;
    return Error::success();
  };

  if (Error err = requireUInt(cfg.key("embedding_length"), cfg.hiddenSize))
    return std::move(err);
  if (Error err = requireUInt(cfg.key("block_count"), cfg.numLayers))
    return std::move(err);
  if (Error err = requireUInt(cfg.key("attention.head_count"), cfg.numHeads))
    return std::move(err);
  cfg.numKVHeads = cfg.numHeads;
  if (Error err =
          optionalUInt(cfg.key("attention.head_count_kv"), cfg.numKVHeads))
    return std::move(err);
  if (Error err =
          requireUInt(cfg.key("feed_forward_length"), cfg.intermediateSize))
    return std::move(err);
  if (Error err = requireUInt(cfg.key("context_length"), cfg.contextLength))
    return std::move(err);
  if (Error err = optionalFloat(cfg.key("rope.freq_base"), cfg.ropeTheta))
    return std::move(err);
  // Qwen3 and Gemma give their head size, which need not be hidden / heads.
  if (Error err = optionalUInt(cfg.key("attention.key_length"), cfg.keyLength))
    return std::move(err);
  std::string epsKey = cfg.key(cfg.epsilonKey());
  Expected<double> eps = file.requireFloat(epsKey);
  if (!eps)
    return eps.takeError();
  if (!(*eps > 0))
    return fail("metadata '" + epsKey + "': must be positive");
  cfg.rmsNormEps = *eps;

  if (!cfg.keyLength && cfg.hiddenSize % cfg.numHeads != 0)
    return fail(cfg.key("embedding_length") + " " + Twine(cfg.hiddenSize) +
                " is not a multiple of " + cfg.key("attention.head_count") +
                " " + Twine(cfg.numHeads));
  if (cfg.numHeads % cfg.numKVHeads != 0)
    return fail(cfg.key("attention.head_count") + " " + Twine(cfg.numHeads) +
                " is not a multiple of " + cfg.key("attention.head_count_kv") +
                " " + Twine(cfg.numKVHeads));
  cfg.ropeDim = cfg.headDim();
  if (Error err = optionalUInt(cfg.key("rope.dimension_count"), cfg.ropeDim))
    return std::move(err);
  if (cfg.ropeDim > cfg.headDim() || cfg.ropeDim % 2 != 0)
    return fail(cfg.key("rope.dimension_count") + " " + Twine(cfg.ropeDim) +
                " must be even and at most the head size " +
                Twine(cfg.headDim()));

  const TensorInfo *embed = file.lookup("token_embd.weight");
  if (!embed)
    return fail("tensor 'token_embd.weight': not found (it gives the "
                "vocabulary size)");
  if (embed->shape.size() != 2 ||
      static_cast<uint64_t>(embed->shape[1]) != cfg.hiddenSize)
    return fail("tensor 'token_embd.weight': shape " +
                formatShape(embed->shape) + " is not [vocab, " +
                cfg.key("embedding_length") + " = " + Twine(cfg.hiddenSize) +
                "]");
  cfg.vocabSize = embed->shape[0];
  return cfg;
}

//===----------------------------------------------------------------------===//
// Names and permutation
//===----------------------------------------------------------------------===//

namespace {
/// One GGUF name and the Hugging Face name it stands for (without the
/// ".weight"/".bias" suffix; per-block names without "blk.N." and the HF
/// layer prefix).
struct NameRule {
  StringRef gguf, hf;
};

/// convert_hf_to_gguf.py's names (gguf-py's TensorNameMap) for `arch`.
struct NameTable {
  /// Whole-model tensors, per-block tensors, and the architecture's own
  /// per-block tensors besides `block`.
  ArrayRef<NameRule> global, block, blockExtra;
  /// The HF prefix of block N: `layerPrefix` + N + ".".
  StringRef layerPrefix;
};
} // namespace

static NameTable namesOf(StringRef arch) {
  static const NameRule decoderGlobal[] = {{"token_embd", "model.embed_tokens"},
                                           {"output_norm", "model.norm"},
                                           {"output", "lm_head"}};
  // The LLaMA-shaped decoders' projections and attention norms.
  static const NameRule decoderBlock[] = {
      {"attn_q", "self_attn.q_proj"},      {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},      {"attn_output", "self_attn.o_proj"},
      {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"},       {"attn_norm", "input_layernorm"},
      {"attn_q_norm", "self_attn.q_norm"}, {"attn_k_norm", "self_attn.k_norm"}};
  static const NameRule llamaNorms[] = {
      {"ffn_norm", "post_attention_layernorm"}};
  // Gemma 2/3: norms before and after attention and the MLP.
  static const NameRule gemmaNorms[] = {
      {"post_attention_norm", "post_attention_layernorm"},
      {"ffn_norm", "pre_feedforward_layernorm"},
      {"post_ffw_norm", "post_feedforward_layernorm"}};
  // Phi-3: fused QKV and gate/up matrices (recipeWeights splits them).
  static const NameRule phi3Block[] = {
      {"attn_qkv", "self_attn.qkv_proj"},
      {"attn_output", "self_attn.o_proj"},
      {"ffn_up", "mlp.gate_up_proj"},
      {"ffn_down", "mlp.down_proj"},
      {"attn_norm", "input_layernorm"},
      {"ffn_norm", "post_attention_layernorm"}};
  static const NameRule bertGlobal[] = {
      {"token_embd", "embeddings.word_embeddings"},
      {"token_types", "embeddings.token_type_embeddings"},
      {"position_embd", "embeddings.position_embeddings"},
      {"token_embd_norm", "embeddings.LayerNorm"}};
  static const NameRule bertBlock[] = {
      {"attn_q", "attention.self.query"},
      {"attn_k", "attention.self.key"},
      {"attn_v", "attention.self.value"},
      {"attn_output", "attention.output.dense"},
      {"attn_output_norm", "attention.output.LayerNorm"},
      {"ffn_up", "intermediate.dense"},
      {"ffn_down", "output.dense"},
      {"layer_output_norm", "output.LayerNorm"}};
  if (arch == "bert")
    return {bertGlobal, bertBlock, {}, "encoder.layer."};
  if (arch == "gemma2" || arch == "gemma3")
    return {decoderGlobal, decoderBlock, gemmaNorms, "model.layers."};
  if (arch == "phi3")
    return {decoderGlobal, phi3Block, {}, "model.layers."};
  return {decoderGlobal, decoderBlock, llamaNorms, "model.layers."};
}

/// Splits "<stem>.weight" / "<stem>.bias" into stem and suffix.
static std::optional<std::pair<StringRef, StringRef>>
splitSuffix(StringRef name) {
  for (StringRef kind : {"weight", "bias"})
    if (name.ends_with(kind) && name.drop_back(kind.size()).ends_with("."))
      return std::make_pair(name.drop_back(kind.size() + 1), kind);
  return std::nullopt;
}

/// Maps `name` through `table` (from the `from` side of each rule to the
/// `to` side); `fromPrefix` / `toPrefix` start block names.
template <typename From, typename To>
static std::optional<std::string>
mapName(StringRef name, const NameTable &table, StringRef fromPrefix,
        StringRef toPrefix, From from, To to) {
  auto split = splitSuffix(name);
  if (!split)
    return std::nullopt;
  auto [stem, kind] = *split;
  for (const NameRule &r : table.global)
    if (from(r) == stem)
      return (to(r) + "." + kind).str();
  if (!stem.consume_front(fromPrefix))
    return std::nullopt;
  auto [layer, component] = stem.split('.');
  unsigned layerIndex;
  if (layer.empty() || layer.getAsInteger(10, layerIndex))
    return std::nullopt;
  for (ArrayRef<NameRule> rules : {table.block, table.blockExtra})
    for (const NameRule &r : rules)
      if (from(r) == component)
        return (toPrefix + Twine(layerIndex) + "." + to(r) + "." + kind).str();
  return std::nullopt;
}

std::optional<std::string> GGUFLlamaWeights::hfNameFor(StringRef ggufName,
                                                       StringRef arch) {
  NameTable table = namesOf(arch);
  return mapName(
      ggufName, table, "blk.", table.layerPrefix,
      [](const NameRule &r) { return r.gguf; },
      [](const NameRule &r) { return r.hf; });
}

std::optional<std::string> GGUFLlamaWeights::ggufNameFor(StringRef hfName,
                                                         StringRef arch) {
  NameTable table = namesOf(arch);
  return mapName(
      hfName, table, table.layerPrefix, "blk.",
      [](const NameRule &r) { return r.hf; },
      [](const NameRule &r) { return r.gguf; });
}

std::string GGUFLlamaWeights::displayName(StringRef name) const {
  if (std::optional<StringRef> gguf = ggufName(name))
    return gguf->str();
  return ggufNameFor(name, cfg.arch).value_or(name.str());
}

/// The stored (GGUF) row of Hugging Face row `row` of a matrix whose heads
/// have `headRows` rows each: permute() maps HF row h*D + j*half + i to GGUF
/// row h*D + 2*i + j, so a head's rows stay within the head.
static uint64_t permutedLlamaRow(uint64_t row, uint64_t headRows) {
  const uint64_t half = headRows / 2, h = row / headRows, w = row % headRows;
  return h * headRows + 2 * (w % half) + w / half;
}

void unpermuteLlamaRowBytes(ArrayRef<uint8_t> permuted,
                            MutableArrayRef<uint8_t> out, uint64_t rows,
                            uint64_t rowBytes, uint64_t nHeads) {
  assert(permuted.size() == rows * rowBytes && out.size() == rows * rowBytes &&
         "size mismatch");
  assert(nHeads && rows % (2 * nHeads) == 0 && "rows do not split into heads");
  const uint64_t headRows = rows / nHeads;
  for (uint64_t r = 0; r != rows; ++r) {
    const uint8_t *src =
        permuted.data() + permutedLlamaRow(r, headRows) * rowBytes;
    std::copy(src, src + rowBytes, out.data() + r * rowBytes);
  }
}

void unpermuteLlamaRows(ArrayRef<float> permuted, MutableArrayRef<float> out,
                        uint64_t rows, uint64_t cols, uint64_t nHeads) {
  unpermuteLlamaRowBytes(
      ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(permuted.data()),
                        permuted.size() * sizeof(float)),
      MutableArrayRef<uint8_t>(reinterpret_cast<uint8_t *>(out.data()),
                               out.size() * sizeof(float)),
      rows, cols * sizeof(float), nHeads);
}

//===----------------------------------------------------------------------===//
// GGUFLlamaWeights
//===----------------------------------------------------------------------===//

Expected<std::unique_ptr<GGUFLlamaWeights>>
GGUFLlamaWeights::open(StringRef path) {
  Expected<std::unique_ptr<GGUFFile>> file = GGUFFile::open(path);
  if (!file)
    return file.takeError();
  return create(std::move(*file));
}

Expected<std::unique_ptr<GGUFLlamaWeights>>
GGUFLlamaWeights::create(std::unique_ptr<GGUFFile> file) {
  Expected<LlamaGGUFConfig> cfg = LlamaGGUFConfig::fromGGUF(*file);
  if (!cfg)
    return cfg.takeError();
  std::unique_ptr<GGUFLlamaWeights> result(new GGUFLlamaWeights());
  result->cfg = *cfg;
  StringRef path = file->description();
  for (const std::string &name : file->names()) {
    Entry entry;
    entry.ggufName = name;
    entry.info = *file->lookup(name);
    entry.info.name = hfNameFor(name, cfg->arch).value_or(name);
    StringRef hf = entry.info.name;
    // convert_hf_to_gguf.py stores Gemma's RMSNorm weights as 1 + w.
    if (cfg->normsPlusOne() && hf.ends_with("norm.weight") &&
        hf != StringRef(name)) {
      if (entry.info.dtype != DType::F32)
        return createStringError(path + ": tensor '" + name +
                                 "': a Gemma norm stored as " +
                                 dtypeName(entry.info.dtype) +
                                 " (RLX reads them as f32, as llama.cpp's "
                                 "converter writes them)");
      entry.addend = -1;
    }
    // convert_hf_to_gguf.py permutes the weights and biases of q and k.
    bool q = hf.ends_with(".self_attn.q_proj.weight") ||
             hf.ends_with(".self_attn.q_proj.bias");
    bool k = hf.ends_with(".self_attn.k_proj.weight") ||
             hf.ends_with(".self_attn.k_proj.bias");
    if (cfg->permutedQK() && (q || k))
      entry.permuteHeads = q ? cfg->numHeads : cfg->numKVHeads;
    if (entry.permuteHeads) {
      const SmallVector<int64_t> &shape = entry.info.shape;
      if (shape.empty() || shape.size() > 2 ||
          static_cast<uint64_t>(shape[0]) % (2 * entry.permuteHeads) != 0)
        return createStringError(path + ": tensor '" + name + "': shape " +
                                 formatShape(shape) + " does not split into " +
                                 Twine(entry.permuteHeads) +
                                 " heads of an even number of rows");
    }
    if (!result->index.try_emplace(hf, result->entries.size()).second)
      return createStringError(path + ": tensor '" + name + "': maps to '" +
                               hf + "', which another tensor already uses");
    result->entries.push_back(std::move(entry));
  }
  result->gguf = std::move(file);
  return result;
}

std::optional<StringRef> GGUFLlamaWeights::ggufName(StringRef hfName) const {
  auto it = index.find(hfName);
  if (it == index.end())
    return std::nullopt;
  return StringRef(entries[it->second].ggufName);
}

std::vector<std::string> GGUFLlamaWeights::names() const {
  std::vector<std::string> result;
  result.reserve(entries.size());
  for (const Entry &e : entries)
    result.push_back(e.info.name);
  return result;
}

const TensorInfo *GGUFLlamaWeights::lookup(StringRef name) const {
  auto it = index.find(name);
  return it == index.end() ? nullptr : &entries[it->second].info;
}

Expected<ArrayRef<uint8_t>> GGUFLlamaWeights::rawBytes(StringRef name) const {
  auto it = index.find(name);
  if (it == index.end())
    return missingTensor(name);
  const Entry &e = entries[it->second];
  if (!e.storedAsIs())
    return tensorError(name, llvm::Twine(e.permuteHeads
                                             ? "stored with rows permuted for "
                                               "llama.cpp's rotary layout"
                                             : "stored as 1 + w") +
                                 "; use readStored or readF32, or "
                                 "file().rawBytes('" +
                                 e.ggufName + "')");
  return gguf->rawBytes(e.ggufName);
}

Error GGUFLlamaWeights::readStored(StringRef name,
                                   MutableArrayRef<uint8_t> dst) const {
  auto it = index.find(name);
  if (it == index.end())
    return missingTensor(name);
  const Entry &e = entries[it->second];
  Expected<ArrayRef<uint8_t>> stored = gguf->rawBytes(e.ggufName);
  if (!stored)
    return stored.takeError();
  if (Error err = checkStoredDestination(name, stored->size(), dst.size()))
    return err;
  if (e.addend != 0) {
    // f32 (checked at open).
    MutableArrayRef<float> values(reinterpret_cast<float *>(dst.data()),
                                  dst.size() / sizeof(float));
    std::memcpy(values.data(), stored->data(), stored->size());
    for (float &v : values)
      v += e.addend;
    return Error::success();
  }
  if (!e.permuteHeads) {
    std::copy(stored->begin(), stored->end(), dst.begin());
    return Error::success();
  }
  uint64_t rows = e.info.shape[0];
  unpermuteLlamaRowBytes(*stored, dst, rows, stored->size() / rows,
                         e.permuteHeads);
  return Error::success();
}

Error GGUFLlamaWeights::readStoredRows(StringRef name, uint64_t begin,
                                       uint64_t end,
                                       MutableArrayRef<uint8_t> dst) const {
  auto it = index.find(name);
  if (it == index.end())
    return missingTensor(name);
  const Entry &e = entries[it->second];
  if (!e.permuteHeads)
    return WeightSource::readStoredRows(name, begin, end, dst);
  Expected<uint64_t> rowBytes =
      checkRowRange(name, e.info, begin, end, dst.size());
  if (!rowBytes)
    return rowBytes.takeError();
  Expected<ArrayRef<uint8_t>> stored = gguf->rawBytes(e.ggufName);
  if (!stored)
    return stored.takeError();
  // Only the stored rows of the heads the range covers are touched.
  const uint64_t headRows = e.info.shape[0] / e.permuteHeads;
  for (uint64_t r = begin; r != end; ++r) {
    const uint8_t *src =
        stored->data() + permutedLlamaRow(r, headRows) * *rowBytes;
    std::copy(src, src + *rowBytes, dst.data() + (r - begin) * *rowBytes);
  }
  return Error::success();
}

Error GGUFLlamaWeights::readF32(StringRef name,
                                MutableArrayRef<float> dst) const {
  auto it = index.find(name);
  if (it == index.end())
    return missingTensor(name);
  const Entry &e = entries[it->second];
  if (Expected<uint64_t> count = checkDestination(e.info, dst.size()); !count)
    return count.takeError();
  if (e.addend != 0) {
    if (Error err = gguf->readF32(e.ggufName, dst))
      return err;
    for (float &v : dst)
      v += e.addend;
    return Error::success();
  }
  if (!e.permuteHeads)
    return gguf->readF32(e.ggufName, dst);
  std::vector<float> stored(dst.size());
  if (Error err = gguf->readF32(e.ggufName, stored))
    return err;
  unpermuteLlamaRows(stored, dst, e.info.shape[0],
                     e.info.shape.size() == 2 ? e.info.shape[1] : 1,
                     e.permuteHeads);
  return Error::success();
}

void GGUFLlamaWeights::release(StringRef name) const {
  auto it = index.find(name);
  if (it != index.end())
    gguf->release(entries[it->second].ggufName);
}

std::optional<WeightSource::FileRegion>
GGUFLlamaWeights::fileRegion(StringRef name) const {
  auto it = index.find(name);
  if (it == index.end() || !entries[it->second].storedAsIs())
    return std::nullopt;
  return gguf->fileRegion(entries[it->second].ggufName);
}

Expected<ArrayRef<float>> GGUFLlamaWeights::viewF32(StringRef name) const {
  auto it = index.find(name);
  if (it == index.end())
    return missingTensor(name);
  const Entry &e = entries[it->second];
  if (e.permuteHeads)
    return tensorError(name, "cannot view as f32 without a copy: rows are "
                             "stored permuted for llama.cpp's rotary layout");
  if (e.addend != 0)
    return tensorError(name, "cannot view as f32 without a copy: stored as "
                             "1 + w");
  if (e.info.dtype != DType::F32)
    return tensorError(name, "cannot view as f32 without a copy: stored as " +
                                 dtypeName(e.info.dtype));
  return gguf->viewF32(e.ggufName);
}

} // namespace rlx
