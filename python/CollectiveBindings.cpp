//===- CollectiveBindings.cpp - The ranks of tensor-parallel programs -----===//
//
// Part of the RLX project, under the Apache License v2.0 with LLVM Exceptions.
// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
//
//===----------------------------------------------------------------------===//
//
// `rlx.set_communicator` (the mpi4py communicator a tensor-parallel
// program's collectives run over), `rlx.collective_rank` /
// `rlx.collective_size` and `rlx.check_same_on_all_ranks`. mpi4py is
// imported only by set_communicator: the rest works without it.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"
#include "RLX/Runtime/Collectives.h"
#include <nanobind/stl/string.h>

using namespace rlx;
using namespace rlx::python;
using namespace nb::literals;

/// The type name of `value`, for messages.
static std::string typeName(nb::handle value) {
  return pyStr(nb::handle(Py_TYPE(value.ptr())).attr("__name__"));
}

static void setCommunicator(nb::handle comm) {
  nb::object mpi;
  try {
    mpi = nb::module_::import_("mpi4py.MPI");
  } catch (nb::python_error &e) {
    throw RLXError(std::string("set_communicator: needs mpi4py (pip install "
                               "mpi4py, built against the MPI RLX uses): ") +
                   e.what());
  }
  int isComm = PyObject_IsInstance(comm.ptr(), mpi.attr("Comm").ptr());
  if (isComm < 0)
    throw nb::python_error();
  if (!isComm)
    throw nb::type_error(("set_communicator: expects an mpi4py MPI.Comm "
                          "(MPI.COMM_WORLD, comm.Split(...), comm.Dup()), "
                          "got " +
                          typeName(comm))
                             .c_str());
  // The address of the MPI_Comm handle inside the mpi4py object: an
  // MPI_Comm *, which RLX copies.
  auto address = nb::cast<uintptr_t>(mpi.attr("_addressof")(comm));
  check(setCollectiveCommunicator(reinterpret_cast<void *>(address)));
  // The communicator must outlive RLX's use of it: the module keeps the
  // object (mpi4py never frees a communicator its object still holds).
  nb::module_::import_("rlx._rlx").attr("_collective_communicator") = comm;
}

static void checkSameOnRanks(nb::handle fingerprint, const std::string &what) {
  uint64_t value = 0;
  if (nb::isinstance<nb::bool_>(fingerprint) ||
      !nb::try_cast(fingerprint, value))
    throw RLXError("check_same_on_all_ranks: the fingerprint " +
                   pyStr(nb::repr(fingerprint)) +
                   " is not an integer in [0, 2**64)");
  // The other ranks may take a while to arrive: other Python threads run
  // meanwhile.
  llvm::Error err = [&] {
    nb::gil_scoped_release noGil;
    return checkSameOnAllRanks(value, what);
  }();
  check(std::move(err));
}

void python::registerCollectives(nb::module_ &m) {
  m.def("set_communicator", &setCommunicator, "comm"_a,
        nb::sig("def set_communicator(comm: typing.Any) -> None"),
        "Runs the collectives of tensor-parallel programs (all-reduce,\n"
        "all-gather) over `comm`, an mpi4py `MPI.Comm`, instead of\n"
        "MPI.COMM_WORLD. Call it before the first collective, on every rank\n"
        "of `comm`; a program's collectives must then span `comm.size`\n"
        "ranks. Raises rlx.RLXError when collectives already ran over\n"
        "another communicator, for MPI.COMM_NULL or an inter-communicator,\n"
        "and when RLX was built without MPI.");
  m.def(
      "collective_rank", [] { return collectiveRank(); },
      "This process's rank in the collectives' communicator (0 when no MPI\n"
      "launcher started it).");
  m.def(
      "collective_size", [] { return collectiveSize(); },
      "The number of ranks of the collectives' communicator (1 when no MPI\n"
      "launcher started this process).");
  m.def("check_same_on_all_ranks", &checkSameOnRanks, "fingerprint"_a, "what"_a,
        nb::sig("def check_same_on_all_ranks(fingerprint: int, what: str) "
                "-> None"),
        "Checks that every rank passes the same `fingerprint` (an integer\n"
        "in [0, 2**64): a hash of the model's files, say); raises\n"
        "rlx.RLXError naming `what`, the rank and the rank count on every\n"
        "rank when they differ. Every rank of the communicator must call it;\n"
        "it waits at most RLX_COLLECTIVE_TIMEOUT seconds (default 300) for\n"
        "the others, then ends the job. A world of 1 returns at once.");
}
