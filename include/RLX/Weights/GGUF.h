//===- GGUF.h - GGUF file reader, writer and llama view ---------*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// GGUF (llama.cpp's format, versions 2 and 3; all little-endian):
//
//   "GGUF" u32 version; u64 tensor_count; u64 kv_count
//   kv_count x { string key; u32 value_type; value }
//   tensor_count x { string name; u32 n_dims; u64 dims[n_dims]; u32 type;
//                    u64 offset }
//   padding to general.alignment (default 32), then the data section
//
// where a string is u64 length + bytes and an array value is u32 element
// type + u64 length + elements. dims[0] varies fastest; TensorInfo::shape is
// the reverse (row-major, numpy order). Tensor offsets are relative to the
// data section and must be multiples of the alignment.
//
//===----------------------------------------------------------------------===//

#ifndef RLX_WEIGHTS_GGUF_H
#define RLX_WEIGHTS_GGUF_H

#include "RLX/Weights/WeightSource.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <type_traits>
#include <utility>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace rlx {

/// GGUF metadata value types (the numbers are the on-disk codes).
enum class GGUFType : uint32_t {
  UInt8 = 0,
  Int8 = 1,
  UInt16 = 2,
  Int16 = 3,
  UInt32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  UInt64 = 10,
  Int64 = 11,
  Float64 = 12,
};

/// "uint8", ..., "string", "array".
llvm::StringRef ggufTypeName(GGUFType type);

/// The largest nesting of arrays the reader accepts (an array of scalars has
/// depth 1).
constexpr unsigned kGGUFMaxArrayDepth = 8;

/// The most metadata array elements a file may hold in all (real models hold
/// under a million: vocabulary, token types, merges). Bounds the memory a
/// lying file can make the reader allocate.
constexpr uint64_t kGGUFMaxArrayElements = uint64_t(1) << 22;

/// A metadata value.
class GGUFValue {
public:
  GGUFValue() = default;

  static GGUFValue uint8(uint8_t v) { return scalar(GGUFType::UInt8, v); }
  static GGUFValue int8(int8_t v) { return scalar(GGUFType::Int8, v); }
  static GGUFValue uint16(uint16_t v) { return scalar(GGUFType::UInt16, v); }
  static GGUFValue int16(int16_t v) { return scalar(GGUFType::Int16, v); }
  static GGUFValue uint32(uint32_t v) { return scalar(GGUFType::UInt32, v); }
  static GGUFValue int32(int32_t v) { return scalar(GGUFType::Int32, v); }
  static GGUFValue uint64(uint64_t v) { return scalar(GGUFType::UInt64, v); }
  static GGUFValue int64(int64_t v) { return scalar(GGUFType::Int64, v); }
  static GGUFValue float32(float v);
  static GGUFValue float64(double v);
  static GGUFValue boolean(bool v) { return scalar(GGUFType::Bool, v); }
  static GGUFValue string(llvm::StringRef v);
  /// An array of `elementType`; every element must have that type.
  static GGUFValue array(GGUFType elementType, std::vector<GGUFValue> elements);

  GGUFType type() const { return kind; }
  /// For arrays: the element type.
  GGUFType elementType() const { return elemKind; }

  /// Integer types holding a value >= 0.
  std::optional<uint64_t> asUInt() const;
  /// Integer types holding a value that fits int64_t.
  std::optional<int64_t> asInt() const;
  /// Float types, and integer types converted.
  std::optional<double> asFloat() const;
  std::optional<bool> asBool() const;
  std::optional<llvm::StringRef> asString() const;
  std::optional<llvm::ArrayRef<GGUFValue>> asArray() const;

  /// The value as it would appear in a message: 42, 1.5, "text", [1, 2].
  std::string toString() const;

private:
  friend class GGUFReader;
  template <typename T> static GGUFValue scalar(GGUFType type, T v) {
    GGUFValue result;
    result.kind = type;
    if constexpr (std::is_signed_v<T>)
      result.bits = static_cast<uint64_t>(static_cast<int64_t>(v));
    else
      result.bits = static_cast<uint64_t>(v);
    return result;
  }

