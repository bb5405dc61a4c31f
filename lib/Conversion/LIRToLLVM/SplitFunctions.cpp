//===- SplitFunctions.cpp - Chunk entry functions of many calls -----------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// rlx-split-large-functions: keeps the functions LLVM compiles small enough
// that its superlinear back-end passes stay cheap (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "RLX/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::rlx {
#define GEN_PASS_DEF_RLXSPLITLARGEFUNCTIONSPASS
#include "RLX/Conversion/Passes.h.inc"
} // namespace mlir::rlx

using namespace mlir;

namespace {

/// Whether `func` has the shape the pass splits: one block of calls with
/// unused results and side-effect-free operations, ending in a return of
/// nothing.
static bool isSplittable(LLVM::LLVMFuncOp func, unsigned limit,
                         SmallVectorImpl<LLVM::CallOp> &calls) {
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return false;
  Block &block = func.front();
  auto ret = dyn_cast<LLVM::ReturnOp>(block.getTerminator());
  if (!ret || ret.getNumOperands() != 0)
    return false;
  for (Operation &op : block.without_terminator()) {
    if (auto call = dyn_cast<LLVM::CallOp>(op)) {
      if (!call.use_empty())
        return false;
      calls.push_back(call);
      continue;
    }
    if (op.getNumRegions() != 0 || !isMemoryEffectFree(&op))
      return false;
  }
  return calls.size() > limit;
}

/// Clones `v`'s definition (and, first, its operands') into `b` unless
/// `map` already has it.
static Value materialize(Value v, OpBuilder &b, IRMapping &map) {
  if (Value mapped = map.lookupOrNull(v))
    return mapped;
  Operation *def = v.getDefiningOp();
  assert(def && "function arguments are mapped up front");
  for (Value operand : def->getOperands())
    materialize(operand, b, map);
  b.clone(*def, map);
  return map.lookup(v);
}

struct RLXSplitLargeFunctionsPass
    : public mlir::rlx::impl::RLXSplitLargeFunctionsPassBase<
          RLXSplitLargeFunctionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (callsPerFunction == 0)
      return;
    ModuleOp module = getOperation();
    SmallVector<LLVM::LLVMFuncOp> funcs(module.getOps<LLVM::LLVMFuncOp>());
    for (LLVM::LLVMFuncOp func : funcs) {
      SmallVector<LLVM::CallOp> calls;
      if (isSplittable(func, callsPerFunction, calls))
        split(module, func, calls);
    }
  }

  void split(ModuleOp module, LLVM::LLVMFuncOp func,
             ArrayRef<LLVM::CallOp> calls) {
    Block &block = func.front();
    Location loc = func.getLoc();
    OpBuilder top(func);
    top.setInsertionPointAfter(func);
    SmallVector<LLVM::LLVMFuncOp> chunks;
    for (size_t first = 0; first < calls.size(); first += callsPerFunction) {
      ArrayRef<LLVM::CallOp> part = calls.slice(
          first, std::min<size_t>(callsPerFunction, calls.size() - first));
      // "<name>_partN", past the names the module already has.
      std::string name;
      for (size_t n = chunks.size();; ++n) {
        name = (func.getSymName() + "_part" + Twine(n)).str();
        if (!module.lookupSymbol(name))
          break;
      }
      auto chunk = LLVM::LLVMFuncOp::create(
          top, loc, name, func.getFunctionType(), LLVM::Linkage::Internal);
      chunk.setNoInline(true);
      Block *body = chunk.addEntryBlock(top);
      OpBuilder b = OpBuilder::atBlockBegin(body);
      IRMapping map;
      map.map(block.getArguments(), body->getArguments());
      for (LLVM::CallOp call : part) {
        for (Value operand : call->getOperands())
          materialize(operand, b, map);
        b.clone(*call, map);
      }
      LLVM::ReturnOp::create(b, loc, ValueRange{});
      top.setInsertionPointAfter(chunk);
      chunks.push_back(chunk);
    }
    for (LLVM::CallOp call : calls)
      call.erase();
    // The values only the calls used.
    SmallVector<Operation *> rest;
    for (Operation &op : block.without_terminator())
      rest.push_back(&op);
    for (Operation *op : llvm::reverse(rest))
      if (op->use_empty())
        op->erase();
    OpBuilder b(block.getTerminator());
    for (LLVM::LLVMFuncOp chunk : chunks)
      LLVM::CallOp::create(b, loc, chunk, block.getArguments());
  }
};

} // namespace
