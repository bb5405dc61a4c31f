//===- SPIRVTools.cpp - Validate and optimize SPIR-V kernels --------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// spirv-tools' validator (spvtools::SpirvTools::Validate, spvValidate's C++
// form with options) and optimizer (spvtools::Optimizer with its performance
// passes) over one kernel module at a time.
//
//===----------------------------------------------------------------------===//

#include "RLX/Conversion/LIRToSPIRV/SPIRVTools.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/raw_ostream.h"

#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/optimizer.hpp>

using namespace mlir::rlx;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

static constexpr spv_target_env targetEnv = SPV_ENV_VULKAN_1_1;

StringRef mlir::rlx::spirvTargetEnvironment() { return "Vulkan 1.1"; }

static Error fail(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

namespace {
/// Collects spirv-tools' messages, one per line ("error at word 12: ...").
class Messages {
public:
  spvtools::MessageConsumer consumer() {
    return [this](spv_message_level_t level, const char *,
                  const spv_position_t &position, const char *message) {
      llvm::raw_string_ostream os(text);
      if (!text.empty())
        os << "\n";
      switch (level) {
      case SPV_MSG_FATAL:
      case SPV_MSG_INTERNAL_ERROR:
      case SPV_MSG_ERROR:
        os << "error";
        break;
      case SPV_MSG_WARNING:
        os << "warning";
        break;
      default:
        os << "note";
        break;
      }
      // The word index, as spirv-val prints it.
      if (position.index)
        os << " at word " << position.index;
      os << ": " << message;
    };
  }
  const std::string &str() const { return text; }

private:
  std::string text;
};
} // namespace

/// The validator options of every module: the target environment's block
/// layout rules (Vulkan 1.1 relaxes std430 offsets of vectors).
static spvtools::ValidatorOptions validatorOptions() {
  spvtools::ValidatorOptions options;
  options.SetRelaxBlockLayout(true);
  return options;
}

Error mlir::rlx::validateSpirv(llvm::ArrayRef<uint32_t> words,
                               StringRef kernel) {
  Messages messages;
  spvtools::SpirvTools tools(targetEnv);
  tools.SetMessageConsumer(messages.consumer());
  if (tools.Validate(words.data(), words.size(), validatorOptions()))
    return Error::success();
  return fail(
      "SPIR-V validation of kernel '" + kernel + "' failed (" +
      spirvTargetEnvironment() + "):\n" +
      (messages.str().empty() ? "error: invalid module" : messages.str()));
}

Expected<std::vector<uint32_t>>
mlir::rlx::optimizeSpirv(llvm::ArrayRef<uint32_t> words, StringRef kernel) {
  Messages messages;
  spvtools::Optimizer optimizer(targetEnv);
  optimizer.SetMessageConsumer(messages.consumer());
  optimizer.RegisterPerformancePasses();
  spvtools::OptimizerOptions options;
  // The input was validated by the caller; the output is validated below.
  options.set_run_validator(false);
  std::vector<uint32_t> out;
  if (!optimizer.Run(words.data(), words.size(), &out, options))
    return fail("spirv-opt failed on kernel '" + kernel + "':\n" +
                messages.str());
  if (Error err = validateSpirv(out, kernel))
    return fail("spirv-opt produced an invalid module: " +
                llvm::toString(std::move(err)));
  return out;
}
