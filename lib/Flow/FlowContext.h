//===- FlowContext.h - The build state of a ModelFlow ------------*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#ifndef RLX_LIB_FLOW_FLOWCONTEXT_H
#define RLX_LIB_FLOW_FLOWCONTEXT_H

#include "RLX/Flow/ModelFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/ADT/StringMap.h"

namespace rlx {

struct FlowContext::Impl {
  Impl(const WeightSource &weights);

  mlir::MLIRContext context;
  mlir::OpBuilder b;
  mlir::Location loc;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func;
  const WeightSource &weights;
  std::shared_ptr<TensorMap> synthesized;
  /// `[precision] weights`: whether matrices keep their stored type.
  WeightPrecision weightPrecision = WeightPrecision::F32;

  mlir::Value current;
  llvm::StringMap<mlir::Value> named;
  /// The streams of a multi-stream flow, by id.
  llvm::StringMap<mlir::Value> streams;
  llvm::StringMap<mlir::Value> params;
  /// Graph outputs: first those marked with ModelFlow::output, in order,
  /// then side outputs of blocks (KV-cache taps).
  std::vector<std::pair<std::string, mlir::Value>> outputs;
  size_t marked = 0;
  /// Where the flow is, for messages ("layer 3").
  std::string scope;

  /// The type a weight stored as `dtype` keeps in the IR (f16, bf16, ggml
  /// blocks), or null when it computes in f32.
  mlir::Type storageType(DType dtype);
  /// The storage of a weight of `shape` stored as `dtype` in the file under
  /// weightPrecision (null: f32).
  mlir::Type weightStorage(DType dtype, llvm::ArrayRef<int64_t> shape);
  /// Weight `key` as hir.param, checked against the source (or a param
  /// the flow synthesized).
  llvm::Expected<mlir::Value> param(llvm::StringRef key,
                                    llvm::ArrayRef<int64_t> shape);
  /// A weight whose shape the source decides; `rank` checks its rank.
  llvm::Expected<mlir::Value> paramAnyShape(llvm::StringRef key, int64_t rank);
  /// Adds a computed parameter.
  llvm::Error synthesize(llvm::StringRef key, llvm::ArrayRef<int64_t> shape,
                         std::vector<float> data);
  /// The active tensor, or an error naming `block` when there is none.
  llvm::Expected<mlir::Value> active(llvm::StringRef block);
  /// A named value, or an error naming `block` and the value.
  llvm::Expected<mlir::Value> need(llvm::StringRef block, llvm::StringRef name);
  /// Creates HIR op `name` (attributes may be inherent).
  mlir::Operation *create(llvm::StringRef name, mlir::TypeRange results,
                          mlir::ValueRange operands,
                          llvm::ArrayRef<mlir::NamedAttribute> attrs = {});
  llvm::Error fail(const llvm::Twine &msg) const;

  mlir::RankedTensorType tensor(llvm::ArrayRef<int64_t> shape,
                                mlir::Type elt = {});
  static llvm::ArrayRef<int64_t> shapeOf(mlir::Value v);
};

} // namespace rlx

#endif // RLX_LIB_FLOW_FLOWCONTEXT_H
