//===- ProfileTest.cpp - CompileProfile loading, printing, presets --------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Profile/CompileProfile.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"

#include <functional>
#include <string>

using namespace llvm;
using namespace rlx;

namespace {

/// The message of the error `text` fails to load with, after checking it is a
/// StringError; "<no error>" if it loads.
std::string errorOf(StringRef text, StringRef fileName = "<string>") {
  Expected<CompileProfile> profile =
      CompileProfile::fromTomlString(text, fileName);
  if (profile)
    return "<no error>";
  std::string message;
  handleAllErrors(
      profile.takeError(),
      [&](const StringError &err) { message = err.getMessage(); },
      [&](const ErrorInfoBase &err) {
        message = "<not a StringError> " + err.message();
      });
  return message;
}

/// Loads `text`, failing the test if it does not load.
CompileProfile load(StringRef text) {
  Expected<CompileProfile> profile = CompileProfile::fromTomlString(text);
  if (!profile) {
    ADD_FAILURE() << toString(profile.takeError());
    return CompileProfile();
  }
  return *profile;
}

std::string examplePath(StringRef name) {
  SmallString<128> path(RLX_SOURCE_DIR);
  sys::path::append(path, "examples", "profiles", name);
  return std::string(path);
}

/// A profile with every field away from its default.
CompileProfile nonDefaultProfile() {
  CompileProfile profile;
  profile.fusion.policy = FusionPolicy::Fusable;
  profile.fusion.target = TargetChoice::Spirv;
  profile.fusion.assertClean = true;
  profile.fusion.skip = true;
  profile.fusion.disable = {"swiglu", "attention-block"};
  profile.passes.dce = false;
  profile.passes.constantFolding = false;
  profile.passes.verbose = true;
  profile.precision.compute = ComputePrecision::BF16;
  profile.precision.mixed = MixedPrecision::Auto;
  profile.precision.kvCache = ComputePrecision::F16;
  profile.backend.cpu.unfuseRegions = true;
  profile.backend.cpu.gemm = GemmStrategy::Generated;
  profile.backend.cpu.repackWeights = WeightRepack::None;
  profile.backend.cpu.threads = 2;
  profile.backend.spirv.unfuseRegions = true;
  profile.backend.spirv.device = "llvmpipe \"quoted\" \\ tab\t nl\n \x01 é";
  profile.backend.spirv.workgroupSize = 256;
  profile.backend.spirv.cooperativeMatrix = true;
  profile.backend.spirv.optimize = false;
  profile.execution.mode = ExecutionMode::Aot;
  profile.execution.decodeBuckets = {8, 64, 512};
  profile.execution.memoryBudgetMB = 4096;
  profile.execution.device = ExecutionDevice::Vulkan;
  return profile;
}

//===----------------------------------------------------------------------===//
// Defaults, enums, patterns
//===----------------------------------------------------------------------===//

TEST(CompileProfileTest, DefaultsMatchSeed) {
  CompileProfile profile;
  EXPECT_EQ(profile.fusion.policy, FusionPolicy::Direct);
  EXPECT_EQ(profile.fusion.target, TargetChoice::Auto);
  EXPECT_FALSE(profile.fusion.assertClean);
  EXPECT_FALSE(profile.fusion.skip);
  EXPECT_TRUE(profile.fusion.disable.empty());
  EXPECT_TRUE(profile.passes.dce);
  EXPECT_TRUE(profile.passes.constantFolding);
  EXPECT_FALSE(profile.passes.verbose);
  EXPECT_EQ(profile.precision.compute, ComputePrecision::F32);
  EXPECT_EQ(profile.precision.mixed, MixedPrecision::None);
  EXPECT_FALSE(profile.backend.cpu.unfuseRegions);
  EXPECT_EQ(profile.backend.cpu.gemm, GemmStrategy::Auto);
  EXPECT_EQ(profile.backend.cpu.threads, 0u);
  EXPECT_FALSE(profile.backend.spirv.unfuseRegions);
  EXPECT_EQ(profile.backend.spirv.device, "");
  EXPECT_EQ(profile.backend.spirv.workgroupSize, 64u);
  EXPECT_FALSE(profile.backend.spirv.cooperativeMatrix);
  EXPECT_TRUE(profile.backend.spirv.optimize);
  EXPECT_EQ(profile, CompileProfile::llama32Prefill());
}

TEST(CompileProfileTest, EnumSpellingsRoundTrip) {
  for (FusionPolicy v : {FusionPolicy::Direct, FusionPolicy::Fusable})
    EXPECT_EQ(symbolizeFusionPolicy(stringifyFusionPolicy(v)), v);
  for (TargetChoice v :
       {TargetChoice::Auto, TargetChoice::Cpu, TargetChoice::Spirv})
    EXPECT_EQ(symbolizeTargetChoice(stringifyTargetChoice(v)), v);
  for (ComputePrecision v :
       {ComputePrecision::F32, ComputePrecision::F16, ComputePrecision::BF16})
    EXPECT_EQ(symbolizeComputePrecision(stringifyComputePrecision(v)), v);
  for (MixedPrecision v : {MixedPrecision::None, MixedPrecision::Auto})
    EXPECT_EQ(symbolizeMixedPrecision(stringifyMixedPrecision(v)), v);
  for (GemmStrategy v :
       {GemmStrategy::Auto, GemmStrategy::Blas, GemmStrategy::Generated})
    EXPECT_EQ(symbolizeGemmStrategy(stringifyGemmStrategy(v)), v);
  for (WeightRepack v :
       {WeightRepack::Auto, WeightRepack::None, WeightRepack::X8})
    EXPECT_EQ(symbolizeWeightRepack(stringifyWeightRepack(v)), v);
  EXPECT_EQ(stringifyComputePrecision(ComputePrecision::BF16), "bf16");
  EXPECT_EQ(stringifyTargetChoice(TargetChoice::Spirv), "spirv");
  EXPECT_FALSE(symbolizeTargetChoice("metal"));
  EXPECT_FALSE(symbolizeFusionPolicy("Direct"));
}

TEST(CompileProfileTest, KnownFusionPatterns) {
  std::vector<std::string> names(knownFusionPatterns().begin(),
                                 knownFusionPatterns().end());
  EXPECT_EQ(names, (std::vector<std::string>{
                       "matmul-epilogue", "residual-norm",
                       "shared-input-matmul", "swiglu", "attention",
                       "attention-block", "elementwise-region", "dequantize"}));
}

TEST(CompileProfileTest, IsDisabled) {
  CompileProfile profile;
  profile.fusion.disable = {"swiglu"};
  EXPECT_TRUE(profile.fusion.isDisabled("swiglu"));
  EXPECT_FALSE(profile.fusion.isDisabled("attention"));
  profile.fusion.skip = true;
  EXPECT_TRUE(profile.fusion.isDisabled("attention"));
}

TEST(CompileProfileTest, EqualityComparesEveryField) {
  CompileProfile base;
  CompileProfile changed = nonDefaultProfile();
  EXPECT_NE(base, changed);
  // Changing any one field breaks equality.
  auto differsAfter = [&](auto mutate) {
    CompileProfile copy = base;
    mutate(copy);
    return copy != base;
  };
  EXPECT_TRUE(differsAfter([](CompileProfile &p) { p.fusion.skip = true; }));
  EXPECT_TRUE(differsAfter(
      [](CompileProfile &p) { p.fusion.disable.push_back("swiglu"); }));
  EXPECT_TRUE(differsAfter([](CompileProfile &p) { p.passes.verbose = true; }));
  EXPECT_TRUE(differsAfter(
      [](CompileProfile &p) { p.precision.mixed = MixedPrecision::Auto; }));
  EXPECT_TRUE(differsAfter(
      [](CompileProfile &p) { p.precision.kvCache = ComputePrecision::BF16; }));
  EXPECT_TRUE(
      differsAfter([](CompileProfile &p) { p.backend.cpu.threads = 3; }));
  EXPECT_TRUE(differsAfter([](CompileProfile &p) {
    p.backend.cpu.repackWeights = WeightRepack::X8;
  }));
  EXPECT_TRUE(
      differsAfter([](CompileProfile &p) { p.backend.spirv.device = "gpu"; }));
  EXPECT_TRUE(differsAfter(
      [](CompileProfile &p) { p.backend.spirv.cooperativeMatrix = true; }));
  EXPECT_TRUE(differsAfter(
      [](CompileProfile &p) { p.backend.spirv.optimize = false; }));
  EXPECT_TRUE(differsAfter(
      [](CompileProfile &p) { p.execution.mode = ExecutionMode::Eager; }));
  EXPECT_TRUE(differsAfter(
      [](CompileProfile &p) { p.execution.decodeBuckets = {32}; }));
  EXPECT_TRUE(
      differsAfter([](CompileProfile &p) { p.execution.memoryBudgetMB = 0; }));
  EXPECT_TRUE(differsAfter(
      [](CompileProfile &p) { p.execution.device = ExecutionDevice::Cpu; }));
  EXPECT_EQ(changed, nonDefaultProfile());
}

//===----------------------------------------------------------------------===//
// Loading valid documents
//===----------------------------------------------------------------------===//

TEST(CompileProfileTest, EmptyDocumentGivesDefaults) {
  EXPECT_EQ(load(""), CompileProfile());
  EXPECT_EQ(load("# only a comment\n\n[fusion]\n[backend.cpu]\n"),
            CompileProfile());
}

// The seed's test document, with an RLX fusion target instead of "metal".
TEST(CompileProfileTest, ParsesSeedExample) {
  CompileProfile profile = load(R"toml(
[fusion]
policy = "direct"
target = "cpu"
assert_clean = true

[passes]
dce = true
constant_folding = false

[precision]
compute = "f16"
mixed = "auto"
)toml");
  EXPECT_EQ(profile.fusion.policy, FusionPolicy::Direct);
  EXPECT_EQ(profile.fusion.target, TargetChoice::Cpu);
  EXPECT_TRUE(profile.fusion.assertClean);
  EXPECT_FALSE(profile.fusion.skip);
  EXPECT_TRUE(profile.passes.dce);
  EXPECT_FALSE(profile.passes.constantFolding);
  EXPECT_FALSE(profile.passes.verbose);
  EXPECT_EQ(profile.precision.compute, ComputePrecision::F16);
  EXPECT_EQ(profile.precision.mixed, MixedPrecision::Auto);
  EXPECT_EQ(profile.backend, CompileProfile::BackendProfile());
}

TEST(CompileProfileTest, ParsesEveryKey) {
  CompileProfile profile = load(R"toml(
[fusion]
policy = "fusable"
target = "spirv"
assert_clean = true
skip = true
disable = ["swiglu", "attention-block"]

[passes]
dce = false
constant_folding = false
verbose = true

[precision]
compute = "bf16"
mixed = "auto"
kv_cache = "f16"

[backend.cpu]
unfuse_regions = true
gemm = "generated"
repack_weights = "none"
threads = 2

[backend.spirv]
unfuse_regions = true
device = "llvmpipe \"quoted\" \\ tab\t nl\n \u0001 é"
workgroup_size = 256
cooperative_matrix = true
optimize = false

[execution]
mode = "aot"
decode_buckets = [8, 64, 512]
memory_budget_mb = 4096
device = "vulkan"
)toml");
  EXPECT_EQ(profile, nonDefaultProfile());
}

TEST(CompileProfileTest, AcceptsInlineAndDottedTables) {
  CompileProfile profile = load(R"toml(
fusion = { policy = "fusable", disable = ["attention"] }
passes.verbose = true
backend.cpu.gemm = "blas"
backend.spirv = { workgroup_size = 1024 }
)toml");
  CompileProfile expected;
  expected.fusion.policy = FusionPolicy::Fusable;
  expected.fusion.disable = {"attention"};
  expected.passes.verbose = true;
  expected.backend.cpu.gemm = GemmStrategy::Blas;
  expected.backend.spirv.workgroupSize = 1024;
  EXPECT_EQ(profile, expected);
}

TEST(CompileProfileTest, AcceptsIntegerBounds) {
  EXPECT_EQ(load("backend.cpu.threads = 4096").backend.cpu.threads, 4096u);
  EXPECT_EQ(
      load("backend.spirv.workgroup_size = 1").backend.spirv.workgroupSize, 1u);
}

//===----------------------------------------------------------------------===//
// Printing
//===----------------------------------------------------------------------===//

TEST(CompileProfileTest, ToTomlDefaultText) {
  EXPECT_EQ(CompileProfile().toToml(), R"toml([fusion]
policy = "direct"
target = "auto"
assert_clean = false
skip = false
disable = []

[passes]
dce = true
constant_folding = true
verbose = false

[precision]
compute = "f32"
mixed = "none"
weights = "f32"
kv_cache = "f32"

[backend.cpu]
unfuse_regions = false
gemm = "auto"
repack_weights = "auto"
threads = 0

[backend.spirv]
unfuse_regions = false
device = ""
workgroup_size = 64
cooperative_matrix = false
optimize = true

[execution]
mode = "lazy"
decode_buckets = []
device = "any"
)toml");
}

TEST(CompileProfileTest, ExecutionBuckets) {
  CompileProfile::ExecutionProfile e;
  // Default: 16, doubling.
  EXPECT_EQ(e.pastBucket(0), 16);
  EXPECT_EQ(e.pastBucket(16), 16);
  EXPECT_EQ(e.pastBucket(17), 32);
  EXPECT_EQ(e.pastBucket(100), 128);
  e.decodeBuckets = {8, 24, 100};
  EXPECT_EQ(e.pastBucket(0), 8);
  EXPECT_EQ(e.pastBucket(9), 24);
  EXPECT_EQ(e.pastBucket(100), 100);
  // Past the last: doubling it.
  EXPECT_EQ(e.pastBucket(101), 200);
  EXPECT_EQ(e.pastBucket(401), 800);
}

TEST(CompileProfileTest, ErrorBadExecution) {
  EXPECT_EQ(errorOf("[execution]\nmode = \"jit\"\n"),
            "<string>:2:8: 'execution.mode' must be one of \"lazy\", "
            "\"eager\", \"aot\"; got \"jit\"");
  EXPECT_EQ(errorOf("[execution]\ndecode_buckets = [16, 16]\n"),
            "<string>:2:23: 'execution.decode_buckets[1]' must be greater "
            "than 16 (the buckets ascend) and at most 16777216, got 16");
  EXPECT_EQ(errorOf("[execution]\ndecode_buckets = [0]\n"),
            "<string>:2:19: 'execution.decode_buckets[0]' must be greater "
            "than 0 (the buckets ascend) and at most 16777216, got 0");
  EXPECT_EQ(errorOf("[execution]\ndecode_buckets = 16\n"),
            "<string>:2:18: 'execution.decode_buckets' must be an array of "
            "integers, got integer");
  EXPECT_EQ(errorOf("[execution]\nmemory_budget_mb = -1\n"),
            "<string>:2:20: 'execution.memory_budget_mb' must be between 0 "
            "(no limit) and 1073741824, got -1");
  // Threads are [backend.cpu]'s.
  EXPECT_NE(errorOf("[execution]\nthreads = 4\n")
                .find("<string>:2:1: unknown key 'execution.threads'"),
            std::string::npos);
}

TEST(CompileProfileTest, ParallelTensor) {
  llvm::Expected<CompileProfile> p =
      CompileProfile::fromTomlString("[parallel]\ntensor = 4\n");
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  EXPECT_EQ(p->parallel.tensor, 4);
  EXPECT_NE(*p, CompileProfile());
  // Printed only when split, and read back.
  EXPECT_EQ(CompileProfile().toToml().find("[parallel]"), std::string::npos);
  std::string text = p->toToml();
  EXPECT_NE(text.find("[parallel]\ntensor = 4\n"), std::string::npos) << text;
  llvm::Expected<CompileProfile> back = CompileProfile::fromTomlString(text);
  ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(*back, *p);
  EXPECT_EQ(errorOf("[parallel]\ntensor = 0\n"),
            "<string>:2:10: 'parallel.tensor' must be between 1 and 4096, "
            "got 0");
  EXPECT_EQ(errorOf("[parallel]\ntensor = \"2\"\n"),
            "<string>:2:10: 'parallel.tensor' must be an integer, got string");
  EXPECT_NE(errorOf("[parallel]\npipeline = 2\n")
                .find("unknown key 'parallel.pipeline'"),
            std::string::npos);
}

TEST(CompileProfileTest, ParallelOverlapChunks) {
  llvm::Expected<CompileProfile> p = CompileProfile::fromTomlString(
      "[parallel]\ntensor = 2\noverlap_chunks = 3\n");
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  EXPECT_EQ(p->parallel.tensor, 2);
  EXPECT_EQ(p->parallel.overlapChunks, 3);
  CompileProfile unsplit = *p;
  unsplit.parallel.overlapChunks = 1;
  EXPECT_NE(*p, unsplit);
  // Printed when not 1, and read back.
  std::string text = p->toToml();
  EXPECT_NE(text.find("[parallel]\ntensor = 2\noverlap_chunks = 3\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(unsplit.toToml().find("overlap_chunks"), std::string::npos);
  llvm::Expected<CompileProfile> back = CompileProfile::fromTomlString(text);
  ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(*back, *p);
  EXPECT_EQ(errorOf("[parallel]\noverlap_chunks = 0\n"),
            "<string>:2:18: 'parallel.overlap_chunks' must be between 1 and "
            "64, got 0");
  EXPECT_EQ(errorOf("[parallel]\noverlap_chunks = 65\n"),
            "<string>:2:18: 'parallel.overlap_chunks' must be between 1 and "
            "64, got 65");
}

TEST(CompileProfileTest, CpuAttentionRows) {
  llvm::Expected<CompileProfile> p =
      CompileProfile::fromTomlString("[backend.cpu]\nattention_rows = 3\n");
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  EXPECT_EQ(p->backend.cpu.attentionRows, 3u);
  EXPECT_NE(*p, CompileProfile());
  // Printed only when set (the presets print as before), and read back.
  EXPECT_EQ(CompileProfile().toToml().find("attention_rows"),
            std::string::npos);
  std::string text = p->toToml();
  EXPECT_NE(text.find("threads = 0\nattention_rows = 3\n"), std::string::npos)
      << text;
  llvm::Expected<CompileProfile> back = CompileProfile::fromTomlString(text);
  ASSERT_TRUE(static_cast<bool>(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(*back, *p);
  EXPECT_EQ(errorOf("[backend.cpu]\nattention_rows = 65\n"),
            "<string>:2:18: 'backend.cpu.attention_rows' must be between 0 "
            "and 64, got 65");
  EXPECT_EQ(errorOf("[backend.cpu]\nattention_rows = -1\n"),
            "<string>:2:18: 'backend.cpu.attention_rows' must be between 0 "
            "and 64, got -1");
}

TEST(CompileProfileTest, ReadOverBase) {
  // The keys the text sets replace the base's; the others keep it.
  CompileProfile base = nonDefaultProfile();
  llvm::Expected<CompileProfile> p = CompileProfile::fromTomlString(
      "[backend.cpu]\nthreads = 3\n", "<string>", base);
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  CompileProfile want = base;
  want.backend.cpu.threads = 3;
  EXPECT_EQ(*p, want);
  // The decode preset's fusable policy survives a file that does not set
  // it, and is replaced by one that does.
  p = CompileProfile::fromTomlString("[precision]\nweights = \"q8_0\"\n",
                                     "<string>",
                                     CompileProfile::llama32Decode());
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  EXPECT_EQ(p->fusion.policy, FusionPolicy::Fusable);
  EXPECT_EQ(p->precision.weights, WeightPrecision::Q8_0);
  p = CompileProfile::fromTomlString("[fusion]\npolicy = \"direct\"\n",
                                     "<string>",
                                     CompileProfile::llama32Decode());
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  EXPECT_EQ(p->fusion.policy, FusionPolicy::Direct);
  // Lists are replaced whole, not appended to.
  ASSERT_FALSE(base.fusion.disable.empty());
  ASSERT_FALSE(base.execution.decodeBuckets.empty());
  p = CompileProfile::fromTomlString(
      "[fusion]\ndisable = []\n[execution]\ndecode_buckets = [64]\n",
      "<string>", base);
  ASSERT_TRUE(static_cast<bool>(p)) << llvm::toString(p.takeError());
  EXPECT_TRUE(p->fusion.disable.empty());
  EXPECT_EQ(p->execution.decodeBuckets, (llvm::SmallVector<int64_t>{64}));
  // Errors are the same over any base.
  p = CompileProfile::fromTomlString("[fusion]\npolicy = \"eager\"\n",
                                     "<string>", base);
  ASSERT_FALSE(static_cast<bool>(p));
  EXPECT_NE(llvm::toString(p.takeError()).find("'fusion.policy'"),
            std::string::npos);
}

TEST(CompileProfileTest, ToTomlRoundTripsNonDefaults) {
  CompileProfile profile = nonDefaultProfile();
  std::string text = profile.toToml();
  EXPECT_NE(text.find("disable = [\"swiglu\", \"attention-block\"]"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find(R"(device = "llvmpipe \"quoted\" \\ tab\t nl\n \u0001 é")"),
      std::string::npos)
      << text;
  EXPECT_EQ(load(text), profile);
}

//===----------------------------------------------------------------------===//
// Presets
//===----------------------------------------------------------------------===//

TEST(CompileProfileTest, PresetsMatchSeed) {
  using P = CompileProfile;
  CompileProfile prefill = P::llama32Prefill();
  CompileProfile decode = P::llama32Prefill();
  decode.fusion.policy = FusionPolicy::Fusable;
  CompileProfile encoder = P::llama32Prefill();
  CompileProfile noFusion = P::llama32Prefill();
  noFusion.fusion.skip = true;

  EXPECT_EQ(P::llama32Decode(), decode);
  EXPECT_EQ(P::qwen3Prefill(), prefill);
  EXPECT_EQ(P::qwen3Decode(), decode);
  EXPECT_EQ(P::qwen35Prefill(), prefill);
  EXPECT_EQ(P::qwen35Decode(), decode);
  EXPECT_EQ(P::gemmaPrefill(), prefill);
  EXPECT_EQ(P::gemmaDecode(), decode);
  EXPECT_EQ(P::encoder(), encoder);
  EXPECT_EQ(P::flux2(), encoder);
  EXPECT_EQ(P::samEncoder(), encoder);
  EXPECT_EQ(P::sam2(), encoder);
  EXPECT_EQ(P::sam3(), encoder);
  EXPECT_EQ(P::sam2MemoryAttention(), noFusion);
  EXPECT_EQ(P::llada2Diffusion(), noFusion);
}

TEST(CompileProfileTest, PresetLookupByName) {
  ArrayRef<StringRef> names = CompileProfile::presetNames();
  EXPECT_EQ(names.size(), 15u);
  EXPECT_EQ(names.front(), "llama32_prefill");
  EXPECT_EQ(CompileProfile::preset("llama32_prefill"),
            CompileProfile::llama32Prefill());
  EXPECT_EQ(CompileProfile::preset("llama32_decode"),
            CompileProfile::llama32Decode());
  EXPECT_EQ(CompileProfile::preset("qwen35_decode"),
            CompileProfile::qwen35Decode());
  EXPECT_EQ(CompileProfile::preset("gemma_decode"),
            CompileProfile::gemmaDecode());
  EXPECT_EQ(CompileProfile::preset("encoder"), CompileProfile::encoder());
  EXPECT_EQ(CompileProfile::preset("sam2_memory_attention"),
            CompileProfile::sam2MemoryAttention());
  EXPECT_EQ(CompileProfile::preset("llada2_diffusion"),
            CompileProfile::llada2Diffusion());
  for (StringRef name : names)
    EXPECT_TRUE(CompileProfile::preset(name).has_value()) << name.str();
  EXPECT_FALSE(CompileProfile::preset("llama32Prefill"));
  EXPECT_FALSE(CompileProfile::preset("llama32-prefill"));
  // presetOrError: the profile, or an error listing every name.
  llvm::Expected<CompileProfile> found =
      CompileProfile::presetOrError("gemma_decode");
  ASSERT_TRUE(bool(found)) << llvm::toString(found.takeError());
  EXPECT_EQ(*found, CompileProfile::gemmaDecode());
  llvm::Expected<CompileProfile> missing =
      CompileProfile::presetOrError("llama32-prefill");
  ASSERT_FALSE(bool(missing));
  std::string message = llvm::toString(missing.takeError());
  EXPECT_EQ(message.find("unknown preset 'llama32-prefill' (expected one of "
                         "llama32_prefill, llama32_decode, "),
            0u)
      << message;
  for (StringRef name : names)
    EXPECT_NE(message.find(name.str()), std::string::npos) << name.str();
  EXPECT_FALSE(CompileProfile::preset(""));
}

TEST(CompileProfileTest, EveryPresetRoundTrips) {
  for (StringRef name : CompileProfile::presetNames()) {
    std::optional<CompileProfile> profile = CompileProfile::preset(name);
    ASSERT_TRUE(profile) << name.str();
    Expected<CompileProfile> reloaded =
        CompileProfile::fromTomlString(profile->toToml(), name);
    ASSERT_TRUE(bool(reloaded)) << toString(reloaded.takeError());
    EXPECT_EQ(*reloaded, *profile) << name.str();
  }
}

//===----------------------------------------------------------------------===//
// Files
//===----------------------------------------------------------------------===//

TEST(CompileProfileTest, LoadsExampleProfiles) {
  Expected<CompileProfile> llama =
      CompileProfile::fromTomlFile(examplePath("llama-prefill.rlx.toml"));
  ASSERT_TRUE(bool(llama)) << toString(llama.takeError());
  EXPECT_EQ(*llama, CompileProfile::llama32Prefill());

  Expected<CompileProfile> bert =
      CompileProfile::fromTomlFile(examplePath("bert-encoder.rlx.toml"));
  ASSERT_TRUE(bool(bert)) << toString(bert.takeError());
  EXPECT_EQ(*bert, CompileProfile::encoder());
}

TEST(CompileProfileTest, ErrorMissingFile) {
  Expected<CompileProfile> profile =
      CompileProfile::fromTomlFile("/nonexistent/dir/missing.rlx.toml");
  ASSERT_FALSE(bool(profile));
  EXPECT_EQ(toString(profile.takeError()),
            "/nonexistent/dir/missing.rlx.toml: cannot read file: No such "
            "file or directory");
}

TEST(CompileProfileTest, ErrorInFileNamesThePath) {
  SmallString<128> path;
  int fd = -1;
  ASSERT_FALSE(sys::fs::createTemporaryFile("profile", "rlx.toml", fd, path));
  {
    raw_fd_ostream os(fd, /*shouldClose=*/true);
    os << "[passes]\ndce = 1\n";
  }
  Expected<CompileProfile> profile = CompileProfile::fromTomlFile(path);
  sys::fs::remove(path);
  ASSERT_FALSE(bool(profile));
  EXPECT_EQ(toString(profile.takeError()),
            (path + ":2:7: 'passes.dce' must be a boolean, got integer").str());
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST(CompileProfileTest, ErrorUnknownKey) {
  EXPECT_EQ(errorOf("[fusion]\npolcy = \"direct\"\n"),
            "<string>:2:1: unknown key 'fusion.polcy'; did you mean "
            "'policy'?");
  EXPECT_EQ(errorOf("[passes]\nfoo = true\n"),
            "<string>:2:1: unknown key 'passes.foo'; expected one of 'dce', "
            "'constant_folding', 'verbose'");
  EXPECT_EQ(errorOf("[backend.spirv]\n  workgroupsize = 32\n"),
            "<string>:2:3: unknown key 'backend.spirv.workgroupsize'; did you "
            "mean 'workgroup_size'?");
  EXPECT_EQ(errorOf("[backend.spirv]\noptimise = false\n"),
            "<string>:2:1: unknown key 'backend.spirv.optimise'; did you mean "
            "'optimize'?");
  EXPECT_EQ(errorOf("[backend.spirv]\noptimize = 1\n"),
            "<string>:2:12: 'backend.spirv.optimize' must be a boolean, got "
            "integer");
  EXPECT_EQ(errorOf("version = 1\n"),
            "<string>:1:1: unknown key 'version'; expected one of 'fusion', "
            "'passes', 'precision', 'backend', 'execution', 'parallel'");
}

TEST(CompileProfileTest, ErrorUnknownTable) {
  EXPECT_EQ(errorOf("[fusoin]\npolicy = \"direct\"\n"),
            "<string>:1:2: unknown table 'fusoin'; did you mean 'fusion'?");
  // The seed's Metal backend table is not an RLX backend.
  EXPECT_EQ(errorOf("[backend.metal]\nunfuse_regions = true\n"),
            "<string>:1:10: unknown table 'backend.metal'; expected one of "
            "'cpu', 'spirv'");
}

TEST(CompileProfileTest, ErrorWrongTypeBoolean) {
  EXPECT_EQ(errorOf("[passes]\ndce = \"yes\"\n"),
            "<string>:2:7: 'passes.dce' must be a boolean, got string");
  EXPECT_EQ(errorOf("[fusion]\nskip = 1\n"),
            "<string>:2:8: 'fusion.skip' must be a boolean, got integer");
}

TEST(CompileProfileTest, ErrorWrongTypeString) {
  EXPECT_EQ(errorOf("[fusion]\npolicy = true\n"),
            "<string>:2:10: 'fusion.policy' must be a string, got boolean");
  EXPECT_EQ(errorOf("[backend.spirv]\ndevice = 0\n"),
            "<string>:2:10: 'backend.spirv.device' must be a string, got "
            "integer");
}

TEST(CompileProfileTest, ErrorWrongTypeInteger) {
  EXPECT_EQ(errorOf("[backend.cpu]\nthreads = 1.5\n"),
            "<string>:2:11: 'backend.cpu.threads' must be an integer, got "
            "float");
  EXPECT_EQ(errorOf("[backend.spirv]\nworkgroup_size = \"64\"\n"),
            "<string>:2:18: 'backend.spirv.workgroup_size' must be an "
            "integer, got string");
}

TEST(CompileProfileTest, ErrorWrongTypeArray) {
  EXPECT_EQ(errorOf("[fusion]\ndisable = \"swiglu\"\n"),
            "<string>:2:11: 'fusion.disable' must be an array of strings, got "
            "string");
  EXPECT_EQ(errorOf("[fusion]\ndisable = [\"swiglu\", 3]\n"),
            "<string>:2:22: 'fusion.disable[1]' must be a string, got "
            "integer");
}

TEST(CompileProfileTest, ErrorWrongTypeTable) {
  EXPECT_EQ(errorOf("fusion = \"direct\"\n"),
            "<string>:1:10: 'fusion' must be a table, got string");
  EXPECT_EQ(errorOf("[backend]\ncpu = 4\n"),
            "<string>:2:7: 'backend.cpu' must be a table, got integer");
}

TEST(CompileProfileTest, ErrorBadEnum) {
  EXPECT_EQ(errorOf("[fusion]\npolicy = \"fast\"\n"),
            "<string>:2:10: 'fusion.policy' must be one of \"direct\", "
            "\"fusable\"; got \"fast\"");
  // The seed's other targets are not RLX targets.
  EXPECT_EQ(errorOf("[fusion]\ntarget = \"metal\"\n"),
            "<string>:2:10: 'fusion.target' must be one of \"auto\", \"cpu\", "
            "\"spirv\"; got \"metal\"");
  EXPECT_EQ(errorOf("[precision]\ncompute = \"f64\"\n"),
            "<string>:2:11: 'precision.compute' must be one of \"f32\", "
            "\"f16\", \"bf16\"; got \"f64\"");
  EXPECT_EQ(errorOf("[precision]\nmixed = \"yes\"\n"),
            "<string>:2:9: 'precision.mixed' must be one of \"none\", "
            "\"auto\"; got \"yes\"");
  EXPECT_EQ(errorOf("[backend.cpu]\ngemm = \"mkl\"\n"),
            "<string>:2:8: 'backend.cpu.gemm' must be one of \"auto\", "
            "\"blas\", \"generated\"; got \"mkl\"");
}

TEST(CompileProfileTest, ErrorBadFusionPattern) {
  EXPECT_EQ(errorOf("[fusion]\ndisable = [\"swigl\"]\n"),
            "<string>:2:12: 'fusion.disable[0]' is not a known fusion "
            "pattern: \"swigl\"; did you mean \"swiglu\"?");
  EXPECT_EQ(errorOf("[fusion]\ndisable = [\"gelu\"]\n"),
            "<string>:2:12: 'fusion.disable[0]' is not a known fusion "
            "pattern: \"gelu\"; known patterns are \"matmul-epilogue\", "
            "\"residual-norm\", \"shared-input-matmul\", \"swiglu\", "
            "\"attention\", \"attention-block\", \"elementwise-region\", "
            "\"dequantize\"");
  EXPECT_EQ(errorOf("[fusion]\ndisable = [\"swiglu\", \"swiglu\"]\n"),
            "<string>:2:22: 'fusion.disable[1]' repeats \"swiglu\"");
}

TEST(CompileProfileTest, ErrorOutOfRangeInteger) {
  EXPECT_EQ(errorOf("[backend.cpu]\nthreads = -1\n"),
            "<string>:2:11: 'backend.cpu.threads' must be between 0 and "
            "4096, got -1");
  EXPECT_EQ(errorOf("[backend.cpu]\nthreads = 4097\n"),
            "<string>:2:11: 'backend.cpu.threads' must be between 0 and "
            "4096, got 4097");
  EXPECT_EQ(errorOf("[backend.spirv]\nworkgroup_size = 100\n"),
            "<string>:2:18: 'backend.spirv.workgroup_size' must be a power of "
            "two between 1 and 1024, got 100");
  EXPECT_EQ(errorOf("[backend.spirv]\nworkgroup_size = 0\n"),
            "<string>:2:18: 'backend.spirv.workgroup_size' must be a power of "
            "two between 1 and 1024, got 0");
  EXPECT_EQ(errorOf("[backend.spirv]\nworkgroup_size = 2048\n"),
            "<string>:2:18: 'backend.spirv.workgroup_size' must be a power of "
            "two between 1 and 1024, got 2048");
}

TEST(CompileProfileTest, ErrorSyntax) {
  EXPECT_EQ(errorOf("[fusion]\npolicy = \n"),
            "<string>:2:10: syntax error in key-value pair: expected value, "
            "saw '\\n'");
  EXPECT_EQ(errorOf("[fusion\n"),
            "<string>:1:8: syntax error in table header: expected ']', saw "
            "'\\n'");
  EXPECT_EQ(errorOf("[passes]\ndce = true\ndce = false\n"),
            "<string>:3:7: syntax error in key-value pair: cannot redefine "
            "existing boolean 'dce'");
}

TEST(CompileProfileTest, ErrorsListedInSourceOrder) {
  // toml++ tables are ordered by key, not by position: the errors are sorted.
  EXPECT_EQ(errorOf(R"toml([precision]
mixed = 1
compute = "f8"
[fusion]
skip = "no"
assert_clean = true
)toml",
                    "multi.rlx.toml"),
            "multi.rlx.toml:2:9: 'precision.mixed' must be a string, got "
            "integer\n"
            "multi.rlx.toml:3:11: 'precision.compute' must be one of \"f32\", "
            "\"f16\", \"bf16\"; got \"f8\"\n"
            "multi.rlx.toml:5:8: 'fusion.skip' must be a boolean, got string");
}

// rlx-fuzz-profile found two bugs of toml++ 3.3 that made malformed profiles
// undefined behavior (see CompileProfile.cpp); both must be plain errors.
TEST(CompileProfileTest, ErrorTomlBadTableHeaderKey) {
  EXPECT_EQ(errorOf(StringRef("[\0,x]\n", 6)),
            "<string>:1:2: syntax error in key: expected bare key starting "
            "character or string delimiter, saw '\\u0000'");
  EXPECT_EQ(errorOf("[[[1]]]\n"),
            "<string>:1:3: syntax error in key: expected bare key starting "
            "character or string delimiter, saw '['");
}

TEST(CompileProfileTest, ErrorTomlNonAsciiWhereWhitespaceMayBe) {
  // U+00E9, U+2D40 and U+FEF7: code points toml++'s whitespace table did
  // not cover.
  EXPECT_EQ(errorOf("[fusion]\npolicy = \xc3\xa9\n"),
            "<string>:2:10: syntax error in value: could not determine value "
            "type");
  EXPECT_EQ(errorOf("\xe2\xb5\x80x = 1\n"),
            "<string>:1:1: syntax error in root table: expected keys, tables, "
            "whitespace or comments, saw '\xe2\xb5\x80'");
  EXPECT_EQ(errorOf("\xef\xbb\xb7i\nbackend = [1, 2]\x1a"),
            "<string>:1:1: syntax error in root table: expected keys, tables, "
            "whitespace or comments, saw '\xef\xbb\xb7'");
}

TEST(CompileProfileTest, ErrorEchoesHugeKeysAndValuesTruncated) {
  // A 10 MB value, key or fusion name is quoted by its first 64 bytes and
  // its size, not whole.
  std::string huge(10 * 1000 * 1000, 'a');
  std::string head(64, 'a');
  EXPECT_EQ(errorOf("[fusion]\npolicy = \"" + huge + "\"\n"),
            "<string>:2:10: 'fusion.policy' must be one of \"direct\", "
            "\"fusable\"; got \"" +
                head + "... (10000000 bytes)\"");
  EXPECT_EQ(errorOf("[fusion]\n" + huge + " = 1\n"),
            "<string>:2:1: unknown key 'fusion." + std::string(57, 'a') +
                "... (10000007 bytes)'; expected one of 'policy', 'target', "
                "'assert_clean', 'skip', 'disable'");
  EXPECT_EQ(errorOf("[fusion]\ndisable = [\"" + huge + "\"]\n"),
            "<string>:2:12: 'fusion.disable[0]' is not a known fusion "
            "pattern: \"" +
                head +
                "... (10000000 bytes)\"; known patterns are "
                "\"matmul-epilogue\", \"residual-norm\", "
                "\"shared-input-matmul\", \"swiglu\", \"attention\", "
                "\"attention-block\", \"elementwise-region\", "
                "\"dequantize\"");
  // A cut never splits a UTF-8 sequence: 63 ASCII bytes, then 2-byte é.
  std::string accented(63, 'a');
  for (int i = 0; i < 100; ++i)
    accented += "\xc3\xa9";
  EXPECT_EQ(errorOf("[fusion]\npolicy = \"" + accented + "\"\n"),
            "<string>:2:10: 'fusion.policy' must be one of \"direct\", "
            "\"fusable\"; got \"" +
                std::string(63, 'a') + "... (263 bytes)\"");
}

} // namespace

TEST(CompileProfileTest, DifferencesFromNameEachChangedKey) {
  CompileProfile base = CompileProfile::llama32Decode();
  EXPECT_TRUE(base.differencesFrom(base).empty());
  CompileProfile p = base;
  p.precision.weights = WeightPrecision::Stored;
  p.backend.cpu.threads = 3;
  EXPECT_EQ(p.differencesFrom(base),
            (std::vector<std::string>{"precision.weights = \"stored\"",
                                      "backend.cpu.threads = 3"}));
  // Keys printed only when set: the other profile's value is named unset.
  CompileProfile budget = base;
  budget.execution.memoryBudgetMB = 512;
  budget.parallel.tensor = 2;
  EXPECT_EQ(budget.differencesFrom(base),
            (std::vector<std::string>{"execution.memory_budget_mb = 512",
                                      "parallel.tensor = 2"}));
  EXPECT_EQ(base.differencesFrom(budget),
            (std::vector<std::string>{"execution.memory_budget_mb = (unset)",
                                      "parallel.tensor = (unset)"}));
}

TEST(CompileProfileTest, NearestPreset) {
  // A preset is its own nearest, with no differences (the first of the
  // presets that share its settings).
  for (llvm::StringRef name : CompileProfile::presetNames()) {
    CompileProfile::NearestPreset n =
        CompileProfile::preset(name)->nearestPreset();
    EXPECT_TRUE(n.differences.empty()) << name.str();
    EXPECT_EQ(*CompileProfile::preset(n.name), *CompileProfile::preset(name));
  }
  CompileProfile p = CompileProfile::llama32Decode();
  p.precision.weights = WeightPrecision::Stored;
  CompileProfile::NearestPreset n = p.nearestPreset();
  EXPECT_EQ(n.name, "llama32_decode");
  EXPECT_EQ(n.differences,
            std::vector<std::string>{"precision.weights = \"stored\""});
}

TEST(CompileProfileTest, CheckForModuleRefusesRecipeKeys) {
  CompileProfile p;
  EXPECT_FALSE(static_cast<bool>(p.checkForModule("m.mlir")));
  p.precision.weights = WeightPrecision::Stored;
  p.precision.compute = ComputePrecision::BF16;
  EXPECT_FALSE(static_cast<bool>(p.checkForModule("m.mlir")));

  // Each key a recipe applies, set alone over the default profile.
  const std::string recipes = " applies to model recipes (rlx-run --model, "
                              "the flows); a module's ";
  std::pair<std::function<void(CompileProfile &)>, std::string> cases[] = {
      {[](CompileProfile &q) { q.precision.weights = WeightPrecision::Q4_0; },
       "[precision] weights = \"q4_0\"" + recipes +
           "params have the types it declares"},
      {[](CompileProfile &q) { q.precision.kvCache = ComputePrecision::F16; },
       "[precision] kv_cache = \"f16\"" + recipes +
           "tensors have the types it declares"},
      {[](CompileProfile &q) { q.execution.decodeBuckets = {16, 64}; },
       "[execution] decode_buckets sizes a model recipe's decode graphs "
       "(rlx-run --model, the flows' generators); a module compiles for the "
       "shapes it is given"}};
  for (auto &[set, message] : cases) {
    CompileProfile q;
    set(q);
    EXPECT_EQ(toString(q.checkForModule("m.mlir")), "m.mlir: " + message);
  }
}
