//===- Bindings.h - Shared helpers of the rlx Python module -----*- C++ -*-===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// The rlx extension is the one place in RLX built with C++ exceptions
// (nanobind needs them). The libraries it wraps are built without: errors
// cross the boundary as llvm::Error / llvm::Expected and become Python
// exceptions here, and a Python callback invoked from inside RLX never lets
// an exception unwind through RLX frames (see PendingPythonError).
//
//===----------------------------------------------------------------------===//

#ifndef RLX_PYTHON_BINDINGS_H
#define RLX_PYTHON_BINDINGS_H

#include "RLX/Flow/ModelFlow.h"
#include "RLX/Runtime/Tensor.h"
#include "RLX/Support/Enums.h"
#include "RLX/Weights/WeightSource.h"
#include "llvm/Support/Error.h"
#include <exception>
#include <memory>
#include <nanobind/nanobind.h>
#include <optional>
#include <stdexcept>
#include <string>

namespace rlx::python {

namespace nb = nanobind;

/// The C++ side of `rlx.RLXError`: carries an llvm::Error's message.
class RLXError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// An exception thrown by a Python callback that RLX called (a recipe hook,
/// `on_token`). The callback stores it (the current exception, in a catch
/// block) and returns normally; the binding that entered RLX re-raises it
/// once RLX has returned.
void setPendingPythonError(std::exception_ptr error);
/// Re-raises the pending exception, if any.
void rethrowPendingPythonError();

/// `value` as an `E`, or a ValueError naming `what` (a method or property)
/// and E's spellings.
template <typename E>
E enumArgument(const char *what, const std::string &value,
               std::optional<E> (*symbolize)(llvm::StringRef)) {
  if (std::optional<E> v = symbolize(value))
    return *v;
  std::string known;
  for (llvm::StringRef s : enumSpellings<E>())
    known += (known.empty() ? "" : ", ") + s.str();
  throw nb::value_error((std::string(what) + ": unknown value '" + value +
                         "' (expected one of: " + known + ")")
                            .c_str());
}

/// Raises `err` as rlx.RLXError (or a pending Python exception first).
[[noreturn]] void throwError(llvm::Error err);

/// Checks `err`: success does nothing, failure raises.
inline void check(llvm::Error err) {
  rethrowPendingPythonError();
  if (err)
    throwError(std::move(err));
}

/// The value of `value`, or raises its error.
template <typename T> T unwrap(llvm::Expected<T> value) {
  rethrowPendingPythonError();
  if (!value)
    throwError(value.takeError());
  return std::move(*value);
}

/// str(value).
inline std::string pyStr(nb::handle value) {
  return nb::cast<std::string>(nb::str(value));
}

/// A path argument (str or os.PathLike) as a string.
std::string pathString(nb::handle path);

/// A mapping's key as a string; rlx.RLXError naming `what` and the key when
/// it is not a str (nb::cast would raise a bare std::bad_cast).
std::string keyString(nb::handle key, llvm::StringRef what);
/// A Python integer in [lo, hi]; rlx.RLXError naming `what` otherwise (an
/// int past 64 bits included).
int64_t intInRange(nb::handle value, const llvm::Twine &what, int64_t lo,
                   int64_t hi);

//===----------------------------------------------------------------------===//
// NumPy
//===----------------------------------------------------------------------===//

/// The numpy module.
nb::module_ numpy();
/// The DType of a numpy dtype, or std::nullopt for one RLX has no type for.
std::optional<DType> dtypeOfNumpy(nb::handle dtype);
/// The numpy dtype name of `dtype` ("float32", ...); bf16 reads "bfloat16".
const char *numpyDTypeName(DType dtype);
/// A DType from "f32"/"i32"/..., a numpy dtype or a numpy scalar type.
DType parseDType(nb::handle spec);
/// `value` as a C-contiguous numpy array (a no-op for one already).
nb::object contiguousArray(nb::handle value);
/// Copies a numpy array into a Tensor (one copy). `what` names it in errors.
Tensor tensorFromArray(nb::handle array, llvm::StringRef what);

/// A C-contiguous numpy array (the input, or a contiguous copy of it) and a
/// borrowed view of its bytes, valid while `array` lives.
struct ArrayView {
  nb::object array;
  DType dtype = DType::F32;
  llvm::SmallVector<int64_t, 4> shape;
  llvm::ArrayRef<uint8_t> bytes;
};
/// Views `value` (array-like) without copying when it is already a
/// C-contiguous array of an RLX dtype; errors as tensorFromArray.
ArrayView viewArray(nb::handle value, llvm::StringRef what);
/// A numpy array over `tensor`'s bytes, which it takes over (no copy; bf16
/// is widened to float32).
nb::object arrayFromTensor(Tensor tensor);

//===----------------------------------------------------------------------===//
// Weights
//===----------------------------------------------------------------------===//

/// `rlx.Weights`: a shared WeightSource.
struct PyWeights {
  std::shared_ptr<const WeightSource> source;
};

/// Weights from a path (model directory, .safetensors, .gguf), a mapping of
/// names to arrays, or an rlx.Weights.
PyWeights toWeights(nb::handle value);

//===----------------------------------------------------------------------===//
// Profiles
//===----------------------------------------------------------------------===//

/// A CompileProfile from an rlx.CompileProfile, a preset name, or a path to
/// a `.toml` file.
CompileProfile toProfile(nb::handle value);

//===----------------------------------------------------------------------===//
// Registration
//===----------------------------------------------------------------------===//

void registerWeights(nb::module_ &m);
void registerProfile(nb::module_ &m);
void registerFlow(nb::module_ &m);
void registerCompiler(nb::module_ &m);
void registerTokenizer(nb::module_ &m);
void registerCollectives(nb::module_ &m);

} // namespace rlx::python

#endif // RLX_PYTHON_BINDINGS_H