  GGUFType kind = GGUFType::UInt8;
  GGUFType elemKind = GGUFType::UInt8;
  /// Integers (sign-extended to 64 bits), bools, and float/double bits.
  uint64_t bits = 0;
  std::string str;
  std::vector<GGUFValue> elements;
};

class GGUFFile final : public WeightSource {
public:
  /// Maps and validates the file at `path`.
  static llvm::Expected<std::unique_ptr<GGUFFile>> open(llvm::StringRef path);

  /// Validates `buffer`; `description` names it in messages.
  static llvm::Expected<std::unique_ptr<GGUFFile>>
  fromBuffer(std::unique_ptr<llvm::MemoryBuffer> buffer,
             llvm::StringRef description);

  uint32_t version() const { return ver; }
  uint64_t alignment() const { return align; }
  /// The file offset of the data section.
  uint64_t dataOffset() const { return dataStart; }

  /// All key/value pairs in file order.
  llvm::ArrayRef<std::pair<std::string, GGUFValue>> metadata() const {
    return kvs;
  }
  const GGUFValue *get(llvm::StringRef key) const;
  /// Typed accessors: std::nullopt if the key is missing or has another
  /// type (see GGUFValue::asUInt etc.).
  std::optional<uint64_t> getUInt(llvm::StringRef key) const;
  std::optional<int64_t> getInt(llvm::StringRef key) const;
  std::optional<double> getFloat(llvm::StringRef key) const;
  std::optional<bool> getBool(llvm::StringRef key) const;
  std::optional<llvm::StringRef> getString(llvm::StringRef key) const;
  std::optional<llvm::ArrayRef<GGUFValue>> getArray(llvm::StringRef key) const;

  /// Like getUInt/getFloat/getString, but the error says what is wrong:
  /// "<path>: metadata '<key>': missing" or "...: expected an unsigned
  /// integer, found string".
  llvm::Expected<uint64_t> requireUInt(llvm::StringRef key) const;
  llvm::Expected<double> requireFloat(llvm::StringRef key) const;
  llvm::Expected<llvm::StringRef> requireString(llvm::StringRef key) const;

  /// The ggml type code of tensor `name` as stored in the file.
  std::optional<uint32_t> ggmlType(llvm::StringRef name) const;

  std::vector<std::string> names() const override;
  const TensorInfo *lookup(llvm::StringRef name) const override;
  llvm::StringRef description() const override { return path; }
  llvm::Expected<llvm::ArrayRef<uint8_t>>
  rawBytes(llvm::StringRef name) const override;
  void release(llvm::StringRef name) const override;
  std::optional<FileRegion> fileRegion(llvm::StringRef name) const override;

private:
  GGUFFile() = default;
  llvm::Error parse();

  std::string path;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  uint32_t ver = 0;
  uint64_t align = 32;
  uint64_t dataStart = 0;
  std::vector<std::pair<std::string, GGUFValue>> kvs;
  llvm::StringMap<size_t> kvIndex;
  std::vector<TensorInfo> tensors;
  std::vector<uint32_t> ggmlTypes;
  llvm::StringMap<size_t> tensorIndex;
};

/// Builds GGUF v3 files (for tests and tools).
class GGUFWriter {
public:
  explicit GGUFWriter(uint32_t alignment = 32);

  /// Sets (or replaces) a metadata key. An alignment other than the
  /// constructor's is written as general.alignment automatically.
  void set(llvm::StringRef key, GGUFValue value);

  /// Adds a tensor of row-major `shape`, encoding `data` as `dtype` (F32,
  /// F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0 or Q5_1; see encodeFromF32).
  llvm::Error addTensor(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                        DType dtype, llvm::ArrayRef<float> data);

  /// Adds a tensor whose storage is given as is (any DType; the size must
  /// match the shape).
  llvm::Error addRawTensor(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                           DType dtype, llvm::ArrayRef<uint8_t> bytes);

