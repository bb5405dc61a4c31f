//===- Manifest.h - The binding manifest of a compiled model -----*- C++
//-*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// Where every input, parameter and output of a compiled entry point lives:
// the `lir.io` ops of the LIR entry, read back by the runtime (in memory for
// the JIT, as JSON next to an AOT object).
//
//===----------------------------------------------------------------------===//

#ifndef RLX_RUNTIME_MANIFEST_H
#define RLX_RUNTIME_MANIFEST_H

#include "RLX/Support/Enums.h"
#include "RLX/Weights/Tensor.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace rlx {

enum class IOKind { Input, Param, Output };
llvm::StringRef ioKindName(IOKind kind);

struct ManifestEntry {
  IOKind kind = IOKind::Input;
  std::string name;
  /// Byte offset in the arena (inputs, outputs) or the parameter pool.
  uint64_t offset = 0;
  llvm::SmallVector<int64_t, 4> shape;
  DType dtype = DType::F32;
  /// A derived parameter: the concatenation of `sources` along `concatAxis`.
  std::vector<std::string> sources;
  /// Extent of each source along `concatAxis`.
  std::vector<int64_t> sourceSizes;
  /// A sliced parameter: source `i` contributes `[sourceStarts[i],
  /// sourceStarts[i] + sourceSizes[i])` of its extent along `concatAxis`
  /// (the loader reads only that range; one source is then allowed). Empty:
  /// every source is taken whole.
  std::vector<int64_t> sourceStarts;
  int64_t concatAxis = -1;
  /// For integer inputs used as gather indices: values must lie in
  /// [0, indexBound). -1 when unbounded.
  int64_t indexBound = -1;
  /// How a param is stored (RLX/Support/Enums.h; the code generator's
  /// lir-pack-params chose it). The runtime writes this layout when it loads
  /// the param.
  ParamLayout layout = ParamLayout::RowMajor;

  /// The element count and byte size of `shape` (UINT64_MAX when they
  /// overflow: Manifest::verify refuses such an entry).
  uint64_t numElements() const;
  uint64_t byteSize() const;
};

struct Manifest {
  /// The entry point's symbol (the C interface is `_mlir_ciface_<entry>`).
  std::string entry;
  uint64_t arenaSize = 0;
  uint64_t paramSize = 0;
  uint64_t alignment = 64;
  /// The number of ranks the entry's collectives (lir.all_reduce,
  /// lir.all_gather) span: the MPI world it must run in. 1: it has none.
  uint64_t worldSize = 1;
  /// The rank whose program of a tensor-parallel split the entry is (the
  /// module's rlx.rank), in [0, worldSize): the runtime refuses to run it
  /// as another rank. -1: any rank (not split, or not recorded).
  int64_t rank = -1;
  std::vector<ManifestEntry> entries;

  const ManifestEntry *find(IOKind kind, llvm::StringRef name) const;
  std::vector<const ManifestEntry *> ofKind(IOKind kind) const;

  /// Checks what fromJSON checks of the sizes of a manifest built in memory
  /// (the JIT's, read from LIR): the arena and pool sizes fit in 63 bits,
  /// every entry's byte size is representable and it lies inside its
  /// storage. The error names the entry and its shape.
  llvm::Error verify() const;

  std::string toJSON() const;
  static llvm::Expected<Manifest> fromJSON(llvm::StringRef text,
                                           llvm::StringRef fileName);
};

} // namespace rlx

#endif // RLX_RUNTIME_MANIFEST_H
