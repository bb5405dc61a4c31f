//===- MIRDialect.cpp - MIR dialect registration --------------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/MIR/IR/MIRDialect.h"
#include "RLX/Dialect/Common/RLXDialect.h"
#include "RLX/Dialect/MIR/IR/MIROps.h"
#include "RLX/Support/CheckedSize.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::rlx::mir;

#include "RLX/Dialect/MIR/IR/MIRDialect.cpp.inc"

#include "RLX/Dialect/MIR/IR/MIREnums.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "RLX/Dialect/MIR/IR/MIRTypes.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "RLX/Dialect/MIR/IR/MIRAttrs.cpp.inc"

int64_t QuantType::getBlockElements() const {
  switch (getKind()) {
  case QuantKind::Q2_K:
  case QuantKind::Q3_K:
  case QuantKind::Q4_K:
  case QuantKind::Q5_K:
  case QuantKind::Q6_K:
    return 256;
  default:
    return 32;
  }
}

int64_t QuantType::getBlockBytes() const {
  switch (getKind()) {
  case QuantKind::Q4_0:
    return 18;
  case QuantKind::Q4_1:
    return 20;
  case QuantKind::Q5_0:
    return 22;
  case QuantKind::Q5_1:
    return 24;
  case QuantKind::Q8_0:
    return 34;
  case QuantKind::Q2_K:
    return 84;
  case QuantKind::Q3_K:
    return 110;
  case QuantKind::Q4_K:
    return 144;
  case QuantKind::Q5_K:
    return 176;
  case QuantKind::Q6_K:
    return 210;
  }
  llvm_unreachable("unknown quantization");
}

bool mlir::rlx::mir::isLowPrecisionWeightType(Type t) {
  return t.isF16() || t.isBF16() || isa<QuantType>(t);
}

std::optional<int64_t> mlir::rlx::mir::getCheckedStorageBytes(ShapedType type) {
  if (!type.hasStaticShape())
    return std::nullopt;
  Type elt = type.getElementType();
  std::optional<uint64_t> bytes;
  if (auto q = dyn_cast<QuantType>(elt))
    bytes = ::rlx::checkedByteSize(type.getShape(), q.getBlockBytes(),
                                   q.getBlockElements());
  else if (elt.isIntOrIndexOrFloat())
    bytes = ::rlx::checkedByteSize(
        type.getShape(),
        std::max<int64_t>(1, (elt.getIntOrFloatBitWidth() + 7) / 8));
  else
    bytes = ::rlx::checkedByteSize(type.getShape(), 1);
  if (!bytes)
    return std::nullopt;
  return static_cast<int64_t>(*bytes);
}

int64_t mlir::rlx::mir::getStorageBytes(ShapedType type) {
  return getCheckedStorageBytes(type).value_or(
      static_cast<int64_t>(::rlx::kMaxByteSize));
}

LogicalResult mlir::rlx::mir::verifyQuantizedShape(Operation *op,
                                                   ShapedType type,
                                                   StringRef what) {
  auto q = dyn_cast<QuantType>(type.getElementType());
  if (!q)
    return success();
  if (type.getRank() == 0 || ShapedType::isDynamic(type.getShape().back()) ||
      type.getShape().back() % q.getBlockElements() != 0)
    return op->emitOpError() << what << " " << type
                             << " must have a last dimension that is a "
                                "multiple of the block size "
                             << q.getBlockElements();
  return success();
}

void MIRDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "RLX/Dialect/MIR/IR/MIROps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "RLX/Dialect/MIR/IR/MIRAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "RLX/Dialect/MIR/IR/MIRTypes.cpp.inc"
      >();
}

Operation *MIRDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return ConstantOp::create(builder, loc, type, elements);
}