  void writeTo(llvm::raw_ostream &os) const;
  llvm::Error write(llvm::StringRef path) const;

private:
  struct Tensor {
    std::string name;
    llvm::SmallVector<int64_t> shape;
    DType dtype;
    std::vector<uint8_t> bytes;
  };
  uint32_t align;
  std::vector<std::pair<std::string, GGUFValue>> kvs;
  std::vector<Tensor> tensorList;
};

/// The ggml type code for `dtype` (std::nullopt for U8 and Bool, which ggml
/// lacks).
std::optional<uint32_t> ggmlTypeOf(DType dtype);

/// The DType of ggml type `code`, or std::nullopt when the code is unknown or
/// names a type RLX does not decode (q8_1, q8_K, the iq* types, ...).
std::optional<DType> dtypeOfGGMLType(uint32_t code);

/// ggml's name for type `code` ("q4_K", "iq2_xs"), or std::nullopt when the
/// code is unknown.
std::optional<llvm::StringRef> ggmlTypeName(uint32_t code);

/// Hyperparameters of a GGUF of one of the architectures RLX has a recipe
/// for, as llama.cpp's convert_hf_to_gguf.py writes them.
struct LlamaGGUFConfig {
  /// general.architecture: the LLaMA-shaped decoders "llama", "qwen2",
  /// "qwen3", "gemma2", "gemma3", "phi3", or the encoder "bert" (the
  /// metadata keys below are under this prefix).
  std::string arch = "llama";
  uint64_t hiddenSize = 0;       // <arch>.embedding_length
  uint64_t numLayers = 0;        // <arch>.block_count
  uint64_t numHeads = 0;         // <arch>.attention.head_count
  uint64_t numKVHeads = 0;       // <arch>.attention.head_count_kv (or heads)
  uint64_t intermediateSize = 0; // <arch>.feed_forward_length
  uint64_t contextLength = 0;    // <arch>.context_length
  uint64_t vocabSize = 0;        // rows of token_embd.weight
  uint64_t keyLength = 0;        // <arch>.attention.key_length (or 0)
  uint64_t ropeDim = 0;          // <arch>.rope.dimension_count (or head dim)
  double ropeTheta = 10000.0;    // <arch>.rope.freq_base
  /// <arch>.attention.layer_norm_rms_epsilon (BERT's LayerNorm:
  /// <arch>.attention.layer_norm_epsilon).
  double rmsNormEps = 1e-5;

  uint64_t headDim() const {
    if (keyLength)
      return keyLength;
    return numHeads ? hiddenSize / numHeads : 0;
  }
  /// Whether llama.cpp permuted the q/k rows for its rotary layout (only
  /// the llama architecture; the others are stored as in the checkpoint).
  bool permutedQK() const { return arch == "llama"; }
  /// Whether the converter stored Gemma's RMSNorm weights as 1 + w.
  bool normsPlusOne() const { return arch == "gemma2" || arch == "gemma3"; }
  /// The name of the norm epsilon key (without the prefix).
  llvm::StringRef epsilonKey() const {
    return arch == "bert" ? "attention.layer_norm_epsilon"
                          : "attention.layer_norm_rms_epsilon";
  }
  /// `<arch>.` + `key`.
  std::string key(llvm::StringRef key) const { return arch + "." + key.str(); }

  /// The architectures fromGGUF reads.
  static llvm::ArrayRef<llvm::StringRef> architectures();
  /// Reads and checks the config (general.architecture must be one of
  /// architectures()).
  static llvm::Expected<LlamaGGUFConfig> fromGGUF(const GGUFFile &file);
};

/// A GGUF of one of LlamaGGUFConfig::architectures() presented under Hugging
/// Face tensor names, with what the converter changed undone on read
/// (llama's rotary row permutation of q_proj/k_proj, Gemma's 1 + w norms),
/// so that the tensors read exactly as the original checkpoint's (up to
/// quantization).
class GGUFLlamaWeights final : public WeightSource {
public:
  static llvm::Expected<std::unique_ptr<GGUFLlamaWeights>>
  open(llvm::StringRef path);
  static llvm::Expected<std::unique_ptr<GGUFLlamaWeights>>
  create(std::unique_ptr<GGUFFile> file);

