//===- RLXEnums.cpp - Enums shared by the RLX dialects --------------------===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//

#include "RLX/Dialect/Common/RLXEnums.h"

#include "RLX/Dialect/Common/RLXEnums.cpp.inc"