  /// The Hugging Face name for a GGUF tensor name of architecture `arch`, or
  /// std::nullopt when the name has no mapping (such tensors are exposed
  /// under their GGUF name).
  static std::optional<std::string> hfNameFor(llvm::StringRef ggufName,
                                              llvm::StringRef arch = "llama");
  /// The inverse of hfNameFor: the GGUF name of a Hugging Face name.
  static std::optional<std::string> ggufNameFor(llvm::StringRef hfName,
                                                llvm::StringRef arch = "llama");

  const LlamaGGUFConfig &config() const { return cfg; }
  const GGUFFile &file() const { return *gguf; }
  /// The GGUF name behind `hfName`.
  std::optional<llvm::StringRef> ggufName(llvm::StringRef hfName) const;

  std::vector<std::string> names() const override;
  const TensorInfo *lookup(llvm::StringRef name) const override;
  llvm::StringRef description() const override { return gguf->description(); }
  /// Errors for tensors read otherwise than stored (q_proj/k_proj of llama,
  /// Gemma's norms).
  llvm::Expected<llvm::ArrayRef<uint8_t>>
  rawBytes(llvm::StringRef name) const override;
  /// q_proj/k_proj come back in Hugging Face row order (whole stored rows
  /// moved, so block-quantized rows stay as they are); Gemma's norms, which
  /// must be stored as f32, without the 1 added.
  llvm::Error readStored(llvm::StringRef name,
                         llvm::MutableArrayRef<uint8_t> dst) const override;
  /// A range of q_proj/k_proj rows reads only the stored rows of the heads
  /// it covers (each head's rows are permuted within the head).
  llvm::Error readStoredRows(llvm::StringRef name, uint64_t begin, uint64_t end,
                             llvm::MutableArrayRef<uint8_t> dst) const override;
  llvm::Error readF32(llvm::StringRef name,
                      llvm::MutableArrayRef<float> dst) const override;
  llvm::Expected<llvm::ArrayRef<float>>
  viewF32(llvm::StringRef name) const override;
  void release(llvm::StringRef name) const override;
  std::optional<FileRegion> fileRegion(llvm::StringRef name) const override;
  /// The GGUF name of `name` (a Hugging Face name), present or not.
  std::string displayName(llvm::StringRef name) const override;

private:
  GGUFLlamaWeights() = default;

  struct Entry {
    TensorInfo info; // under the HF name
    std::string ggufName;
    /// Heads to un-permute over (q_proj: head_count, k_proj: head_count_kv),
    /// 0 for tensors stored as is.
    uint64_t permuteHeads = 0;
    /// Added to every value on read (Gemma's norms: -1).
    float addend = 0;
    bool storedAsIs() const { return !permuteHeads && addend == 0; }
  };
  std::unique_ptr<GGUFFile> gguf;
  LlamaGGUFConfig cfg;
  std::vector<Entry> entries;
  llvm::StringMap<size_t> index;
};

/// Undoes convert_hf_to_gguf.py's permute() on the rows of a row-major
/// [rows, cols] matrix: `permuted` has rows in GGUF order, `out` receives them
/// in Hugging Face order. rows must be a multiple of 2 * nHeads.
void unpermuteLlamaRows(llvm::ArrayRef<float> permuted,
                        llvm::MutableArrayRef<float> out, uint64_t rows,
                        uint64_t cols, uint64_t nHeads);
/// The same on rows of `rowBytes` bytes each (any stored type).
void unpermuteLlamaRowBytes(llvm::ArrayRef<uint8_t> permuted,
                            llvm::MutableArrayRef<uint8_t> out, uint64_t rows,
                            uint64_t rowBytes, uint64_t nHeads);

} // namespace rlx

#endif // RLX_WEIGHTS_GGUF_H
